"""agent_loop.py's agent with the engine doing the loop: MemoryLoop reads
the session's buffer, recalls, assembles the prompt within its token
budget, calls the LLM, decides what to keep, writes it, and says what it
did. Same environment: ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL, MEMLOOP_DATA_DIR."""

from __future__ import annotations

import os

from memloop import Memory, MemoryLoop

llm = {"provider": "anthropic", "model": os.environ.get("ANTHROPIC_MODEL", "claude-sonnet-4-5")}
if os.environ.get("ANTHROPIC_BASE_URL"):
    llm["base_url"] = os.environ["ANTHROPIC_BASE_URL"]
loop = MemoryLoop(Memory(os.environ.get("MEMLOOP_DATA_DIR", "./memloop-data"), config={"llm": llm}))

if __name__ == "__main__":
    for session, said in [("monday", "I'm vegetarian and allergic to peanuts."),
                          ("tuesday", "What food should I avoid?")]:
        turn = loop.turn(said, user_id="alice", session_id=session)
        print(turn.reply)
        for m in turn.retrieved:
            print(f"  recalled {m['score']:.3f} {m['memory']} (in prompt: {m['included']})")
        print(f"  kept: {turn.gate['persist']} ({turn.gate['reason']}); "
              f"{turn.tokens['total_input']} input tokens")

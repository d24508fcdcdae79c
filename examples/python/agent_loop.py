"""The design's agent loop in Python, with memloop.Memory where it had
Mem0's client: a short-term buffer, build_context, should_persist and
agent_turn, written out by hand. agent_loop_memloop.py is the same agent
with the engine's MemoryLoop doing all of it.

The LLM is Anthropic's Messages API, called with the request the Anthropic
SDK sends (urllib, so the example needs nothing installed):
ANTHROPIC_API_KEY, and ANTHROPIC_BASE_URL for a proxy or a local stub.
The memories live in MEMLOOP_DATA_DIR (default ./memloop-data).
"""

from __future__ import annotations

import json
import os
import urllib.request
from collections import deque

from memloop import Memory

MODEL = os.environ.get("ANTHROPIC_MODEL", "claude-sonnet-4-5")
SYSTEM = "You are a helpful assistant with long-term memory."
memory = Memory(os.environ.get("MEMLOOP_DATA_DIR", "./memloop-data"))


class ShortTermBuffer:
    """The session's recent turns, within a token budget (about 4
    characters a token): the oldest turns leave first."""

    def __init__(self, max_tokens: int = 2000) -> None:
        self.turns: deque[dict[str, str]] = deque()
        self.max_tokens = max_tokens

    def add(self, role: str, content: str) -> None:
        self.turns.append({"role": role, "content": content})
        while sum(len(t["content"]) for t in self.turns) / 4 > self.max_tokens and len(self.turns) > 1:
            self.turns.popleft()


buffers: dict[str, ShortTermBuffer] = {}


def build_context(user_id: str, session_id: str, user_input: str) -> tuple[str, list[dict[str, str]]]:
    """System prompt with the memories found for this input, then the
    session's recent turns, then the input."""
    hits = memory.search(user_input, filters={"user_id": user_id}, top_k=5)["results"]
    remembered = "\n".join(f"- {h['memory']}" for h in hits)
    system = SYSTEM + ("\n\nWhat you remember about the user:\n" + remembered if remembered else "")
    buffer = buffers.setdefault(session_id, ShortTermBuffer())
    return system, [*buffer.turns, {"role": "user", "content": user_input}]


def should_persist(user_input: str) -> bool:
    """Worth keeping long-term: something the user says about themselves,
    not a question or small talk."""
    text = user_input.strip().lower()
    return not text.endswith("?") and any(w in text.split() for w in ("i", "i'm", "my", "we"))


def call_llm(system: str, messages: list[dict[str, str]]) -> str:
    base = os.environ.get("ANTHROPIC_BASE_URL", "https://api.anthropic.com").rstrip("/")
    body = json.dumps({"model": MODEL, "max_tokens": 512, "system": system, "messages": messages})
    req = urllib.request.Request(
        f"{base}/v1/messages", data=body.encode(), method="POST",
        headers={"x-api-key": os.environ["ANTHROPIC_API_KEY"], "anthropic-version": "2023-06-01",
                 "content-type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=60) as resp:
        answer = json.load(resp)
    return "".join(part["text"] for part in answer["content"] if part["type"] == "text")


def agent_turn(user_id: str, session_id: str, user_input: str) -> str:
    system, messages = build_context(user_id, session_id, user_input)
    reply = call_llm(system, messages)
    buffer = buffers.setdefault(session_id, ShortTermBuffer())
    buffer.add("user", user_input)
    buffer.add("assistant", reply)
    if should_persist(user_input):
        memory.add([{"role": "user", "content": user_input}, {"role": "assistant", "content": reply}],
                   user_id=user_id, run_id=session_id)
    return reply


if __name__ == "__main__":
    print(agent_turn("alice", "monday", "I'm vegetarian and allergic to peanuts."))
    print(agent_turn("alice", "tuesday", "What food should I avoid?"))

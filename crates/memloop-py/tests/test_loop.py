"""memloop's own loop from Python, against a loopback LLM speaking
Anthropic's Messages wire format."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

import memloop
from conftest import REPO, llm_config
from memloop import Memory, MemoryLoop


def test_turns_recall_across_sessions_and_trace_what_they_did(tmp_path, stub):
    m = Memory(tmp_path / "d", config={"llm": llm_config(stub)})
    lp = MemoryLoop(m)
    assert lp.has_llm
    first = lp.turn("I'm vegetarian and allergic to peanuts.", user_id="alice", session_id="mon")
    assert first.gate["persist"] is True, first.gate
    assert any(w["event"] == "ADD" for w in first.writes), first.writes
    assert first.system and first.messages[-1]["content"].endswith("allergic to peanuts.")

    nxt = lp.turn("What food should I avoid?", user_id="alice", session_id="tue")
    assert nxt.retrieved, "the fact from Monday is recalled"
    top = nxt.retrieved[0]
    assert "peanuts" in top["memory"] and top["included"] is True and top["score"] > 0
    assert "peanuts" in nxt.system, "what was retrieved is what the prompt holds"
    assert nxt.reply is not None and nxt.reply.startswith("From memory:") and "peanuts" in nxt.reply
    sent = stub.requests[-1]["body"]
    assert "peanuts" in str(sent["system"]) and stub.requests[-1]["api_key"] == "sk-test"
    assert nxt.tokens["total_input"] > 0
    assert "mon" in [s["id"] for s in lp.sessions("alice")]
    assert isinstance(lp.entities("alice"), list)


def test_context_and_record_turn_for_an_agent_with_its_own_model(memory):
    lp = MemoryLoop(memory)
    assert not lp.has_llm
    with pytest.raises(memloop.InvalidInput, match="no LLM is configured"):
        lp.turn("hi", user_id="bob", session_id="s1")
    rec = lp.record_turn(
        [{"role": "user", "content": "My daughter's name is Mia and she is seven."},
         {"role": "assistant", "content": "Lovely! Seven is a fun age."}],
        user_id="bob", session_id="s1", turn_id="t-1", timestamp="2026-11-30T09:00:00Z",
    )
    again = lp.record_turn(
        [{"role": "user", "content": "My daughter's name is Mia and she is seven."},
         {"role": "assistant", "content": "Lovely! Seven is a fun age."}],
        user_id="bob", session_id="s1", turn_id="t-1",
    )
    assert rec["replayed"] is False and rec["writes"], rec
    assert again["replayed"] is True, "a retry writes nothing twice"
    ctx = lp.context("How old is my daughter?", user_id="bob", session_id="s2")
    assert ctx.reply is None
    assert any("Mia" in r["memory"] for r in ctx.retrieved)
    assert "Mia" in ctx.system
    with pytest.raises(memloop.InvalidInput, match="session"):
        lp.record_turn([{"role": "user", "content": "x"}], user_id="bob", session_id=None)  # type: ignore[arg-type]


def test_a_loop_with_its_own_config(tmp_path, stub):
    m = Memory(tmp_path / "d")
    lp = MemoryLoop(m, config={"llm": llm_config(stub), "loop": {"system_prompt": "You are terse."}})
    out = lp.turn("I live in Porto.", user_id="c", session_id="s")
    assert out.system.startswith("You are terse.")
    assert out.reply is not None
    assert m.search("Porto", filters={"user_id": "c"})["results"], "the loop writes to the same store"


@pytest.mark.parametrize("script", ["agent_loop.py", "agent_loop_memloop.py"])
def test_the_python_examples_run(tmp_path, stub, script):
    env = dict(os.environ, ANTHROPIC_BASE_URL=stub.base_url, ANTHROPIC_API_KEY="sk-test",
               MEMLOOP_DATA_DIR=str(tmp_path / "d"))
    out = subprocess.run([sys.executable, str(REPO / "examples" / "python" / script)],
                         capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "peanuts" in out.stdout, out.stdout
    assert any(r["path"] == "/v1/messages" for r in stub.requests)

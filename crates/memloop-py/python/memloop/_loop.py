"""`memloop.MemoryLoop`: the design's loop, one call per turn, run by the
engine: read the session's short-term buffer, search the long-term store,
assemble the prompt within its token budget, call the LLM, write the
buffer, decide what to keep and write it, and return what it did."""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping, Optional, Sequence, Union, cast

from ._memory import Memory, When, _ids, _run, _to_json, _when_value


@dataclasses.dataclass(frozen=True)
class TurnResult:
    """One turn: the model's `reply` (None from `context()`, or without an
    LLM), the prompt exactly as sent (`system` and `messages`), and the
    `trace` of what was retrieved (ids, scores, whether each went into the
    prompt), the token cost by part, the gate's decision and what was
    written."""

    reply: Optional[str]
    system: str
    messages: list[dict[str, Any]]
    trace: dict[str, Any]

    @property
    def retrieved(self) -> list[dict[str, Any]]:
        """The memories recalled for this turn, best first: `id`, `memory`,
        `score`, `included` (in the prompt or cut by the budget)."""
        return cast("list[dict[str, Any]]", self.trace.get("retrieved", []))

    @property
    def gate(self) -> dict[str, Any]:
        """Whether the turn was kept long-term, and why."""
        return cast("dict[str, Any]", self.trace.get("gate", {}))

    @property
    def writes(self) -> list[dict[str, Any]]:
        """What the turn wrote long-term: ADD / UPDATE / DELETE / NOOP, with reasons."""
        return cast("list[dict[str, Any]]", self.trace.get("writes", []))

    @property
    def tokens(self) -> dict[str, Any]:
        """The prompt's tokens by part."""
        return cast("dict[str, Any]", self.trace.get("tokens", {}))


class MemoryLoop:
    """The loop over a `Memory`. `config` (optional) holds the
    configuration file's `loop`, `llm` and `short_term` sections for this
    loop; without it the memory's own configuration applies.

    `turn()` needs an LLM (`config={"llm": {"provider": "anthropic",
    "model": ...}}`); an agent that calls its own model uses `context()`
    for the prompt and `record_turn()` for what was said."""

    def __init__(self, memory: Memory, config: Optional[Mapping[str, Any]] = None) -> None:
        self.memory = memory
        if config is None:
            self._engine = memory._engine
        else:
            text = _to_json(dict(config), "config")
            self._engine = Memory._call_native(lambda: memory._engine.with_loop(text))

    @property
    def has_llm(self) -> bool:
        """Whether an LLM is configured for `turn()`."""
        return self._engine.has_llm

    def turn(
        self, text: str, *, user_id: str, session_id: str, agent_id: Optional[str] = None
    ) -> TurnResult:
        """One whole turn for what the user says: the reply and the trace."""
        return self._turn("turn", text, user_id, session_id, agent_id)

    def context(
        self, text: str, *, user_id: str, session_id: str, agent_id: Optional[str] = None
    ) -> TurnResult:
        """The prompt a turn would send (system prompt with the recalled
        memories, the session's recent turns, the input) and its trace;
        nothing is written, no LLM is called."""
        return self._turn("context", text, user_id, session_id, agent_id)

    def record_turn(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        user_id: str,
        session_id: str,
        agent_id: Optional[str] = None,
        turn_id: Optional[str] = None,
        timestamp: Optional[When] = None,
    ) -> dict[str, Any]:
        """Records an exchange your agent ran with its own model: the
        messages since the last one recorded (user, assistant, and tool
        calls in OpenAI's or Anthropic's shape). Appends them to the
        session, judges each side, writes what is worth keeping. A retry
        with the same `turn_id` writes nothing twice."""
        args: dict[str, Any] = {
            **_ids(user_id, agent_id, session_id),
            "messages": [dict(m) for m in messages],
        }
        if turn_id is not None:
            args["turn_id"] = turn_id
        if timestamp is not None:
            args["timestamp"] = _when_value(timestamp)
        return self._call("record", args)

    def sessions(self, user_id: str) -> list[dict[str, Any]]:
        """The user's sessions, newest first."""
        return self.memory.sessions(user_id)

    def entities(self, user_id: str, *, as_of: Optional[When] = None) -> list[dict[str, Any]]:
        """The entities the user's memories name."""
        return self.memory.entities(user_id, as_of=as_of)

    def procedures(self, query: str, *, user_id: str, top_k: Optional[int] = None) -> list[dict[str, Any]]:
        """The procedures recorded for a task like `query`."""
        return self.memory.search_procedures(query, user_id=user_id, top_k=top_k)

    def _turn(
        self, op: str, text: str, user_id: str, session_id: str, agent_id: Union[str, None]
    ) -> TurnResult:
        answer = self._call(op, {**_ids(user_id, agent_id, session_id), "input": text})
        return TurnResult(
            reply=answer.get("reply"),
            system=answer.get("system") or "",
            messages=answer.get("messages") or [],
            trace=answer.get("trace") or {},
        )

    def _call(self, op: str, args: Mapping[str, Any]) -> dict[str, Any]:
        return cast("dict[str, Any]", _run(self._engine, op, args))

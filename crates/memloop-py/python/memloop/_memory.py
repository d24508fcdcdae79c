"""`memloop.Memory`: Mem0's `Memory` interface over the embedded engine."""

from __future__ import annotations

import datetime as _dt
import json
import os
from typing import Any, Iterable, Literal, Mapping, Optional, Sequence, Union, cast

from . import _native
from . import _shape
from .errors import Error, InvalidInput, NotFound, from_code

Messages = Union[str, Mapping[str, Any], Sequence[Mapping[str, Any]]]
When = Union[str, int, float, _dt.date, _dt.datetime]

_ENTITY_PARAMS = frozenset({"user_id", "agent_id", "run_id"})
_UNSET: Any = object()


class Memory:
    """A memory store embedded in this process: one data directory (SQLite
    and the indexes beside it), the local embedding model, no server.

    Mem0's `Memory` methods with the same arguments and answers (`add`,
    `search`, `get`, `get_all`, `update`, `delete`, `delete_all`,
    `history`, `reset`), plus memloop's own (`sessions`, `entities`,
    `links`, procedures, time options). Safe to share between threads:
    every call releases the interpreter's lock while the engine works.

    `path` is the data directory (default: `config["data_dir"]`, then
    MEMLOOP_DATA_DIR, then `~/.local/share/memloop`); `config` a dict with
    the configuration file's sections (`embedder`, `store`, `llm`,
    `short_term`, `loop`, `forgetting`, `search`, `rerank`; docs/python.md);
    `tenant` walls these memories off from other tenants' in the same store.
    """

    def __init__(
        self,
        path: Union[str, "os.PathLike[str]", None] = None,
        config: Optional[Mapping[str, Any]] = None,
        *,
        tenant: Optional[str] = None,
    ) -> None:
        cfg = None if config is None else _to_json(_config_dict(config), "config")
        data_dir = None if path is None else os.fspath(path)
        try:
            self._engine = _native.Engine(data_dir, cfg, tenant)
        except _native.NativeError as e:
            raise from_code(*e.args) from None

    @classmethod
    def from_config(cls, config_dict: Mapping[str, Any]) -> "Memory":
        """Mem0's constructor from a dict: memloop's configuration sections;
        `path` or `data_dir` names the data directory."""
        cfg = dict(config_dict)
        path = cfg.pop("path", None)
        return cls(path, cfg or None)

    def with_tenant(self, tenant: str) -> "Memory":
        """The same store, acting in `tenant`: a wall no call crosses."""
        other = object.__new__(type(self))
        other._engine = self._call_native(lambda: self._engine.with_tenant(tenant))
        return other

    @property
    def tenant(self) -> str:
        """The tenant this handle acts in."""
        return self._engine.tenant

    @property
    def location(self) -> str:
        """The data directory (or the PostgreSQL store's URL without password)."""
        return self._engine.location

    # -- Mem0's interface -------------------------------------------------

    def add(
        self,
        messages: Messages,
        *,
        user_id: Optional[str] = None,
        agent_id: Optional[str] = None,
        run_id: Optional[str] = None,
        metadata: Optional[Mapping[str, Any]] = None,
        infer: bool = True,
        expiration_date: Union[str, _dt.date, None] = None,
        timestamp: Optional[When] = None,
        memory_type: Optional[str] = None,
        prompt: Optional[str] = None,
        session_id: Optional[str] = None,
        kind: Optional[str] = None,
        importance: Optional[float] = None,
    ) -> dict[str, Any]:
        """Stores what `messages` say about a user (or agent).

        `messages`: a string (one user message), a message dict, or a list
        of `{"role", "content"}` dicts. With `infer=True` (the default) each
        user message goes through the gate and the write pipeline: facts are
        distilled and reconciled with stored ones (ADD / UPDATE / DELETE /
        NOOP, history kept). With `infer=False` each non-system message is
        stored as given. `timestamp` is when it was said (memloop; Mem0's
        OSS refuses it); `expiration_date` (YYYY-MM-DD) hides the memories
        after that day. Returns `{"results": [{"id", "memory", "event", ...}]}`.
        """
        run_id = _one_session(run_id, session_id)
        if prompt is not None:
            raise InvalidInput(
                "prompt: memloop's write pipeline takes no per-call prompt; "
                "set the extraction model under config['llm'] (docs/python.md)",
                "invalid_input",
            )
        if memory_type is not None:
            if memory_type != "procedural_memory":
                raise InvalidInput(
                    "Invalid 'memory_type'. Please pass procedural_memory to create procedural memories.",
                    "invalid_input",
                )
            kind, infer = "procedure", False
        listed, from_list = _messages(messages)
        args: dict[str, Any] = {
            **_ids(user_id, agent_id, run_id),
            "messages": listed,
            "from_list": from_list,
            "infer": bool(infer),
        }
        if metadata is not None:
            args["metadata"] = _metadata(metadata)
        if expiration_date is not None:
            args["expires_at"] = _expiry_ms(expiration_date)
        if timestamp is not None:
            args["timestamp"] = _when_value(timestamp)
        if kind is not None:
            args["kind"] = kind
        if importance is not None:
            args["importance"] = importance
        return self._call("add", args)

    def search(
        self,
        query: str,
        *,
        top_k: int = 20,
        filters: Optional[Mapping[str, Any]] = None,
        threshold: Optional[float] = None,
        rerank: Optional[bool] = None,
        explain: bool = False,
        reference_date: Optional[When] = None,
        show_expired: bool = False,
        kinds: Optional[Iterable[str]] = None,
        as_of: Optional[When] = None,
        now: Optional[When] = None,
        time_mode: Optional[str] = None,
        expand: Optional[bool] = None,
        hops: Optional[int] = None,
        vector_weight: Optional[float] = None,
        keyword_weight: Optional[float] = None,
        include_superseded: bool = False,
        **kwargs: Any,
    ) -> dict[str, Any]:
        """Hybrid search (meaning, keywords, time) in the scope `filters`
        names: `filters={"user_id": "alice"}`, plus any conditions on
        metadata in Mem0's operators (`eq`, `ne`, `gt`, `gte`, `lt`, `lte`,
        `in`, `nin`, `contains`, `icontains`, `AND`, `OR`, `NOT`).

        Returns `{"results": [...]}`, best first; each hit has Mem0's keys
        (`id`, `memory`, `hash`, `metadata`, `score`, `created_at`, ...) and
        memloop's per-signal `scores`. `threshold` drops hits whose score
        (0..1, fused) is below it. memloop's own: `kinds`, `as_of` (search
        what was true then), `now` / `reference_date` (the time "last week"
        is read from), `time_mode`, `expand` / `hops` (entity links),
        `vector_weight` / `keyword_weight` (the fusion's weights, 0 to 10),
        `include_superseded`.
        """
        top_k = kwargs.pop("limit", top_k)
        _reject_kwargs(kwargs, "search")
        _check_top_k(top_k)
        if threshold is not None:
            if isinstance(threshold, bool) or not isinstance(threshold, (int, float)):
                raise InvalidInput("threshold must be a valid number", "invalid_input")
            if not 0 <= threshold <= 1:
                raise InvalidInput(
                    f"Invalid threshold: {threshold}. Must be between 0 and 1 (inclusive).",
                    "invalid_input",
                )
        if not isinstance(query, str):
            raise InvalidInput("Invalid query: must be a non-empty string.", "invalid_input")
        if not query.strip():
            raise InvalidInput("Invalid query: cannot be empty or whitespace-only.", "invalid_input")
        if show_expired:
            raise InvalidInput(
                "show_expired: expired memories are not searched; read what was true "
                "before they expired with as_of=",
                "invalid_input",
            )
        del explain  # every hit carries its per-signal scores
        if top_k == 0:
            return {"results": []}
        args: dict[str, Any] = {"query": query.strip(), "top_k": top_k,
                                "include_superseded": include_superseded}
        args["filters"] = _filters(filters)
        if threshold is not None:
            args["min_score"] = float(threshold)
        if kinds is not None:
            args["kinds"] = [kinds] if isinstance(kinds, str) else list(kinds)
        for name, value in (("as_of", as_of), ("now", now if now is not None else reference_date)):
            if value is not None:
                args[name] = _when_text(value, name)
        for name, value in (
            ("time_mode", time_mode),
            ("expand", expand),
            ("hops", hops),
            ("rerank", rerank),
            ("vector_weight", vector_weight),
            ("keyword_weight", keyword_weight),
        ):
            if value is not None:
                args[name] = value
        answer = self._call("search", args)
        answer["results"] = [_shape.item(h) for h in answer["results"]]
        return answer

    def get(self, memory_id: str, *, include_deleted: bool = False) -> Optional[dict[str, Any]]:
        """The memory with this id, or None when there is none (as Mem0
        answers). A deleted or superseded memory is None unless
        `include_deleted=True`; its `status` and `superseded_by` say which."""
        try:
            record = self._call("get", {"id": memory_id, "include_deleted": include_deleted})
        except NotFound:
            return None
        return _shape.item(record)

    def get_all(
        self,
        *,
        filters: Optional[Mapping[str, Any]] = None,
        top_k: int = 20,
        show_expired: bool = False,
        kinds: Optional[Iterable[str]] = None,
        include_superseded: bool = False,
        offset: int = 0,
        **kwargs: Any,
    ) -> dict[str, Any]:
        """The scope's memories, newest first: `{"results": [...]}`. The
        scope and conditions are given in `filters` as in `search`."""
        top_k = kwargs.pop("limit", top_k)
        _reject_kwargs(kwargs, "get_all")
        _check_top_k(top_k)
        if show_expired:
            raise InvalidInput(
                "show_expired: expired memories are not listed; read what was true then with search(as_of=)",
                "invalid_input",
            )
        if top_k == 0:
            return {"results": []}
        args: dict[str, Any] = {
            "filters": _filters(filters),
            "top_k": top_k,
            "include_superseded": include_superseded,
            "offset": offset,
        }
        if kinds is not None:
            args["kinds"] = [kinds] if isinstance(kinds, str) else list(kinds)
        answer = self._call("list", args)
        answer["results"] = [_shape.item(r) for r in answer["results"]]
        return answer

    def update(
        self,
        memory_id: str,
        text: Optional[str] = None,
        metadata: Optional[Mapping[str, Any]] = None,
        expiration_date: Any = _UNSET,
        data: Optional[str] = None,
    ) -> dict[str, Any]:
        """Changes a memory's text (re-embedded; the old text stays in its
        history), merges `metadata` into its metadata, or sets (None:
        clears) its `expiration_date`."""
        if text is None:
            text = data
        args: dict[str, Any] = {"id": memory_id}
        if text is not None:
            args["text"] = text
        if metadata is not None:
            args["metadata"] = _metadata(metadata)
        if expiration_date is None:
            args["clear_expiry"] = True
        elif expiration_date is not _UNSET:
            args["expires_at"] = _expiry_ms(expiration_date)
        written = self._call("update", args)
        return {"message": "Memory updated successfully!", "results": [written]}

    def delete(self, memory_id: str) -> dict[str, Any]:
        """Deletes one memory; its history is kept."""
        written = self._call("delete", {"id": memory_id})
        return {"message": "Memory deleted successfully!", "results": [written]}

    def delete_all(
        self,
        user_id: Optional[str] = None,
        agent_id: Optional[str] = None,
        run_id: Optional[str] = None,
        *,
        purge: bool = False,
    ) -> dict[str, Any]:
        """Deletes every memory of a user or agent (narrowed to a run when
        given); history is kept unless `purge=True`, which erases it too,
        with the user's short-term sessions."""
        if user_id is None and agent_id is None and run_id is None:
            raise InvalidInput(
                "At least one filter is required to delete all memories. "
                "If you want to delete all memories, use the `reset()` method.",
                "invalid_input",
            )
        report = self._call("delete_all", {**_ids(user_id, agent_id, run_id), "purge": purge})
        return {"message": "Memories deleted successfully!", **report}

    def history(self, memory_id: str) -> list[dict[str, Any]]:
        """What happened to a memory, oldest first: ADD, UPDATE, DELETE
        (superseded facts end here with the id of what replaced them)."""
        return [_shape.history_row(r) for r in self._call_list("history", {"id": memory_id})]

    def reset(self) -> None:
        """Erases every memory of this tenant, with its history and sessions."""
        self._call("reset", {})

    def close(self) -> None:
        """Nothing to release early: the store closes when the last handle
        is dropped. Kept for Mem0's interface (and `with Memory() as m:`)."""

    def __enter__(self) -> "Memory":
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        self.close()
        return False

    # -- memloop's own ----------------------------------------------------

    def sessions(self, user_id: str, *, agent_id: Optional[str] = None) -> list[dict[str, Any]]:
        """The user's sessions on the time axis, newest first, each with its
        first and last turn's time and its memories."""
        return self._call_list("sessions", _ids(user_id, agent_id, None))

    def entities(
        self, user_id: str, *, agent_id: Optional[str] = None, as_of: Optional[When] = None
    ) -> list[dict[str, Any]]:
        """The people, places and things the user's current memories name
        (or those true at `as_of`), most mentioned first."""
        args = _ids(user_id, agent_id, None)
        if as_of is not None:
            args["as_of"] = _when_text(as_of, "as_of")
        return self._call_list("entities", args)

    def links(
        self,
        entity: str,
        *,
        user_id: str,
        agent_id: Optional[str] = None,
        as_of: Optional[When] = None,
    ) -> dict[str, Any]:
        """One entity's relations and the memories that name it."""
        args = {**_ids(user_id, agent_id, None), "entity": entity}
        if as_of is not None:
            args["as_of"] = _when_text(as_of, "as_of")
        return self._call("links", args)

    def record_procedure(
        self, run: Mapping[str, Any], *, user_id: str, agent_id: Optional[str] = None
    ) -> dict[str, Any]:
        """Records one run of a task (`{"task", "steps", "outcome", ...}`)
        in the procedural layer (docs/layers.md)."""
        return self._call("record_procedure", {**_ids(user_id, agent_id, None), "run": dict(run)})

    def search_procedures(
        self, query: str, *, user_id: str, agent_id: Optional[str] = None, top_k: Optional[int] = None
    ) -> list[dict[str, Any]]:
        """The procedures for a task, by similarity, success rate and recency."""
        args: dict[str, Any] = {**_ids(user_id, agent_id, None), "query": query}
        if top_k is not None:
            args["top_k"] = top_k
        return self._call_list("search_procedures", args)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """The store's embedding model on `texts`: one unit vector each."""
        return self._call_list("embed", {"texts": [str(t) for t in texts]})

    def stats(self) -> dict[str, Any]:
        """Counts and sizes of the store."""
        return self._call("stats", {})

    # -- plumbing ---------------------------------------------------------

    def _call(self, op: str, args: Mapping[str, Any]) -> dict[str, Any]:
        return cast("dict[str, Any]", _run(self._engine, op, args))

    def _call_list(self, op: str, args: Mapping[str, Any]) -> list[Any]:
        return cast("list[Any]", _run(self._engine, op, args))

    @staticmethod
    def _call_native(f: Any) -> Any:
        try:
            return f()
        except _native.NativeError as e:
            raise from_code(*e.args) from None


def _run(engine: Any, op: str, args: Mapping[str, Any]) -> Any:
    """One engine call: the arguments as JSON in, the answer as JSON out,
    an engine error raised as its `memloop.Error` class."""
    text = _to_json(args, op)
    try:
        out = engine.call(op, text)
    except _native.NativeError as e:
        raise from_code(*e.args) from None
    return json.loads(out)


def _to_json(value: Any, what: str) -> str:
    try:
        return json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise InvalidInput(
            f"{what}: every value must be JSON (str, number, bool, None, list, dict): {e}",
            "invalid_input",
        ) from None


def _config_dict(config: Mapping[str, Any]) -> dict[str, Any]:
    """memloop's sections as given; Mem0's own keys (vector_store, embedder
    providers, history_db_path) have no meaning here and are refused."""
    if not isinstance(config, Mapping):
        raise InvalidInput("config must be a dict of sections (docs/python.md)", "invalid_input")
    cfg = dict(config)
    for key in ("vector_store", "history_db_path", "graph_store", "version", "custom_instructions"):
        if key in cfg:
            raise InvalidInput(
                f"config[{key!r}] is Mem0's; memloop keeps everything in one data directory "
                "(path=, or config['data_dir']) with its own embedding model: see docs/python.md "
                "for the sections it reads",
                "invalid_input",
            )
    if "data_dir" in cfg and cfg["data_dir"] is not None:
        cfg["data_dir"] = os.fspath(cfg["data_dir"])
    return cfg


def _one_session(run_id: Optional[str], session_id: Optional[str]) -> Optional[str]:
    if run_id is not None and session_id is not None and run_id != session_id:
        raise InvalidInput("give run_id or session_id (the same thing), not both", "invalid_input")
    return run_id if run_id is not None else session_id


def _ids(user_id: Any, agent_id: Any, run_id: Any) -> dict[str, Any]:
    ids: dict[str, Any] = {}
    for name, value in (("user_id", user_id), ("agent_id", agent_id), ("run_id", run_id)):
        if value is not None:
            ids[name] = _id_text(value, name)
    if "user_id" not in ids and "agent_id" not in ids:
        raise InvalidInput(
            "At least one of 'user_id' or 'agent_id' must be provided "
            "(run_id narrows to one session of theirs).",
            "invalid_input",
        )
    return ids


def _id_text(value: Any, name: str) -> str:
    text = str(value).strip() if isinstance(value, (str, int)) else None
    if not text:
        raise InvalidInput(
            f"Invalid {name}: cannot be empty or whitespace-only. Provide a valid identifier.",
            "invalid_input",
        )
    return text


def _reject_kwargs(kwargs: Mapping[str, Any], method: str) -> None:
    entity = _ENTITY_PARAMS & set(kwargs)
    if entity:
        raise InvalidInput(
            f"Top-level entity parameters {frozenset(entity)} are not supported in {method}(). "
            "Use filters={'user_id': '...'} instead.",
            "invalid_input",
        )
    if kwargs:
        raise TypeError(f"{method}() got unexpected keyword arguments: {sorted(kwargs)}")


def _check_top_k(top_k: Any) -> None:
    if isinstance(top_k, bool) or not isinstance(top_k, int):
        raise InvalidInput("top_k must be a valid integer", "invalid_input")
    if top_k < 0:
        raise InvalidInput(f"Invalid top_k: {top_k}. Must be a non-negative integer.", "invalid_input")


def _filters(filters: Optional[Mapping[str, Any]]) -> Any:
    if filters is None:
        raise InvalidInput(
            "filters must contain at least one of: user_id, agent_id. Example: filters={'user_id': 'u1'}",
            "invalid_input",
        )
    if isinstance(filters, str):
        raise InvalidInput(
            "filters must be a dict naming the scope: filters={'user_id': 'u1', ...}",
            "invalid_input",
        )
    out = dict(filters)
    for name in _ENTITY_PARAMS:
        if name in out and not isinstance(out[name], (dict, list)):
            out[name] = _id_text(out[name], name)
    return out


def _messages(messages: Messages) -> tuple[list[dict[str, str]], bool]:
    """Mem0's forms, as the list the engine reads: a string is one user
    message; a message's content may be a list of parts (its text parts
    are kept); messages without a role or content are skipped."""
    if isinstance(messages, str):
        return [{"role": "user", "content": messages}], False
    if isinstance(messages, Mapping):
        items: list[Any] = [messages]
    elif isinstance(messages, (list, tuple)):
        items = list(messages)
    else:
        raise InvalidInput(
            f"messages must be str, dict, or list[dict] (got {type(messages).__name__})",
            "invalid_input",
        )
    out = []
    for i, m in enumerate(items):
        if not isinstance(m, Mapping):
            raise InvalidInput(
                f"messages[{i}] must be a dict like {{'role': 'user', 'content': '...'}} "
                f"(got {type(m).__name__})",
                "invalid_input",
            )
        role, content = m.get("role"), m.get("content")
        if isinstance(content, list):
            texts = [p.get("text", "") for p in content if isinstance(p, Mapping) and p.get("type") == "text"]
            content = "\n".join(t for t in texts if t) or None
        if not role or content is None:
            continue
        if not isinstance(content, str):
            raise InvalidInput(f"messages[{i}]['content'] must be a string", "invalid_input")
        out.append({"role": str(role), "content": content})
    if not out:
        raise InvalidInput(
            "nothing to add: no message has both a role and a content", "invalid_input"
        )
    return out, True


def _metadata(metadata: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(metadata, Mapping):
        raise InvalidInput("metadata must be a dict", "invalid_input")
    return {k: v for k, v in metadata.items() if k not in _ENTITY_PARAMS}


def _expiry_ms(value: Any) -> int:
    """The end (UTC) of the day given: a memory expiring today is still
    read today, as in Mem0."""
    if isinstance(value, _dt.datetime):
        day = value.date()
    elif isinstance(value, _dt.date):
        day = value
    elif isinstance(value, str):
        try:
            day = _dt.date.fromisoformat(value)
        except ValueError:
            raise InvalidInput(
                "expiration_date must be a valid date in YYYY-MM-DD format.", "invalid_input"
            ) from None
    else:
        raise InvalidInput("expiration_date must be a date string in YYYY-MM-DD format.", "invalid_input")
    end = _dt.datetime.combine(day + _dt.timedelta(days=1), _dt.time(), _dt.timezone.utc)
    return int(end.timestamp() * 1000)


def _when_value(value: When) -> Any:
    """A time as the engine reads `timestamp`: Unix seconds or text."""
    if isinstance(value, bool):
        raise InvalidInput("timestamp must be a datetime, a date, Unix seconds or an RFC 3339 string", "invalid_input")
    if isinstance(value, (int, float)):
        return value
    return _when_text(value, "timestamp")


def _when_text(value: When, name: str) -> str:
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.timezone.utc)
        return value.isoformat()
    if isinstance(value, _dt.date):
        return value.isoformat()
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return _dt.datetime.fromtimestamp(value, _dt.timezone.utc).isoformat()
    raise InvalidInput(
        f"{name} must be a datetime, a date, Unix seconds or a string (2026-11-30 or RFC 3339)",
        "invalid_input",
    )


__all__ = ["Memory", "Error"]

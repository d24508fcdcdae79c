"""The exceptions memloop raises: one base class, `memloop.Error`, and a class
per kind of failure. Each carries the engine's stable `code` and the message
the CLI prints for the same error (what was wrong and what to do).

`InvalidInput` and `NotFound` are also `ValueError`s, as the errors Mem0's
`Memory` raises for bad arguments and unknown ids are, so code written
against Mem0 catches them unchanged.
"""

from __future__ import annotations

__all__ = [
    "Error",
    "InvalidInput",
    "NotFound",
    "Busy",
    "Unavailable",
    "Rejected",
    "ModelMissing",
    "Corruption",
]


class Error(Exception):
    """Any error from memloop. `code` is stable (e.g. "invalid_input"),
    `message` says what was wrong and what to do."""

    code: str
    message: str

    def __init__(self, message: str, code: str = "internal") -> None:
        super().__init__(message)
        self.message = message
        self.code = code


class InvalidInput(Error, ValueError):
    """A bad argument: nothing was written. The message names the argument
    and what it accepts."""


class NotFound(Error, LookupError, ValueError):
    """No current memory (or entity) with that id or name in this tenant."""


class Busy(Error):
    """The database stayed locked for the whole busy timeout; retry."""


class Unavailable(Error):
    """A remote service (the LLM, Redis, PostgreSQL) did not answer; retry."""


class Rejected(Error):
    """A remote service (the LLM provider) refused the request; retrying
    the same request will not help."""


class ModelMissing(Error):
    """The local embedding model is missing or damaged: run
    `python -m memloop fetch-model`, or set MEMLOOP_MODEL_DIR."""


class Corruption(Error):
    """Stored data is damaged, newer than this version, or was written with
    another embedding model."""


_BY_CODE: dict[str, type[Error]] = {
    "invalid_input": InvalidInput,
    "not_found": NotFound,
    "busy": Busy,
    "remote_unavailable": Unavailable,
    "remote_rejected": Rejected,
    "model_missing": ModelMissing,
    "model_invalid": ModelMissing,
    "embedder_mismatch": Corruption,
    "corruption": Corruption,
    "schema_too_new": Corruption,
}

_FETCH_HINT = " (from Python: python -m memloop fetch-model)"
# The script whose model `fetch-model` fetches (all-MiniLM-L6-v2's).
_FETCHES = "scripts/fetch-model.sh"


def from_code(code: str, message: str) -> Error:
    """The exception for an engine error `code`."""
    cls = _BY_CODE.get(code, Error)
    if cls is ModelMissing and _FETCHES in message and _FETCH_HINT not in message:
        message += _FETCH_HINT
    return cls(message, code)

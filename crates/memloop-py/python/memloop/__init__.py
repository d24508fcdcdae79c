"""memloop: a memory engine for LLM agents, embedded in this process.

    from memloop import Memory
    m = Memory("./memloop-data")
    m.add("I'm vegetarian and allergic to peanuts.", user_id="alice")
    hits = m.search("what should I cook?", filters={"user_id": "alice"})

`Memory` has Mem0's interface (change the import, keep the code);
`MemoryLoop` runs the whole turn (recall, prompt, LLM, what to keep);
`AsyncMemory` is `Memory` for asyncio. Errors are `memloop.Error`
subclasses. The embedding model is fetched once with
`python -m memloop fetch-model`. Documentation: docs/python.md.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from ._async import AsyncMemory
from ._loop import MemoryLoop, TurnResult
from ._memory import Memory
from .errors import (
    Busy,
    Corruption,
    Error,
    InvalidInput,
    ModelMissing,
    NotFound,
    Rejected,
    Unavailable,
)

try:
    __version__ = version("memloop")
except PackageNotFoundError:  # run from a source tree
    __version__ = "0.0.0"

# Listed, not computed: type checkers read __all__ to know what is exported.
__all__ = [
    "Memory", "AsyncMemory", "MemoryLoop", "TurnResult",
    "Error", "InvalidInput", "NotFound", "Busy", "Unavailable", "Rejected", "ModelMissing", "Corruption",
]

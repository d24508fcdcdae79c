"""`memloop.AsyncMemory`: `Memory` for asyncio code. Each call runs on a
worker thread (`asyncio.to_thread`); the engine releases the interpreter's
lock while it works, so the event loop and other calls go on meanwhile."""

from __future__ import annotations

import asyncio
import functools
from typing import Any, Callable, Literal, Mapping, Optional, Sequence, TypeVar

from ._memory import Memory

T = TypeVar("T")


class AsyncMemory:
    """The same store and arguments as `Memory`, every method awaitable."""

    def __init__(
        self,
        path: Any = None,
        config: Optional[Mapping[str, Any]] = None,
        *,
        tenant: Optional[str] = None,
        memory: Optional[Memory] = None,
    ) -> None:
        self.sync = memory if memory is not None else Memory(path, config, tenant=tenant)

    @classmethod
    def from_config(cls, config_dict: Mapping[str, Any]) -> "AsyncMemory":
        return cls(memory=Memory.from_config(config_dict))

    async def _run(self, f: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return await asyncio.to_thread(functools.partial(f, *args, **kwargs))

    async def add(self, messages: Any, **kwargs: Any) -> dict[str, Any]:
        """`Memory.add`, awaited."""
        return await self._run(self.sync.add, messages, **kwargs)

    async def search(self, query: str, **kwargs: Any) -> dict[str, Any]:
        """`Memory.search`, awaited."""
        return await self._run(self.sync.search, query, **kwargs)

    async def get(self, memory_id: str, **kwargs: Any) -> Optional[dict[str, Any]]:
        """`Memory.get`, awaited."""
        return await self._run(self.sync.get, memory_id, **kwargs)

    async def get_all(self, **kwargs: Any) -> dict[str, Any]:
        """`Memory.get_all`, awaited."""
        return await self._run(self.sync.get_all, **kwargs)

    async def update(self, memory_id: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """`Memory.update`, awaited."""
        return await self._run(self.sync.update, memory_id, *args, **kwargs)

    async def delete(self, memory_id: str) -> dict[str, Any]:
        """`Memory.delete`, awaited."""
        return await self._run(self.sync.delete, memory_id)

    async def delete_all(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """`Memory.delete_all`, awaited."""
        return await self._run(self.sync.delete_all, *args, **kwargs)

    async def history(self, memory_id: str) -> list[dict[str, Any]]:
        """`Memory.history`, awaited."""
        return await self._run(self.sync.history, memory_id)

    async def reset(self) -> None:
        """`Memory.reset`, awaited."""
        await self._run(self.sync.reset)

    async def sessions(self, user_id: str, **kwargs: Any) -> list[dict[str, Any]]:
        """`Memory.sessions`, awaited."""
        return await self._run(self.sync.sessions, user_id, **kwargs)

    async def entities(self, user_id: str, **kwargs: Any) -> list[dict[str, Any]]:
        """`Memory.entities`, awaited."""
        return await self._run(self.sync.entities, user_id, **kwargs)

    async def links(self, entity: str, **kwargs: Any) -> dict[str, Any]:
        """`Memory.links`, awaited."""
        return await self._run(self.sync.links, entity, **kwargs)

    async def record_procedure(self, run: Mapping[str, Any], **kwargs: Any) -> dict[str, Any]:
        """`Memory.record_procedure`, awaited."""
        return await self._run(self.sync.record_procedure, run, **kwargs)

    async def search_procedures(self, query: str, **kwargs: Any) -> list[dict[str, Any]]:
        """`Memory.search_procedures`, awaited."""
        return await self._run(self.sync.search_procedures, query, **kwargs)

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """`Memory.embed`, awaited."""
        return await self._run(self.sync.embed, texts)

    async def stats(self) -> dict[str, Any]:
        """`Memory.stats`, awaited."""
        return await self._run(self.sync.stats)

    def with_tenant(self, tenant: str) -> "AsyncMemory":
        """The same store behind another tenant's wall."""
        return AsyncMemory(memory=self.sync.with_tenant(tenant))

    def close(self) -> None:
        self.sync.close()

    async def __aenter__(self) -> "AsyncMemory":
        return self

    async def __aexit__(self, *exc: object) -> Literal[False]:
        self.close()
        return False

"""``AsyncHandleStore``: the handle store for asyncio code (the MCP Python SDK's servers are async).

Every call of :class:`HandleStore` blocks: it runs a plugin export that reads and writes files and may wait
up to ``lock_wait`` for a shard lock another process holds, or (``state_url``: Redis or Valkey) waits up to
``timeout`` for the server. Here each call runs in this store's own thread
pool (one thread per plugin instance of the pool), so the event loop never waits for one.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
from typing import Any, TypeVar
from collections.abc import Callable

from ._handles import Created, GCResult, HandleList, HandleStore, Touched, Value

__all__ = ["AsyncHandleStore"]

T = TypeVar("T")


class AsyncHandleStore:
    """A :class:`HandleStore` whose methods are coroutines; an async context manager.

    ::

        store = await AsyncHandleStore.open("my-server")   # options as HandleStore's
        shared = await AsyncHandleStore.open("my-server", state_url="redis://127.0.0.1:6379/0", timeout=2.0)
        c = await store.create("", b"{}")
        v = await store.get(c.handle, "")
        await store.aclose()

    :meth:`open` builds the store in a worker thread (compiling the plugin on a cold cache takes seconds);
    ``AsyncHandleStore(store)`` wraps a store already open. Each method runs the store's method of the
    same name, with the same arguments, results and exceptions, in a thread pool of ``store.pool_size``
    threads (calls beyond it queue there, not on the loop). Cancelling a coroutine does not stop its call,
    which completes in its thread (a put may still happen). Thread- and task-safe.
    """

    def __init__(self, store: HandleStore) -> None:
        self._store = store
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=store.pool_size,
                                                           thread_name_prefix="mcp-resume-handles")

    @classmethod
    async def open(cls, app: str, **options: Any) -> AsyncHandleStore:
        """Open ``HandleStore(app, **options)`` in a worker thread: the same options (``state_root``, ``idle_ttl``,
        ..., ``state_url`` and ``timeout`` for Redis). Raises what :class:`HandleStore` raises."""
        return cls(await asyncio.to_thread(functools.partial(HandleStore, app, **options)))

    @property
    def store(self) -> HandleStore:
        """The synchronous store underneath (its properties: ``idle_ttl``, ``max_age``, ``state_dir``...)."""
        return self._store

    async def _run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._pool, functools.partial(fn, *args, **kwargs))

    async def create(self, principal: str, value: bytes, *, idle_ttl: Any = None, max_age: Any = None) -> Created:
        """:meth:`HandleStore.create` off the loop."""
        return await self._run(self._store.create, principal, value, idle_ttl=idle_ttl, max_age=max_age)

    async def get(self, handle: str, principal: str) -> Value:
        """:meth:`HandleStore.get` off the loop."""
        return await self._run(self._store.get, handle, principal)

    async def put(self, handle: str, principal: str, value: bytes, *, expect: int | None = None) -> int:
        """:meth:`HandleStore.put` off the loop."""
        return await self._run(self._store.put, handle, principal, value, expect=expect)

    async def delete(self, handle: str, principal: str, *, expect: int | None = None) -> None:
        """:meth:`HandleStore.delete` off the loop."""
        await self._run(self._store.delete, handle, principal, expect=expect)

    async def touch(self, handle: str, principal: str) -> Touched:
        """:meth:`HandleStore.touch` off the loop."""
        return await self._run(self._store.touch, handle, principal)

    async def exists(self, handle: str, principal: str) -> bool:
        """:meth:`HandleStore.exists` off the loop."""
        return await self._run(self._store.exists, handle, principal)

    async def list(self) -> HandleList:
        """:meth:`HandleStore.list` off the loop."""
        return await self._run(self._store.list)

    async def gc(self) -> GCResult:
        """:meth:`HandleStore.gc` off the loop."""
        return await self._run(self._store.gc)

    async def aclose(self) -> None:
        """Close the store (after the calls running finish their export; its Redis clients with the last) and the
        thread pool. Idempotent."""
        await asyncio.to_thread(self._store.close)
        self._pool.shutdown(wait=False)

    async def __aenter__(self) -> AsyncHandleStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

"""``AsyncHandleStore``: the handle store for asyncio code (the MCP Python SDK's servers are async).

Every call of :class:`HandleStore` blocks: it runs a plugin export that reads and writes files and may wait
up to ``lock_wait`` for a shard lock another process holds, or (``state_url``: Redis or Valkey) waits up to
``timeout`` for the server; opening one compiles the plugin when the compilation cache is cold (seconds).
Here the store opens in a thread of its own as soon as it is constructed, and each call runs in this
store's own thread pool (one thread per plugin instance of the pool), so the event loop never waits.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import inspect
import os
import threading
from typing import Any, TypeVar
from collections.abc import Callable

from ._errors import StoreUnavailableError
from ._handles import Created, GCResult, HandleList, HandleStore, Touched, Value

__all__ = ["AsyncHandleStore"]

T = TypeVar("T")

_SIGNATURE = inspect.signature(HandleStore)


class AsyncHandleStore:
    """A :class:`HandleStore` that opens in the background and whose methods are coroutines; an async context
    manager.

    ::

        store = AsyncHandleStore("my-server")   # returns at once; options (keyword-only) as HandleStore's
        shared = AsyncHandleStore("my-server", state_url="redis://127.0.0.1:6379/0", timeout=2.0)
        c = await store.create("", b"{}")       # the first call waits for the open; raises its failure
        v = await store.get(c.handle, "")
        await store.aclose()

    The constructor checks the keywords against :class:`HandleStore`'s (an unknown one raises ``TypeError``, as
    for every store) and starts a daemon thread (``mcp-resume-handles-open``) that opens
    ``HandleStore(app, **options)``; nothing waits for it. Every coroutine first awaits that open and raises
    what it raised (:class:`InvalidAppError`, :class:`InvalidOptionError`, :class:`StoreUnavailableError`), then
    runs the store's method of the same name, with the same arguments, results and exceptions, in a thread pool
    of ``pool_size`` threads (calls beyond it queue there, not on the loop). Cancelling a coroutine does not stop
    its call, which completes in its thread (a put may still happen). Thread- and task-safe.
    """

    #: The store class to open (tests only).
    _store_class: type[HandleStore] = HandleStore

    def __init__(self, app: str, **options: Any) -> None:
        _SIGNATURE.bind(app, **options)  # TypeError for an unknown keyword, before anything starts
        pool_size = options.get("pool_size")
        workers = pool_size if isinstance(pool_size, int) and not isinstance(pool_size, bool) and pool_size > 0 \
            else (os.cpu_count() or 1)
        self._app = app
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="mcp-resume-handles")
        self._opened: concurrent.futures.Future[HandleStore] = concurrent.futures.Future()
        self._mu = threading.Lock()
        self._closing = False
        threading.Thread(target=self._open, args=(app, options), name="mcp-resume-handles-open", daemon=True).start()

    def _open(self, app: str, options: dict[str, Any]) -> None:
        """The thread: open the store and publish it or the failure; closed meanwhile, close it."""
        try:
            store = self._store_class(app, **options)
        except BaseException as e:  # noqa: BLE001 - published to every call
            self._opened.set_exception(e)
            return
        with self._mu:
            closing = self._closing
            self._opened.set_result(store)
        if closing:
            with contextlib.suppress(Exception):
                store.close()

    @property
    def app(self) -> str:
        """The app name given to the constructor."""
        return self._app

    def ready(self) -> bool:
        """True once the background open has ended, successfully or not."""
        return self._opened.done()

    @property
    def store(self) -> HandleStore:
        """The synchronous store underneath (its properties: ``idle_ttl``, ``max_age``, ``state_dir``...), once open.
        Raises the open's failure, or :class:`StoreUnavailableError` while it is still opening
        (``await`` :meth:`opened` to wait)."""
        if not self._opened.done():
            raise StoreUnavailableError("the handle store is still opening")
        return self._opened.result()

    async def opened(self) -> HandleStore:
        """The synchronous store underneath, once the background open has ended; raises its failure."""
        return await asyncio.wrap_future(self._opened)

    async def _run(self, name: str, *args: Any, **kwargs: Any) -> Any:
        store = await self.opened()
        fn: Callable[..., Any] = getattr(store, name)
        try:
            fut = asyncio.get_running_loop().run_in_executor(self._pool, functools.partial(fn, *args, **kwargs))
        except RuntimeError:  # the pool is shut down: closed
            raise StoreUnavailableError("the handle store is closed") from None
        return await fut

    async def create(self, principal: str, value: bytes, *, idle_ttl: Any = None, max_age: Any = None) -> Created:
        """:meth:`HandleStore.create` off the loop: the new handle (:class:`Created`)."""
        result: Created = await self._run("create", principal, value, idle_ttl=idle_ttl, max_age=max_age)
        return result

    async def get(self, handle: str, principal: str) -> Value:
        """:meth:`HandleStore.get` off the loop: the value and its generation (:class:`Value`)."""
        result: Value = await self._run("get", handle, principal)
        return result

    async def put(self, handle: str, principal: str, value: bytes, *, expect: int | None = None) -> int:
        """:meth:`HandleStore.put` off the loop: the new generation. ``expect=None`` writes unconditionally (the
        last writer wins); an int writes only at that generation, else :class:`ConflictError`."""
        result: int = await self._run("put", handle, principal, value, expect=expect)
        return result

    async def delete(self, handle: str, principal: str, *, expect: int | None = None) -> None:
        """:meth:`HandleStore.delete` off the loop. ``expect=None`` deletes unconditionally; an int only at that
        generation, else :class:`ConflictError`."""
        await self._run("delete", handle, principal, expect=expect)

    async def touch(self, handle: str, principal: str) -> Touched:
        """:meth:`HandleStore.touch` off the loop."""
        result: Touched = await self._run("touch", handle, principal)
        return result

    async def exists(self, handle: str, principal: str) -> bool:
        """:meth:`HandleStore.exists` off the loop."""
        result: bool = await self._run("exists", handle, principal)
        return result

    async def list(self) -> HandleList:
        """:meth:`HandleStore.list` off the loop."""
        result: HandleList = await self._run("list")
        return result

    async def gc(self) -> GCResult:
        """:meth:`HandleStore.gc` off the loop."""
        result: GCResult = await self._run("gc")
        return result

    def close(self) -> None:
        """Close the store now (the calls running finish their export; its Redis clients close with the last) or,
        while it is still opening, as soon as it has opened, without waiting; then the thread pool. Idempotent;
        never raises. Later calls raise :class:`StoreUnavailableError`."""
        with self._mu:
            self._closing = True
            done = self._opened.done()
        if done and self._opened.exception() is None:
            self._opened.result().close()
        self._pool.shutdown(wait=False)

    async def aclose(self) -> None:
        """:meth:`close`, in a worker thread."""
        await asyncio.to_thread(self.close)

    async def __aenter__(self) -> AsyncHandleStore:
        """The store itself; leaving the ``async with`` block closes it."""
        return self

    async def __aexit__(self, *exc: object) -> None:
        """Close the store (:meth:`aclose`); exceptions propagate."""
        await self.aclose()

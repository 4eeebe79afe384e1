"""``AsyncResumeTokenStore``: the store for asyncio servers, opened and loaded off the startup path.

Opening a store compiles the plugin when the compilation cache is cold (a first start after ``pip
install``: ~3 s on two cores, 5 s of CPU; ~0.2 s warm), and the first ``load`` resolves the MCP host.
A server that did both before serving would stall its MCP handshake that long. This class starts both in
a worker thread as soon as it is constructed and returns at once; the coroutines await that start, and
every later call runs in a worker thread, so the event loop (and the handshake) never waits for the
plugin.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import threading
from typing import Any
from collections.abc import Callable, Iterable

from ._errors import InvalidTokenError
from ._store import Logger, PathLike, ResumeTokenStore

__all__ = ["AsyncResumeTokenStore"]


class AsyncResumeTokenStore:
    """A :class:`ResumeTokenStore` for asyncio code whose opening and first ``load`` run in the background.

    ::

        store = AsyncResumeTokenStore("my-server")  # at startup, before serving: returns at once
        ...
        token = await store.load()                  # in a tool handler: the token loaded at startup
        await store.store(session.token)

    Construct it once, at startup or in the MCP SDK's lifespan (:mod:`mcp_resume.mcp` does): construction starts a
    daemon thread (``mcp-resume-open``) that opens the store and makes its first ``load`` right away; nothing
    else waits for that thread. The stdio check sees the MCP host's pipes even once the SDK serves stdio
    (the package copied fds 0 and 1 when it was imported). Arguments are those of :class:`ResumeTokenStore`
    (options keyword-only); a value JSON cannot carry (bytes, an arbitrary object) raises
    :class:`InvalidOptionError` here, every other failure of opening (a value of the wrong type included) (:class:`InvalidAppError`, :class:`InvalidOptionError`, :class:`PluginError`) is
    logged once (event ``open_failed``) and turns resume off: :meth:`load` returns ``None`` and
    :meth:`store`/:meth:`reject` do nothing. :meth:`opened` returns the underlying store or raises that
    error.

    ``load``, ``store``, ``reject`` and ``aclose`` are coroutines for any asyncio loop (anyio's asyncio
    backend included, which the MCP Python SDK runs on); they await the start, then run the store's
    blocking call in the loop's default executor. They never raise, except :meth:`store` with
    :class:`InvalidTokenError`, as the synchronous store. Thread-safe, an async context manager.
    """

    #: The store class to open (tests only: a store on a pinned system).
    _store_class: type[ResumeTokenStore] = ResumeTokenStore

    def __init__(self, app: str, *, state_root: PathLike | None = None, logger: Logger | None = None,
                 launchers: Iterable[str] | None = None, instance: str | None = None) -> None:
        self._logger: Logger = logger if logger is not None else logging.getLogger("mcp_resume")
        # The cheap part here (argument types, host functions); compile, open and load in the thread.
        self._store = self._store_class(app, state_root=state_root, logger=logger, launchers=launchers, instance=instance,
                                       _defer=True)
        self._started: concurrent.futures.Future[str | None] = concurrent.futures.Future()
        self._error: BaseException | None = None
        self._first: bool = True
        self._mu = threading.Lock()
        self._closing = False
        threading.Thread(target=self._start, name="mcp-resume-open", daemon=True).start()

    def _start(self) -> None:
        """The thread: open the store, load once, publish the token; on failure log it once."""
        token: str | None = None
        try:
            self._store._connect()
            token = self._store.load()
        except Exception as e:  # noqa: BLE001 - resume off, never a crash
            self._error = e
            with contextlib.suppress(Exception):
                self._logger.error("mcp-resume: session resume unavailable, opening the store failed: %s", e,
                                   extra={"event": "open_failed", "detail": str(e)})
        finally:
            with self._mu:  # with close(): exactly one of the two sees the other and closes the store
                closing = self._closing
                self._started.set_result(token)
            if closing:  # closed during the start: release what the start took
                with contextlib.suppress(Exception):
                    self._store.close()

    @property
    def app(self) -> str:
        """The app name given to the constructor."""
        return self._store.app

    def ready(self) -> bool:
        """True once the background start (open and first ``load``) has ended, successfully or not."""
        return self._started.done()

    async def _wait(self) -> str | None:
        """The first ``load``'s token, once the start has ended."""
        return await asyncio.wrap_future(self._started)

    async def _run(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(None, fn, *args)

    async def opened(self) -> ResumeTokenStore:
        """The underlying :class:`ResumeTokenStore`, once open (for ``list``, ``prune``, ``whoami``, ``state_dir``).
        Raises the error that opening it raised (:class:`InvalidAppError`, :class:`PluginError`…)."""
        await self._wait()
        if self._error is not None:
            raise self._error
        return self._store

    async def load(self) -> str | None:
        """The first call: the token the start loaded (spec 000, "MCP Server Startup"), or ``None``. Later
        calls load again (:meth:`ResumeTokenStore.load`). ``None`` too when opening failed. Never raises."""
        token = await self._wait()
        with self._mu:
            first, self._first = self._first, False
        if first:
            return token
        return await self._run(self._store.load) if self._error is None else None

    async def store(self, token: str) -> None:
        """:meth:`ResumeTokenStore.store` in a worker thread, after the start. Raises
        :class:`InvalidTokenError` for a token that is not a ``str`` of 1-4096 visible ASCII bytes (checked by
        the plugin; before the start has ended only its type is checked here)."""
        if not isinstance(token, str):
            raise InvalidTokenError(f"invalid token: expected str, got {type(token).__name__}")
        await self._wait()
        if self._error is None:
            await self._run(self._store.store, token)

    async def reject(self) -> None:
        """:meth:`ResumeTokenStore.reject` in a worker thread, after the start. Never raises."""
        await self._wait()
        if self._error is None:
            await self._run(self._store.reject)

    def close(self) -> None:
        """Release the plugin and the token file's lock, now or, while the start is still running, as soon as
        it ends (without waiting for it). Idempotent; never raises."""
        with self._mu:
            self._closing = True
            started = self._started.done()
        if started:
            self._store.close()

    async def aclose(self) -> None:
        """:meth:`close`, in a worker thread."""
        await self._run(self.close)

    async def __aenter__(self) -> AsyncResumeTokenStore:
        """The store itself; leaving the ``async with`` block closes it."""
        return self

    async def __aexit__(self, *exc: object) -> None:
        """Close the store (:meth:`aclose`); exceptions propagate."""
        await self.aclose()

"""The adapter for the official MCP Python SDK (the ``mcp`` package's ``MCPServer``, FastMCP's name since mcp 2).

One line adds session resume and the handle store to a server; the tools use them through the request's
context::

    import mcp_resume.mcp  # at the top of the script, before the SDK serves stdio
    from mcp.server.mcpserver import Context, MCPServer

    server = MCPServer("notes", lifespan=mcp_resume.mcp.lifespan("notes"))

    @server.tool()
    @mcp_resume.mcp.tool_errors            # a store error becomes an isError result with structured content
    async def counter_add(handle: str, ctx: Context) -> dict:
        r = mcp_resume.mcp.of(ctx)         # the stores, bound to this request's principal
        value, generation = await r.update(handle, lambda doc: {"n": doc["n"] + 1})
        return {"n": value["n"], "generation": generation}

What it does:

- :func:`lifespan` opens an :class:`~mcp_resume.AsyncResumeTokenStore` and an :class:`~mcp_resume.AsyncHandleStore`
  when the server starts (the SDK enters its lifespan before it handles the first message), both in
  background threads, so the MCP handshake never waits for the plugin; it closes them when the server stops.
  A user's own lifespan composes with it (``lifespan(app, lifespan=mine)``).
- :func:`of` gives a tool (from its ``Context``) a :class:`Request`: the resume store (``load``/``store``/
  ``reject`` of a broker token, spec 000), the handle store, and JSON helpers bound to the request's
  principal: the bearer token's subject (else client id) the SDK verified (HTTP with auth), ``""`` without one
  (stdio: the process belongs to its one client).
- :func:`tool_errors` turns an :class:`~mcp_resume.MCPResumeError` raised in a tool into a ``CallToolResult``
  with ``isError: true``, ``structuredContent`` ``{"error": code, "message", "reason"?, "generation"?}`` and
  the same JSON as text (through the SDK's supported path: a tool may return a ``CallToolResult``).
- ``descriptions`` states the opened handle store's policy in tool descriptions: ``tools/list`` waits for the
  store to open (not the handshake), through a server middleware (``MCPServer.middleware``).

Requires ``mcp>=2.3`` (``pip install 'mcp-resume[mcp]'``). Import this module (or :mod:`mcp_resume`) before the
SDK serves stdio: the binding copies the MCP host's stdio at import (the SDK repoints fds 0 and 1 while it
serves), which is what lets a store opened in the lifespan resume.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import json
import logging
import random
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio

from ._async import AsyncResumeTokenStore
from ._errors import ConflictError, InvalidPrincipalError, InvalidValueError, MCPResumeError, StoreUnavailableError
from ._handles import Created, HandleStore
from ._handles_async import AsyncHandleStore

__all__ = ["Adapter", "Request", "error_result", "json_result", "lifespan", "of", "principal_of", "tool_errors"]

log = logging.getLogger("mcp_resume")

T = TypeVar("T")

#: Options that go to the resume store only, to the handle store only, and to both.
_RESUME_ONLY = ("launchers", "instance")
_BOTH = ("state_root", "logger")
_HANDLES_ONLY = tuple(p for p in inspect.signature(HandleStore).parameters if p not in ("app", *_BOTH))

#: How many times :meth:`Request.update` retries after a conflict, by default.
UPDATE_RETRIES = 5

#: The adapter each running server's lifespan opened (for :func:`of` with a server).
_RUNNING: weakref.WeakKeyDictionary[Any, Adapter] = weakref.WeakKeyDictionary()


class Adapter:
    """What the lifespan yields (``ctx.request_context.lifespan_context``): the server's two stores.

    ``app`` (str); ``resume``: the :class:`~mcp_resume.AsyncResumeTokenStore` (``None`` with ``resume=False``:
    HTTP servers have no MCP host to identify); ``handles``: the :class:`~mcp_resume.AsyncHandleStore`
    (``None`` with ``handles=False``); ``context``: what the user's own lifespan yielded (``None`` without one);
    ``update_retries`` (int). Both stores open in background threads from the moment the lifespan starts."""

    def __init__(self, app: str, resume: AsyncResumeTokenStore | None, handles: AsyncHandleStore | None,
                 update_retries: int) -> None:
        self.app = app
        self.resume = resume
        self.handles = handles
        self.context: Any = None
        self.update_retries = update_retries

    async def handle_store(self) -> AsyncHandleStore:
        """The handle store once open. Raises :class:`~mcp_resume.StoreUnavailableError` when the adapter has none
        or it could not open (the message says why; ``__cause__`` is the open's error)."""
        if self.handles is None:
            raise StoreUnavailableError("this server opened no handle store (handles=False)")
        try:
            await self.handles.opened()
        except MCPResumeError as e:
            raise StoreUnavailableError(f"the handle store cannot open: {e}") from e
        return self.handles

    def request(self, principal: str) -> Request:
        """A :class:`Request` of ``principal`` (``""``: anonymous) on this adapter's stores."""
        return Request(self, principal)


@dataclass
class Request:
    """The stores as one tool call sees them: bound to its ``principal`` (str, ``""`` anonymous).

    ``resume`` is the adapter's resume store (or ``None``), ``adapter`` the :class:`Adapter`. Every coroutine
    waits for the handle store to open (without blocking the event loop) and raises the store's exceptions
    (:class:`~mcp_resume.MCPResumeError`), which :func:`tool_errors` turns into tool errors."""

    adapter: Adapter
    principal: str

    @property
    def resume(self) -> AsyncResumeTokenStore | None:
        """The resume store (``await r.resume.load()``, ``store(token)``, ``reject()``), ``None`` when not opened."""
        return self.adapter.resume

    async def handles(self) -> AsyncHandleStore:
        """The handle store once open (:meth:`Adapter.handle_store`)."""
        return await self.adapter.handle_store()

    async def create_json(self, value: Any, *, idle_ttl: Any = None, max_age: Any = None) -> Created:
        """Store ``value`` (anything ``json.dumps`` takes) as UTF-8 JSON under a new handle of this principal:
        :class:`~mcp_resume.Created`. ``idle_ttl``/``max_age`` (timedelta or seconds) may only shorten the store's.
        Raises :class:`~mcp_resume.InvalidValueError` for a value JSON cannot carry, else as
        :meth:`~mcp_resume.HandleStore.create`."""
        return await (await self.handles()).create(self.principal, _encode(value), idle_ttl=idle_ttl, max_age=max_age)

    async def get_json(self, handle: str) -> tuple[Any, int]:
        """``(value, generation)`` of ``handle``: its value decoded from JSON. Raises
        :class:`~mcp_resume.InvalidValueError` when the stored value is not JSON, else as
        :meth:`~mcp_resume.HandleStore.get` (``HandleNotFoundError`` for another principal's handle...)."""
        v = await (await self.handles()).get(handle, self.principal)
        try:
            return json.loads(v.data), v.generation
        except ValueError:
            raise InvalidValueError("the stored value is not JSON") from None

    async def put_json(self, handle: str, value: Any, *, expect: int | None = None) -> int:
        """Replace the value of ``handle`` with ``value`` as JSON: the new generation. ``expect=None`` writes
        unconditionally (the last writer wins); an int only at that generation, else
        :class:`~mcp_resume.ConflictError` with the current ``generation``."""
        return await (await self.handles()).put(handle, self.principal, _encode(value), expect=expect)

    async def delete(self, handle: str, *, expect: int | None = None) -> None:
        """Delete ``handle``. ``expect=None`` unconditionally; an int only at that generation, else
        :class:`~mcp_resume.ConflictError`."""
        await (await self.handles()).delete(handle, self.principal, expect=expect)

    async def update(self, handle: str, fn: Callable[[Any], Any], *, retries: int | None = None) -> tuple[Any, int]:
        """Read-modify-write with compare-and-set: read ``handle``, apply ``fn`` (sync or async) to the decoded value,
        put its result with ``expect`` the generation read; on :class:`~mcp_resume.ConflictError` (another writer
        came first) start again after a random wait of up to 2**attempt ms (32 at most), at most ``retries`` more
        times (default the adapter's ``update_retries``, 5).
        Returns ``(new value, new generation)``. Raises the last ``ConflictError`` when every attempt lost, what
        ``fn`` raises, and what :meth:`get_json`/:meth:`put_json` raise."""
        retries = self.adapter.update_retries if retries is None else retries
        for attempt in range(retries + 1):
            value, generation = await self.get_json(handle)
            new = fn(value)
            if inspect.isawaitable(new):
                new = await new
            try:
                return new, await self.put_json(handle, new, expect=generation)
            except ConflictError:
                if attempt == retries:
                    raise
                # A random wait up to 2**attempt ms (32 at most; "full jitter"), so that writers that lost a race
                # at the same moment do not race again in lockstep.
                await anyio.sleep(random.uniform(0, min(2**attempt, 32)) / 1000)
        raise AssertionError("unreachable")


def _encode(value: Any) -> bytes:
    """``value`` as UTF-8 JSON. Raises :class:`~mcp_resume.InvalidValueError`."""
    try:
        return json.dumps(value).encode("utf-8")
    except (TypeError, ValueError) as e:
        raise InvalidValueError(f"the value is not JSON: {e}") from None


class lifespan:  # noqa: N801 - used as a function: lifespan=mcp_resume.mcp.lifespan(app)
    """``MCPServer(..., lifespan=mcp_resume.mcp.lifespan(app, **options))``: open both stores when the server starts,
    close them when it stops; the lifespan's value (``ctx.request_context.lifespan_context``) is the
    :class:`Adapter`.

    ``app`` (str): the app name of both stores. Options, keyword-only (an unknown one raises ``TypeError``):
    the stores' own (``state_root``, ``logger`` for both; ``launchers``, ``instance`` for the resume store;
    ``state_url``, ``timeout``, ``idle_ttl``, ``max_age``, ``tombstone``, ``max_handles``,
    ``max_handles_per_principal``, ``max_value_bytes``, ``lock_wait``, ``pool_size``, ``clock`` for the handle store: see :class:`~mcp_resume.ResumeTokenStore`,
    :class:`~mcp_resume.HandleStore`), and the adapter's: ``resume`` (bool, default True: open the resume store;
    False for HTTP servers, which have no MCP host parent), ``handles`` (bool, default True), ``update_retries``
    (int, default 5: :meth:`Request.update`), ``lifespan`` (the user's own lifespan, ``server ->`` async context
    manager, entered after the stores start opening and left before they close; its value is
    :attr:`Adapter.context`; it can reach the adapter with ``of(server)``), ``descriptions`` (a mapping from tool
    name to a function of the opened :class:`~mcp_resume.HandleStore`, or of the error that kept it from
    opening, returning that tool's description: ``tools/list`` then waits for the store and shows them).

    Opening never fails the server: a store that cannot open logs why; its calls raise."""

    def __init__(self, app: str, *, resume: bool = True, handles: bool = True, update_retries: int = UPDATE_RETRIES,
                 lifespan: Callable[[Any], contextlib.AbstractAsyncContextManager[Any]] | None = None,
                 descriptions: Mapping[str, Callable[[HandleStore | MCPResumeError], str]] | None = None,
                 **options: Any) -> None:
        known = set(_RESUME_ONLY) | set(_BOTH) | set(_HANDLES_ONLY)
        unknown = sorted(set(options) - known)
        if unknown:
            raise TypeError(f"mcp_resume.mcp.lifespan() got an unexpected keyword argument {unknown[0]!r}")
        if not isinstance(update_retries, int) or isinstance(update_retries, bool) or update_retries < 0:
            raise TypeError(f"update_retries must be an int of at least 0, not {update_retries!r}")
        self.app = app
        self._resume_opts = {k: v for k, v in options.items() if k in _RESUME_ONLY or k in _BOTH}
        self._handle_opts = {k: v for k, v in options.items() if k in _HANDLES_ONLY or k in _BOTH}
        self._resume, self._handles = resume, handles
        self._retries = update_retries
        self._inner = lifespan
        self._descriptions = dict(descriptions or {})

    def __call__(self, server: Any) -> contextlib.AbstractAsyncContextManager[Adapter]:
        """The lifespan of ``server`` (the ``MCPServer``), as the SDK calls it."""
        return self._run(server)

    @contextlib.asynccontextmanager
    async def _run(self, server: Any) -> AsyncIterator[Adapter]:
        resume = _open_resume(self.app, self._resume_opts) if self._resume else None
        handles = _open_handles(self.app, self._handle_opts) if self._handles else None
        adapter = Adapter(self.app, resume, handles, self._retries)
        _RUNNING[server] = adapter
        middleware = None
        if self._descriptions and isinstance(getattr(server, "middleware", None), list):
            middleware = _Descriptions(adapter, self._descriptions)
            server.middleware.append(middleware)
        try:
            if self._inner is not None:
                async with self._inner(server) as adapter.context:
                    yield adapter
            else:
                yield adapter
        finally:
            if middleware is not None:
                with contextlib.suppress(ValueError):
                    server.middleware.remove(middleware)
            _RUNNING.pop(server, None)
            if handles is not None:
                await handles.aclose()
            if resume is not None:
                await resume.aclose()


def _open_resume(app: str, options: dict[str, Any]) -> AsyncResumeTokenStore | None:
    """The resume store, opening in the background; ``None`` (logged) when even its arguments are refused."""
    try:
        return AsyncResumeTokenStore(app, **options)
    except MCPResumeError as e:
        log.error("mcp-resume: session resume unavailable: %s", e, extra={"event": "open_failed", "detail": str(e)})
        return None


def _open_handles(app: str, options: dict[str, Any]) -> AsyncHandleStore:
    """The handle store, opening in the background; a failure is logged once it is known and raised by calls."""
    store = AsyncHandleStore(app, **options)

    def opened(fut: Any) -> None:
        if not fut.cancelled() and fut.exception() is not None:
            e = fut.exception()
            log.error("mcp-resume: the handle store cannot open: %s", e, extra={"event": "open_failed", "detail": str(e)})

    store._opened.add_done_callback(opened)
    return store


class _Descriptions:
    """A server middleware: ``tools/list`` waits for the handle store to open, then shows the descriptions the
    adapter's ``descriptions`` functions give for the opened store (or the error that kept it from opening)."""

    def __init__(self, adapter: Adapter, describe: dict[str, Callable[[HandleStore | MCPResumeError], str]]) -> None:
        self.adapter = adapter
        self.describe = describe

    async def __call__(self, ctx: Any, call_next: Callable[[Any], Awaitable[Any]]) -> Any:
        result = await call_next(ctx)
        if getattr(ctx, "method", None) != "tools/list" or self.adapter.handles is None:
            return result
        what: HandleStore | MCPResumeError
        try:
            what = await self.adapter.handles.opened()
        except MCPResumeError as e:
            what = e
        if isinstance(result, Mapping) and isinstance(result.get("tools"), list):  # the wire form
            wire = [dict(t, description=self.describe[t["name"]](what))
                    if isinstance(t, Mapping) and t.get("name") in self.describe else t for t in result["tools"]]
            return {**result, "tools": wire}
        tools = getattr(result, "tools", None)
        if not isinstance(tools, list):
            return result
        new = [t.model_copy(update={"description": self.describe[t.name](what)}) if t.name in self.describe else t
               for t in tools]
        return result.model_copy(update={"tools": new})


def principal_of(ctx: Any) -> str:
    """The principal of a tool call: the subject (else the client id) of the access token the SDK verified for it
    (HTTP with the SDK's bearer auth), else ``""`` (stdio, or HTTP without auth: one anonymous client). ``ctx`` is
    the tool's ``mcp.server.mcpserver.Context`` (or ``None``). Reads the token from the request's
    authenticated user (``request.scope["user"].access_token``), else the SDK's ``get_access_token()``.

    The client id names the OAuth client, which several users may share: a token verifier whose client serves
    several users must set the token's ``subject``, or they share their handles. Raises
    :class:`~mcp_resume.InvalidPrincipalError` when the request is authenticated but its token names neither a
    subject nor a client: treating it as ``""`` would put every such caller in one anonymous principal."""
    token = None
    request = getattr(getattr(ctx, "request_context", None), "request", None) if ctx is not None else None
    scope = getattr(request, "scope", None)
    if isinstance(scope, Mapping):
        token = getattr(scope.get("user"), "access_token", None)
    if token is None:
        try:
            from mcp.server.auth.middleware.auth_context import get_access_token

            token = get_access_token()
        except ImportError:  # pragma: no cover - mcp without auth
            token = None
    if token is None:
        return ""
    for field in ("subject", "client_id"):
        value = getattr(token, field, None)
        if isinstance(value, str) and value:
            return value
    raise InvalidPrincipalError("the request is authenticated but its access token names no subject and no client_id: "
                                "the handle store cannot tell its callers apart; have the token verifier set one")


def of(ctx: Any) -> Request:
    """The :class:`Request` of a tool call: ``ctx`` is the tool's ``Context`` (the adapter is its
    ``request_context.lifespan_context``; the principal :func:`principal_of`), or the ``MCPServer`` itself (for the
    user's own lifespan: the principal ``""``). Raises ``LookupError`` when the server's lifespan is not
    :func:`lifespan`'s, and :class:`~mcp_resume.InvalidPrincipalError` as :func:`principal_of` does."""
    adapter = _RUNNING.get(ctx) if not hasattr(ctx, "request_context") else None
    if adapter is not None:
        return Request(adapter, "")
    lc = getattr(getattr(ctx, "request_context", None), "lifespan_context", None)
    if not isinstance(lc, Adapter):
        raise LookupError("no mcp-resume adapter: create the server with lifespan=mcp_resume.mcp.lifespan(app)")
    return Request(lc, principal_of(ctx))


def json_result(doc: Any, *, error: bool = False) -> Any:
    """A ``CallToolResult`` whose structured content is ``doc`` (a JSON object) and whose text content is the same
    JSON; ``is_error`` from ``error``. Imports the SDK's types."""
    from mcp_types import CallToolResult, TextContent

    return CallToolResult(content=[TextContent(type="text", text=json.dumps(doc))], structured_content=doc,
                          is_error=error)


def error_result(e: MCPResumeError) -> Any:
    """The tool error of a store error: ``json_result(e.to_json(), error=True)``: ``isError: true``, structured
    content ``{"error": code, "message", "reason"?, "generation"?}``, the same JSON as text."""
    return json_result(e.to_json(), error=True)


def tool_errors(fn: Callable[..., T]) -> Callable[..., T]:
    """Decorate a tool (sync or async, below ``@server.tool()``) so that an :class:`~mcp_resume.MCPResumeError`
    it raises is answered as :func:`error_result` instead of the SDK's plain-text error. Other exceptions pass
    through to the SDK unchanged. The tool's signature (and so its input schema) is kept."""
    if inspect.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def run_async(*args: Any, **kwargs: Any) -> Any:
            try:
                return await fn(*args, **kwargs)
            except MCPResumeError as e:
                return error_result(e)

        return run_async  # type: ignore[return-value]

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except MCPResumeError as e:
            return error_result(e)

    return run


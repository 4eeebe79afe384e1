"""The example server's notebook tools: durable state through explicit handles (sessionless MCP).

A notebook is a value in the mcp-resume handle store (:class:`mcp_resume.HandleStore`), the JSON
``{"notes": ["..."]}`` in UTF-8, named by an opaque handle that ``notebook_create`` returns; later calls pass
it. The store keeps it in the app's ``handles/`` directory, sealed, across server restarts and MCP hosts,
until it expires. The Go and TypeScript example servers offer the same four tools with the same JSON:

- ``notebook_create {}`` -> ``{"handle", "generation", "idle_ttl_seconds", "max_age_seconds"}``
- ``notebook_add {handle, note, generation?}`` -> ``{"generation"}``
- ``notebook_read {handle}`` -> ``{"notes", "generation"}``
- ``notebook_delete {handle, generation?}`` -> ``{}``

A failure is an MCP tool error (``isError: true``) whose structured content is ``{"error": "<code>", "message",
("reason"), ("generation")}`` with the handle store's codes (``handle_expired`` with ``reason`` ``idle`` or
``max_age``, ``conflict`` with the current ``generation``...), and whose text is the same JSON. The principal
is ``""`` over stdio (one, anonymous, client) and the bearer token's principal in HTTP mode
(:func:`http_mode.principal_of`), so that alice's notebook is ``handle_not_found`` for bob. The lifetimes come from the store, which reads
``MCP_RESUME_STATE_IDLE_TTL`` and ``MCP_RESUME_STATE_MAX_AGE`` (Go duration syntax, e.g. ``90s``).
"""

# No `from __future__ import annotations`: the MCP SDK reads the tools' annotations, which name CallToolResult,
# imported where the tools are defined (the SDK is imported late, see server.py).
import datetime as dt
import json
import logging
import threading
from typing import TYPE_CHECKING, Any

from http_mode import principal_of

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer
    from mcp_types import CallToolResult

log = logging.getLogger("example-python")

#: How many times notebook_add retries a put that lost a race, when the caller gave no generation.
ADD_RETRIES = 5


def go_duration(d: dt.timedelta) -> str:
    """``d`` as Go's ``time.Duration.String`` writes it (``24h0m0s``, ``1m30s``, ``1.5s``, ``500ms``), so the
    three example servers describe one policy in the same words."""
    us = round(d / dt.timedelta(microseconds=1))
    if us == 0:
        return "0s"
    sign, us = ("-", -us) if us < 0 else ("", us)
    if us < 1_000_000:
        unit, scale = ("ms", 1000) if us >= 1000 else ("µs", 1)
        return f"{sign}{_trim(us / scale)}{unit}"
    h, rest = divmod(us, 3_600_000_000)
    m, rest = divmod(rest, 60_000_000)
    s = _trim(rest / 1_000_000)
    return sign + (f"{h}h{m}m{s}s" if h else f"{m}m{s}s" if m else f"{s}s")


def _trim(x: float) -> str:
    return f"{x:.6f}".rstrip("0").rstrip(".")


def _seconds(d: dt.timedelta) -> int:
    """``d`` in whole seconds (truncated), as the Go and TypeScript servers answer ``*_seconds``."""
    return int(d.total_seconds())


class Notebooks:
    """The handle store of the notebooks, opened in a background thread at server start (:meth:`start`, first
    thing in ``main``), independent of resume, so that neither a compile on a cold cache nor the store delays
    the MCP handshake. :meth:`wait` (tools, ``tools/list``) waits for it without blocking the event loop; if it
    cannot open, every notebook tool answers ``store_unavailable`` with the reason, and the server's other
    tools work."""

    def __init__(self, app: str) -> None:
        self.app = app
        self.store: Any = None  # an mcp_resume.AsyncHandleStore once open
        self.error = ""
        self._thread = threading.Thread(target=self._open, name="notebooks-open", daemon=True)

    def start(self) -> "Notebooks":
        self._thread.start()
        return self

    def _open(self) -> None:
        try:
            from mcp_resume import AsyncHandleStore, HandleStore

            self.store = AsyncHandleStore(HandleStore(self.app))
        except Exception as e:  # noqa: BLE001 - the notebook tools report it; the server keeps serving
            self.error = f"the handle store cannot open: {e}"
            log.error("notebook tools unavailable: %s", self.error)

    async def wait(self) -> None:
        """Wait for :meth:`start`'s thread, in a worker thread (the event loop keeps serving)."""
        if self._thread.is_alive():
            import anyio.to_thread

            await anyio.to_thread.run_sync(self._thread.join)

    def description(self) -> str:
        """``notebook_create``'s description: the durability policy of the opened store."""
        base = "Creates a notebook and returns its handle."
        if self.store is None:
            return f"{base} The handle store is unavailable ({self.error}): every call answers store_unavailable."
        s = self.store.store
        return (f"{base} The notebook expires after {go_duration(s.idle_ttl)} idle and {go_duration(s.max_age)} "
                "after creation at the latest; an expired handle answers handle_expired.")

    def close(self) -> None:
        if self.store is not None:
            self.store.store.close()


def _result(doc: dict[str, Any], error: bool = False) -> "CallToolResult":
    """A tool result whose structured content is ``doc`` and whose text is the same JSON."""
    from mcp_types import CallToolResult, TextContent

    return CallToolResult(content=[TextContent(type="text", text=json.dumps(doc))], structured_content=doc,
                          is_error=error)


def _notes(data: bytes) -> list[str]:
    """The notes of a notebook value. Raises ``ValueError`` when the value is not ``{"notes": [str...]}``."""
    doc = json.loads(data)
    notes = doc.get("notes") if isinstance(doc, dict) else None
    if not isinstance(notes, list) or not all(isinstance(n, str) for n in notes):
        raise ValueError('the notebook is not {"notes": [...]}')
    return notes


def register_notebook(server: "MCPServer", books: Notebooks) -> None:
    """Add the four notebook tools to ``server``. ``notebook_create``'s description states the opened store's
    policy: ``tools/list`` waits for the store to open (the handshake does not), then puts it in."""
    from mcp.server.mcpserver import Context
    from mcp_resume import Conflict, HandleStoreError
    from mcp_types import CallToolResult

    list_tools = server.list_tools

    async def list_tools_with_policy() -> Any:
        await books.wait()
        return [t.model_copy(update={"description": books.description()}) if t.name == "notebook_create" else t
                for t in await list_tools()]

    server.list_tools = list_tools_with_policy  # type: ignore[method-assign]  # MCPServer's handler calls it

    def failed(e: Exception) -> "CallToolResult":
        if isinstance(e, HandleStoreError):
            return _result(e.to_json(), error=True)
        return _result({"error": "invalid_value", "message": str(e)}, error=True)

    async def unavailable() -> "CallToolResult | None":
        await books.wait()
        if books.store is None:
            return _result({"error": "store_unavailable", "message": books.error}, error=True)
        return None

    @server.tool(description="Creates a notebook and returns its handle.")  # the policy: list_tools_with_policy
    async def notebook_create(ctx: Context) -> CallToolResult:
        if (bad := await unavailable()) is not None:
            return bad
        try:
            c = await books.store.create(principal_of(ctx), json.dumps({"notes": []}).encode())
        except HandleStoreError as e:
            return failed(e)
        return _result({"handle": c.handle, "generation": c.generation, "idle_ttl_seconds": _seconds(c.idle_ttl),
                        "max_age_seconds": _seconds(c.max_age)})

    @server.tool(description="Appends a note to a notebook and returns its new generation. With generation, only if "
                             "the notebook is still at that generation.")
    async def notebook_add(handle: str, note: str, ctx: Context, generation: int | None = None) -> CallToolResult:
        if (bad := await unavailable()) is not None:
            return bad
        for attempt in range(1 + (ADD_RETRIES if generation is None else 0)):
            try:
                v = await books.store.get(handle, principal_of(ctx))
                notes = _notes(v.data) + [note]
                expect = generation if generation is not None else v.generation
                gen = await books.store.put(handle, principal_of(ctx), json.dumps({"notes": notes}).encode(), expect=expect)
                return _result({"generation": gen})
            except Conflict as e:
                if generation is not None or attempt == ADD_RETRIES:
                    return failed(e)
            except (HandleStoreError, ValueError) as e:
                return failed(e)
        raise AssertionError("unreachable")

    @server.tool(description="Returns a notebook's notes and generation.")
    async def notebook_read(handle: str, ctx: Context) -> CallToolResult:
        if (bad := await unavailable()) is not None:
            return bad
        try:
            v = await books.store.get(handle, principal_of(ctx))
            return _result({"notes": _notes(v.data), "generation": v.generation})
        except (HandleStoreError, ValueError) as e:
            return failed(e)

    @server.tool(description="Deletes a notebook; its handle then answers handle_not_found. With generation, only if "
                             "the notebook is still at that generation.")
    async def notebook_delete(handle: str, ctx: Context, generation: int | None = None) -> CallToolResult:
        if (bad := await unavailable()) is not None:
            return bad
        try:
            await books.store.delete(handle, principal_of(ctx), expect=generation)
            return _result({})
        except HandleStoreError as e:
            return failed(e)

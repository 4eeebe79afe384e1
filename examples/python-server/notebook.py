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
is ``""`` over stdio (one, anonymous, client) and the bearer token's principal in HTTP mode (the adapter,
``mcp_resume.mcp``, reads it from the SDK's verified access token), so that alice's notebook is
``handle_not_found`` for bob. The lifetimes come from the store, which reads
``MCP_RESUME_STATE_IDLE_TTL`` and ``MCP_RESUME_STATE_MAX_AGE`` (Go duration syntax, e.g. ``90s``).
"""

# No `from __future__ import annotations`: the MCP SDK reads the tools' annotations, which name CallToolResult and
# Context, imported where the tools are defined (the SDK is imported late, see server.py). The glue (stores,
# principals, structured errors, the policy in notebook_create's description) is the adapter's, mcp_resume.mcp.
import datetime as dt
import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

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


def describe_create(store: Any) -> str:
    """``notebook_create``'s description for the opened handle store (an ``mcp_resume.HandleStore``), or for the
    error that kept it from opening: the durability policy, as the Go and TypeScript servers state it. The adapter
    (``mcp_resume.mcp.lifespan(..., descriptions=...)``) shows it in ``tools/list`` once the store is open."""
    base = "Creates a notebook and returns its handle."
    if isinstance(store, Exception):
        return (f"{base} The handle store is unavailable (the handle store cannot open: {store}): every call answers "
                "store_unavailable.")
    return (f"{base} The notebook expires after {go_duration(store.idle_ttl)} idle and {go_duration(store.max_age)} "
            "after creation at the latest; an expired handle answers handle_expired.")


#: The tool descriptions the adapter fills in from the opened store.
DESCRIPTIONS = {"notebook_create": describe_create}


def _notes(doc: Any) -> list[str]:
    """The notes of a decoded notebook value. Raises ``mcp_resume.InvalidValueError`` (a tool error with code
    ``invalid_value``) when the value is not ``{"notes": [str...]}``."""
    from mcp_resume import InvalidValueError

    notes = doc.get("notes") if isinstance(doc, dict) else None
    if not isinstance(notes, list) or not all(isinstance(n, str) for n in notes):
        raise InvalidValueError('the notebook is not {"notes": [...]}')
    return notes


def register_notebook(server: "MCPServer") -> None:
    """Add the four notebook tools to ``server``, whose lifespan is ``mcp_resume.mcp.lifespan`` (with
    :data:`DESCRIPTIONS`): each tool takes the stores from its context (``mcp_resume.mcp.of(ctx)``, the principal
    from the SDK's verified bearer token, ``""`` over stdio), and a store error becomes the structured tool error
    (``mcp_resume.mcp.tool_errors``)."""
    from mcp.server.mcpserver import Context
    from mcp_resume.mcp import json_result, of, tool_errors
    from mcp_types import CallToolResult

    @server.tool(description="Creates a notebook and returns its handle.")  # the policy: DESCRIPTIONS
    @tool_errors
    async def notebook_create(ctx: Context) -> CallToolResult:
        c = await of(ctx).create_json({"notes": []})
        return json_result({"handle": c.handle, "generation": c.generation, "idle_ttl_seconds": _seconds(c.idle_ttl),
                            "max_age_seconds": _seconds(c.max_age)})

    @server.tool(description="Appends a note to a notebook and returns its new generation. With generation, only if "
                             "the notebook is still at that generation.")
    @tool_errors
    async def notebook_add(handle: str, note: str, ctx: Context, generation: int | None = None) -> CallToolResult:
        r = of(ctx)
        if generation is None:  # read, append, compare-and-set; retried when another writer came first
            _, gen = await r.update(handle, lambda doc: {"notes": _notes(doc) + [note]}, retries=ADD_RETRIES)
            return json_result({"generation": gen})
        doc, _ = await r.get_json(handle)
        return json_result({"generation": await r.put_json(handle, {"notes": _notes(doc) + [note]}, expect=generation)})

    @server.tool(description="Returns a notebook's notes and generation.")
    @tool_errors
    async def notebook_read(handle: str, ctx: Context) -> CallToolResult:
        doc, gen = await of(ctx).get_json(handle)
        return json_result({"notes": _notes(doc), "generation": gen})

    @server.tool(description="Deletes a notebook; its handle then answers handle_not_found. With generation, only if "
                             "the notebook is still at that generation.")
    @tool_errors
    async def notebook_delete(handle: str, ctx: Context, generation: int | None = None) -> CallToolResult:
        await of(ctx).delete(handle, expect=generation)
        return json_result({})

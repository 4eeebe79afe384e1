"""mcp-resume for Python: session resume for stdio MCP servers (spec 000).

::

    store = ResumeTokenStore("my-server")   # once, at startup; options keyword-only (state_root=..., instance=...)
    token = store.load()                    # str | None: offer it to the broker; store.reject() if refused
    store.store(session.token)              # every token the broker issues
    store.close()                           # at exit (releases the token file's lock)

    store = AsyncResumeTokenStore("my-server")  # asyncio servers: opens and loads in the background
    token = await store.load()                  # in a handler; the MCP handshake never waits for it

    handles = HandleStore("my-server")          # durable state handles (sessionless MCP), independent of resume
    c = handles.create("", b"value")            # c.handle: an opaque bearer secret for the client
    handles.get(c.handle, "").data              # AsyncHandleStore("my-server"): opens in the background, coroutines

    # MCP servers on the official SDK (MCPServer/FastMCP): mcp_resume.mcp opens both stores in the lifespan.
    server = MCPServer("my-server", lifespan=mcp_resume.mcp.lifespan("my-server"))

Every exception is an :class:`MCPResumeError` (``code``, ``message``, ``to_json()``), one class per plugin error
code, the same from every store (docs/API.md).

All the resume logic is the Wasm plugin shared with the Go and TypeScript
hosts, run in Extism; this package is a thin host (``hostfuncs/README.md``,
ABI 11): it answers the plugin's questions about this process and the OS and
acts on files in the state directory, with no policy of its own. Logs go
through ``logging.getLogger("mcp_resume")``; nothing is ever written to
stdout, and no token is ever logged. Importing the package opens ``/dev/null``
onto any of fds 0-2 that is closed, so that none of its own files can land there.

Importing the package also records the working directory (``os.getcwd()``,
``""`` if it fails): the plugin sees that one as ``facts.cwd`` for the rest of
the process, not the directory current when a store opens, so a server that
changes directory later (or opens its store in a FastMCP lifespan) still
reports where it was launched. It is part of the default instance key and the
base of a relative ``state_root``: import ``mcp_resume`` before any ``os.chdir``.
"""

from __future__ import annotations

# First, before anything opens a file (importing extism loads the runtime library): a closed fd 0-2
# gets /dev/null, as Go's runtime and Node do at start, so no file of ours ever lands there.
from ._fds import fill_std_fds, keep_stdio_at_import

fill_std_fds()
# Then copies of fds 0 and 1 as the MCP host set them up, before an MCP SDK repoints them to serve stdio: a
# resume store opened later (in a lifespan, in a tool) reports these to the plugin's stdio check.
keep_stdio_at_import()

from ._async import AsyncResumeTokenStore
from ._errors import (ConflictError, HandleEvictedError, HandleExpiredError, HandleNotFoundError, InvalidAppError,
                      InvalidHandleError, InvalidOptionError, InvalidPrincipalError, InvalidTokenError, InvalidValueError,
                      MCPResumeError, PluginError, StoreUnavailableError, ValueTooLargeError)
from ._handles import Created, GCResult, HandleInfo, HandleList, HandleStore, Touched, Value
from ._handles_async import AsyncHandleStore
from ._hostfuncs import ABI_VERSION
from ._runtime import precompile
from ._store import NO_INSTANCE, ResumeTokenStore, TokenFile

__all__ = ["ABI_VERSION", "NO_INSTANCE", "AsyncHandleStore", "AsyncResumeTokenStore", "ConflictError", "Created",
           "GCResult", "HandleEvictedError", "HandleExpiredError", "HandleInfo", "HandleList", "HandleNotFoundError",
           "HandleStore", "InvalidAppError", "InvalidHandleError", "InvalidOptionError", "InvalidPrincipalError",
           "InvalidTokenError", "InvalidValueError", "MCPResumeError", "PluginError", "ResumeTokenStore",
           "StoreUnavailableError", "TokenFile", "Touched", "Value", "ValueTooLargeError", "precompile"]

__version__ = "0.1.0"
precompile()  # the compile overlaps the importer's own startup

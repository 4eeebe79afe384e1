"""mcp-resume for Python: session resume for stdio MCP servers (spec 000).

Three calls::

    from mcp_resume import ResumeTokenStore

    store = ResumeTokenStore("my-server")          # once, at startup
    token = store.load()                           # str | None
    if token is not None:
        try:
            session = broker.resume(token)
        except Rejected:                           # 401 / 409 / 410
            store.reject()
            session = broker.new_session()
    else:
        session = broker.new_session()
    store.store(session.token)                     # always, after every start

The resume logic is the Wasm plugin shared with the Go and TypeScript hosts,
run in Extism; this package implements its host functions
(``hostfuncs/README.md``): the MCP host's identity from the process tree, a
state directory, and logging through ``logging.getLogger("mcp_resume")``.
Nothing is ever written to stdout, and no token is ever logged.
"""

from __future__ import annotations

from ._errors import InvalidAppError, InvalidTokenError, PluginError, ResumeStoreError
from ._hostfuncs import ABI_VERSION
from ._store import STATE_DIR_ENV, ResumeTokenStore, TokenFile, default_state_dir

__all__ = [
    "ABI_VERSION",
    "STATE_DIR_ENV",
    "InvalidAppError",
    "InvalidTokenError",
    "PluginError",
    "ResumeStoreError",
    "ResumeTokenStore",
    "TokenFile",
    "default_state_dir",
]

__version__ = "0.1.0"

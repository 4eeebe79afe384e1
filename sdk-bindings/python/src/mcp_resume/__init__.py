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
    ...
    store.close()                                  # at exit (releases the token file's lock)

The resume logic is the Wasm plugin shared with the Go and TypeScript hosts,
run in Extism; this package implements its host functions
(``hostfuncs/README.md``, ABI 2): the MCP host's identity from the process
tree and which instance of the server this is, a state directory, a lock on
the token file for the instance's lifetime, process liveness for pruning stale
files, and logging through ``logging.getLogger("mcp_resume")``.
Nothing is ever written to stdout, and no token is ever logged.
"""

from __future__ import annotations

from ._errors import InvalidAppError, InvalidTokenError, PluginError, ResumeStoreError
from ._hostfuncs import ABI_VERSION
from ._store import INSTANCE_ENV, NO_INSTANCE, STATE_DIR_ENV, ResumeTokenStore, TokenFile, default_state_dir

__all__ = [
    "ABI_VERSION",
    "INSTANCE_ENV",
    "NO_INSTANCE",
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

"""The example server's Streamable HTTP mode (``--http 127.0.0.1:PORT``): the same tools as stdio, served at
``/mcp`` by the SDK's stateless streamable HTTP app (no ``Mcp-Session-Id``: any replica answers any request)
under uvicorn, with bearer-token principals from ``MCP_EXAMPLE_PRINCIPALS``.

Principals (``alice:<token>,bob:<token>``) go through the SDK's own auth hooks: :class:`StaticTokens` is its
``TokenVerifier``, the SDK's ``BearerAuthBackend`` and ``RequireAuthMiddleware`` answer a missing or unknown token
with HTTP 401 and ``WWW-Authenticate: Bearer ...``, and the mcp-resume adapter (``mcp_resume.mcp.of(ctx)``) takes the
principal from the verified token of the tool call's HTTP request. Without the variable every request runs as the anonymous principal ``""``.

There is no MCP host parent to identify in this mode, so no resume store is opened; the handle store opens from the
environment (``MCP_RESUME_STATE_DIR``, or ``MCP_RESUME_STATE_URL`` for Redis), which replicas share.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import signal
import socket
from typing import Any

log = logging.getLogger("example-python")

#: The environment variable of the static bearer-token map: this server's setting, not the library's.
ENV_PRINCIPALS = "MCP_EXAMPLE_PRINCIPALS"

#: The scope every known token carries (and the SDK's middleware requires).
SCOPE = "mcp"


class UsageError(Exception):
    """Bad arguments or settings: the server says why on stderr and exits with status 2. Never quotes a token."""


def http_addr(args: list[str]) -> tuple[str, int] | None:
    """The ``(host, port)`` of a ``--http HOST:PORT`` or ``--http=HOST:PORT`` among ``args`` (the arguments after the
    program), or ``None`` (stdio). Other arguments are left alone (the resume plugin's instance key in stdio mode).
    Raises :class:`UsageError` for a missing or malformed address."""
    value = None
    for i, a in enumerate(args):
        if a == "--http":
            value = args[i + 1] if i + 1 < len(args) else ""
            break
        if a.startswith("--http="):
            value = a[len("--http="):]
            break
    if value is None:
        return None
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise UsageError(f"--http needs HOST:PORT (e.g. --http 127.0.0.1:0), not {value!r}")
    return host.strip("[]"), int(port)


def parse_principals(spec: str) -> dict[bytes, str] | None:
    """``MCP_EXAMPLE_PRINCIPALS`` (comma-separated ``name:token`` pairs, names and tokens non-empty, tokens without
    white space and unique) as a map from each token's SHA-256 to its principal's name; ``None`` when ``spec`` is
    empty (anonymous mode). Raises :class:`UsageError`, whose message names the entry, never the token."""
    if not spec.strip():
        return None
    out: dict[bytes, str] = {}
    for i, pair in enumerate(spec.split(","), 1):
        name, sep, token = pair.strip().partition(":")
        if not sep:
            raise UsageError(f"{ENV_PRINCIPALS}: entry {i} is not name:token")
        if not name or not token:
            raise UsageError(f"{ENV_PRINCIPALS}: entry {i} has an empty name or token")
        if any(c.isspace() for c in token):
            raise UsageError(f"{ENV_PRINCIPALS}: the token of {name!r} has white space")
        digest = hashlib.sha256(token.encode()).digest()
        if digest in out:
            raise UsageError(f"{ENV_PRINCIPALS}: the token of {name!r} is also another principal's")
        out[digest] = name
    return out


class StaticTokens:
    """The SDK's ``TokenVerifier`` over a static map (:func:`parse_principals`): the principal's name as the access
    token's ``subject`` and ``client_id``, or ``None`` (the SDK answers 401). Every entry is compared, with
    ``hmac.compare_digest`` over equal-length digests, so timing tells nothing of which token matched."""

    def __init__(self, principals: dict[bytes, str]) -> None:
        self.principals = principals

    async def verify_token(self, token: str) -> Any:
        from mcp.server.auth.provider import AccessToken

        digest = hashlib.sha256(token.encode()).digest()
        name = None
        for known, who in self.principals.items():
            if hmac.compare_digest(known, digest):
                name = who
        if name is None:
            return None
        return AccessToken(token=token, client_id=name, subject=name, scopes=[SCOPE])


def auth_kwargs(principals: dict[bytes, str] | None) -> dict[str, Any]:
    """The ``MCPServer`` keyword arguments that turn on the SDK's bearer auth with :class:`StaticTokens` (none for
    anonymous mode). The SDK's ``AuthSettings`` requires an issuer URL, which it uses only for OAuth routes this
    server does not have (no authorization server, no protected-resource metadata: static tokens)."""
    if principals is None:
        return {}
    from mcp.server.auth.settings import AuthSettings

    return {
        "token_verifier": StaticTokens(principals),
        "auth": AuthSettings(issuer_url="http://127.0.0.1/", resource_server_url=None, required_scopes=[SCOPE]),
    }


def serve_http(server: Any, host: str, port: int) -> int:
    """Serve ``server`` (an ``MCPServer``) statelessly at ``http://host:port/mcp`` under uvicorn until SIGTERM or
    SIGINT; return 0. Binds first, so that with port 0 the "listening" line on stderr carries the real port
    (``url=http://<host>:<port>/mcp``). uvicorn re-raises the signal it caught once it has shut down, under the
    handler it found: the handler installed here only asks uvicorn to stop, so the process exits 0."""
    import uvicorn

    app = server.streamable_http_app(stateless_http=True, host=host)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Accepted connections inherit TCP_NODELAY. Without it a kept-alive connection waits on Nagle and the client's
    # delayed ACK between the small writes of an SSE response: measured 48 ms per tool call, 2.3 ms with it.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, port))
    sock.listen(128)  # connections wait in the backlog until uvicorn accepts them
    real = sock.getsockname()[1]
    config = uvicorn.Config(app, log_config=None, access_log=False, lifespan="on", timeout_graceful_shutdown=5)
    userver = uvicorn.Server(config)

    def stop(_sig: int, _frame: Any) -> None:
        userver.should_exit = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    shown = f"[{host}]" if family == socket.AF_INET6 else host
    log.info("listening url=http://%s:%d/mcp", shown, real)
    userver.run(sockets=[sock])
    return 0

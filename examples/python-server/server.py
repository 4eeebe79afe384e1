"""An example stdio MCP server, on the official Python SDK, whose broker session
survives relaunches by the same MCP host through mcp-resume (``mcp_resume``).

Run it (after ``make python-setup``) from the repository root::

    MCP_EXAMPLE_BROKER_URL=http://127.0.0.1:PORT .venv/bin/python examples/python-server/server.py

Arguments: any (for example ``--profile work``); the server itself ignores
them. The resume plugin takes them as the instance key (its default, from the
arguments ``mcp_resume`` reports), so an MCP host that runs
``server.py --profile a`` and ``server.py --profile b`` at the same time keeps
one resumable session for each. Two instances launched identically under one
host share one token file: the first holds it, the second logs "Another server
instance under this host holds the token file, session resume disabled for this
instance" and runs with a fresh session.

Environment:
  MCP_EXAMPLE_BROKER_URL  the token broker (examples/broker), required; this server's own
                          setting, hence not MCP_RESUME_*
  MCP_RESUME_STATE_DIR    overrides the state directory (optional)
  MCP_RESUME_INSTANCE     overrides the instance key (default: the arguments; "-": none)
  MCP_RESUME              "off": session resume off (the plugin logs "Session resume turned
                          off by MCP_RESUME=off" and reads or writes nothing)

The MCP_RESUME_* variables are the library's (read by the plugin); a server copied from this
one keeps them and names its own settings with its own prefix.

Tools: ``remember(note)`` -> ``remembered``; ``recall()`` -> ``{"notes": [...]}``;
``session_info()`` -> ``{"session_id": str, "resumed": bool}``; and the notebook tools
(``notebook_create``, ``notebook_add``, ``notebook_read``, ``notebook_delete``, see notebook.py),
durable state behind explicit handles in mcp-resume's handle store, which needs no broker, outlives
this process and its MCP host, and stays on with ``MCP_RESUME=off``
(``MCP_RESUME_STATE_IDLE_TTL`` / ``MCP_RESUME_STATE_MAX_AGE``, Go duration syntax, set its lifetimes).

With ``--http HOST:PORT`` (e.g. ``--http 127.0.0.1:0``) it serves the same tools over stateless Streamable HTTP
at ``http://HOST:PORT/mcp`` instead (http_mode.py), for several replicas behind one URL:
``MCP_EXAMPLE_PRINCIPALS`` (``alice:<token>,bob:<token>``) maps bearer tokens to principals, the broker is
optional and no resume store is opened.

Startup follows spec 000, "MCP Server Startup", the same flow as the Go and
TypeScript examples: load the stored token, offer it to the broker, reject it
if the broker refuses (401/409/410), start a fresh session otherwise, and store
whatever token the broker issues. The stores come from the mcp-resume adapter
for the SDK (``mcp_resume.mcp``): the server's lifespan is
``mcp_resume.mcp.lifespan(APP, ...)``, which opens the resume store (an
:class:`mcp_resume.AsyncResumeTokenStore`) and the handle store in background
threads when the server starts and closes them when it stops, so nothing of
it delays the MCP handshake (``initialize``), not even a first start after
``pip install``, when the plugin compiles for seconds. ``mcp_resume`` is
imported first thing, so it copies fds 0 and 1 while they are still the
host's (the SDK's stdio transport points them at /dev/null and stderr while
it serves, and the plugin's check that the host holds this server's stdio,
fault 11c in docs/RELIABILITY.md, must see the host's). The broker session is
established by a task this server's own lifespan (composed with the
adapter's) starts, which awaits the store's first load; a tool call waits for
the session (at most :data:`SESSION_WAIT_S`). No thread of this file's own.
Logs go to stderr; stdout carries only JSON-RPC.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

# First: importing the binding records the working directory the server was launched in and copies the MCP host's
# stdio, before the SDK serves (mcp_resume.mcp imports the SDK only when the server starts).
import mcp_resume.mcp

from http_mode import ENV_PRINCIPALS, UsageError, auth_kwargs, http_addr, parse_principals, serve_http
from notebook import DESCRIPTIONS, register_notebook

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

# The MCP SDK (mcp, anyio) is imported inside the functions that use it, not
# here (the startup benchmark measures the server's own imports).

#: This server's app name: its token files live in their own state directory. $EXAMPLE_APP overrides it
#: (the fault suite runs the Go, Python and TypeScript example servers as one app, to show that servers on
#: different hosts exclude one another through one lock).
APP = os.environ.get("EXAMPLE_APP") or "example-python"

#: The environment variable holding the token broker's URL: this server's own setting, not the library's,
#: so not MCP_RESUME_*.
ENV_BROKER_URL = "MCP_EXAMPLE_BROKER_URL"

#: Upper bound of every broker request, in seconds.
HTTP_TIMEOUT_S = 5.0

#: How long a tool call waits for the broker session that startup establishes in
#: the background (plugin open, at most two broker requests, a first-ever compile), seconds.
SESSION_WAIT_S = 20.0

log = logging.getLogger("example-python")


class _StderrFormatter(logging.Formatter):
    """``time level logger message [event=...] [detail=...]`` on one line (stderr only)."""

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        event = getattr(record, "event", None)
        detail = getattr(record, "detail", None)
        if event:
            line += f" event={event}"
        if detail:
            line += f" detail={detail!r}"
        return line


def setup_logging() -> None:
    """Send every log line (ours, mcp_resume's, the SDK's) to stderr: stdout is the protocol's."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_StderrFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)


# --- the broker (examples/broker/README.md) -----------------------------------------


@dataclass
class Session:
    """A broker session: ``session_id`` (stable across resumes), ``token`` (a credential: never logged), ``resumed``."""

    session_id: str
    token: str
    resumed: bool


class BrokerRejected(Exception):
    """The broker refused the token (401 unknown, 409 rotated, 410 expired): delete it, start fresh."""


class BrokerError(Exception):
    """The broker is unreachable or answered something unexpected: it said nothing about the token."""


class Broker:
    """A minimal client of the token broker's JSON-over-HTTP protocol, standard library only."""

    def __init__(self, base_url: str, timeout: float = HTTP_TIMEOUT_S) -> None:
        """``base_url``: the broker's URL (no trailing slash needed); ``timeout``: per request, seconds."""
        self.base = base_url.rstrip("/")
        self.timeout = timeout

    def _call(self, method: str, path: str, body: Any = None, token: str | None = None) -> tuple[int, Any]:
        """One request: ``(HTTP status, decoded JSON body or None)``. Raises :class:`BrokerError`
        when the broker cannot be reached or answers something that is not JSON."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, method=method, data=data)
        req.add_header("Content-Type", "application/json")
        if token:
            req.add_header("Authorization", "Bearer " + token)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:
                raw = r.read()
                return r.status, json.loads(raw) if raw else None
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                doc = json.loads(raw) if raw else None
            except ValueError:
                doc = None
            return e.code, doc
        except (OSError, ValueError) as e:
            raise BrokerError(f"{method} {path}: {e}") from None

    @staticmethod
    def _fail(what: str, status: int, doc: Any) -> BrokerError:
        code = doc.get("error") if isinstance(doc, dict) else None
        return BrokerError(f"{what}: HTTP {status} {code or ''}".rstrip())

    @staticmethod
    def _session(doc: Any) -> Session:
        try:
            return Session(session_id=str(doc["session_id"]), token=str(doc["token"]), resumed=bool(doc["resumed"]))
        except (KeyError, TypeError):
            raise BrokerError("the broker answered a session without session_id, token and resumed") from None

    def start(self) -> Session:
        """``POST /v1/sessions``: a new session. Raises :class:`BrokerError`."""
        status, doc = self._call("POST", "/v1/sessions", {})
        if status != 201:
            raise self._fail("start session", status, doc)
        return self._session(doc)

    def resume(self, token: str) -> Session:
        """``POST /v1/sessions/resume``: the same session with a new token.

        Raises :class:`BrokerRejected` on 401/409/410, :class:`BrokerError` otherwise.
        """
        status, doc = self._call("POST", "/v1/sessions/resume", {"token": token})
        if status in (401, 409, 410):
            raise BrokerRejected(f"HTTP {status} {doc.get('error') if isinstance(doc, dict) else ''}".rstrip())
        if status != 200:
            raise self._fail("resume session", status, doc)
        return self._session(doc)

    def add_note(self, token: str, note: str) -> None:
        """``POST /v1/notes``. Raises :class:`BrokerError`."""
        status, doc = self._call("POST", "/v1/notes", {"note": note}, token=token)
        if status != 204:
            raise self._fail("add note", status, doc)

    def notes(self, token: str) -> list[str]:
        """``GET /v1/notes``. Raises :class:`BrokerError`."""
        status, doc = self._call("GET", "/v1/notes", token=token)
        if status != 200 or not isinstance(doc, dict):
            raise self._fail("list notes", status, doc)
        return [str(n) for n in doc.get("notes") or []]


# --- startup (spec 000, MCP Server Startup) ------------------------------------------


async def establish(store: Any, broker: Broker) -> Session:
    """Get a broker session: the stored one if the broker still honours the token the store loaded at
    startup, else a fresh one. Broker calls run in worker threads.

    Stores whatever token the broker returns. Raises :class:`BrokerError` when
    no session can be had at all.
    """
    import anyio.to_thread

    session: Session | None = None
    token = await store.load() if store is not None else None
    if token is not None:
        try:
            session = await anyio.to_thread.run_sync(broker.resume, token, abandon_on_cancel=True)
        except BrokerRejected:
            await store.reject()
        except BrokerError as e:
            # The broker is unreachable, not refusing: keep the file.
            log.warning("could not offer the stored token to the broker: %s", e)
    if session is None:
        session = await anyio.to_thread.run_sync(broker.start, abandon_on_cancel=True)
    if store is not None:
        try:
            await store.store(session.token)
        except ValueError as e:
            log.warning("broker issued a token the resume store cannot hold: %s", e)
    return session


class State:
    """The server's broker session, established in the background and shared by the tool handlers."""

    def __init__(self, broker: Broker | None) -> None:
        """``broker``: the client every tool call uses (``None``: no broker, HTTP mode without
        ``MCP_EXAMPLE_BROKER_URL``: the broker tools fail, saying so). The resume store (``None``: no resume, HTTP
        mode) is the adapter's, taken by :meth:`lifespan`; the session comes later, from :meth:`startup`."""
        self.broker = broker
        self.store: Any = None
        self._ready: Any = None  # an anyio.Event, made in the server's event loop by lifespan()
        self._session: Session | None = None
        self._error: Exception | None = None

    async def startup(self) -> None:
        """Establish the broker session (:func:`establish`) and publish it; never raises.

        A broker that cannot be reached leaves the error, and the tools fail with it until restart.
        """
        try:
            if self.broker is None:
                raise BrokerError(f"{ENV_BROKER_URL} is not set: this replica has no broker session")
            self._session = await establish(self.store, self.broker)
        except Exception as e:  # noqa: BLE001 - BrokerError, or anything else: the tools report it
            self._error = e
            log.error("no broker session; tools will fail until restart: %s", e)
        finally:
            self._ready.set()

    @asynccontextmanager
    async def lifespan(self, server: Any) -> AsyncIterator[None]:
        """This server's own lifespan, inside the adapter's (``mcp_resume.mcp.lifespan(..., lifespan=this)``): takes
        the adapter's resume store and runs :meth:`startup` as a task while the server serves (the handshake does
        not wait for it). At shutdown a startup under way may have had its token rotated by the broker already, so
        it gets at most ``3 * HTTP_TIMEOUT_S`` to store the new one before it is cancelled (the adapter closes the
        store after that)."""
        import anyio

        self.store = mcp_resume.mcp.of(server).resume
        self._ready = anyio.Event()
        async with anyio.create_task_group() as tg:
            tg.start_soon(self.startup)
            try:
                yield None
            finally:
                with anyio.CancelScope(shield=True), anyio.move_on_after(3 * HTTP_TIMEOUT_S):
                    await self._ready.wait()
                tg.cancel_scope.cancel()

    async def current(self) -> Session:
        """The session, waiting for startup at most :data:`SESSION_WAIT_S` seconds.

        Raises ``ToolError`` (shown to the client; the server keeps running) when
        startup got none or is still running.
        """
        import anyio
        from mcp.server.mcpserver.exceptions import ToolError

        with anyio.move_on_after(SESSION_WAIT_S):
            await self._ready.wait()
        if not self._ready.is_set():
            raise ToolError(
                f"no broker session: startup still running after {SESSION_WAIT_S:g} s "
                f"(is the broker at {ENV_BROKER_URL} reachable?)"
            )
        if self._session is None:
            raise ToolError(f"no broker session: {self._error}")
        return self._session

    async def call(self, fn: Any, *args: Any) -> Any:
        """Run a blocking broker call in a worker thread; broker failures become ``ToolError``."""
        import anyio.to_thread
        from mcp.server.mcpserver.exceptions import ToolError

        try:
            return await anyio.to_thread.run_sync(fn, *args)
        except BrokerError as e:
            raise ToolError(str(e)) from None


def new_server(state: State | None = None, *, resume: bool = True, **auth: Any) -> MCPServer:
    """The MCP server object (official SDK; ``MCPServer`` is FastMCP's name since mcp 2) with the mcp-resume
    adapter's lifespan (``mcp_resume.mcp.lifespan``: the resume store unless ``resume`` is False, the handle store,
    notebook_create's policy) composed with ``state``'s (``None``: no lifespan at all, as the startup benchmark,
    examples/bench/python/server_start.py, builds it), and ``auth`` (:func:`http_mode.auth_kwargs`: bearer
    principals in HTTP mode). Imports the SDK."""
    from mcp.server.mcpserver import MCPServer

    lifespan = None
    if state is not None:
        # The plugin's instance-key default is $MCP_RESUME_INSTANCE, else sys.argv[1:]: instances the host
        # launches with different arguments resume separately.
        lifespan = mcp_resume.mcp.lifespan(APP, resume=resume, lifespan=state.lifespan, descriptions=DESCRIPTIONS)
    return MCPServer("mcp-resume-example-python", version="0.1.0", lifespan=lifespan, **auth)


def register(server: MCPServer, state: State) -> None:
    """Add the three tools. Broker calls block, so they run in a worker thread."""

    @server.tool(description="Keep a note in this session's context at the broker.")
    async def remember(note: str) -> str:
        session = await state.current()
        assert state.broker is not None  # current() has a session only with a broker
        await state.call(state.broker.add_note, session.token, note)
        return "remembered"

    @server.tool(description="List the notes of this session.")
    async def recall() -> str:
        session = await state.current()
        assert state.broker is not None  # current() has a session only with a broker
        notes = await state.call(state.broker.notes, session.token)
        return json.dumps({"notes": notes})

    @server.tool(description="The broker session ID and whether it was resumed.")
    async def session_info() -> str:
        session = await state.current()
        return json.dumps({"session_id": session.session_id, "resumed": session.resumed})


def main_http(host: str, port: int) -> int:
    """Serve the same tools over stateless Streamable HTTP (:mod:`http_mode`); return the exit status (0 after
    SIGTERM/SIGINT, 2 for a malformed ``MCP_EXAMPLE_PRINCIPALS``). No resume store: there is no MCP host parent
    to identify. The broker is optional; the handle store opens from the environment."""
    try:
        principals = parse_principals(os.environ.get(ENV_PRINCIPALS, ""))
    except UsageError as e:
        log.error("%s", e)
        return 2
    if principals is None:
        log.warning("HTTP mode without %s: every request runs as the anonymous principal \"\"", ENV_PRINCIPALS)
    log.info("HTTP mode: no MCP host parent to identify, so no session resume store; "
             "the handle store opens from the environment")
    broker_url = os.environ.get(ENV_BROKER_URL, "")
    state = State(Broker(broker_url) if broker_url else None)
    server = new_server(state, resume=False, **auth_kwargs(principals))
    register(server, state)
    register_notebook(server)
    return serve_http(server, host, port)


def apply_test_knobs() -> None:
    """Apply the fault suite's two test-only settings (examples/faults, fault 31): ``EXAMPLE_UNSET`` names a
    variable the server removes from its environment and ``EXAMPLE_CHDIR`` a directory it changes to, both at
    startup, before the resume store opens, as a server that consumes a secret from its environment or
    changes to its install directory does. Neither is set in normal use. Raises the chdir's ``OSError``."""
    name = os.environ.get("EXAMPLE_UNSET", "")
    if name:
        os.environ.pop(name, None)
    directory = os.environ.get("EXAMPLE_CHDIR", "")
    if directory:
        os.chdir(directory)


def main() -> int:
    """Run the server; return the exit status (0, or 1 without ``MCP_EXAMPLE_BROKER_URL``, or 2 for bad
    arguments). With ``--http HOST:PORT``: :func:`main_http`.

    The server is built and serves stdio at once; the adapter's lifespan
    opens the stores in background threads and this server's establishes the
    broker session in the background, so ``initialize`` waits for neither the
    plugin nor the broker.
    """
    setup_logging()
    apply_test_knobs()
    try:
        addr = http_addr(sys.argv[1:])
    except UsageError as e:
        log.error("%s", e)
        return 2
    if addr is not None:
        return main_http(*addr)
    broker_url = os.environ.get(ENV_BROKER_URL, "")
    if not broker_url:
        log.error("%s is not set: point it at the token broker (go run ./examples/broker prints its URL)", ENV_BROKER_URL)
        return 1
    state = State(Broker(broker_url))
    server = new_server(state)
    register(server, state)
    register_notebook(server)
    server.run("stdio")  # the adapter closes both stores when it returns (releasing the token file's lock)
    return 0


if __name__ == "__main__":
    sys.exit(main())

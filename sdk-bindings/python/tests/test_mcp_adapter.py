"""``mcp_resume.mcp``, the adapter for the MCP SDK's ``MCPServer``: real SDK clients against real servers built with it.

- stdio, under a real MCP host process (tests/mcp_host.py): a server whose stores come from
  ``lifespan=mcp_resume.mcp.lifespan(app)`` resumes its session (the resume store opened in the lifespan, once
  the SDK serves stdio) and reads its notebook back after a relaunch under the same host;
- stdio, this test process as the client: a store error is an ``isError`` result with the structured error,
  ``update`` retries after a real conflict (another write between its read and its compare-and-set), the
  adapter refuses an unknown option;
- HTTP with the SDK's bearer auth (examples/python-server in ``--http`` mode, built with the adapter): the principal
  is the verified token's, so alice's notebook is ``handle_not_found`` for bob.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from test_late_load import Host

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the stdio check runs on Linux only")

REPO_ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = REPO_ROOT / "examples" / "python-server" / "server.py"

#: A minimal server on the adapter: "probe" loads the resume token (storing one when there was none) and creates a
#: notebook or reads the one named by $NOTEBOOK; "read", "bump" (update with a conflicting write inside when
#: interfere is true; retries from $RETRIES) and "whoami" (the principal).
SERVER = textwrap.dedent(
    """
    import json, logging, os, sys
    from typing import Any
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    import mcp_resume.mcp
    from mcp.server.mcpserver import Context, MCPServer

    server = MCPServer("adapter", lifespan=mcp_resume.mcp.lifespan(
        "adapter", state_root=os.environ["STATE"], instance="-", update_retries=int(os.environ.get("RETRIES", "5"))))

    @server.tool()
    @mcp_resume.mcp.tool_errors
    async def probe(ctx: Context) -> dict[str, Any]:
        r = mcp_resume.mcp.of(ctx)
        token = await r.resume.load()
        if token is None:
            await r.resume.store(f"tok-{os.getpid()}")
        handle = os.environ.get("NOTEBOOK")
        if handle:
            doc, gen = await r.get_json(handle)
        else:
            c = await r.create_json({"notes": ["first"]})
            handle, doc, gen = c.handle, {"notes": ["first"]}, c.generation
        return {"token": token, "pid": os.getpid(), "handle": handle, "doc": doc, "generation": gen}

    @server.tool()
    @mcp_resume.mcp.tool_errors
    async def read(handle: str, ctx: Context) -> dict[str, Any]:
        doc, gen = await mcp_resume.mcp.of(ctx).get_json(handle)
        return {"doc": doc, "generation": gen}

    @server.tool()
    @mcp_resume.mcp.tool_errors
    async def bump(handle: str, interfere: bool, ctx: Context) -> dict[str, Any]:
        r = mcp_resume.mcp.of(ctx)
        calls = []

        async def add_one(doc):
            calls.append(doc["n"])
            if interfere and len(calls) == 1:  # another writer between this read and the compare-and-set
                await r.put_json(handle, {"n": doc["n"] + 100})
            return {"n": doc["n"] + 1}

        value, gen = await r.update(handle, add_one)
        return {"value": value, "generation": gen, "seen": calls}

    @server.tool()
    @mcp_resume.mcp.tool_errors
    async def new(n: int, ctx: Context) -> dict[str, Any]:
        c = await mcp_resume.mcp.of(ctx).create_json({"n": n})
        return {"handle": c.handle}

    server.run("stdio")
    """
)


def call(host: Host, script: Path, env: dict[str, str], stderr: Path, calls: list[Any]) -> list[dict[str, Any]]:
    """Launch ``script`` under ``host``, make ``calls``, shut it down: each result's text decoded and ``is_error``."""
    assert host.proc.stdin is not None and host.proc.stdout is not None
    req = {"command": sys.executable, "args": [str(script)], "env": env, "cwd": str(REPO_ROOT), "stderr": str(stderr),
           "calls": calls}
    host.proc.stdin.write(json.dumps(req) + "\n")
    host.proc.stdin.flush()
    answer = json.loads(host.proc.stdout.readline())
    assert "error" not in answer, f"launch failed: {answer}\n{stderr.read_text()}"
    assert answer["stream_errors"] == []
    return [{"doc": json.loads(r["text"]), "is_error": r["is_error"]} for r in answer["results"]]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    script = tmp_path / "adapter_server.py"
    script.write_text(SERVER)
    env = {"STATE": str(tmp_path / "state"), "XDG_CACHE_HOME": str(tmp_path / "cache"), "PATH": os.environ["PATH"]}
    yield script, env


def test_resume_and_notebook_across_a_relaunch_under_the_same_host(server: tuple[Path, dict[str, str]],
                                                                    tmp_path: Path) -> None:
    script, env = server
    host = Host(tmp_path / "host.log")
    try:
        first = call(host, script, env, tmp_path / "run1.log", [["probe", {}]])[0]
        assert not first["is_error"], (first, (tmp_path / "run1.log").read_text())
        assert first["doc"]["token"] is None
        handle = first["doc"]["handle"]
        second = call(host, script, {**env, "NOTEBOOK": handle}, tmp_path / "run2.log", [["probe", {}]])[0]
        assert not second["is_error"], (second, (tmp_path / "run2.log").read_text())
        doc = second["doc"]
        assert doc["token"] == f"tok-{first['doc']['pid']}", ("the relaunch resumes the first's session",
                                                              (tmp_path / "run2.log").read_text())
        assert doc["doc"] == {"notes": ["first"]} and doc["generation"] == 1
    finally:
        host.close()


async def _session_calls(script: Path, env: dict[str, str], stderr: Path, calls: list[Any]) -> list[Any]:
    """This process as the MCP client over stdio: the raw ``CallToolResult`` of each call (``calls`` may hold
    callables of the results so far, for arguments that depend on them)."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=sys.executable, args=[str(script)], env=env, cwd=str(REPO_ROOT))
    out: list[Any] = []
    with open(stderr, "a") as errlog, anyio.fail_after(60):
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            for name, args in calls:
                out.append(await session.call_tool(name, args(out) if callable(args) else args))
    return out


def test_store_error_is_a_structured_tool_error(server: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    script, env = server
    unknown = "mrh1_" + "A" * 32
    r = anyio.run(_session_calls, script, env, tmp_path / "err.log", [["read", {"handle": unknown}],
                                                                       ["read", {"handle": "not-a-handle"}]])
    assert r[0].is_error
    assert r[0].structured_content["error"] == "handle_not_found", r[0]
    assert set(r[0].structured_content) == {"error", "message"}
    assert json.loads(r[0].content[0].text) == r[0].structured_content, "the text is the same JSON"
    assert r[1].is_error and r[1].structured_content["error"] == "invalid_handle", r[1]


def test_update_retries_after_a_real_conflict(server: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    script, env = server
    r = anyio.run(_session_calls, script, env, tmp_path / "cas.log", [
        ["new", {"n": 1}],
        ["bump", lambda out: {"handle": out[0].structured_content["handle"], "interfere": True}],
        ["read", lambda out: {"handle": out[0].structured_content["handle"]}],
    ])
    bumped = r[1].structured_content
    assert not r[1].is_error, r[1]
    # First read n=1 and, before its compare-and-set, another write made it 101: the put conflicted, update read
    # again (101) and wrote 102.
    assert bumped["seen"] == [1, 101] and bumped["value"] == {"n": 102} and bumped["generation"] == 3, bumped
    assert r[2].structured_content == {"doc": {"n": 102}, "generation": 3}


def test_update_gives_up_with_the_conflict(server: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    script, env = server
    r = anyio.run(_session_calls, script, {**env, "RETRIES": "0"}, tmp_path / "cas0.log", [
        ["new", {"n": 1}],
        ["bump", lambda out: {"handle": out[0].structured_content["handle"], "interfere": True}],
    ])
    assert r[1].is_error and r[1].structured_content["error"] == "conflict", r[1]
    assert r[1].structured_content["generation"] == 2, "the current generation: the interfering write's"


def test_lifespan_refuses_an_unknown_option() -> None:
    import mcp_resume.mcp

    with pytest.raises(TypeError, match="idle_tll"):
        mcp_resume.mcp.lifespan("app", idle_tll=5)
    mcp_resume.mcp.lifespan("app", idle_ttl=5, instance="x", state_url="", resume=False)  # each store's own


# --- HTTP with the SDK's bearer auth: the example server, built with the adapter ------------------------------


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[str]:
    env = {**os.environ, "MCP_RESUME_STATE_DIR": str(tmp_path / "state"), "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "MCP_EXAMPLE_PRINCIPALS": "alice:tok-alice,bob:tok-bob"}
    env.pop("MCP_EXAMPLE_BROKER_URL", None)
    log = open(tmp_path / "http.log", "w+")
    proc = subprocess.Popen([sys.executable, str(EXAMPLE), "--http", "127.0.0.1:0"], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=log, env=env, cwd=REPO_ROOT)
    try:
        deadline = time.monotonic() + 60
        url = None
        while url is None and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
            m = re.search(r"url=(http://\S+/mcp)", (tmp_path / "http.log").read_text())
            url = m.group(1) if m else None
        assert url, (tmp_path / "http.log").read_text()
        yield url
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


async def _http_call(url: str, token: str, name: str, args: dict[str, Any]) -> Any:
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    with anyio.fail_after(60):
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as client, \
                streamable_http_client(url, http_client=client) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            return await session.call_tool(name, args)


def test_principal_comes_from_the_bearer_token(http_server: str) -> None:
    created = anyio.run(_http_call, http_server, "tok-alice", "notebook_create", {})
    assert not created.is_error, created
    handle = created.structured_content["handle"]
    mine = anyio.run(_http_call, http_server, "tok-alice", "notebook_read", {"handle": handle})
    assert mine.structured_content == {"notes": [], "generation": 1}, mine
    theirs = anyio.run(_http_call, http_server, "tok-bob", "notebook_read", {"handle": handle})
    assert theirs.is_error and theirs.structured_content["error"] == "handle_not_found", theirs


@pytest.mark.parametrize("subject,client_id,want", [("alice", "shared-client", "alice"), (None, "bob", "bob"),
                                                    (None, "", None), ("", "", None)])
def test_principal_of_an_authenticated_request(subject: str | None, client_id: str, want: str | None) -> None:
    """The SDK's verified access token (set as the SDK's AuthContextMiddleware does) gives the principal: its subject,
    else its client id. A token naming neither is refused (InvalidPrincipalError), never taken as the anonymous
    principal "" that every such caller would then share; without a token the principal is ""."""
    from mcp.server.auth.middleware.auth_context import auth_context_var
    from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
    from mcp.server.auth.provider import AccessToken

    from mcp_resume import InvalidPrincipalError
    from mcp_resume.mcp import principal_of

    assert principal_of(None) == ""
    token = AccessToken(token="t", client_id=client_id, scopes=[], subject=subject)
    reset = auth_context_var.set(AuthenticatedUser(token))
    try:
        if want is None:
            with pytest.raises(InvalidPrincipalError, match="names no subject and no client_id"):
                principal_of(None)
        else:
            assert principal_of(None) == want
    finally:
        auth_context_var.reset(reset)

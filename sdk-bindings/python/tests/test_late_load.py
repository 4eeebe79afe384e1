"""A store opened late (in the server's lifespan, in a tool handler), under the real MCP SDK and a real MCP host.

mcp 2.x points fds 0 and 1 at ``/dev/null`` and a copy of stderr while its stdio
transport serves (its guard against stray output), so a store opened after that
(in a FastMCP/MCPServer ``lifespan``, which runs once the transport serves, or in
a tool handler) used to see ``/dev/null`` where the MCP pipes were, and resume was
off. Importing ``mcp_resume`` copies fds 0 and 1 as the host set them up; every
resume store reports those copies in ``facts.stdio_fds`` until the first one has
resolved its host, so the plugin's stdio check finds the host holding the other
end of the pipes wherever the store opens, and the session resumes
(docs/RELIABILITY.md, fault 25). A binding imported only once the SDK serves has
no such copies: resume is off and the log line says to import it earlier,
without blaming a subreaper.

The host is tests/mcp_host.py (the official SDK client, in its own process); the
server is a minimal MCPServer script written here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the stdio check runs on Linux only")

HOST_SCRIPT = Path(__file__).resolve().parent / "mcp_host.py"
REPO_ROOT = Path(__file__).resolve().parents[3]

#: The server: creates the store before the SDK serves (LAZY_MODE=early), in its lifespan (lifespan), inside the
#: tool handler (late), or imports mcp_resume only in the tool handler (import_late); the tool "probe" makes the store's first load(), stores a token when there was none, and answers
#: what it loaded, whoami, and what fds 0 and 1 pointed at during the call.
SERVER = textwrap.dedent(
    """
    import json, logging, os, sys
    class Line(logging.Formatter):
        def format(self, r):
            return f"{r.levelname} {getattr(r, 'event', '')} {r.getMessage()} {getattr(r, 'detail', '')}"
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(Line())
    logging.basicConfig(level=logging.INFO, handlers=[handler])
    from contextlib import asynccontextmanager
    mode = os.environ["LAZY_MODE"]
    if mode != "import_late":  # import_late: the binding is first imported in the handler, while the SDK serves
        import mcp_resume
    def new_store():
        from mcp_resume import ResumeTokenStore
        return ResumeTokenStore(app="lazy", state_root=os.environ["STATE"], instance="-")
    store = new_store() if mode == "early" else None
    from mcp.server.mcpserver import MCPServer

    @asynccontextmanager
    async def lifespan(_server):
        global store
        if mode == "lifespan":  # after the SDK's stdio transport has repointed fds 0 and 1
            store = new_store()
        yield None

    server = MCPServer("lazy", lifespan=lifespan)

    @server.tool(description="First load in a handler.")
    def probe() -> str:
        global store
        if store is None:
            store = new_store()
        fds = [os.readlink(f"/proc/self/fd/{n}") for n in (0, 1)]
        token = store.load()
        if token is None:
            store.store(f"tok-{os.getpid()}")
        return json.dumps({"token": token, "whoami": store.whoami(), "fds": fds, "pid": os.getpid()})

    server.run("stdio")
    """
)


class Host:
    """tests/mcp_host.py: launches a server with the SDK client, calls its tools, shuts it down."""

    def __init__(self, log: Path) -> None:
        self.errlog = open(log, "a")
        self.proc = subprocess.Popen([sys.executable, str(HOST_SCRIPT)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.errlog, text=True, cwd=REPO_ROOT)
        assert self.proc.stdout is not None
        self.pid = json.loads(self.proc.stdout.readline())["pid"]

    def probe(self, script: Path, env: dict[str, str], stderr: Path) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        req = {"command": sys.executable, "args": [str(script)], "env": env, "cwd": str(REPO_ROOT),
               "stderr": str(stderr), "calls": [["probe", {}]]}
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        answer = json.loads(self.proc.stdout.readline())
        assert "error" not in answer, f"launch failed: {answer}\n{stderr.read_text()}"
        assert answer["stream_errors"] == []
        result = answer["results"][0]
        assert not result["is_error"], f"{result}\n{stderr.read_text()}"
        out: dict[str, Any] = json.loads(result["text"])
        return out

    def close(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        self.proc.stdout.close()
        self.errlog.close()


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[tuple[Host, Path, dict[str, str]]]:
    script = tmp_path / "lazy_server.py"
    script.write_text(SERVER)
    env = {"STATE": str(tmp_path / "state"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    host = Host(tmp_path / "host.log")
    yield host, script, env
    host.close()


def test_store_created_before_serving_resumes_from_a_handler(setup: tuple[Host, Path, dict[str, str]], tmp_path: Path) -> None:
    host, script, env = setup
    env = {**env, "LAZY_MODE": "early"}
    first = host.probe(script, env, tmp_path / "run1.log")
    # The SDK had pointed fds 0 and 1 away from the MCP pipes when the handler ran.
    assert first["fds"][0] == "/dev/null" and not first["fds"][1].startswith("pipe:["), first["fds"]
    who = first["whoami"]
    assert "error" not in who and who["pid"] == host.pid, who
    assert who["stdio"].startswith("verified: stdin pipe:[") and "is held by the host as fd" in who["stdio"], who
    assert first["token"] is None
    second = host.probe(script, env, tmp_path / "run2.log")
    assert second["token"] == f"tok-{first['pid']}", "the second server under the same host resumes the first's session"
    assert second["whoami"]["pid"] == host.pid


def test_store_opened_in_the_lifespan_resumes_across_a_relaunch(setup: tuple[Host, Path, dict[str, str]],
                                                                tmp_path: Path) -> None:
    """The store opens in the server's lifespan, after the SDK's stdio transport has pointed fds 0 and 1 away
    from the MCP pipes: the binding reports the copies it took at import, so the host is verified and the
    second server under the same host resumes the first's session."""
    host, script, env = setup
    env = {**env, "LAZY_MODE": "lifespan"}
    first = host.probe(script, env, tmp_path / "run1.log")
    assert first["fds"][0] == "/dev/null", first["fds"]
    who = first["whoami"]
    assert "error" not in who and who["pid"] == host.pid, (who, (tmp_path / "run1.log").read_text())
    assert who["stdio"].startswith("verified: stdin pipe:["), who
    assert first["token"] is None
    second = host.probe(script, env, tmp_path / "run2.log")
    assert second["token"] == f"tok-{first['pid']}", "the second server under the same host resumes the first's session"


def test_store_created_in_a_handler_resumes(setup: tuple[Host, Path, dict[str, str]], tmp_path: Path) -> None:
    """The store is created in the tool handler itself, while the SDK serves: the copies taken at import still
    show the host's pipes."""
    host, script, env = setup
    env = {**env, "LAZY_MODE": "late"}
    first = host.probe(script, env, tmp_path / "run1.log")
    assert first["fds"][0] == "/dev/null", first["fds"]
    assert "error" not in first["whoami"] and first["whoami"]["pid"] == host.pid, first["whoami"]
    second = host.probe(script, env, tmp_path / "run2.log")
    assert second["token"] == f"tok-{first['pid']}"


def test_binding_imported_while_serving_is_refused_with_the_real_cause(setup: tuple[Host, Path, dict[str, str]],
                                                                       tmp_path: Path) -> None:
    """mcp_resume imported for the first time while the SDK serves has no copies of the host's pipes: resume is
    off, and the message says to import the binding before the SDK serves, without blaming a subreaper."""
    host, script, env = setup
    env = {**env, "LAZY_MODE": "import_late"}
    got = host.probe(script, env, tmp_path / "late.log")
    who = got["whoami"]
    assert "error" in who and "pid" not in who, who
    err = who["error"]
    assert "stdin is /dev/null" in err and "import mcp_resume before the SDK starts serving" in err, err
    assert "subreaper" not in err, err
    log = (tmp_path / "late.log").read_text()
    assert "identity_unavailable" in log and "import mcp_resume before the SDK starts serving" in log, log
    state = Path(env["STATE"])
    assert not state.exists() or os.listdir(state) == [], "resume off: nothing written"

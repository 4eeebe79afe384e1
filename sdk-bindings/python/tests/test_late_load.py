"""A first ``load()`` inside a tool handler, under the real MCP SDK and a real MCP host process.

mcp 2.x points fds 0 and 1 at ``/dev/null`` and a copy of stderr while its stdio
transport serves (its guard against stray output), so a store whose first
``load()`` runs in a tool handler used to see ``/dev/null`` where the MCP pipes
were. A store created before the SDK serves keeps copies of fds 0 and 1 and
reports them in ``facts.stdio_fds``, so the plugin's stdio check still finds the
host holding the other end of the pipes and the session resumes
(docs/RELIABILITY.md, fault 25). A store created only after the SDK serves
cannot show who launched the server: resume is off and the log line says why
and what to do, without blaming a subreaper.

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

#: The server: creates the store before the SDK serves (LAZY_MODE=early) or inside the tool handler
#: (late); the tool "probe" makes the store's first load(), stores a token when there was none, and answers
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
    from mcp_resume import ResumeTokenStore
    early = os.environ["LAZY_MODE"] == "early"
    def new_store():
        return ResumeTokenStore("lazy", os.environ["STATE"], instance="-")
    store = new_store() if early else None
    from mcp.server.mcpserver import MCPServer
    server = MCPServer("lazy")

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


def test_store_created_while_serving_is_refused_with_the_real_cause(setup: tuple[Host, Path, dict[str, str]], tmp_path: Path) -> None:
    host, script, env = setup
    env = {**env, "LAZY_MODE": "late"}
    got = host.probe(script, env, tmp_path / "late.log")
    who = got["whoami"]
    assert "error" in who and "pid" not in who, who
    err = who["error"]
    assert "stdin is /dev/null" in err and "create the store before the SDK starts serving" in err, err
    assert "subreaper" not in err, err
    log = (tmp_path / "late.log").read_text()
    assert "identity_unavailable" in log and "create the store before the SDK starts serving" in log, log
    state = Path(env["STATE"])
    assert not state.exists() or os.listdir(state) == [], "resume off: nothing written"

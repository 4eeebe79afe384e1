"""The MCP host's identity on the real system: real processes, this host's primitives, the plugin's policy.

A child Python process opens a store and reports the plugin's ``whoami`` and
what its first ``load`` logged; this test process is its parent, so it is
the MCP host the plugin must find when it holds the child's stdio (pipes, a
socket pair: "verified"), cannot tell (``/dev/null``: resume off, and a copy taken before the fds were
repointed still verifies), or
does not hold it: a relay that passes this test's pipe through and a real
``PR_SET_CHILD_SUBREAPER`` adoption (docs/RELIABILITY.md, fault 11c), where
resume must be off and nothing written. The rules themselves are tested once,
in Go (procid) and by the shared conformance cases; this checks that
the Python primitives give the plugin what it needs on a real kernel.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the stdio check runs on Linux only")

#: Opens a store, loads once, writes {"whoami", "events", "files"} to $OUT. $GO, if set, is a file to wait for
#: (the relay shapes let the child go once the intermediate process is in place).
CHILD = textwrap.dedent(
    """
    import json, logging, os, sys, time
    go = os.environ.get("GO")
    if go:
        deadline = time.monotonic() + 30
        while not os.path.exists(go) and time.monotonic() < deadline:
            time.sleep(0.01)
    from mcp_resume import ResumeTokenStore
    events = []
    class H(logging.Handler):
        def emit(self, r):
            events.append(getattr(r, "event", ""))
    log = logging.getLogger("child")
    log.addHandler(H())
    log.setLevel(logging.INFO)
    with ResumeTokenStore("ident", state_root=os.environ["STATE"], logger=log, instance="-") as s:
        who = s.whoami()
        s.load()
    d = os.path.join(os.environ["STATE"], "ident")  # the app's directory under the state root
    files = sorted(os.listdir(d)) if os.path.isdir(d) else []
    with open(os.environ["OUT"] + ".tmp", "w") as f:
        json.dump({"whoami": who, "events": events, "files": files}, f)
    os.rename(os.environ["OUT"] + ".tmp", os.environ["OUT"])
    """
)

#: The relay shape: spawns CHILD with the pipe fd $W as its stdout and /dev/null as stdin, closes its own copy,
#: lets the child go, waits. $NAME, if set, becomes its comm (PR_SET_NAME).
RELAY = textwrap.dedent(
    """
    import ctypes, os, subprocess, sys
    if os.environ.get("NAME"):
        ctypes.CDLL(None).prctl(15, os.environ["NAME"].encode(), 0, 0, 0)
    w = int(os.environ["W"])
    p = subprocess.Popen([os.environ["PY"], "-c", os.environ["CHILD"]], stdin=subprocess.DEVNULL, stdout=w)
    os.close(w)
    open(os.environ["GO"], "w").close()
    sys.exit(p.wait())
    """
)

#: A subreaper: PR_SET_CHILD_SUBREAPER, then `sh -c 'child &'` with the pipe fd $W as stdout; sh exits at once,
#: orphaning the child, which the kernel re-parents to this process. Exit 77 when prctl fails.
SUBREAPER = textwrap.dedent(
    """
    import ctypes, os, subprocess, sys
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(36, 1, 0, 0, 0) != 0:
        sys.exit(77)
    w = int(os.environ["W"])
    sh = subprocess.Popen(["sh", "-c", '"$PY" -c "$CHILD" &'], stdin=subprocess.DEVNULL, stdout=w)
    os.close(w)
    sh.wait()
    open(os.environ["GO"], "w").close()
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            break
    """
)


def child_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_RESUME")}
    env.update(OUT=str(tmp_path / "out.json"), STATE=str(tmp_path / "state"), PY=sys.executable, CHILD=CHILD,
               GO=str(tmp_path / "go"))
    env.update(extra)
    return env


def result(tmp_path: Path) -> dict[str, Any]:
    out = tmp_path / "out.json"
    assert out.exists(), "the child wrote no result"
    data: dict[str, Any] = json.loads(out.read_text())
    return data


def verified_by_me(got: dict[str, Any], stdio_prefix: str) -> None:
    who = got["whoami"]
    assert who.get("pid") == os.getpid() and "error" not in who, who
    assert [(p["pid"], p["role"]) for p in who["chain"]] == [(os.getpid(), "host")]
    assert who["stdio"].startswith(stdio_prefix), who
    assert got["events"] == ["token_not_found"]
    assert got["files"] == [who["lock_file"]]


def test_child_with_pipes_verified(tmp_path: Path) -> None:
    env = child_env(tmp_path)
    del env["GO"]
    p = subprocess.Popen([sys.executable, "-c", CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    try:
        assert p.wait(timeout=60) == 0
        assert p.stdout is not None and p.stdout.read() == b""  # nothing on stdout
    finally:
        for f in (p.stdin, p.stdout):
            if f is not None:
                f.close()
    got = result(tmp_path)
    verified_by_me(got, "verified: stdin pipe:[")
    assert "is held by the host as fd" in got["whoami"]["stdio"]


def test_child_with_socketpair_verified(tmp_path: Path) -> None:
    env = child_env(tmp_path)
    del env["GO"]
    ours, theirs = socket.socketpair()
    try:
        p = subprocess.Popen([sys.executable, "-c", CHILD], stdin=theirs.fileno(), stdout=theirs.fileno(), env=env)
        theirs.close()
        assert p.wait(timeout=60) == 0
        ours.settimeout(10)
        assert ours.recv(1) == b""  # nothing on stdout: end of file once the child is gone
    finally:
        ours.close()
        theirs.close()
    got = result(tmp_path)
    verified_by_me(got, "verified: stdin socket:[")
    assert got["whoami"]["stdio"].endswith("peer is the host")


def test_child_with_dev_null_is_refused(tmp_path: Path) -> None:
    """/dev/null proves nothing about who launched the server: resume off, nothing written, and the reason
    names the SDK that repoints stdio rather than a subreaper."""
    env = child_env(tmp_path)
    del env["GO"]
    p = subprocess.run([sys.executable, "-c", CHILD], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       env=env, timeout=60)
    assert p.returncode == 0
    got = result(tmp_path)
    err = got["whoami"].get("error", "")
    assert "stdin is /dev/null, which proves nothing" in err and "subreaper" not in err, got
    assert got["events"] == ["identity_unavailable"] and got["files"] == []


def test_child_whose_stdio_is_repointed_after_the_store_opened_verified(tmp_path: Path) -> None:
    """The store copies fds 0 and 1 when it is created: pointing them at /dev/null afterwards (as the MCP SDK
    does while it serves) leaves the check on the copies, which this process's pipes verify."""
    env = child_env(tmp_path)
    del env["GO"]
    child = CHILD.replace('with ResumeTokenStore("ident", state_root=os.environ["STATE"], logger=log, instance="-") as s:',
                          'with ResumeTokenStore("ident", state_root=os.environ["STATE"], logger=log, instance="-") as s:\n'
                          '    null = os.open(os.devnull, os.O_RDWR); os.dup2(null, 0); os.dup2(null, 1); os.close(null)')
    assert child != CHILD
    p = subprocess.Popen([sys.executable, "-c", child], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    try:
        assert p.wait(timeout=60) == 0
    finally:
        for f in (p.stdin, p.stdout):
            if f is not None:
                f.close()
    got = result(tmp_path)
    verified_by_me(got, "verified: stdin pipe:[")


def run_relay(tmp_path: Path, script: str, **extra: str) -> tuple[int, int]:
    """Start ``script`` with the write end of a pipe this test holds the read end of; return (its pid, exit code)."""
    r, w = os.pipe()
    try:
        env = child_env(tmp_path, W=str(w), **extra)
        p = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.DEVNULL, pass_fds=(w,), env=env)
        os.close(w)
        w = -1
        code = p.wait(timeout=60)
    finally:
        if w >= 0:
            os.close(w)
        os.close(r)
    return p.pid, code


def resume_off(got: dict[str, Any], host_pid: int) -> str:
    """Resume is off, said once, nothing written; returns the reason whoami gives."""
    who = got["whoami"]
    assert "token_file" not in who and who.get("error"), who
    assert f"the host pid {host_pid} (" in who["error"], who
    assert got["events"] == ["identity_unavailable"] and got["files"] == [], got
    return str(who["error"])


def test_relay_passing_stdio_through_is_not_the_host(tmp_path: Path) -> None:
    """A non-launcher P passes the test's pipe to the child and closes its copy: P is the host and holds nothing."""
    pid, code = run_relay(tmp_path, RELAY)
    assert code == 0
    why = resume_off(result(tmp_path), pid)
    assert "stdout pipe:[" in why and "is not held by the host" in why


def test_relay_listed_as_launcher_verified(tmp_path: Path) -> None:
    """The same P, named mcp-relay and listed in MCP_RESUME_LAUNCHERS: the host is this test, which holds the pipe."""
    _, code = run_relay(tmp_path, RELAY, NAME="mcp-relay", MCP_RESUME_LAUNCHERS="mcp-relay")
    assert code == 0
    who = result(tmp_path)["whoami"]
    assert who.get("pid") == os.getpid(), who
    assert [p["role"] for p in who["chain"]] == ["launcher", "host"]
    assert who["stdio"].startswith("verified: stdout pipe:[") and "is held by the host as fd" in who["stdio"], who


def test_subreaper_adoption_is_refused(tmp_path: Path) -> None:
    """Fault 11c itself: the child is orphaned under `sh -c 'child &'` and adopted by subreaper S."""
    pid, code = run_relay(tmp_path, SUBREAPER)
    if code == 77:
        pytest.skip("prctl(PR_SET_CHILD_SUBREAPER) failed")
    assert code == 0
    why = resume_off(result(tmp_path), pid)
    assert "stdout pipe:[" in why and "adopted by a subreaper" in why

"""The host functions on real files: every refusal of hostfuncs/README.md, errors only in payloads.

Symlinks are never followed, a FIFO never blocks, names are names (no absolute
paths, ``/``, ``..``, NUL or hidden names), writes are atomic and 0600, remove
is unlink, the state directory must be a 0700 real directory of this user and
loses its stale temporary files, a lock excludes every other holder and dies
with its process (real child processes, ``kill -9`` included), the probe tells
live hosts from gone ones (real processes) and ages files by mtime. No call
ever raises: every answer is a JSON object, padded to 8 bytes.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import random
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from mcp_resume import _procid
from mcp_resume._hostfuncs import FUNCTIONS, TEMP_MAX_AGE_S, HostFunctions, valid_name

TOKEN_NAME = "token-4242-98765.0f1e2d3c4b5a69788796a5b4c3d2e1f0"
LOCK_NAME = "lock-4242-98765.0f1e2d3c4b5a69788796a5b4c3d2e1f0"


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def logs() -> Lines:
    return Lines()


@pytest.fixture
def state(tmp_path: Path) -> Path:
    d = tmp_path / "state"
    d.mkdir(mode=0o700)
    os.chmod(d, 0o700)
    return d


def funcs(state: Path, logs: Lines | None = None, identity: Any = lambda: (4242, "98765.abc"), **kw: Any) -> HostFunctions:
    logger = logging.getLogger(f"mcp_resume.test.{id(state)}")
    logger.handlers[:] = [logs] if logs else []
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    return HostFunctions(str(state), identity, logger, **kw)


def call(f: HostFunctions, fn: str, req: Any) -> dict[str, Any]:
    raw = f.call(fn, req if isinstance(req, bytes) else json.dumps(req).encode())
    assert len(raw) % 8 == 0, f"response not padded to 8 bytes: {raw!r}"
    doc = json.loads(raw)
    assert isinstance(doc, dict)
    return doc


def code(doc: dict[str, Any]) -> str | None:
    err = doc.get("error")
    return err["code"] if err else None


# --- names ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["/etc/passwd", "../outside", "..", ".", "a/b", "a\x00b", ".hidden", "", "x" * 256, "tok en", "tök", "a\\b", "a\n"],
    ids=["absolute", "dotdot path", "dotdot", "dot", "slash", "NUL", "hidden", "empty", "too long", "space",
         "non-ascii", "backslash", "trailing newline"],
)
@pytest.mark.parametrize("fn", ["mcp_resume_read", "mcp_resume_write", "mcp_resume_remove", "mcp_resume_lock", "mcp_resume_probe"])
def test_bad_names_refused(state: Path, tmp_path: Path, fn: str, name: str) -> None:
    (tmp_path / "outside").write_text("victim")
    req: dict[str, Any] = {"name": name, "limit": 10, "data": base64.b64encode(b"x").decode(), "pid": 2, "start_time": "1.a"}
    doc = call(funcs(state), fn, req)
    assert code(doc) == "invalid_request", doc
    assert (tmp_path / "outside").read_text() == "victim"
    assert os.listdir(state) == []


def test_name_rule() -> None:
    assert valid_name("token-1-2.a") and valid_name("a" * 255) and valid_name("A_b-c.d")
    assert not valid_name(5) and not valid_name(None) and not valid_name("a" * 256)


# --- read ------------------------------------------------------------------------------


def test_read_limits_and_missing(state: Path) -> None:
    (state / TOKEN_NAME).write_bytes(b"0123456789")
    f = funcs(state)
    assert base64.b64decode(call(f, "mcp_resume_read", {"name": TOKEN_NAME, "limit": 4})["data"]) == b"0123"
    assert base64.b64decode(call(f, "mcp_resume_read", {"name": TOKEN_NAME, "limit": 4097})["data"]) == b"0123456789"
    assert code(call(f, "mcp_resume_read", {"name": "token-missing", "limit": 5})) == "not_found"
    for limit in (0, -1, (1 << 20) + 1, "5", 1.5, True, None):
        assert code(call(f, "mcp_resume_read", {"name": TOKEN_NAME, "limit": limit})) == "invalid_request", limit
    assert code(call(f, "mcp_resume_read", {"name": TOKEN_NAME})) == "invalid_request"


def test_read_symlink_refused(state: Path, tmp_path: Path) -> None:
    (tmp_path / "outside-token").write_text("victim-token")
    os.symlink("../outside-token", state / TOKEN_NAME)
    doc = call(funcs(state), "mcp_resume_read", {"name": TOKEN_NAME, "limit": 100})
    assert code(doc) == "unsafe"
    assert "victim" not in json.dumps(doc)


def test_read_fifo_does_not_block(state: Path) -> None:
    os.mkfifo(state / TOKEN_NAME, 0o600)
    t0 = time.monotonic()
    doc = call(funcs(state), "mcp_resume_read", {"name": TOKEN_NAME, "limit": 100})
    assert code(doc) == "unsafe"
    assert time.monotonic() - t0 < 2


def test_read_directory_refused(state: Path) -> None:
    (state / TOKEN_NAME).mkdir()
    assert code(call(funcs(state), "mcp_resume_read", {"name": TOKEN_NAME, "limit": 100})) == "unsafe"


# --- write -----------------------------------------------------------------------------


def test_write_atomic_0600(state: Path) -> None:
    f = funcs(state)
    for data in (b"tok-A", b"tok-B"):
        assert call(f, "mcp_resume_write", {"name": TOKEN_NAME, "data": base64.b64encode(data).decode()}) == {}
        assert (state / TOKEN_NAME).read_bytes() == data
    assert stat.S_IMODE(os.stat(state / TOKEN_NAME).st_mode) == 0o600
    assert os.listdir(state) == [TOKEN_NAME], "a temporary file was left behind"


def test_write_replaces_symlink_without_following(state: Path, tmp_path: Path) -> None:
    victim = tmp_path / "outside-token"
    victim.write_text("victim-token")
    os.symlink("../outside-token", state / TOKEN_NAME)
    assert call(funcs(state), "mcp_resume_write", {"name": TOKEN_NAME, "data": base64.b64encode(b"tok-N").decode()}) == {}
    assert victim.read_text() == "victim-token"
    assert not (state / TOKEN_NAME).is_symlink() and (state / TOKEN_NAME).read_bytes() == b"tok-N"


def test_write_failure_removes_temp(state: Path) -> None:
    (state / TOKEN_NAME).mkdir()  # rename over a directory fails
    doc = call(funcs(state), "mcp_resume_write", {"name": TOKEN_NAME, "data": base64.b64encode(b"tok").decode()})
    assert code(doc) == "io"
    assert os.listdir(state) == [TOKEN_NAME]


def test_write_missing_dir(tmp_path: Path) -> None:
    doc = call(funcs(tmp_path / "absent"), "mcp_resume_write", {"name": TOKEN_NAME, "data": "dG9r"})
    assert code(doc) == "not_found"


@pytest.mark.parametrize("data", [None, 5, "not base64!", "dG9r\n"], ids=["missing", "number", "garbage", "newline"])
def test_write_bad_data(state: Path, data: Any) -> None:
    req = {"name": TOKEN_NAME} if data is None else {"name": TOKEN_NAME, "data": data}
    assert code(call(funcs(state), "mcp_resume_write", req)) == "invalid_request"
    assert os.listdir(state) == []


# --- remove ------------------------------------------------------------------------------


def test_remove(state: Path, tmp_path: Path) -> None:
    f = funcs(state)
    (state / TOKEN_NAME).write_text("x")
    assert call(f, "mcp_resume_remove", {"name": TOKEN_NAME}) == {}
    assert code(call(f, "mcp_resume_remove", {"name": TOKEN_NAME})) == "not_found"
    (state / TOKEN_NAME).mkdir()
    assert code(call(f, "mcp_resume_remove", {"name": TOKEN_NAME})) == "io"  # unlink, never rmdir
    assert (state / TOKEN_NAME).is_dir()
    os.rmdir(state / TOKEN_NAME)
    (tmp_path / "target").write_text("keep")
    os.symlink("../target", state / TOKEN_NAME)
    assert call(f, "mcp_resume_remove", {"name": TOKEN_NAME}) == {}
    assert (tmp_path / "target").read_text() == "keep"


# --- list ---------------------------------------------------------------------------------


def test_list(state: Path, tmp_path: Path) -> None:
    for n in ("token-2-b", "token-10-a", "token-1-c", "other"):
        (state / n).write_text("x")
    (state / "token-dir").mkdir()
    os.symlink("token-2-b", state / "token-link")
    os.mkfifo(state / "token-fifo")
    (state / ".token-hidden").write_text("x")
    f = funcs(state)
    assert call(f, "mcp_resume_list", {"prefix": "token-"}) == {"names": ["token-1-c", "token-10-a", "token-2-b"]}
    assert call(f, "mcp_resume_list", {"prefix": ""})["names"] == ["other", "token-1-c", "token-10-a", "token-2-b"]
    assert code(call(funcs(tmp_path / "absent"), "mcp_resume_list", {"prefix": "token-"})) == "not_found"
    assert code(call(f, "mcp_resume_list", {})) == "invalid_request"


# --- prepare_dir ------------------------------------------------------------------------------


def test_prepare_dir_creates_parents_0700(tmp_path: Path) -> None:
    d = tmp_path / "a" / "b" / "state"
    assert call(funcs(d), "mcp_resume_prepare_dir", {}) == {}
    for p in (tmp_path / "a", tmp_path / "a" / "b", d):
        assert stat.S_IMODE(os.stat(p).st_mode) == 0o700, p
    assert call(funcs(d), "mcp_resume_prepare_dir", {}) == {}  # idempotent


def test_prepare_dir_refusals(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    os.symlink("real", tmp_path / "link")
    assert code(call(funcs(tmp_path / "link"), "mcp_resume_prepare_dir", {})) == "unsafe"

    loose = tmp_path / "loose"
    loose.mkdir()
    os.chmod(loose, 0o770)
    doc = call(funcs(loose), "mcp_resume_prepare_dir", {})
    assert code(doc) == "unsafe" and f"run: chmod 700 {loose}" in doc["error"]["message"]

    assert code(call(funcs(Path("relative/state")), "mcp_resume_prepare_dir", {})) == "unsafe"

    (tmp_path / "file").write_text("x")
    assert code(call(funcs(tmp_path / "file"), "mcp_resume_prepare_dir", {})) == "io"


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a directory to another user")
def test_prepare_dir_foreign_owner(tmp_path: Path) -> None:
    d = tmp_path / "foreign"
    d.mkdir(mode=0o700)
    os.chown(d, 12345, -1)
    doc = call(funcs(d), "mcp_resume_prepare_dir", {})
    assert code(doc) == "unsafe" and "owned by uid 12345" in doc["error"]["message"]


# --- identity ----------------------------------------------------------------------------------


def test_identity(state: Path) -> None:
    assert call(funcs(state), "mcp_resume_identity", {}) == {"pid": 4242, "start_time": "98765.abc", "instance": ""}
    doc = call(funcs(state, instance="--profile\x00work"), "mcp_resume_identity", {})
    assert doc == {"pid": 4242, "start_time": "98765.abc", "instance": "--profile\x00work"}

    def boom() -> tuple[int, str]:
        raise RuntimeError("parent exited")

    doc = call(funcs(state, identity=boom), "mcp_resume_identity", {})
    assert doc["error"] == {"code": "unavailable", "message": "parent exited"}
    assert code(call(funcs(state, identity=None), "mcp_resume_identity", {})) == "unavailable"
    assert code(call(funcs(state, identity=lambda: ("4242", "x")), "mcp_resume_identity", {})) == "unavailable"
    assert code(call(funcs(state, identity=lambda: None), "mcp_resume_identity", {})) == "unavailable"


# --- log -----------------------------------------------------------------------------------------


def test_log_levels_and_fields(state: Path, logs: Lines, capsys: pytest.CaptureFixture[str]) -> None:
    f = funcs(state, logs)
    for level, want in (("debug", logging.DEBUG), ("info", logging.INFO), ("warn", logging.WARNING),
                        ("error", logging.ERROR), ("bogus", logging.INFO)):
        req = {"level": level, "event": "ev", "message": "100% done %s", "detail": "why"}
        assert call(f, "mcp_resume_log", req) == {}
        r = logs.records[-1]
        assert (r.levelno, r.getMessage(), r.event, r.detail) == (want, "100% done %s", "ev", "why")  # type: ignore[attr-defined]
    call(f, "mcp_resume_log", {"level": "info", "event": "ev", "message": "m"})
    assert logs.records[-1].detail == ""  # type: ignore[attr-defined]
    assert code(call(f, "mcp_resume_log", {"level": "info", "message": "m"})) == "invalid_request"
    assert capsys.readouterr().out == ""


def test_log_broken_handler(state: Path) -> None:
    class Broken(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            raise RuntimeError("handler down")

        def handleError(self, record: logging.LogRecord) -> None:
            raise RuntimeError("really down")

    f = funcs(state)
    f.logger.handlers[:] = [Broken()]
    assert call(f, "mcp_resume_log", {"level": "error", "event": "e", "message": "m"}) == {}


# --- never raises ----------------------------------------------------------------------------------


def test_malformed_requests_answered(state: Path) -> None:
    f = funcs(state)
    for fn in FUNCTIONS[2:]:
        for req in (b"", b"{", b"[]", b"null", b"\xff\xfe", b'"x"', b"{} trailing"):
            assert code(call(f, fn, req)) == "invalid_request", (fn, req)
    assert code(call(f, "mcp_resume_nope", {})) == "invalid_request"


def test_fuzz_never_raises(state: Path) -> None:
    f = funcs(state, alive=lambda pid, start: False)
    rng = random.Random(0)
    pieces = [b"{", b"}", b'"name"', b":", b",", b'"limit"', b"5", b'"data"', b'"prefix"', b'"..\\u0000"', b"[", b"]", b"null"]
    for _ in range(2000):
        req = b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 8)))
        for fn in FUNCTIONS:
            call(f, fn, req)
    f.close()
    assert not [n for n in os.listdir(state) if n.startswith(".")]


# --- prepare_dir: the sweep of leftover temporary files ------------------------------------------


def _age(p: Path, seconds: float) -> None:
    t = time.time() - seconds
    os.utime(p, (t, t), follow_symlinks=False)


def test_prepare_dir_sweeps_stale_temporaries(state: Path, tmp_path: Path) -> None:
    stale = TEMP_MAX_AGE_S + 30
    (state / f".{TOKEN_NAME}.00112233aabbccdd.tmp").write_text("tok-h")  # a killed writer's
    _age(state / f".{TOKEN_NAME}.00112233aabbccdd.tmp", stale)
    (state / f".{TOKEN_NAME}.ffeeddccbbaa9988.tmp").write_text("tok-")  # a live writer's: fresh
    (state / ".adir.tmp").mkdir()
    _age(state / ".adir.tmp", stale)
    (tmp_path / "target").write_text("keep")
    os.symlink("../target", state / ".link.tmp")
    _age(state / ".link.tmp", stale)
    for keep in ("token-x.tmp", ".hidden", TOKEN_NAME):
        (state / keep).write_text("x")
        _age(state / keep, stale)
    assert call(funcs(state), "mcp_resume_prepare_dir", {}) == {}
    assert sorted(os.listdir(state)) == sorted(
        [f".{TOKEN_NAME}.ffeeddccbbaa9988.tmp", ".adir.tmp", ".link.tmp", "token-x.tmp", ".hidden", TOKEN_NAME]
    )
    assert (tmp_path / "target").read_text() == "keep"


def test_prepare_dir_unsafe_sweeps_nothing(tmp_path: Path) -> None:
    loose = tmp_path / "loose"
    loose.mkdir()
    os.chmod(loose, 0o770)
    (loose / ".t.tmp").write_text("x")
    _age(loose / ".t.tmp", 3600)
    assert code(call(funcs(loose), "mcp_resume_prepare_dir", {})) == "unsafe"
    assert os.listdir(loose) == [".t.tmp"]


# --- lock ---------------------------------------------------------------------------------------


def lock(f: HostFunctions, name: str = LOCK_NAME) -> dict[str, Any]:
    return call(f, "mcp_resume_lock", {"name": name})


def test_lock_busy_idempotent_released_by_close(state: Path) -> None:
    a, b = funcs(state), funcs(state)
    assert lock(a) == {}
    assert lock(a) == {}, "taking a lock this HostFunctions holds must succeed"
    doc = lock(b)
    assert code(doc) == "busy" and LOCK_NAME in doc["error"]["message"]
    assert a.held() == [LOCK_NAME] and b.held() == []
    st = os.stat(state / LOCK_NAME)
    assert stat.S_IMODE(st.st_mode) == 0o600 and st.st_size == 0
    assert lock(b, LOCK_NAME + "-0123456789abcdef") == {}, "another name is another lock"
    a.close()
    a.close()
    assert lock(b) == {}
    assert code(lock(a)) == "busy"
    b.close()
    assert sorted(os.listdir(state)) == [LOCK_NAME, LOCK_NAME + "-0123456789abcdef"], "a lock file was deleted"
    assert lock(a) == {}
    a.close()


def test_lock_keeps_contents(state: Path) -> None:
    (state / LOCK_NAME).write_text("left by an older version")
    f = funcs(state)
    assert lock(f) == {}
    f.close()
    assert (state / LOCK_NAME).read_text() == "left by an older version"


def test_lock_refusals(state: Path, tmp_path: Path) -> None:
    f = funcs(state)
    os.symlink("../outside-lock", state / LOCK_NAME)
    assert code(lock(f)) == "unsafe"
    assert not (tmp_path / "outside-lock").exists(), "the symlink was followed"
    os.unlink(state / LOCK_NAME)
    os.mkfifo(state / LOCK_NAME, 0o600)
    t0 = time.monotonic()
    assert code(lock(f)) == "unsafe"
    assert time.monotonic() - t0 < 2
    os.unlink(state / LOCK_NAME)
    (state / LOCK_NAME).mkdir()
    assert code(lock(f)) == "io"
    assert code(lock(funcs(tmp_path / "absent"))) == "not_found"
    assert code(call(f, "mcp_resume_lock", {})) == "invalid_request"
    assert f.held() == []


LOCK_CHILD = r"""
import json, logging, sys
from mcp_resume._hostfuncs import HostFunctions
f = HostFunctions(sys.argv[1], None, logging.getLogger("child"))
print(f.call("mcp_resume_lock", json.dumps({"name": sys.argv[2]}).encode()).decode().strip(), flush=True)
sys.stdin.read()
"""


def test_lock_dies_with_a_killed_process(state: Path) -> None:
    """kill -9 of the holder (a real process) releases the lock: no stale lock ever blocks resume."""
    child = subprocess.Popen(
        [sys.executable, "-c", LOCK_CHILD, str(state), LOCK_NAME],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert child.stdout is not None
        assert json.loads(child.stdout.readline()) == {}
        f = funcs(state)
        assert code(lock(f)) == "busy"
        os.kill(child.pid, signal.SIGKILL)
        child.wait(30)
        assert lock(f) == {}
        f.close()
        assert os.listdir(state) == [LOCK_NAME]
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(30)
        for s in (child.stdin, child.stdout):
            if s:
                s.close()


def test_lock_not_inherited_by_children(state: Path) -> None:
    """The descriptor is O_CLOEXEC: a program the server starts cannot keep its lock alive."""
    f = funcs(state)
    assert lock(f) == {}
    child = subprocess.Popen(["sleep", "30"], close_fds=False)
    try:
        f.close()
        g = funcs(state)
        assert lock(g) == {}
        g.close()
    finally:
        child.kill()
        child.wait(30)


# --- probe -----------------------------------------------------------------------------------------


def probe(f: HostFunctions, pid: int, start: str, name: str = TOKEN_NAME) -> dict[str, Any]:
    return call(f, "mcp_resume_probe", {"name": name, "pid": pid, "start_time": start})


def start_time_of(pid: int) -> str:
    return _procid.new_source().lookup(pid).start_time


@pytest.mark.skipif(sys.platform not in ("linux", "darwin"), reason="process liveness needs Linux or macOS")
def test_probe_this_process_alive(state: Path) -> None:
    (state / TOKEN_NAME).write_text("x")
    f = funcs(state)  # the real liveness check, _procid.alive
    me = start_time_of(os.getpid())
    doc = probe(f, os.getpid(), me)
    assert doc["host"] == "alive" and 0 <= doc["age_seconds"] <= 2
    assert probe(f, os.getpid(), "1" + me)["host"] == "gone"  # the pid names another process
    assert probe(f, os.getppid(), start_time_of(os.getppid()))["host"] == "alive"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux PID namespaces")
def test_probe_another_pid_namespace_unknown(state: Path) -> None:
    """A start time recorded in another PID namespace cannot be checked here: "unknown", never "gone"."""
    (state / TOKEN_NAME).write_text("x")
    f = funcs(state)  # the real liveness check, _procid.alive
    ticks, boot, ns = start_time_of(os.getpid()).split(".")
    other = f"{ticks}.{boot}.{int(ns) + 1}"
    assert probe(f, os.getpid(), other)["host"] == "unknown"
    assert probe(f, 2**22 + 12345, other)["host"] == "unknown"  # even for a pid absent here


@pytest.mark.skipif(sys.platform not in ("linux", "darwin"), reason="process liveness needs Linux or macOS")
def test_probe_exited_child_gone(state: Path) -> None:
    (state / TOKEN_NAME).write_text("x")
    f = funcs(state)
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        start = start_time_of(child.pid)
        assert probe(f, child.pid, start)["host"] == "alive"
        assert child.stdin is not None
        child.stdin.close()
        if hasattr(os, "waitid"):
            # Exited but not reaped: a zombie is not alive.
            os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)
            assert probe(f, child.pid, start)["host"] == "gone"
        child.wait(30)
        assert probe(f, child.pid, start)["host"] == "gone"
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(30)


def test_probe_age_and_unknown(state: Path) -> None:
    (state / TOKEN_NAME).write_text("x")
    _age(state / TOKEN_NAME, 1000)
    seen: list[tuple[int, str]] = []

    def alive(pid: int, start: str) -> bool:
        seen.append((pid, start))
        return pid == 7777

    f = funcs(state, alive=alive)
    doc = probe(f, 7777, "2.cd")
    assert doc["host"] == "alive" and 1000 <= doc["age_seconds"] <= 1002
    assert probe(f, 8888, "3.ef")["host"] == "gone"
    assert seen == [(7777, "2.cd"), (8888, "3.ef")]

    def cannot_tell(pid: int, start: str) -> bool:
        raise PermissionError("not allowed")

    doc = probe(funcs(state, alive=cannot_tell), 7777, "2.cd")
    assert doc["host"] == "unknown" and doc["age_seconds"] >= 1000

    os.symlink("nowhere", state / "token-9-1.a")  # lstat: the link's own age, never its target's
    _age(state / "token-9-1.a", 50)
    doc = probe(f, 9, "1.a", name="token-9-1.a")
    assert doc["host"] == "gone" and 50 <= doc["age_seconds"] <= 52


def test_probe_refusals(state: Path) -> None:
    f = funcs(state, alive=lambda pid, start: True)
    assert code(probe(f, 7777, "2.cd")) == "not_found"
    (state / TOKEN_NAME).write_text("x")
    for req in ({"name": TOKEN_NAME, "start_time": "2.cd"}, {"name": TOKEN_NAME, "pid": "7777", "start_time": "2.cd"},
                {"name": TOKEN_NAME, "pid": 7777}, {"name": TOKEN_NAME, "pid": True, "start_time": "x"}):
        assert code(call(f, "mcp_resume_probe", req)) == "invalid_request", req

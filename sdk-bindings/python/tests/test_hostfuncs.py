"""The host functions (hostfuncs/README.md, ABI 10) on the real system: real files, real /proc, real processes.

File functions: a name is one path element (no ``/``, NUL, ``.`` or ``..``, at
most 255 bytes), symlinks are never followed, a FIFO never blocks, writes go
through the plugin's temporary name, are atomic and 0600, remove is unlink
(a directory is ``unsafe``), list reports every entry with its type and age,
and nothing acts before ``open`` fixed the state directory; the lock excludes
every other holder and dies with its process. Primitives: facts of this
process, typed ``/proc`` ops (``environ``, ``ns`` and ``net`` too) checked before any system call on the real
``/proc`` (real pipes and child processes), ``kill0`` on real children,
``fstat`` and ``peer`` on real pipes and socket pairs (in child processes whose
stdio they are). No call ever raises: every answer is a JSON object padded to
8 bytes.

About 1,150 lines: one test per rule of the contract, for the host functions the conformance cases cannot
reach (the real /proc, real processes, planted files); split by function, each part would repeat the same
fixtures.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import random
import re
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from mcp_resume._hostfuncs import FUNCTIONS, HostFunctions

from pinned import System, pinned_functions

TOKEN_NAME = "token-4242-98765.0f1e2d3c4b5a69788796a5b4c3d2e1f0.4026531836"
LOCK_NAME = "lock-4242-98765.0f1e2d3c4b5a69788796a5b4c3d2e1f0.4026531836"
TEMP_NAME = f".{TOKEN_NAME}.0123456789abcdef.tmp"  # as the plugin names it
#: The host functions with JSON requests and answers (``mcp_resume_crypto`` is binary: test_crypto.py).
JSON_FUNCTIONS = tuple(fn for fn in FUNCTIONS if fn != "mcp_resume_crypto")
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs Linux /proc")


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


def bare(logs: Lines | None = None) -> HostFunctions:
    """HostFunctions with no state directory yet (before ``open``)."""
    logger = logging.getLogger(f"mcp_resume.test.{random.random()}")
    logger.handlers[:] = [logs] if logs else []
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    return HostFunctions(logger)


def funcs(state: Path | str, logs: Lines | None = None) -> HostFunctions:
    """HostFunctions confined to ``state``, as the store confines them after a successful ``open``."""
    f = bare(logs)
    f.set_state_dir(str(state))
    return f


def call(f: HostFunctions, fn: str, req: Any) -> dict[str, Any]:
    raw = f.call(fn, req if isinstance(req, bytes) else json.dumps(req).encode())
    assert len(raw) % 8 == 0, f"response not padded to 8 bytes: {raw!r}"
    doc = json.loads(raw)
    assert isinstance(doc, dict)
    return doc


def code(doc: dict[str, Any]) -> str | None:
    err = doc.get("error")
    return err["code"] if err else None


def write(f: HostFunctions, name: str, data: bytes, temp: str = TEMP_NAME) -> dict[str, Any]:
    return call(f, "mcp_resume_write", {"name": name, "temp": temp, "data": base64.b64encode(data).decode()})


def prim(op: str, path: Path | str, state: Path | str | None = None, **extra: Any) -> dict[str, Any]:
    """One ``stat`` or ``mkdir`` of ``mcp_resume_prepare_dir`` on fresh HostFunctions confined to ``state``
    (default ``path``: the state directory itself)."""
    f = funcs(str(state if state is not None else path))
    return call(f, "mcp_resume_prepare_dir", {"op": op, "path": str(path), **extra})


# --- names ----------------------------------------------------------------------------


BAD_NAMES = ["/etc/passwd", "../outside", "..", ".", "a/b", "a/", "a\x00b", "", "x" * 256, "é" * 128, 5, None]
BAD_IDS = ["absolute", "dotdot path", "dotdot", "dot", "slash", "trailing slash", "NUL", "empty", "256 bytes",
           "256 bytes of two-byte characters", "number", "missing"]


@pytest.mark.parametrize("name", BAD_NAMES, ids=BAD_IDS)
@pytest.mark.parametrize("fn,key", [("mcp_resume_read", "name"), ("mcp_resume_write", "name"),
                                    ("mcp_resume_write", "temp"), ("mcp_resume_remove", "name"),
                                    ("mcp_resume_lock", "name")])
def test_names_not_one_path_element_refused(state: Path, tmp_path: Path, fn: str, key: str, name: Any) -> None:
    """The whole host rule (README, "Names"): one path element of 1-255 bytes, refused before any system call."""
    (tmp_path / "outside").write_text("victim")
    req: dict[str, Any] = {"name": TOKEN_NAME, "temp": TEMP_NAME, "limit": 10, "data": base64.b64encode(b"x").decode()}
    req[key] = name
    if name is None:
        del req[key]
    doc = call(funcs(state), fn, req)
    assert code(doc) == "invalid_request", doc
    assert (tmp_path / "outside").read_text() == "victim"
    assert os.listdir(state) == []


@pytest.mark.parametrize("name", [".hidden", "tok en", "tök", "a\\b", "a\n", "x" * 255, "é" * 127 + "x", "..."])
def test_names_of_one_path_element_accepted(state: Path, name: str) -> None:
    """Everything else is the plugin's policy, not the host's: such names are written, read, locked, removed."""
    f = funcs(state)
    assert write(f, name, b"tok", temp=".t.0123456789abcdef.tmp") == {}
    assert base64.b64decode(call(f, "mcp_resume_read", {"name": name, "limit": 10})["data"]) == b"tok"
    assert call(f, "mcp_resume_remove", {"name": name}) == {}
    assert call(f, "mcp_resume_lock", {"name": name}) == {}
    f.close()
    assert os.listdir(state) == [name]


# --- read ------------------------------------------------------------------------------


def test_read_limits_and_missing(state: Path) -> None:
    (state / TOKEN_NAME).write_bytes(b"0123456789")
    f = funcs(state)
    assert base64.b64decode(call(f, "mcp_resume_read", {"name": TOKEN_NAME, "limit": 4})["data"]) == b"0123"
    assert base64.b64decode(call(f, "mcp_resume_read", {"name": TOKEN_NAME, "limit": 4097})["data"]) == b"0123456789"
    assert code(call(f, "mcp_resume_read", {"name": "token-missing", "limit": 5})) == "not_found"
    for limit in (0, -1, (8 << 20) + 1, "5", 1.5, True, None):
        assert code(call(f, "mcp_resume_read", {"name": TOKEN_NAME, "limit": limit})) == "invalid_request", limit
    assert code(call(f, "mcp_resume_read", {"name": TOKEN_NAME})) == "invalid_request"


def test_read_limit_up_to_8_mib(state: Path) -> None:
    """A sealed handle record of the largest value fits one read: limit up to 8388608 (ABI 6)."""
    data = os.urandom(8 << 20) + b"tail"
    (state / TOKEN_NAME).write_bytes(data)
    f = funcs(state)
    assert base64.b64decode(call(f, "mcp_resume_read", {"name": TOKEN_NAME, "limit": 8 << 20})["data"]) == data[: 8 << 20]
    assert code(call(f, "mcp_resume_read", {"name": TOKEN_NAME, "limit": (8 << 20) + 1})) == "invalid_request"


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
        assert write(f, TOKEN_NAME, data) == {}
        assert (state / TOKEN_NAME).read_bytes() == data
    assert stat.S_IMODE(os.stat(state / TOKEN_NAME).st_mode) == 0o600
    assert os.listdir(state) == [TOKEN_NAME], "a temporary file was left behind"


def test_write_replaces_symlink_without_following(state: Path, tmp_path: Path) -> None:
    victim = tmp_path / "outside-token"
    victim.write_text("victim-token")
    os.symlink("../outside-token", state / TOKEN_NAME)
    assert write(funcs(state), TOKEN_NAME, b"tok-N") == {}
    assert victim.read_text() == "victim-token"
    assert not (state / TOKEN_NAME).is_symlink() and (state / TOKEN_NAME).read_bytes() == b"tok-N"


def test_write_over_a_directory_removes_temp(state: Path) -> None:
    (state / TOKEN_NAME).mkdir()  # rename over a directory: EISDIR
    assert code(write(funcs(state), TOKEN_NAME, b"tok")) == "unsafe"
    assert os.listdir(state) == [TOKEN_NAME], "the temporary file was left behind"


@pytest.mark.parametrize("kind", ["file", "symlink", "dangling symlink", "directory"])
def test_write_temp_exists(state: Path, tmp_path: Path, kind: str) -> None:
    """Something at ``temp`` (another writer's, or planted): ``exists``; it is left as it was, nothing of
    this write is left, nothing is written through a link."""
    (tmp_path / "target").write_text("keep")
    if kind == "file":
        (state / TEMP_NAME).write_text("another writer's")
    elif kind == "directory":
        (state / TEMP_NAME).mkdir()
    else:
        os.symlink("../target" if kind == "symlink" else "../nowhere", state / TEMP_NAME)
    assert code(write(funcs(state), TOKEN_NAME, b"tok")) == "exists"
    assert os.listdir(state) == [TEMP_NAME]
    assert (tmp_path / "target").read_text() == "keep" and not (tmp_path / "nowhere").exists()
    if kind == "file":
        assert (state / TEMP_NAME).read_text() == "another writer's"


def test_write_after_dir_removed(state: Path) -> None:
    f = funcs(state)
    os.rmdir(state)
    assert code(write(f, TOKEN_NAME, b"tok")) == "not_found"


@pytest.mark.parametrize("fn", ["mcp_resume_read", "mcp_resume_write", "mcp_resume_remove", "mcp_resume_lock", "mcp_resume_list",
                                "mcp_resume_unlock"])
def test_file_functions_confined_before_open(state: Path, fn: str) -> None:
    """Confinement (README): no file function acts before ``open`` fixed the state directory, nor mkdir."""
    (state / TOKEN_NAME).write_text("x")
    req = {"name": TOKEN_NAME, "temp": TEMP_NAME, "limit": 10, "data": "dG9r"}
    f = bare()
    assert code(call(f, fn, req)) == "invalid_request"
    assert code(call(f, "mcp_resume_prepare_dir", {"op": "mkdir", "path": str(state / "sub")})) == "invalid_request"
    f.set_state_dir("")  # an open that answered no state directory fixes none
    assert code(call(f, fn, req)) == "invalid_request"
    assert (state / TOKEN_NAME).read_text() == "x" and os.listdir(state) == [TOKEN_NAME] and f.state_dir == ""


def test_state_dir_is_fixed_for_good(tmp_path: Path) -> None:
    f = funcs(tmp_path / "a")
    f.set_state_dir(str(tmp_path / "a"))
    with pytest.raises(ValueError):
        f.set_state_dir(str(tmp_path / "b"))
    assert f.state_dir == str(tmp_path / "a")


@pytest.mark.parametrize("data", [None, 5, "not base64!", "dG9r\n"], ids=["missing", "number", "garbage", "newline"])
def test_write_bad_data(state: Path, data: Any) -> None:
    req = {"name": TOKEN_NAME, "temp": TEMP_NAME} if data is None else {"name": TOKEN_NAME, "temp": TEMP_NAME, "data": data}
    assert code(call(funcs(state), "mcp_resume_write", req)) == "invalid_request"
    assert os.listdir(state) == []


# --- remove ------------------------------------------------------------------------------


def test_remove(state: Path, tmp_path: Path) -> None:
    f = funcs(state)
    (state / TOKEN_NAME).write_text("x")
    assert call(f, "mcp_resume_remove", {"name": TOKEN_NAME}) == {}
    assert code(call(f, "mcp_resume_remove", {"name": TOKEN_NAME})) == "not_found"
    (state / TOKEN_NAME).mkdir()
    assert code(call(f, "mcp_resume_remove", {"name": TOKEN_NAME})) == "unsafe"  # unlink, never rmdir: EISDIR
    assert (state / TOKEN_NAME).is_dir()
    os.rmdir(state / TOKEN_NAME)
    (tmp_path / "target").write_text("keep")
    os.symlink("../target", state / TOKEN_NAME)
    assert call(f, "mcp_resume_remove", {"name": TOKEN_NAME}) == {}
    assert (tmp_path / "target").read_text() == "keep"


# --- list ---------------------------------------------------------------------------------


def test_list_every_entry_with_type_and_age(state: Path, tmp_path: Path) -> None:
    """Every entry, whatever its name or type (the plugin filters), typed from lstat, aged floor(now - mtime)."""
    for n in ("token-2-b", "token-10-a", "other", ".token-x.0123456789abcdef.tmp", "tok en"):
        (state / n).write_text("x")
    (state / "token-dir").mkdir()
    os.symlink("token-2-b", state / "token-link")
    os.symlink("nowhere", state / "dangling")
    os.mkfifo(state / "token-fifo")
    fd = os.open(os.path.join(os.fsencode(state), b"tok\xe2\x82-\xff"), os.O_CREAT | os.O_WRONLY, 0o600)
    os.close(fd)
    old = time.time() - 3 * 86400 - 0.5
    os.utime(state / "token-10-a", (old, old))
    future = time.time() + 100
    os.utime(state / "other", (future, future))
    f = funcs(state)
    files = call(f, "mcp_resume_list", {"prefix": "ignored"})["files"]
    got = {x["name"]: x["type"] for x in files}
    assert got == {"token-2-b": "file", "token-10-a": "file", "other": "file", ".token-x.0123456789abcdef.tmp": "file",
                   "tok en": "file", "token-dir": "dir", "token-link": "symlink", "dangling": "symlink",
                   "token-fifo": "other", "tok\ufffd\ufffd-\ufffd": "file"}, "one U+FFFD per byte that is not UTF-8"
    ages = {x["name"]: x["age_seconds"] for x in files}
    assert ages["token-10-a"] == 3 * 86400 and ages["token-2-b"] in (0, 1)
    assert -101 <= ages["other"] <= -99, "a future mtime gives a negative age, rounded down"
    assert {x["name"] for x in call(f, "mcp_resume_list", {})["files"]} == set(got), "fields are ignored"
    os.rename(state, tmp_path / "moved")
    assert code(call(f, "mcp_resume_list", {})) == "not_found"
    assert call(funcs(tmp_path / "moved" / "token-dir"), "mcp_resume_list", {}) == {"files": []}


# --- prepare_dir ------------------------------------------------------------------------------


def test_prepare_dir_mkdir_only_the_state_directory_and_its_ancestors(tmp_path: Path) -> None:
    state = tmp_path / "root" / "app"
    f = funcs(state)
    for other in (tmp_path / "elsewhere", tmp_path / "root" / "app2", state / "sub", tmp_path / "ro"):
        assert code(call(f, "mcp_resume_prepare_dir", {"op": "mkdir", "path": str(other)})) == "invalid_request"
        assert not other.exists()
    for path in (tmp_path / "root", state):
        assert call(f, "mcp_resume_prepare_dir", {"op": "mkdir", "path": str(path)}) == {}
    assert code(call(f, "mcp_resume_prepare_dir", {"op": "mkdir", "path": str(tmp_path)})) == "exists"


@pytest.mark.parametrize("path", ["relative/state", "/tmp/../x", "/tmp/./x", "/tmp/x/", "//tmp/x", "", 5, None])
@pytest.mark.parametrize("op", ["stat", "mkdir"])
def test_prepare_dir_path_must_be_absolute_and_clean(path: Any, op: str) -> None:
    f = funcs("/tmp/x")
    assert code(call(f, "mcp_resume_prepare_dir", {"op": op, "path": path})) == "invalid_request"
    assert not os.path.exists("relative")


def test_prepare_dir_ops(tmp_path: Path) -> None:
    """stat and mkdir only: ``fix`` and the sweep are gone from the host (the plugin sweeps, via remove)."""
    f = funcs(tmp_path)
    for req in ({"path": str(tmp_path)}, {"op": "create", "path": str(tmp_path)},
                {"op": "fix", "path": str(tmp_path), "sweep_seconds": 60}, {"op": "stat", "path": str(tmp_path), "follow": "yes"}):
        assert code(call(f, "mcp_resume_prepare_dir", req)) == "invalid_request", req


def test_prepare_dir_stat(tmp_path: Path) -> None:
    """stat reports type, uid and mode & 0o7777, following a symlink only when asked; precise codes."""
    uid = os.geteuid()
    (tmp_path / "open").mkdir()
    os.chmod(tmp_path / "open", 0o755)
    (tmp_path / "sticky").mkdir()
    os.chmod(tmp_path / "sticky", 0o1777)
    (tmp_path / "file").write_text("x")
    os.chmod(tmp_path / "file", 0o600)
    os.symlink("open", tmp_path / "link")
    os.symlink("nowhere", tmp_path / "dangling")
    assert call(bare(), "mcp_resume_prepare_dir", {"op": "stat", "path": str(tmp_path / "open")})["mode"] == 0o755, \
        "stat needs no state directory"
    assert prim("stat", tmp_path / "open") == {"type": "dir", "uid": uid, "mode": 0o755}
    assert prim("stat", tmp_path / "sticky") == {"type": "dir", "uid": uid, "mode": 0o1777}
    assert prim("stat", tmp_path / "file") == {"type": "file", "uid": uid, "mode": 0o600}
    assert prim("stat", tmp_path / "link") == {"type": "symlink", "uid": uid, "mode": 0o777}
    assert prim("stat", tmp_path / "link", follow=True) == {"type": "dir", "uid": uid, "mode": 0o755}
    assert prim("stat", tmp_path / "link", follow=None) == prim("stat", tmp_path / "link"), "null: the default"
    assert prim("stat", tmp_path / "dangling") == {"type": "symlink", "uid": uid, "mode": 0o777}
    assert code(prim("stat", tmp_path / "dangling", follow=True)) == "not_found"
    assert code(prim("stat", tmp_path / "missing")) == "not_found"
    assert code(prim("stat", tmp_path / "file" / "x")) == "not_dir"


def test_prepare_dir_mkdir(tmp_path: Path) -> None:
    """mkdir makes one directory 0700, never parents, never through a symlink; precise codes."""
    (tmp_path / "file").write_text("x")
    os.symlink("nowhere", tmp_path / "dangling")
    assert prim("mkdir", tmp_path / "made") == {}
    assert stat.S_IMODE(os.stat(tmp_path / "made").st_mode) == 0o700
    for name in ("made", "file", "dangling"):
        assert code(prim("mkdir", tmp_path / name)) == "exists", name
    assert not (tmp_path / "nowhere").exists()
    assert code(prim("mkdir", tmp_path / "file" / "x")) == "not_dir"
    assert code(prim("mkdir", tmp_path / "no" / "such")) == "not_found"


# --- log -----------------------------------------------------------------------------------------


def test_log_levels_and_fields(state: Path, logs: Lines, capsys: pytest.CaptureFixture[str]) -> None:
    f = funcs(state, logs)
    for level, want in (("debug", logging.DEBUG), ("info", logging.INFO), ("warn", logging.WARNING),
                        ("error", logging.ERROR)):
        req = {"level": level, "event": "ev", "message": "100% done %s", "detail": "why"}
        assert call(f, "mcp_resume_log", req) == {}
        r = logs.records[-1]
        # The detail is printed too (the default format shows only the message); the template stays the message.
        assert (r.levelno, r.getMessage(), r.event, r.detail) == (want, "100% done %s: why", "ev", "why")  # type: ignore[attr-defined]
        assert r.msg == "100%% done %%s: %s"
    call(f, "mcp_resume_log", {"level": "info", "event": "ev", "message": "m %s"})
    assert logs.records[-1].detail == "" and logs.records[-1].getMessage() == "m %s"  # type: ignore[attr-defined]
    n = len(logs.records)
    for req in ({"level": "info", "message": "m"}, {"event": "e", "message": "m"}, {"level": "info", "event": "e"},
                {"level": "bogus", "event": "e", "message": "m"}, {"level": "warning", "event": "e", "message": "m"},
                {"level": "INFO", "event": "e", "message": "m"}, {"level": "info", "event": 5, "message": "m"},
                {"level": "info", "event": "e", "message": "m", "detail": 5}):
        assert code(call(f, "mcp_resume_log", req)) == "invalid_request", req
    assert len(logs.records) == n, "a refused line is not logged"
    assert capsys.readouterr().out == ""


def test_closed_store_answers_invalid_request(state: Path) -> None:
    """Closing a store releases what its host functions hold; a call after that acts on nothing."""
    f = funcs(state)
    assert lock(f) == {}
    f.close()
    (state / TOKEN_NAME).write_text("x")
    for fn in JSON_FUNCTIONS:
        req = {"name": TOKEN_NAME, "temp": TEMP_NAME, "limit": 9, "data": "", "ops": [{"op": "self"}],
               "op": "stat", "path": str(state), "level": "info", "event": "e", "message": "m"}
        assert code(call(f, fn, req)) == "invalid_request", fn
    assert sorted(os.listdir(state)) == [LOCK_NAME, TOKEN_NAME]
    g = funcs(state)
    assert lock(g) == {}, "the lock was released"
    g.close()


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
    for fn in JSON_FUNCTIONS:
        for req in (b"", b"{", b"[]", b"null", b"\xff\xfe", b'"x"', b"{} trailing"):
            assert code(call(f, fn, req)) == "invalid_request", (fn, req)
    for req in (b"{}", b'{"ops": []}', b'{"ops": {}}', json.dumps({"ops": [{"op": "kill0", "pid": "1"}] * 65}).encode()):
        assert code(call(f, "mcp_resume_inspect", req)) == "invalid_request", req
    assert code(call(f, "mcp_resume_nope", {})) == "invalid_request"


def test_fuzz_never_raises(state: Path) -> None:
    f = funcs(state)
    rng = random.Random(0)
    pieces = [b"{", b"}", b'"name"', b":", b",", b'"limit"', b"5", b'"data"', b'"temp"', b'"..\\u0000"', b"[", b"]",
              b"null", b'"ops"', b'"op"', b'"stat"', b'"fds"', b'"pid"', b'"self"', b'"fd_link"', b'"fd"', b"0",
              b'"boot_id"', b'"pid_ns"', b'"x"', b'"\\ud800"']
    for _ in range(2000):
        req = b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 8)))
        for fn in JSON_FUNCTIONS:
            call(f, fn, req)
    f.close()
    assert not [n for n in os.listdir(state) if n.startswith(".")]


# --- lock ---------------------------------------------------------------------------------------


#: The lock's abstract socket in these tests (the plugin computes the real one).
LOCK_SOCKET = f"mcp-resume-lock-pytest-{os.getpid()}-{random.randrange(1 << 32):08x}"


def lock(f: HostFunctions, name: str = LOCK_NAME, socket: str | None = None) -> dict[str, Any]:
    """Take the lock ``name`` with ``socket`` (``None``: one per name; ``""``: none, flock alone)."""
    req = {"name": name} if socket == "" else {"name": name, "socket": socket or f"{LOCK_SOCKET}-{len(name)}"}
    return call(f, "mcp_resume_lock", req)


def test_lock_busy_idempotent_released_by_close(state: Path) -> None:
    a, b = funcs(state), funcs(state)
    assert lock(a) == {}
    assert lock(a) == {}, "taking a lock this HostFunctions holds must succeed"
    doc = lock(b)
    assert code(doc) == "busy" and LOCK_NAME in doc["error"]["message"]
    assert list(a._locks) == [LOCK_NAME] and list(b._locks) == []
    st = os.stat(state / LOCK_NAME)
    assert stat.S_IMODE(st.st_mode) == 0o600 and st.st_size == 0
    assert lock(b, LOCK_NAME + "-0123456789abcdef") == {}, "another name is another lock"
    a.close()
    a.close()
    assert lock(b) == {}
    c = funcs(state)
    assert code(lock(c)) == "busy"
    b.close()
    assert sorted(os.listdir(state)) == [LOCK_NAME, LOCK_NAME + "-0123456789abcdef"], "a lock file was deleted"
    assert lock(c) == {}
    c.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="abstract sockets are Linux's")
def test_lock_socket_excludes_and_is_released(state: Path, tmp_path: Path) -> None:
    """The socket alone excludes (two directories, one socket name); a busy flock frees the socket it bound;
    both forms are bound, the padded one as Node binds it (seen in /proc/net/unix)."""
    other = tmp_path / "other"
    other.mkdir(mode=0o700)
    sock = LOCK_SOCKET + "-x"
    a, b = funcs(state), funcs(other)
    assert lock(a, socket=sock) == {}
    unix = Path("/proc/net/unix").read_text("latin-1").split()
    assert "@" + sock + "@" * (107 - len(sock)) in unix and "@" + sock in unix
    assert code(lock(b, socket=sock)) == "busy"
    a.close()
    assert lock(b, socket=sock) == {}
    b.close()
    c, d = funcs(state), funcs(state)
    assert lock(c, socket="") == {}, "flock alone"
    assert code(lock(d, socket=sock)) == "busy"
    e = funcs(other)
    assert lock(e, socket=sock) == {}, "the socket bound by the busy attempt was released"
    for f in (c, d, e):
        f.close()


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
    assert code(lock(f)) == "unsafe"
    assert code(call(f, "mcp_resume_lock", {})) == "invalid_request"
    os.rmdir(state / LOCK_NAME)
    for sock in ("x" * 108, "é" * 54, "a\x00b", 5, ["x"], False):
        assert code(call(f, "mcp_resume_lock", {"name": LOCK_NAME, "socket": sock})) == "invalid_request", sock
    assert f._locks == {} and os.listdir(state) == [], "refused before any system call"
    assert call(f, "mcp_resume_lock", {"name": LOCK_NAME, "socket": None}) == {}, "null: no socket"
    assert call(f, "mcp_resume_lock", {"name": LOCK_NAME + "-1", "socket": ""}) == {}, "empty: no socket"
    assert call(f, "mcp_resume_lock", {"name": LOCK_NAME + "-2", "socket": LOCK_SOCKET + "y" * (107 - len(LOCK_SOCKET))}) == {}
    f.close()


def unlock(f: HostFunctions, name: str = LOCK_NAME, socket: str | None = None) -> dict[str, Any]:
    """Release the lock ``name`` (``socket`` as for :func:`lock`)."""
    req = {"name": name} if socket == "" else {"name": name, "socket": socket or f"{LOCK_SOCKET}-{len(name)}"}
    return call(f, "mcp_resume_unlock", req)


def timed_lock(f: HostFunctions, wait_ms: Any, name: str = LOCK_NAME) -> tuple[dict[str, Any], float]:
    """``mcp_resume_lock`` with ``wait_ms``: the answer and the seconds it took."""
    t0 = time.monotonic()
    doc = call(f, "mcp_resume_lock", {"name": name, "socket": f"{LOCK_SOCKET}-{len(name)}", "wait_ms": wait_ms})
    return doc, time.monotonic() - t0


def test_unlock_releases_keeps_the_file_and_is_idempotent(state: Path) -> None:
    """mcp_resume_unlock (ABI 6): the lock is free for another store at once, the file stays, a lock not held
    answers {} too, and the store can take it again."""
    (state / LOCK_NAME).write_text("kept")
    a, b = funcs(state), funcs(state)
    assert lock(a) == {} and code(lock(b)) == "busy"
    assert unlock(a) == {}
    assert a._locks == {}
    assert lock(b) == {}, "unlock did not release the lock"
    assert (state / LOCK_NAME).read_text() == "kept", "unlock touched the lock file"
    assert unlock(a) == {} and unlock(a, "lock-never-taken") == {}, "unlock of a lock not held must answer {}"
    assert lock(b) == {}, "a's unlock of a lock it did not hold released b's"
    assert code(lock(a)) == "busy"
    assert unlock(b) == {} and lock(a) == {}, "taken again after unlock"
    for f in (a, b):
        f.close()
    assert os.listdir(state) == [LOCK_NAME]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="abstract sockets are Linux's")
def test_unlock_closes_the_sockets(state: Path) -> None:
    sock = LOCK_SOCKET + "-unlock"
    f = funcs(state)
    assert lock(f, socket=sock) == {}
    assert "@" + sock in Path("/proc/net/unix").read_text("latin-1").split()
    assert unlock(f, socket=sock) == {}
    unix = Path("/proc/net/unix").read_text("latin-1").split()
    assert "@" + sock not in unix and "@" + sock + "@" * (107 - len(sock)) not in unix
    f.close()


def test_unlock_refusals(state: Path) -> None:
    """unlock validates name and socket as lock does, before anything is released."""
    f = funcs(state)
    assert lock(f) == {}
    for req in ({}, {"name": "a/b"}, {"name": ".."}, {"name": LOCK_NAME, "socket": "x" * 108},
                {"name": LOCK_NAME, "socket": 5}, {"name": LOCK_NAME, "socket": "a\x00b"}):
        assert code(call(f, "mcp_resume_unlock", req)) == "invalid_request", req
    assert list(f._locks) == [LOCK_NAME], "a refused unlock released the lock"
    assert code(lock(funcs(state))) == "busy"
    f.close()
    assert code(unlock(f)) == "invalid_request", "a closed store answers invalid_request"


@pytest.mark.parametrize("wait", [-1, 10001, "5", 1.5, True, [1]])
def test_lock_wait_ms_refusals(state: Path, wait: Any) -> None:
    f = funcs(state)
    assert code(timed_lock(f, wait)[0]) == "invalid_request"
    assert f._locks == {} and os.listdir(state) == [], "refused before any system call"


def test_lock_wait_ms_bounds_the_wait(state: Path) -> None:
    """Busy with wait_ms: the host keeps trying for wait_ms, then answers busy; 0 and null try once."""
    a, b = funcs(state), funcs(state)
    assert lock(a) == {}
    for wait in (0, None):
        doc, took = timed_lock(b, wait)
        assert code(doc) == "busy" and took < 0.1, (wait, took)
    doc, took = timed_lock(b, 300)
    assert code(doc) == "busy"
    assert 0.3 <= took < 1.5, f"wait_ms 300 answered busy after {took:.3f}s"
    assert b._locks == {}
    for f in (a, b):
        f.close()


def test_lock_wait_ms_gets_the_lock_when_released(state: Path) -> None:
    """Another store releases the lock 0.2 s into a 5 s wait: the waiter gets it soon after, not at the end."""
    a, b = funcs(state), funcs(state)
    assert lock(a) == {}
    timer = threading.Timer(0.2, unlock, (a,))
    timer.start()
    doc, took = timed_lock(b, 5000)
    timer.join()
    assert doc == {} and 0.15 <= took < 2, f"took {took:.3f}s"
    assert list(b._locks) == [LOCK_NAME]
    for f in (a, b):
        f.close()


def test_lock_wait_does_not_block_the_store(state: Path) -> None:
    """While one thread waits for a lock, another call of the same store (another lock, unlock) goes on."""
    a, b = funcs(state), funcs(state)
    assert lock(a) == {}
    waiter = threading.Thread(target=timed_lock, args=(b, 2000))
    waiter.start()
    time.sleep(0.05)
    t0 = time.monotonic()
    assert lock(b, LOCK_NAME + "-other") == {} and unlock(b, LOCK_NAME + "-other") == {}
    assert time.monotonic() - t0 < 0.5, "the waiting lock held the store's mutex"
    waiter.join()
    for f in (a, b):
        f.close()


def test_lock_wait_ms_other_errors_answer_at_once(state: Path) -> None:
    """Only busy is retried: a symlinked lock file is unsafe at once, whatever wait_ms."""
    os.symlink("../elsewhere", state / LOCK_NAME)
    doc, took = timed_lock(funcs(state), 5000)
    assert code(doc) == "unsafe" and took < 0.5


LOCK_CHILD = r"""
import json, logging, sys
from mcp_resume._hostfuncs import HostFunctions
f = HostFunctions(logging.getLogger("child"))
f.set_state_dir(sys.argv[1])
print(f.call("mcp_resume_lock", json.dumps({"name": sys.argv[2], "socket": sys.argv[3]}).encode()).decode().strip(), flush=True)
sys.stdin.read()
"""


def test_lock_wait_ms_across_processes(state: Path) -> None:
    """A real process holds the lock; a waiter with wait_ms gets it when the holder is killed."""
    child = subprocess.Popen(
        [sys.executable, "-c", LOCK_CHILD, str(state), LOCK_NAME, f"{LOCK_SOCKET}-{len(LOCK_NAME)}"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert child.stdout is not None
        assert json.loads(child.stdout.readline()) == {}
        f = funcs(state)
        assert code(timed_lock(f, 100)[0]) == "busy"
        threading.Timer(0.3, os.kill, (child.pid, signal.SIGKILL)).start()
        doc, took = timed_lock(f, 8000)
        assert doc == {} and took < 6, f"took {took:.3f}s"
        f.close()
    finally:
        if child.poll() is None:
            child.kill()
        child.wait(30)
        for s in (child.stdin, child.stdout):
            if s:
                s.close()


def test_lock_dies_with_a_killed_process(state: Path) -> None:
    """kill -9 of the holder (a real process) releases the lock: no stale lock ever blocks resume."""
    child = subprocess.Popen(
        [sys.executable, "-c", LOCK_CHILD, str(state), LOCK_NAME, f"{LOCK_SOCKET}-{len(LOCK_NAME)}"],
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




# --- mcp_resume_facts ---------------------------------------------------------------------------------


def test_facts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_RESUME", "off")
    monkeypatch.setenv("MCP_RESUME_INSTANCE", "work")
    monkeypatch.setenv("MCP_RESUMEX", "not ours, reported all the same")
    monkeypatch.setenv("HOME", "/home/ada")
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    monkeypatch.setattr(sys, "argv", ["server.py", "--profile", "work"])
    facts = call(bare(), "mcp_resume_facts", {})
    assert facts == {"os": "linux" if sys.platform.startswith("linux") else sys.platform, "pid": os.getpid(),
                     "euid": os.geteuid(), "home": "/home/ada", "xdg_state_home": "", "cwd": os.getcwd(),
                     "args": ["--profile", "work"], "env": dict(os.environ), "runtime": "python"}
    assert facts["env"]["MCP_RESUME"] == "off" and facts["env"]["MCP_RESUMEX"].startswith("not ours")
    monkeypatch.setenv("XDG_STATE_HOME", "~/x")
    facts = call(bare(), "mcp_resume_facts", {})
    assert facts["xdg_state_home"] == "~/x", "reported exactly as set: the plugin judges it"


def test_facts_cwd_is_the_directory_at_import(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """facts.cwd is the working directory when mcp_resume was imported: changing directory afterwards (as a
    server does before it opens its store, or in a FastMCP lifespan) does not change it."""
    launched = os.getcwd()  # this process imported mcp_resume here: no test leaves another directory behind
    monkeypatch.chdir(tmp_path)
    assert os.getcwd() != launched
    assert call(bare(), "mcp_resume_facts", {})["cwd"] == launched


CWD_CHILD = r"""
import json, logging, os, sys
if sys.argv[2] == "deleted":
    os.chdir(sys.argv[3])
    os.rmdir(sys.argv[3])
import mcp_resume
from mcp_resume._hostfuncs import HostFunctions
os.chdir(sys.argv[4])
facts = json.loads(HostFunctions(logging.getLogger("x")).call("mcp_resume_facts", b"{}"))
with open(sys.argv[1], "w") as f:
    json.dump({"facts_cwd": facts["cwd"], "now": os.getcwd()}, f)
"""


@pytest.mark.parametrize("how", ["kept", "deleted"])
def test_facts_cwd_of_a_server_that_changes_directory(tmp_path: Path, how: str) -> None:
    """A process launched in one directory that imports mcp_resume and then changes directory reports the launch
    directory; when getcwd fails at import (its directory was deleted), ``""`` for good, even after it changes
    to a directory that exists."""
    launch, later = tmp_path / "launch", tmp_path / "later"
    launch.mkdir()
    later.mkdir()
    out = tmp_path / "answer.json"
    p = subprocess.run([sys.executable, "-c", CWD_CHILD, str(out), how, str(launch), str(later)], cwd=launch,
                       capture_output=True, timeout=60)
    assert p.returncode == 0, p.stderr.decode()
    got = json.loads(out.read_text())
    assert got["now"] == os.path.realpath(later)
    assert got["facts_cwd"] == (os.path.realpath(launch) if how == "kept" else "")


@pytest.mark.parametrize("home", [None, "", "rel/dir", "~"])
def test_facts_home_falls_back_to_the_password_database(monkeypatch: pytest.MonkeyPatch, home: str | None) -> None:
    """HOME unset, empty or relative: the effective uid's password-database home, as the Go host (os/user) and
    the Node host (os.userInfo) report it; one answer in every language."""
    import pwd

    want = pwd.getpwuid(os.geteuid()).pw_dir
    if home is None:
        monkeypatch.delenv("HOME", raising=False)
    else:
        monkeypatch.setenv("HOME", home)
    assert call(bare(), "mcp_resume_facts", {})["home"] == want


def test_facts_undecodable_bytes_become_fffd(monkeypatch: pytest.MonkeyPatch) -> None:
    """Arguments and environment values that differ only in bytes that are not UTF-8 (held by Python as
    surrogates) reach the plugin as U+FFFD, exactly as Go's JSON and Node's argv decoding send them; never as
    lone surrogate escapes."""
    monkeypatch.setattr(sys, "argv", ["server.py", "--x=\udcff", "--x=\udcfe", "--y=\udce2\udc82"])
    monkeypatch.setenv("MCP_RESUME_TEST_FF", "\udcff")
    raw = bare().call("mcp_resume_facts", b"{}")
    assert b"\\udc" not in raw
    facts = json.loads(raw)
    assert facts["args"] == ["--x=\ufffd", "--x=\ufffd", "--y=\ufffd\ufffd"], "one U+FFFD per invalid byte, as Go sends"
    assert facts["env"]["MCP_RESUME_TEST_FF"] == "\ufffd"


# --- mcp_resume_inspect on the real /proc ---------------------------------------------------------------


def inspect(f: HostFunctions, *ops: dict[str, Any]) -> list[dict[str, Any]]:
    doc = call(f, "mcp_resume_inspect", {"ops": list(ops)})
    assert "error" not in doc and len(doc["results"]) == len(ops), doc
    return list(doc["results"])


def test_inspect_exe_follows_exec() -> None:
    """exe: device and inode of the program file; a child that execs into another program changes them while its
    pid stays; a reaped one is not_found; bad pids are invalid_request."""
    import shutil

    sh, sleep = shutil.which("sh"), shutil.which("sleep")
    assert sh and sleep
    child = subprocess.Popen([sh, "-c", f"read x; exec {sleep} 30"], stdin=subprocess.PIPE)
    try:
        pid = str(child.pid)
        st = os.stat(sh)
        assert inspect(bare(), {"op": "exe", "pid": pid}) == [{"dev": str(st.st_dev), "ino": str(st.st_ino)}]
        assert child.stdin is not None
        child.stdin.write(b"\n")
        child.stdin.flush()
        st = os.stat(sleep)
        want = {"dev": str(st.st_dev), "ino": str(st.st_ino)}
        deadline = time.monotonic() + 10
        while inspect(bare(), {"op": "exe", "pid": pid})[0] != want and time.monotonic() < deadline:
            time.sleep(0.01)
        assert inspect(bare(), {"op": "exe", "pid": pid}) == [want]
    finally:
        child.kill()
        child.wait()
    assert inspect(bare(), {"op": "exe", "pid": pid})[0]["error"]["code"] == "not_found"
    for bad in ("0", "01", "self", ""):
        assert inspect(bare(), {"op": "exe", "pid": bad})[0]["error"]["code"] == "invalid_request"


def dead_pid() -> int:
    """The pid of a child process that has exited and been reaped."""
    p = subprocess.Popen(["true"])
    p.wait(30)
    return p.pid


@pytest.mark.parametrize("op", [
    {"op": "read", "path": "/proc/self/stat"}, {"op": "readlink", "path": "/proc/self"}, {"op": "stat"},
    {"op": "stat", "pid": "01"}, {"op": "stat", "pid": "0"}, {"op": "stat", "pid": 100}, {"op": "stat", "pid": "-1"},
    {"op": "stat", "pid": "../1"}, {"op": "stat", "pid": "1/../self"}, {"op": "stat", "pid": "2147483648"},
    {"op": "stat", "pid": "9" * 30}, {"op": "stat", "pid": " 1"}, {"op": "cmdline", "pid": "self/"},
    {"op": "pid_ns", "pid": ""}, {"op": "fd_link", "pid": "self"}, {"op": "fd_link", "pid": "self", "fd": -1},
    {"op": "fd_link", "pid": "self", "fd": "0"}, {"op": "fd_link", "pid": "self", "fd": True},
    {"op": "fd_link", "pid": "self", "fd": 2**31}, {"op": "fd_link", "pid": "x", "fd": 0},
    {"op": "fds", "pid": "01"}, {"op": "kill0", "pid": "self"}, {"op": "exe", "pid": "self"},
    {"op": "STAT", "pid": "self"}, {"op": 5}, {"op": ["stat"]}, {}, "stat", None, [],
    {"op": "environ"}, {"op": "environ", "pid": "0"}, {"op": "environ", "pid": 1}, {"op": "ns", "pid": "01", "ns": "net"},
    {"op": "ns", "pid": "self"}, {"op": "ns", "pid": "self", "ns": None}, {"op": "ns", "pid": "self", "ns": "time"},
    {"op": "ns", "pid": "self", "ns": "NET"}, {"op": "ns", "pid": "self", "ns": "../ns/net"}, {"op": "ns", "pid": "self", "ns": ""},
    {"op": "ns", "pid": "self", "ns": 1}, {"op": "ns", "pid": "self", "ns": ["net"]}, {"op": "net", "pid": "self"},
    {"op": "net", "pid": "self", "table": "raw"}, {"op": "net", "pid": "self", "table": "../environ"},
    {"op": "net", "pid": "self", "table": "tcp/"}, {"op": "net", "pid": "self", "table": "TCP"},
    {"op": "net", "pid": "self", "table": True}, {"op": "net", "table": "tcp"},
    {"op": "stat", "pid": "self", "ns": 1}, {"op": "boot_id", "table": 5}, {"op": "self", "targets": "x"},
])
def test_inspect_typed_ops_checked_first(op: Any) -> None:
    """No path is ever given: an unknown op or a field of the wrong type or range is invalid_request; ``ns`` and
    ``table`` must be one of their lists; a member of the wrong JSON type fails any op, as the Go host's typed
    decoding does."""
    (res,) = inspect(bare(), op)
    assert code(res) == "invalid_request", res


@linux_only
def test_inspect_proc_ops_of_this_process() -> None:
    f = bare()
    me = os.getpid()
    stat_, cmdline, boot, self_, ns, fd0, stat_me = inspect(
        f, {"op": "stat", "pid": "self"}, {"op": "cmdline", "pid": str(me)}, {"op": "boot_id"}, {"op": "self"},
        {"op": "pid_ns", "pid": str(me)}, {"op": "fd_link", "pid": "self", "fd": 0}, {"op": "stat", "pid": str(me)},
    )
    assert base64.b64decode(stat_["data"]).startswith(f"{me} (".encode())
    assert base64.b64decode(cmdline["data"]) == Path(f"/proc/{me}/cmdline").read_bytes()
    assert base64.b64decode(boot["data"]) == Path("/proc/sys/kernel/random/boot_id").read_bytes()
    assert self_ == {"target": str(me)}
    assert ns == {"target": os.readlink("/proc/self/ns/pid")} and ns["target"].startswith("pid:[")
    assert fd0 == {"target": os.readlink("/proc/self/fd/0")}
    assert base64.b64decode(stat_me["data"]).startswith(f"{me} (".encode())
    (timens,) = inspect(f, {"op": "timens", "pid": "1"})  # fields it does not take are ignored
    if os.path.exists("/proc/self/timens_offsets"):
        assert base64.b64decode(timens["data"]) == Path("/proc/self/timens_offsets").read_bytes()
    else:
        assert code(timens) == "not_found"


@linux_only
def test_inspect_read_capped_at_64k() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import sys; print('up', flush=True); sys.stdin.read()", "x" * 100_000],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert child.stdout is not None and child.stdout.readline() == b"up\n"  # exec has completed
        (res,) = inspect(bare(), {"op": "cmdline", "pid": str(child.pid)})
        data = base64.b64decode(res["data"])
        assert len(data) == 65536 and data.endswith(b"x" * 1000)
    finally:
        child.communicate(timeout=30)


@linux_only
def test_inspect_gone_process_not_found() -> None:
    pid = dead_pid()
    res = inspect(bare(), {"op": "stat", "pid": str(pid)}, {"op": "pid_ns", "pid": str(pid)},
                  {"op": "fds", "pid": str(pid)}, {"op": "kill0", "pid": str(pid)}, {"op": "cmdline", "pid": str(pid)},
                  {"op": "fd_link", "pid": "self", "fd": 10**6}, {"op": "exe", "pid": str(pid)},
                  {"op": "fd_link", "pid": str(pid), "fd": 0}, {"op": "environ", "pid": str(pid)},
                  {"op": "ns", "pid": str(pid), "ns": "net"}, {"op": "net", "pid": str(pid), "table": "unix"})
    assert [code(r) for r in res] == ["not_found"] * 11, res


ENVIRON_CHILD = r"""
import json, logging, os, sys
from mcp_resume._hostfuncs import HostFunctions
os.environ["MCP_RESUME_TEST_LATER"] = "set after exec"
del os.environ["MCP_RESUME_TEST_REMOVED"]
ops = [{"op": "environ", "pid": "self"}]
with open(sys.argv[1], "wb") as f:
    f.write(HostFunctions(logging.getLogger("x")).call("mcp_resume_inspect", json.dumps({"ops": ops}).encode()))
print("up", flush=True)
sys.stdin.read()
"""


@linux_only
def test_inspect_environ_is_the_environment_at_exec(tmp_path: Path) -> None:
    """environ of self: the environment the process was exec'd with, NUL-separated, as its launcher set it; what
    the process changes in ``os.environ`` later is not in it. Of its digit pid, asked by another process: the
    same bytes."""
    out = tmp_path / "answer.json"
    env = {**os.environ, "MCP_RESUME_TEST_AT_EXEC": "from the launcher", "MCP_RESUME_TEST_REMOVED": "still there"}
    child = subprocess.Popen([sys.executable, "-c", ENVIRON_CHILD, str(out)], env=env, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE)
    try:
        assert child.stdout is not None and child.stdout.readline() == b"up\n"
        (theirs,) = inspect(bare(), {"op": "environ", "pid": str(child.pid)})
    finally:
        child.communicate(timeout=30)
    (mine,) = json.loads(out.read_bytes())["results"]
    data = base64.b64decode(mine["data"])
    assert data.endswith(b"\0")
    variables = data[:-1].split(b"\0")
    assert b"MCP_RESUME_TEST_AT_EXEC=from the launcher" in variables
    assert b"MCP_RESUME_TEST_REMOVED=still there" in variables, "removed from os.environ after exec: still at exec"
    assert not [v for v in variables if v.startswith(b"MCP_RESUME_TEST_LATER=")], "set after exec: not at exec"
    assert theirs == mine


@linux_only
def test_inspect_environ_capped_at_1_mib() -> None:
    """environ reads at most 1 MiB (the plugin takes an answer of exactly the limit as "cannot tell")."""
    big = {f"MCP_RESUME_TEST_BIG_{i}": "x" * 100_000 for i in range(11)}  # each under MAX_ARG_STRLEN (128 KiB)
    room = os.sysconf("SC_ARG_MAX") - sum(len(k) + len(v) + 2 for k, v in os.environ.items())
    if room < (1 << 20) + 200_000:
        pytest.skip(f"ARG_MAX leaves {room} bytes for the environment, too little to exceed 1 MiB")
    child = subprocess.Popen([sys.executable, "-c", "import sys; print('up', flush=True); sys.stdin.read()"],
                             env={**os.environ, **big}, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert child.stdout is not None and child.stdout.readline() == b"up\n"
        (res,) = inspect(bare(), {"op": "environ", "pid": str(child.pid)})
    finally:
        child.communicate(timeout=30)
    data = base64.b64decode(res["data"])
    assert len(data) == 1 << 20 and b"MCP_RESUME_TEST_BIG_" in data


@linux_only
def test_inspect_ns_of_this_process() -> None:
    """ns: readlink /proc/<P>/ns/<ns> for every namespace of the list, for self and the digit pid."""
    names = ("net", "mnt", "uts", "ipc", "user", "cgroup", "pid")
    res = inspect(bare(), *({"op": "ns", "pid": "self", "ns": n} for n in names),
                  {"op": "ns", "pid": str(os.getpid()), "ns": "net"})
    for name, r in zip(names, res):
        try:
            assert r == {"target": os.readlink(f"/proc/self/ns/{name}")}, name
        except FileNotFoundError:  # a kernel without that namespace type
            assert code(r) == "not_found", (name, r)
    net = res[0]["target"]
    assert re.fullmatch(r"net:\[[0-9]+\]", net), net
    assert int(net[5:-1]) == os.stat("/proc/self/ns/net").st_ino, "the link names the namespace's inode"
    assert res[-1] == res[0]


@linux_only
def test_inspect_net_tables_show_this_process_sockets(tmp_path: Path) -> None:
    """net: /proc/<P>/net/<table>, the sockets of P's network namespace; a listening Unix socket of this process
    is in ``unix`` by its inode and path, a listening TCP socket on 127.0.0.1 in ``tcp`` by address, port, state
    LISTEN (0A) and inode."""
    path = str(tmp_path / "s")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as unix, socket.socket(socket.AF_INET) as tcp:
        unix.bind(path)
        unix.listen()
        tcp.bind(("127.0.0.1", 0))
        tcp.listen()
        unix_ino, tcp_ino = os.fstat(unix.fileno()).st_ino, os.fstat(tcp.fileno()).st_ino
        res = inspect(bare(), {"op": "net", "pid": "self", "table": "unix"},
                      {"op": "net", "pid": str(os.getpid()), "table": "tcp"}, {"op": "net", "pid": "self", "table": "tcp6"},
                      {"op": "net", "pid": "self", "table": "udp"}, {"op": "net", "pid": "self", "table": "udp6"})
        port = tcp.getsockname()[1]
    header, *rows = base64.b64decode(res[0]["data"]).decode().splitlines()
    assert header.split()[:7] == ["Num", "RefCount", "Protocol", "Flags", "Type", "St", "Inode"]
    parsed = {}
    for row in rows:  # Num: RefCount Protocol Flags Type St Inode [Path]
        f = row.split(None, 7)
        assert f[0].endswith(":") and len(f) >= 7, row
        parsed[int(f[6])] = (int(f[3], 16), int(f[4], 16), int(f[5], 16), f[7] if len(f) > 7 else "")
    flags, type_, state, where = parsed[unix_ino]
    assert (type_, state, where) == (socket.SOCK_STREAM, 1, path) and flags & 0x10000, "listening (__SO_ACCEPTCON)"
    header, *rows = base64.b64decode(res[1]["data"]).decode().splitlines()
    assert header.split()[:4] == ["sl", "local_address", "rem_address", "st"]
    mine = [r.split() for r in rows if r.split()[1] == f"0100007F:{port:04X}"]
    assert len(mine) == 1 and mine[0][3] == "0A" and int(mine[0][9]) == tcp_ino, mine
    for table, r in zip(("tcp6", "udp", "udp6"), res[2:]):
        if os.path.exists(f"/proc/self/net/{table}"):
            assert base64.b64decode(r["data"]).split()[:2] == [b"sl", b"local_address"], (table, r)
        else:  # IPv6 disabled
            assert code(r) == "not_found", (table, r)


def test_inspect_environ_ns_net_off_linux(tmp_path: Path) -> None:
    """On a system without /proc environ, ns and net answer unsupported; their fields are still checked first
    (a bad ns or table is invalid_request there too, as the Go host answers)."""
    f = pinned_functions(System(facts={"os": "darwin"}, proc=str(tmp_path / "proc")))(logging.getLogger("x"))
    res = inspect(f, {"op": "environ", "pid": "self"}, {"op": "ns", "pid": "1", "ns": "net"},
                  {"op": "net", "pid": "self", "table": "tcp"}, {"op": "ns", "pid": "self", "ns": "time"},
                  {"op": "net", "pid": "self", "table": "raw"}, {"op": "environ", "pid": "01"})
    assert [code(r) for r in res] == ["unsupported"] * 3 + ["invalid_request"] * 3, res


@linux_only
def test_inspect_fds_of_real_pipes() -> None:
    """fds of this process (targets filter, access modes) and of a child holding the other end of a pipe."""
    r, w = os.pipe()
    child = subprocess.Popen([sys.executable, "-c", "import sys; print('up', flush=True); sys.stdin.read()"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert child.stdout is not None and child.stdout.readline() == b"up\n"
        target = os.readlink(f"/proc/self/fd/{r}")
        (mine,) = inspect(bare(), {"op": "fds", "pid": "self", "targets": [target, "pipe:[1]"]})
        assert [(d["fd"], d["target"]) for d in mine["fds"]] == [(r, target), (w, target)]
        flags = {d["fd"]: d["flags"] for d in mine["fds"]}
        assert flags[r] & 0o3 == os.O_RDONLY and flags[w] & 0o3 == os.O_WRONLY
        assert flags[r] & os.O_CLOEXEC, "os.pipe() fds are close-on-exec"

        assert child.stdin is not None
        ours = os.readlink(f"/proc/self/fd/{child.stdin.fileno()}")
        (all_fds,) = inspect(bare(), {"op": "fds", "pid": str(child.pid)})
        fds = [d["fd"] for d in all_fds["fds"]]
        assert fds == sorted(fds) and {0, 1, 2} <= set(fds)
        assert all_fds["fds"][0]["target"] == ours and all_fds["fds"][0]["flags"] & 0o3 == os.O_RDONLY
        (only,) = inspect(bare(), {"op": "fds", "pid": str(child.pid), "targets": [ours]})
        assert [d["fd"] for d in only["fds"]] == [0]
        (none,) = inspect(bare(), {"op": "fds", "pid": str(child.pid), "targets": []})
        assert none == {"fds": []}
    finally:
        os.close(r)
        os.close(w)
        child.communicate(timeout=30)
    for bad in ({"op": "fds"}, {"op": "fds", "pid": "01"}, {"op": "fds", "pid": 5}, {"op": "fds", "pid": "../1"},
                {"op": "fds", "pid": "self", "targets": "pipe:[1]"}, {"op": "fds", "pid": "self", "targets": [1]}):
        assert code(inspect(bare(), bad)[0]) == "invalid_request", bad


@linux_only
def test_inspect_kill0() -> None:
    child = subprocess.Popen(["sleep", "30"])
    try:
        res = inspect(bare(), {"op": "kill0", "pid": str(os.getpid())}, {"op": "kill0", "pid": str(child.pid)},
                      {"op": "kill0", "pid": str(dead_pid())}, {"op": "kill0", "pid": "2147483647"})
        assert [code(r) for r in res] == [None, None, "not_found", "not_found"], res
        assert res[0] == {} and res[1] == {}
    finally:
        child.kill()
        child.wait(30)
    for pid in ("0", "-1", "01", "self", "", 5, None, "2147483648", "9" * 30):
        assert code(inspect(bare(), {"op": "kill0", "pid": pid})[0]) == "invalid_request", pid


OTHER_USER = r"""
import base64, json, logging, os, sys
from mcp_resume._hostfuncs import HostFunctions  # imported first: nobody may not read the interpreter's files
HostFunctions(logging.getLogger("x")).call("mcp_resume_inspect", b'{"ops": [{"op": "kill0", "pid": "1"}]}')
os.setgid(65534); os.setuid(65534)
ops = [{"op": "kill0", "pid": "1"}, {"op": "fd_link", "pid": "1", "fd": 0}, {"op": "fds", "pid": "1"}]
print(HostFunctions(logging.getLogger("x")).call("mcp_resume_inspect", json.dumps({"ops": ops}).encode()).decode())
"""


@linux_only
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to start a process as another user")
def test_inspect_another_users_process_permission() -> None:
    """Run as nobody: pid 1 (root's) answers permission for kill0, its fd links and its fd list."""
    src = str(Path(__file__).resolve().parents[1] / "src")
    p = subprocess.run([sys.executable, "-c", OTHER_USER], capture_output=True, text=True, timeout=60,
                       env={**os.environ, "PYTHONPATH": src}, cwd="/")
    assert p.returncode == 0, p.stderr
    assert [code(r) for r in json.loads(p.stdout)["results"]] == ["permission"] * 3


STDIO_CHILD = r"""
import json, logging, os, sys
from mcp_resume import _runtime
from mcp_resume._hostfuncs import HostFunctions
if sys.argv[2] == "close":
    # Importing mcp_resume starts compiling the plugin in a thread that opens
    # files; wait for it, or its next open() could take the freed fd 0.
    _runtime.compiled_plugin()
    os.close(0)
ops = [{"op": "fstat", "fd": 0}, {"op": "fstat", "fd": 1}, {"op": "peer", "fd": 0}, {"op": "peer", "fd": 1}]
resp = HostFunctions(logging.getLogger("x")).call("mcp_resume_inspect", json.dumps({"ops": ops}).encode())
with open(sys.argv[1], "wb") as f:
    f.write(resp)
os.fstat(1)  # still open: peer never closes the fd
if sys.argv[2] == "socket":
    os.write(1, b"still open")
"""


def stdio_child(tmp_path: Path, how: str, stdin: Any, stdout: Any) -> list[dict[str, Any]]:
    out = tmp_path / "answer.json"
    p = subprocess.run([sys.executable, "-c", STDIO_CHILD, str(out), how], stdin=stdin, stdout=stdout,
                       stderr=subprocess.PIPE, timeout=60)
    assert p.returncode == 0, p.stderr.decode()
    return list(json.loads(out.read_bytes())["results"])


def test_inspect_stdio_pipes(tmp_path: Path) -> None:
    res = stdio_child(tmp_path, "pipe", subprocess.PIPE, subprocess.PIPE)
    assert res[:2] == [{"type": "fifo"}, {"type": "fifo"}]
    if hasattr(socket, "SO_PEERCRED"):
        assert [code(r) for r in res[2:]] == ["io", "io"], "a pipe is not a socket"


@pytest.mark.skipif(not hasattr(socket, "SO_PEERCRED"), reason="no SO_PEERCRED here")
def test_inspect_stdio_socketpair_peer(tmp_path: Path) -> None:
    """The server's stdio is a socket pair whose other end this process holds: peer is this pid."""
    ours, theirs = socket.socketpair()
    with ours, theirs:
        res = stdio_child(tmp_path, "socket", theirs.fileno(), theirs.fileno())
        theirs.close()
        assert res == [{"type": "socket"}, {"type": "socket"}, {"peer_pid": os.getpid()}, {"peer_pid": os.getpid()}]
        assert ours.recv(100) == b"still open"


def test_inspect_stdio_devnull_file_and_closed(tmp_path: Path) -> None:
    (tmp_path / "in").write_text("x")
    with open(tmp_path / "in", "rb") as f:
        res = stdio_child(tmp_path, "file", f, subprocess.DEVNULL)
    assert res[:2] == [{"type": "file"}, {"type": "char"}]
    res = stdio_child(tmp_path, "close", subprocess.DEVNULL, subprocess.DEVNULL)
    assert code(res[0]) == "not_found" and res[1] == {"type": "char"}
    if hasattr(socket, "SO_PEERCRED"):
        assert code(res[2]) == "not_found" and code(res[3]) == "io"


def test_inspect_unsupported_and_bad_ops() -> None:
    res = inspect(bare(), {"op": "sysctl", "pid": "1"}, {"op": "procargs", "pid": "1"}, {"op": "ps", "pid": "1"},
                  {"op": "nope"}, {}, "read", {"op": "fstat", "fd": -1}, {"op": "peer", "fd": True},
                  {"op": "fstat", "fd": "0"})
    want_sysctl = "unsupported" if sys.platform != "darwin" else None
    assert [code(r) for r in res] == [want_sysctl, want_sysctl, "unsupported"] + ["invalid_request"] * 6, res


def test_pinned_system(tmp_path: Path, logs: Lines) -> None:
    """The conformance runner's seam (tests/pinned.py): facts and answers as pinned, the typed /proc ops read
    the fixture tree, fields still checked first, a ``no_answer`` function not run at all."""
    proc = tmp_path / "proc"
    for path, text in (("100/stat", "100 (x) S 4242"), ("100/cmdline", "x\0"), ("sys/kernel/random/boot_id", "b\n"),
                       ("100/timens_offsets", "boottime 0 0\n")):
        (proc / path).parent.mkdir(parents=True, exist_ok=True)
        (proc / path).write_text(text)
    os.makedirs(proc / "100" / "ns")
    os.makedirs(proc / "100" / "fd")
    os.symlink("pid:[4026531836]", proc / "100" / "ns" / "pid")
    os.symlink("/dev/pts/3", proc / "100" / "fd" / "0")
    os.symlink("100", proc / "self")
    facts = {"os": "linux", "pid": 100}
    system = System(facts=facts, proc=str(proc),
                    answers={"kill0 4242": {}, "fstat 1": {"type": "fifo"}, "sysctl 7": {"error": {"code": "not_found", "message": "x"}}},
                    no_answer=frozenset({"mcp_resume_log"}))
    logger = logging.getLogger("mcp_resume.test.pinned")
    logger.handlers[:] = [logs]
    logger.propagate = False
    f = pinned_functions(system)(logger)
    assert call(f, "mcp_resume_facts", {}) == facts
    res = inspect(f, {"op": "stat", "pid": "100"}, {"op": "cmdline", "pid": "self"}, {"op": "boot_id"}, {"op": "self"},
                  {"op": "timens"}, {"op": "pid_ns", "pid": "self"}, {"op": "fd_link", "pid": "self", "fd": 0},
                  {"op": "fds", "pid": "self"}, {"op": "stat", "pid": "01"})
    assert [base64.b64decode(r["data"]) for r in (res[0], res[1], res[2], res[4])] == [
        b"100 (x) S 4242", b"x\0", b"b\n", b"boottime 0 0\n"]
    assert res[3] == {"target": "100"} and res[5] == {"target": "pid:[4026531836]"} and res[6] == {"target": "/dev/pts/3"}
    assert res[7] == {"fds": [{"fd": 0, "target": "/dev/pts/3", "flags": -1}]} and code(res[8]) == "invalid_request"
    res = inspect(f, {"op": "kill0", "pid": "4242"}, {"op": "kill0", "pid": str(os.getpid())}, {"op": "fstat", "fd": 0},
                  {"op": "fstat", "fd": 1}, {"op": "peer", "fd": 0}, {"op": "sysctl", "pid": "7"}, {"op": "ps", "pid": "7"},
                  {"op": "exe", "pid": "4242"})
    assert [code(r) for r in res] == [None, "not_found", None, None, "unsupported", "not_found", "unsupported", None]
    assert res[2] == {"type": "char"} and res[3] == {"type": "fifo"} and res[7] == {"dev": "2049", "ino": "1234567"}
    assert f.call("mcp_resume_log", b'{"level":"info","event":"e","message":"m"}') == b"not json"
    assert logs.records == [], "a no_answer function is not run"
    darwin = pinned_functions(System(facts={"os": "darwin"}, proc=str(proc)))(logger)
    for op in ({"op": "stat", "pid": "100"}, {"op": "self"}, {"op": "fds", "pid": "self"}):
        assert code(inspect(darwin, op)[0]) == "unsupported", op


def test_inspect_fds_unreadable_link_is_an_answer(tmp_path: Path) -> None:
    """An fd whose link cannot be read is reported as an error, never skipped as if closed.

    Skipping it would let the plugin conclude the host does not hold the
    server's pipe (a lost session where Go and TypeScript say "cannot tell";
    found by the fault suite, fault 3a with CAP_DAC_READ_SEARCH). Only an fd
    that vanished during the listing (ENOENT) is skipped.
    """
    fd = tmp_path / "proc" / "4242" / "fd"
    fd.mkdir(parents=True)
    os.symlink("pipe:[7]", fd / "3")
    (fd / "4").mkdir()  # readlink fails with EINVAL, not ENOENT
    f = pinned_functions(System(facts={"os": "linux", "pid": 100}, proc=str(tmp_path / "proc")))(logging.getLogger("x"))
    assert code(inspect(f, {"op": "fds", "pid": "4242"})[0]) == "io"
    os.rmdir(fd / "4")
    assert inspect(f, {"op": "fds", "pid": "4242"})[0]["fds"][0]["target"] == "pipe:[7]"


def test_link_targets_not_utf8_become_fffd(tmp_path: Path) -> None:
    """A link target with bytes that are not UTF-8 (a deleted file's name, say) is sent with one U+FFFD per byte."""
    fd = tmp_path / "proc" / "4242" / "fd"
    fd.mkdir(parents=True)
    os.symlink(b"/tmp/a\xff\xe2\x82b", os.path.join(os.fsencode(fd), b"0"))
    f = pinned_functions(System(facts={"os": "linux", "pid": 100}, proc=str(tmp_path / "proc")))(logging.getLogger("x"))
    link, fds = inspect(f, {"op": "fd_link", "pid": "4242", "fd": 0}, {"op": "fds", "pid": "4242", "targets": ["/tmp/a\ufffd\ufffd\ufffdb"]})
    assert link == {"target": "/tmp/a\ufffd\ufffd\ufffdb"}
    assert fds == {"fds": [{"fd": 0, "target": "/tmp/a\ufffd\ufffd\ufffdb", "flags": -1}]}


def test_fstat_any_fd() -> None:
    """fstat answers any fd (``facts.stdio_fds`` may name a copy above 2) and refuses what no fd can be."""
    r, w = os.pipe()
    try:
        res = inspect(bare(), {"op": "fstat", "fd": r}, {"op": "fstat", "fd": 2**31}, {"op": "peer", "fd": -1})
        assert res[0] == {"type": "fifo"}
        assert [code(x) for x in res[1:]] == ["invalid_request", "invalid_request"]
    finally:
        os.close(r)
        os.close(w)


@linux_only
def test_keep_stdio_reports_copies_until_released() -> None:
    """keep_stdio copies fds 0 and 1 above 2 (close-on-exec) and reports them as ``stdio_fds``; release_stdio
    closes them and the facts no longer carry them."""
    f = bare()
    assert "stdio_fds" not in json.loads(f.call("mcp_resume_facts", b"{}"))
    f.keep_stdio()
    facts = json.loads(f.call("mcp_resume_facts", b"{}"))
    copies = facts["stdio_fds"]
    assert len(copies) == 2
    for orig, fd in zip((0, 1), copies):
        if fd == orig:  # the original was closed: reported as itself
            continue
        assert fd > 2 and not os.get_inheritable(fd)
        assert os.readlink(f"/proc/self/fd/{fd}") == os.readlink(f"/proc/self/fd/{orig}")
    f.release_stdio()
    assert "stdio_fds" not in json.loads(f.call("mcp_resume_facts", b"{}"))
    for orig, fd in zip((0, 1), copies):
        if fd > 2:
            with pytest.raises(OSError):
                os.fstat(fd)

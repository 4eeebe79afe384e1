"""The handle store's Python API (``HandleStore``, ``AsyncHandleStore``) on the real plugin, real files.

Every method and every error class, the files on disk (0700/0600, the value sealed), lifetimes driven by a
``clock=`` (no sleeping), eviction order, compare-and-set increments from threads and from two processes
(final count = successful puts), the pool's bound, the asyncio interface (the loop keeps ticking while a call
waits for a shard lock), a shard lock held by another process (``StoreUnavailableError`` after ``lock_wait``),
``MCP_RESUME=off`` (resume off, the handle store on) and the WASI random source (10,000 handles, distinct, 24
bytes each). The shared conformance cases pin the plugin's policy byte for byte; these pin the binding.
About 550 lines: one test per method, error and option of the API, with the fixtures they share.
"""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import json
import logging
import os
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from mcp_resume import (AsyncHandleStore, ConflictError, HandleEvictedError, HandleExpiredError, HandleNotFoundError, HandleStore,
                        MCPResumeError, InvalidHandleError, InvalidOptionError, InvalidPrincipalError, InvalidValueError,
                        InvalidAppError, ResumeTokenStore, StoreUnavailableError, ValueTooLargeError)
from mcp_resume._hostfuncs import HostFunctions

HANDLE_RE = r"mrh1_[A-Za-z0-9_-]{32}"
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)


class Clock:
    """A clock the test moves: ``clock()`` is now, ``advance(seconds)`` moves it."""

    def __init__(self, start: dt.datetime = T0) -> None:
        self.now = start

    def __call__(self) -> dt.datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += dt.timedelta(seconds=seconds)


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "state"


@pytest.fixture
def store(root: Path) -> Any:
    with HandleStore("handles-test", state_root=root, pool_size=2) as s:
        yield s


def logger_with(lines: Lines) -> logging.Logger:
    logger = logging.getLogger(f"mcp_resume.test.handles.{id(lines)}")
    logger.handlers[:] = [lines]
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    return logger


# --- the operations ---------------------------------------------------------------------------------------


def test_create_get_put_touch_exists_delete(store: HandleStore) -> None:
    c = store.create("alice", b"v1")
    assert c.generation == 1 and len(c.handle) == 37
    assert __import__("re").fullmatch(HANDLE_RE, c.handle)
    assert c.idle_ttl == dt.timedelta(hours=24) and c.max_age == dt.timedelta(days=30)
    assert abs(c.created - dt.datetime.now(dt.timezone.utc)) < dt.timedelta(seconds=30)
    assert "mrh1_" in repr(c) and c.handle not in repr(c), "the handle (a bearer secret) shows in repr"
    v = store.get(c.handle, "alice")
    assert (v.data, v.generation, v.created, v.idle_ttl, v.max_age) == (b"v1", 1, c.created, c.idle_ttl, c.max_age)
    assert store.put(c.handle, "alice", b"v2") == 2
    assert store.put(c.handle, "alice", bytearray(b"v3"), expect=2) == 3
    assert store.get(c.handle, "alice").data == b"v3"
    t = store.touch(c.handle, "alice")
    assert (t.generation, t.idle_ttl, t.max_age) == (3, c.idle_ttl, c.max_age)
    assert store.exists(c.handle, "alice") is True
    store.delete(c.handle, "alice", expect=3)
    assert store.exists(c.handle, "alice") is False
    for op in (lambda: store.get(c.handle, "alice"), lambda: store.put(c.handle, "alice", b"x"),
               lambda: store.touch(c.handle, "alice"), lambda: store.delete(c.handle, "alice")):
        with pytest.raises(HandleNotFoundError) as e:
            op()
        assert e.value.code == "handle_not_found" and c.handle not in str(e.value)


def test_empty_and_binary_values(store: HandleStore) -> None:
    data = bytes(range(256)) * 3
    c = store.create("", b"")
    assert store.get(c.handle, "").data == b""
    assert store.put(c.handle, "", memoryview(data)) == 2
    assert store.get(c.handle, "").data == data


def test_values_cross_in_the_binary_form(root: Path) -> None:
    """create, get and put send the binary form (first byte 0x01; the value as raw bytes, no base64) and read
    its binary output; the other calls send JSON. A value of every byte, up to the 4 MiB maximum, comes back."""
    sent: list[tuple[str, bytes]] = []

    class Recording(HandleStore):
        def _export(self, export: str, data: bytes) -> bytes:
            sent.append((export, data))
            return super()._export(export, data)

    big = os.urandom(4 << 20)
    with Recording("binary", state_root=root, max_value_bytes=4 << 20, clock=Clock()) as s:
        c = s.create("alice", big, idle_ttl=60)
        assert s.get(c.handle, "alice").data == big
        assert s.put(c.handle, "alice", bytearray(b"\x00\xff" * 3), expect=1) == 2
        assert s.get(c.handle, "alice") == s.get(c.handle, "alice")
        assert s.touch(c.handle, "alice").generation == 2
    forms = {export: data[:1] for export, data in sent}
    assert forms == {"handle_create": b"\x01", "handle_get": b"\x01", "handle_put": b"\x01", "handle_touch": b"{"}
    create = next(data for export, data in sent if export == "handle_create")
    assert create.endswith(big) and len(create) == 37 + len("alice") + len(big), "the value is sent once, raw"


def test_inputs_the_binary_form_cannot_carry(store: HandleStore) -> None:
    """A handle over 255 bytes or not UTF-8, a principal over 65535 bytes, an integer outside int64 go as JSON:
    the plugin answers them as it answers any bad input."""
    c = store.create("", b"x")
    for handle in ("A" * 256, "mrh1_" + "\udc80" * 32):
        with pytest.raises(InvalidHandleError):
            store.get(handle, "")
    with pytest.raises(InvalidPrincipalError):
        store.put(c.handle, "p" * 65536, b"x")
    with pytest.raises(InvalidOptionError):
        store.put(c.handle, "", b"x", expect=1 << 63)
    with pytest.raises(InvalidOptionError):
        store.create("", b"x", idle_ttl=10**17)  # seconds: 10**20 ms
    assert store.get(c.handle, "").generation == 1, "a refused call changed the handle"


def test_another_principal_answers_as_an_unknown_handle(store: HandleStore) -> None:
    c = store.create("alice", b"secret")
    unknown = "mrh1_" + "A" * 32
    for h in (c.handle, unknown):
        for op in (lambda: store.get(h, "bob"), lambda: store.put(h, "bob", b"x"), lambda: store.touch(h, "bob"),
                   lambda: store.delete(h, "bob")):
            with pytest.raises(HandleNotFoundError) as e:
                op()
            assert "bob" not in str(e.value) and "alice" not in str(e.value)
        assert store.exists(h, "bob") is False
    assert store.get(c.handle, "alice") .data == b"secret", "another principal's calls changed the handle"
    assert store.get(c.handle, "alice").generation == 1


def test_compare_and_set_conflict(store: HandleStore) -> None:
    c = store.create("", b"a")
    assert store.put(c.handle, "", b"b", expect=1) == 2
    with pytest.raises(ConflictError) as e:
        store.put(c.handle, "", b"stale", expect=1)
    assert e.value.generation == 2 and e.value.code == "conflict"
    assert e.value.to_json() == {"error": "conflict", "message": e.value.message, "generation": 2}
    with pytest.raises(ConflictError) as e:
        store.delete(c.handle, "", expect=5)
    assert e.value.generation == 2
    v = store.get(c.handle, "")
    assert (v.data, v.generation) == (b"b", 2), "a conflict changed something"
    with pytest.raises(InvalidOptionError):
        store.put(c.handle, "", b"x", expect="2")  # type: ignore[arg-type]


@pytest.mark.parametrize("handle", ["", "nope", "mrh1_" + "A" * 31, "mrh1_" + "A" * 33, "mrh2_" + "A" * 32,
                                    "mrh1_" + "A" * 31 + "=", "mrh1_" + "é" * 32, "mrh1_" + "A" * 31 + "+", " mrh1_" + "A" * 31,
                                    "x" * 10000, 5, None, b"mrh1_"])
def test_invalid_handles(store: HandleStore, handle: Any) -> None:
    """Malformed, oversized, non-ASCII handles, a character outside base64url, and non-strings (32 characters carry
    exactly 24 bytes: no unused bits to check)."""
    for op in (lambda: store.get(handle, ""), lambda: store.put(handle, "", b"x"), lambda: store.delete(handle, ""),
               lambda: store.touch(handle, ""), lambda: store.exists(handle, "")):
        with pytest.raises(InvalidHandleError) as e:
            op()
        assert isinstance(e.value, ValueError) and isinstance(e.value, MCPResumeError)
        assert e.value.code == "invalid_handle"


def test_invalid_principals(store: HandleStore) -> None:
    c = store.create("", b"x")
    for principal in (5, None, b"alice", "a" * 1025, "\udc80"):
        with pytest.raises(InvalidPrincipalError):
            store.create(principal, b"x")  # type: ignore[arg-type]
        with pytest.raises(InvalidPrincipalError):
            store.get(c.handle, principal)  # type: ignore[arg-type]
    store.create("é" * 512, b"ok")  # 1024 bytes of UTF-8: the most allowed


def test_values(root: Path) -> None:
    with HandleStore("values", state_root=root, max_value_bytes=1024) as s:
        assert s.max_value_bytes == 1024
        for bad in ("text", 5, None, [1]):
            with pytest.raises(InvalidValueError):
                s.create("", bad)  # type: ignore[arg-type]
        with pytest.raises(ValueTooLargeError):
            s.create("", b"x" * 1025)
        assert s.list().live == 0, "an oversized value was written"
        c = s.create("", b"x" * 1024)
        with pytest.raises(ValueTooLargeError):
            s.put(c.handle, "", b"y" * 1025)
        assert s.get(c.handle, "") .data == b"x" * 1024 and s.get(c.handle, "").generation == 1


# --- the options ----------------------------------------------------------------------------------------


def test_options_and_their_values(root: Path) -> None:
    with HandleStore("opts", state_root=str(root), idle_ttl=dt.timedelta(minutes=10), max_age=3600.0,
                     tombstone=60, max_handles=100, lock_wait=0.5) as s:
        assert (s.idle_ttl, s.max_age, s.tombstone) == (dt.timedelta(minutes=10), dt.timedelta(hours=1),
                                                       dt.timedelta(minutes=1))
        assert (s.max_handles, s.shards, s.app) == (100, 1, "opts")
        assert s.state_dir == str(root / "opts" / "handles")
        c = s.create("", b"x", idle_ttl=dt.timedelta(minutes=5), max_age=120)
        assert (c.idle_ttl, c.max_age) == (dt.timedelta(minutes=5), dt.timedelta(minutes=2))
        with pytest.raises(InvalidOptionError) as e:
            s.create("", b"x", idle_ttl=dt.timedelta(minutes=11))
        assert "idle_ttl may only shorten" in str(e.value) and isinstance(e.value, ValueError)
    with HandleStore("big", state_root=root, max_handles=10000) as s:
        assert s.shards == 64


@pytest.mark.parametrize("kwargs", [{"idle_ttl": "24h"}, {"max_age": True}, {"tombstone": object()},
                                    {"max_handles": "10"}, {"max_handles": object()}, {"max_value_bytes": 8 << 20},
                                    {"idle_ttl": -1}, {"pool_size": 0}, {"clock": 5}, {"lock_wait": 11}])
def test_bad_options_refused(root: Path, kwargs: dict[str, Any]) -> None:
    with pytest.raises(InvalidOptionError):
        HandleStore("bad", state_root=root, **kwargs)


@pytest.mark.parametrize("cls", ["ResumeTokenStore", "AsyncResumeTokenStore", "HandleStore", "AsyncHandleStore"])
def test_every_store_refuses_unknown_and_positional_options(root: Path, cls: str) -> None:
    """Options are keyword-only and a keyword no store knows is a TypeError, before anything opens, in all four."""
    import mcp_resume

    store_class = getattr(mcp_resume, cls)
    with pytest.raises(TypeError, match="idle_tll"):
        store_class("app", state_root=root, idle_tll=5)
    with pytest.raises(TypeError):
        store_class("app", str(root))
    assert not root.exists(), "a refused open created something"


def test_bad_app_names(root: Path) -> None:
    """Both stores raise the same InvalidAppError (code invalid_app) for a bad app name, with the same words."""
    for app, words in (("", "app"), ("a/b", "a/b"), (b"app", "must be a string, not bytes"), (None, "app")):
        with pytest.raises(InvalidAppError) as e:
            HandleStore(app, state_root=root)  # type: ignore[arg-type]
        assert words in str(e.value), str(e.value)
        assert e.value.code == "invalid_app" and isinstance(e.value, MCPResumeError)
        with pytest.raises(InvalidAppError) as r:
            ResumeTokenStore(app, state_root=root)  # type: ignore[arg-type]
        assert str(r.value) == str(e.value)
    assert not root.exists(), "a refused open created something"


def test_environment_lifetimes(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """MCP_RESUME_STATE_IDLE_TTL / _MAX_AGE (Go duration syntax) are read by the plugin; an option wins."""
    monkeypatch.setenv("MCP_RESUME_STATE_IDLE_TTL", "90s")
    monkeypatch.setenv("MCP_RESUME_STATE_MAX_AGE", "2h30m")
    with HandleStore("env", state_root=root) as s:
        assert (s.idle_ttl, s.max_age) == (dt.timedelta(seconds=90), dt.timedelta(hours=2, minutes=30))
    with HandleStore("env", state_root=root, idle_ttl=30) as s:
        assert s.idle_ttl == dt.timedelta(seconds=30)
    monkeypatch.setenv("MCP_RESUME_STATE_IDLE_TTL", "a day")
    with pytest.raises(InvalidOptionError) as e:
        HandleStore("env", state_root=root)
    assert "MCP_RESUME_STATE_IDLE_TTL" in str(e.value)


def test_resume_off_leaves_the_handle_store_on(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_RESUME", "off")
    with HandleStore("off", state_root=root) as s:
        c = s.create("", b"kept")
        assert s.get(c.handle, "").data == b"kept"


def test_default_state_root_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_RESUME_STATE_DIR", str(tmp_path / "env-root"))
    with HandleStore("envroot") as s:
        assert s.state_dir == str(tmp_path / "env-root" / "envroot" / "handles")


# --- the files ----------------------------------------------------------------------------------------


def test_host_functions_confined_to_the_handle_directory(store: HandleStore) -> None:
    """handles_open's state_dir fixes each pooled instance's host functions (hostfuncs/README.md, "Names and
    the state directory"): mkdir only that directory and its ancestors, files only inside it."""
    store.create("", b"x")
    inst = store._idle[0]
    assert inst.funcs.state_dir == store.state_dir
    app_dir = Path(store.state_dir).parent

    def host(fn: str, req: dict[str, Any]) -> dict[str, Any]:
        return dict(json.loads(inst.funcs.call(fn, json.dumps(req).encode())))

    assert host("mcp_resume_prepare_dir", {"op": "mkdir", "path": str(app_dir / "other")})["error"]["code"] == "invalid_request"
    assert host("mcp_resume_prepare_dir", {"op": "mkdir", "path": str(app_dir)})["error"]["code"] == "exists"
    assert host("mcp_resume_read", {"name": "../x", "limit": 1})["error"]["code"] == "invalid_request"
    assert not (app_dir / "other").exists()


def test_files_private_and_sealed(store: HandleStore, root: Path) -> None:
    secret = b"the-plain-value-must-not-be-on-disk"
    c = store.create("principal-name", secret)
    store.put(c.handle, "principal-name", secret + b"-2")
    d = Path(store.state_dir)
    assert d == root / "handles-test" / "handles"
    assert stat.S_IMODE(os.stat(d).st_mode) == 0o700
    names = os.listdir(d)
    assert any(n.startswith("h-") for n in names), names
    for n in names:
        p = d / n
        assert stat.S_IMODE(os.lstat(p).st_mode) == 0o600, n
        data = p.read_bytes()
        for s in (secret, c.handle.encode(), c.handle[5:].encode(), b"principal-name"):
            assert s not in data, f"{n} holds a secret"


def test_logs_name_no_secret(root: Path) -> None:
    lines = Lines()
    clock = Clock()
    with HandleStore("logs", state_root=root, logger=logger_with(lines), clock=clock, max_handles=1) as s:
        a = s.create("who", b"value-a", idle_ttl=10)
        with pytest.raises(ConflictError):
            s.put(a.handle, "who", b"x", expect=7)
        s.create("who", b"value-b")  # evicts a
        clock.advance(30 * 24 * 3600)
        s.gc()
    events = {getattr(r, "event", "") for r in lines.records}
    assert {"handle_created", "handle_conflict", "handle_evicted"} <= events, events
    for r in lines.records:
        text = r.getMessage()
        assert a.handle not in text and a.handle[5:] not in text and "value-a" not in text and "who" not in text


# --- lifetimes (clock=) ---------------------------------------------------------------------------------


def test_clock_idle_expiry_refresh_and_tombstone(root: Path) -> None:
    clock = Clock()
    with HandleStore("clock", state_root=root, clock=clock, idle_ttl=10, max_age=60, tombstone=100) as s:
        c = s.create("", b"x")
        assert c.created == T0
        for _ in range(3):  # every read refreshes the idle time
            clock.advance(9)
            assert s.get(c.handle, "").data == b"x"
        clock.advance(9)
        assert s.exists(c.handle, "") is True
        clock.advance(2)  # exists did not refresh: 11 s idle
        assert s.exists(c.handle, "") is False
        with pytest.raises(HandleExpiredError) as e:
            s.get(c.handle, "")
        assert e.value.reason == "idle" and e.value.to_json()["reason"] == "idle"
        clock.advance(101)
        with pytest.raises(HandleNotFoundError):
            s.get(c.handle, "")


def test_clock_max_age_is_not_extended(root: Path) -> None:
    clock = Clock()
    with HandleStore("maxage", state_root=root, clock=clock, idle_ttl=10, max_age=30) as s:
        c = s.create("", b"x")
        for _ in range(5):
            clock.advance(5)
            s.touch(c.handle, "")
            s.put(c.handle, "", b"y")
        clock.advance(6)  # 31 s after creation, 6 s idle
        with pytest.raises(HandleExpiredError) as e:
            s.touch(c.handle, "")
        assert e.value.reason == "max_age"


def test_clock_as_unix_seconds(root: Path) -> None:
    now = [T0.timestamp()]
    with HandleStore("secs", state_root=root, clock=lambda: now[0], idle_ttl=5) as s:
        c = s.create("", b"x")
        assert c.created == T0
        now[0] += 6
        with pytest.raises(HandleExpiredError):
            s.get(c.handle, "")


def test_eviction_least_recently_used(root: Path) -> None:
    clock = Clock()
    # One principal: its quota is the whole cap (the default, a quarter, would evict at 1).
    with HandleStore("lru", state_root=root, clock=clock, max_handles=3, max_handles_per_principal=3) as s:
        # Steps of two minutes: the LRU order has the refresh resolution, min(idle TTL / 64, 60 s) on files.
        hs = []
        for i in range(3):
            clock.advance(120)
            hs.append(s.create("", b"%d" % i).handle)
        clock.advance(120)
        s.get(hs[0], "")  # hs[1] is now the least recently used
        clock.advance(120)
        d = s.create("", b"d").handle
        with pytest.raises(HandleEvictedError) as e:
            s.get(hs[1], "")
        assert e.value.code == "handle_evicted"
        assert [s.exists(h, "") for h in (hs[0], hs[2], d)] == [True, True, True]
        listed = s.list()
        assert (listed.live, listed.tombstones, listed.shards) == (3, 1, 1)
        assert sorted(h.state for h in listed.handles) == ["evicted", "live", "live", "live"]


def test_list_and_gc(root: Path) -> None:
    clock = Clock()
    with HandleStore("gc", state_root=root, clock=clock, idle_ttl=10, max_age=100, tombstone=50) as s:
        a = s.create("", b"12345")
        s.create("", b"x", max_age=5)
        clock.advance(3)
        s.get(a.handle, "")
        listed = s.list()
        assert (listed.live, listed.tombstones) == (2, 0) and listed.bytes > 0
        infos = sorted(listed.handles, key=lambda h: h.size or 0)
        assert [(h.state, h.generation, h.size) for h in infos] == [("live", 1, 1), ("live", 1, 5)]
        assert all(len(h.key) == 12 and h.age == dt.timedelta(seconds=3) for h in infos)
        assert infos[1].idle == dt.timedelta(0) and infos[0].idle == dt.timedelta(seconds=3)
        for h in infos:
            assert h.key not in a.handle
        clock.advance(8)  # b past its max age (11 > 5), a idle for 8 s
        r = s.gc()
        assert (r.expired_idle, r.expired_max_age, r.live, r.tombstones_dropped) == (0, 1, 1, 0)
        clock.advance(3)
        r = s.gc()
        assert (r.expired_idle, r.live) == (1, 0)
        clock.advance(60)
        assert s.gc().tombstones_dropped == 2 and s.list().handles == []


# --- concurrency ----------------------------------------------------------------------------------------


def cas_increments(store: HandleStore, handle: str, attempts: int) -> int:
    """``attempts`` compare-and-set increments of the counter in ``handle``: the number that succeeded."""
    ok = 0
    for _ in range(attempts):
        v = store.get(handle, "")
        try:
            store.put(handle, "", b"%d" % (int(v.data) + 1), expect=v.generation)
            ok += 1
        except ConflictError:
            pass
    return ok


def test_threads_cas_increments(root: Path) -> None:
    """8 threads on a pool of 4 instances: the final count equals the successful puts, and at most 4 instances
    exist at once."""
    with HandleStore("cas", state_root=root, pool_size=4) as s:
        c = s.create("", b"0")
        results: list[int] = []
        threads = [threading.Thread(target=lambda: results.append(cas_increments(s, c.handle, 40))) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        v = s.get(c.handle, "")
        assert len(results) == 8 and sum(results) > 0
        assert int(v.data) == sum(results) and v.generation == sum(results) + 1
        assert s._count <= 4


CAS_CHILD = r"""
import sys
sys.path.insert(0, sys.argv[4])
from mcp_resume import HandleStore
from test_handles import cas_increments
with HandleStore("cas2", state_root=sys.argv[1], pool_size=4) as s:
    import threading
    results = []
    ts = [threading.Thread(target=lambda: results.append(cas_increments(s, sys.argv[2], int(sys.argv[3])))) for _ in range(8)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    print(sum(results))
"""


def test_two_processes_cas_increments(root: Path) -> None:
    """2 processes x 8 threads on one handle: linearizable through the shard lock."""
    with HandleStore("cas2", state_root=root) as s:
        c = s.create("", b"0")
    args = [sys.executable, "-c", CAS_CHILD, str(root), c.handle, "15", str(Path(__file__).parent)]
    procs = [subprocess.Popen(args, stdout=subprocess.PIPE, text=True) for _ in range(2)]
    counts = [int(p.communicate(timeout=300)[0]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    with HandleStore("cas2", state_root=root) as s:
        v = s.get(c.handle, "")
    assert int(v.data) == sum(counts) and v.generation == sum(counts) + 1, (counts, v)


def hold_shard(state_dir: str, shard: str = "00") -> HostFunctions:
    """Another holder of the shard lock (flock, as a process on another host would hold it)."""
    f = HostFunctions(logging.getLogger("mcp_resume.test.holder"))
    f.set_state_dir(state_dir)
    resp = json.loads(f.call("mcp_resume_lock", json.dumps({"name": f"lock-{shard}"}).encode()))
    assert resp == {}, resp
    return f


def test_shard_held_elsewhere_is_store_unavailable_after_lock_wait(root: Path) -> None:
    with HandleStore("held", state_root=root, max_handles=100, lock_wait=0.3) as s:
        c = s.create("", b"x")
        holder = hold_shard(s.state_dir)
        t0 = time.monotonic()
        with pytest.raises(StoreUnavailableError) as e:
            s.put(c.handle, "", b"y")  # a write takes the shard's lock (a get may read the record alone)
        took = time.monotonic() - t0
        assert 0.3 <= took < 3 and e.value.code == "store_unavailable" and isinstance(e.value, OSError)
        assert c.handle not in str(e.value)
        holder.close()
        assert s.get(c.handle, "").data == b"x", "the store did not recover once the shard was free"


# --- asyncio --------------------------------------------------------------------------------------------


def test_async_store_every_method(root: Path) -> None:
    async def main() -> None:
        async with AsyncHandleStore("async", state_root=root, pool_size=2) as s:
            c = await s.create("", b"a")
            assert (await s.get(c.handle, "")).data == b"a"
            assert await s.put(c.handle, "", b"b", expect=1) == 2
            with pytest.raises(ConflictError):
                await s.put(c.handle, "", b"c", expect=1)
            assert (await s.touch(c.handle, "")).generation == 2
            assert await s.exists(c.handle, "")
            assert (await s.list()).live == 1
            assert (await s.gc()).live == 1
            await s.delete(c.handle, "")
            with pytest.raises(HandleNotFoundError):
                await s.get(c.handle, "")
            assert (await s.opened()).idle_ttl == dt.timedelta(hours=24)
            results = await asyncio.gather(*(s.create("", b"%d" % i) for i in range(20)))
            assert len({r.handle for r in results}) == 20

    asyncio.run(main())


def test_async_store_opens_in_the_background_and_its_first_call_raises_a_failed_open(root: Path) -> None:
    """AsyncHandleStore(app, **options) returns before the store is open; a bad option or app name is raised by the
    first awaited call (the same class HandleStore raises), and a store that opened serves from the first call."""

    async def main() -> None:
        bad = AsyncHandleStore("app", state_root=root, idle_ttl=-1)
        with pytest.raises(InvalidOptionError):
            await bad.create("", b"x")
        with pytest.raises(InvalidOptionError):  # every later call too
            await bad.get("mrh1_" + "A" * 32, "")
        assert bad.ready()
        await bad.aclose()
        with pytest.raises(InvalidAppError):
            await AsyncHandleStore("../x", state_root=root).opened()
        good = AsyncHandleStore("app", state_root=root)
        c = await good.create("", b"x")
        assert (await good.get(c.handle, "")).data == b"x"
        await good.aclose()
        with pytest.raises(StoreUnavailableError):
            await good.get(c.handle, "")

    asyncio.run(main())


def test_async_calls_never_block_the_loop(root: Path) -> None:
    """While calls wait 1 s each for a shard another process holds, a 5 ms ticker keeps ticking."""

    async def main() -> None:
        s = AsyncHandleStore("tick", state_root=root, max_handles=100, lock_wait=1, pool_size=2)
        c = await s.create("", b"x")
        holder = hold_shard((await s.opened()).state_dir)
        ticks: list[float] = []

        async def ticker() -> None:
            while True:
                ticks.append(time.monotonic())
                await asyncio.sleep(0.005)

        task = asyncio.create_task(ticker())
        t0 = time.monotonic()
        # Writes take the shard's lock (a get may read the record alone).
        results = await asyncio.gather(s.put(c.handle, "", b"y"), s.put(c.handle, "", b"z"), return_exceptions=True)
        took = time.monotonic() - t0
        task.cancel()
        holder.close()
        assert all(isinstance(r, StoreUnavailableError) for r in results), results
        assert took >= 1
        during = [t for t in ticks if t >= t0]
        gaps = [b - a for a, b in zip(during, during[1:])]
        assert len(during) > 50 and max(gaps) < 0.25, f"{len(during)} ticks, largest gap {max(gaps):.3f}s"
        assert (await s.get(c.handle, "")).data == b"x"
        await s.aclose()

    asyncio.run(main())


# --- the store's life ---------------------------------------------------------------------------------


def test_close_and_reopen(root: Path) -> None:
    s = HandleStore("life", state_root=root)
    c = s.create("", b"durable")
    s.close()
    s.close()
    with pytest.raises(StoreUnavailableError):
        s.get(c.handle, "")
    with HandleStore("life", state_root=root) as again:
        assert again.get(c.handle, "").data == b"durable"


def test_unusable_directory(tmp_path: Path) -> None:
    """A state root that is a file: the store opens (and logs why it is unavailable), every operation raises
    StoreUnavailableError saying what to do, and nothing is created."""
    (tmp_path / "file").write_text("not a directory")
    lines = Lines()
    with HandleStore("x", state_root=tmp_path / "file", logger=logger_with(lines)) as s:
        for op in (lambda: s.create("", b"x"), lambda: s.get("mrh1_" + "A" * 32, ""), s.list, s.gc):
            with pytest.raises(StoreUnavailableError) as e:
                op()
            assert "MCP_RESUME_STATE_DIR" in str(e.value)
    assert "handle_store_unavailable" in {getattr(r, "event", "") for r in lines.records}
    assert (tmp_path / "file").read_text() == "not a directory"


def test_guest_random_source_10000_handles(root: Path) -> None:
    """WASI random_get is the OS CSPRNG in this host: 10,000 handles, all distinct, each 24 random bytes."""
    with HandleStore("random", state_root=root, max_handles=20000, pool_size=1) as s:
        handles = [s.create("", b"").handle for _ in range(10000)]
    assert len(set(handles)) == 10000
    raw = [base64.urlsafe_b64decode(h[5:] + "=" * (-len(h[5:]) % 4)) for h in handles]
    assert all(len(r) == 24 for r in raw)
    assert len({r[:8] for r in raw}) == 10000, "random prefixes repeat"
    ones = sum(bin(b).count("1") for r in raw for b in r)
    assert abs(ones / (10000 * 24 * 8) - 0.5) < 0.01, "the random bits are biased"


def test_another_app_never_reads(root: Path) -> None:
    """Two apps under one state root never share a handle: app B given app A's handle and principal answers
    ``HandleNotFoundError``, even with A's record copied into B's directory (keys and record names derive from the app
    as well as the handle)."""
    with HandleStore("app-a", state_root=root) as a, HandleStore("app-b", state_root=root) as b:
        c = a.create("alice", b"a's secret")
        with pytest.raises(HandleNotFoundError):
            b.get(c.handle, "alice")
        b.create("alice", b"b's own")  # app-b's directory exists now
        for rec in Path(a.state_dir).glob("h-*"):
            dst = Path(b.state_dir) / rec.name
            dst.write_bytes(rec.read_bytes())
            dst.chmod(0o600)
        with pytest.raises(HandleNotFoundError):
            b.get(c.handle, "alice")
        assert a.get(c.handle, "alice").data == b"a's secret"


def test_pool_serves_threads_in_turn(root: Path) -> None:
    """16 threads on a pool of 2: each gets its share. A thread that gives an instance back must not take it again
    ahead of one already waiting (without the turn order, 2 threads kept both instances and the other 14 did ~0
    calls in a second)."""
    with HandleStore("fair", state_root=root, pool_size=2) as s:
        h = s.create("alice", b"x").handle
        counts = [0] * 16
        stop = threading.Event()

        def loop(i: int) -> None:
            while not stop.is_set():
                s.exists(h, "alice")
                counts[i] += 1

        threads = [threading.Thread(target=loop, args=(i,)) for i in range(16)]
        for t in threads:
            t.start()
        time.sleep(1.5)
        stop.set()
        for t in threads:
            t.join()
    mean = sum(counts) / len(counts)
    assert mean > 0
    assert min(counts) >= 0.3 * mean, counts

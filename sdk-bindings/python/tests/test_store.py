"""The public API of mcp_resume on the real plugin in the real Extism runtime.

Shipped bytes, state-directory rules, app names, the ABI check (with real Wasm
modules), token validation, thread safety, never crashing the server, logging
never on stdout, and the wasmtime compilation cache (in fresh processes, since
the plugin is compiled once per process).
"""

from __future__ import annotations

import hashlib
import importlib.resources
import json
import logging
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import mcp_resume
from mcp_resume import InvalidAppError, InvalidTokenError, PluginError, ResumeTokenStore, TokenFile, default_state_dir
from mcp_resume._store import resolve_instance

from conftest import REPO_ROOT

PID, START = 4242, "98765.0f1e2d3c4b5a69788796a5b4c3d2e1f0"
TOKEN_NAME = f"token-{PID}-{START}"
LOCK_NAME = f"lock-{PID}-{START}"


def pinned() -> tuple[int, str]:
    return PID, START


def pinned_alive(pid: int, start_time: str) -> bool:
    """Liveness to go with ``pinned``: its (made-up) host runs, nothing else does."""
    return (pid, start_time) == (PID, START)


class Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def events(self) -> list[str]:
        return [getattr(r, "event", "") for r in self.records]


@pytest.fixture(autouse=True)
def no_instance(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pin "no instance": otherwise pytest's own arguments (sys.argv[1:]) would be the
    instance key and suffix every file name. Child processes inherit it too."""
    monkeypatch.setenv("MCP_RESUME_INSTANCE", "-")


@pytest.fixture
def capture() -> Capture:
    return Capture()


def logger_for(capture: Capture, name: str) -> logging.Logger:
    lg = logging.getLogger(f"mcp_resume.test.{name}")
    lg.handlers[:] = [capture]
    lg.setLevel(logging.DEBUG)
    lg.propagate = False
    return lg


# --- the shipped plugin ------------------------------------------------------------------


def test_shipped_wasm_is_the_repository_plugin() -> None:
    shipped = importlib.resources.files("mcp_resume").joinpath("plugin.wasm").read_bytes()
    assert shipped == (REPO_ROOT / "plugin" / "plugin.wasm").read_bytes(), (
        "the packaged plugin.wasm differs from plugin/plugin.wasm: reinstall the package (make python-setup)"
    )


def test_public_api() -> None:
    assert mcp_resume.ABI_VERSION == "2"
    assert mcp_resume.INSTANCE_ENV == "MCP_RESUME_INSTANCE" and mcp_resume.NO_INSTANCE == "-"
    assert mcp_resume.STATE_DIR_ENV == "MCP_RESUME_STATE_DIR"
    assert issubclass(InvalidTokenError, ValueError) and issubclass(InvalidAppError, ValueError)
    assert issubclass(PluginError, mcp_resume.ResumeStoreError)


# --- state directory ------------------------------------------------------------------------


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux XDG layout")
def test_default_state_dir_linux(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert default_state_dir("my-app") == str(tmp_path / "xdg" / "mcp-resume" / "my-app")
    monkeypatch.delenv("XDG_STATE_HOME")
    assert default_state_dir("my-app") == str(tmp_path / "home" / ".local" / "state" / "mcp-resume" / "my-app")


@pytest.mark.skipif(sys.platform != "darwin", reason="macOS layout")
def test_default_state_dir_macos(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:  # pragma: no cover
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_state_dir("my-app") == str(tmp_path / "Library" / "Application Support" / "mcp-resume" / "my-app")


def test_state_dir_precedence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("MCP_RESUME_STATE_DIR", raising=False)
    with ResumeTokenStore("app1", identity=pinned) as s:
        assert s.state_dir == default_state_dir("app1")
    monkeypatch.setenv("MCP_RESUME_STATE_DIR", str(tmp_path / "env"))
    with ResumeTokenStore("app1", identity=pinned) as s:
        assert s.state_dir == str(tmp_path / "env")
    with ResumeTokenStore("app1", tmp_path / "explicit", identity=pinned) as s:
        assert s.state_dir == str(tmp_path / "explicit")
    monkeypatch.chdir(tmp_path)
    with ResumeTokenStore("app1", "rel", identity=pinned) as s:
        assert s.state_dir == str(tmp_path / "rel")
        s.store("tok-1")
    assert (tmp_path / "rel" / TOKEN_NAME).read_text() == "tok-1"
    assert not (tmp_path / "env").exists() and not (tmp_path / "xdg").exists()


def test_store_does_not_touch_disk_until_used(tmp_path: Path) -> None:
    with ResumeTokenStore("app", tmp_path / "state", identity=pinned):
        pass
    assert not (tmp_path / "state").exists()


# --- app names --------------------------------------------------------------------------------


@pytest.mark.parametrize("app", ["", ".hidden", "-x", "a/b", "a b", "x" * 65, "é", "a\n", 5, None])
def test_invalid_app(app: object, tmp_path: Path) -> None:
    with pytest.raises(InvalidAppError, match="^invalid app name"):
        ResumeTokenStore(app, tmp_path)  # type: ignore[arg-type]


@pytest.mark.parametrize("app", ["a", "x" * 64, "github-server", "A.b_c-9"])
def test_valid_app(app: str, tmp_path: Path) -> None:
    ResumeTokenStore(app, tmp_path, identity=pinned).close()


# --- ABI check, with real Wasm modules ----------------------------------------------------------


def _leb(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _name(s: str) -> bytes:
    return _leb(len(s)) + s.encode()


def _section(sid: int, body: bytes) -> bytes:
    return bytes([sid]) + _leb(len(body)) + body


def abi_module(version: str | None) -> bytes:
    """A real Wasm module whose ``mcp_resume_abi_version`` outputs ``version`` through
    the Extism kernel (alloc, store_u8, output_set); ``None``: a module without exports."""
    header = b"\x00asm\x01\x00\x00\x00"
    if version is None:
        return header
    types = _leb(4) + b"\x60\x01\x7e\x01\x7e" + b"\x60\x02\x7e\x7f\x00" + b"\x60\x02\x7e\x7e\x00" + b"\x60\x00\x01\x7f"
    env = _name("extism:host/env")
    imports = _leb(3) + env + _name("alloc") + b"\x00\x00" + env + _name("store_u8") + b"\x00\x01" + env + _name("output_set") + b"\x00\x02"
    funcs = _leb(1) + _leb(3)
    exports = _leb(1) + _name("mcp_resume_abi_version") + b"\x00" + _leb(3)
    code = b"\x42" + _leb(len(version)) + b"\x10\x00\x21\x00"  # p = alloc(len)
    for i, ch in enumerate(version.encode()):
        # store_u8(p + i, ch)
        code += b"\x20\x00\x42" + _leb(i) + b"\x7c\x41" + _leb(ch) + b"\x10\x01"
    code += b"\x20\x00\x42" + _leb(len(version)) + b"\x10\x02"  # output_set(p, len)
    code += b"\x41\x00\x0b"  # return 0
    body = b"\x01\x01\x7e" + code  # one i64 local
    codesec = _leb(1) + _leb(len(body)) + body
    return header + _section(1, types) + _section(2, imports) + _section(3, funcs) + _section(7, exports) + _section(10, codesec)


def test_abi_module_speaks_two() -> None:
    """The hand-made module really runs: with "2" it is accepted."""

    class Store(ResumeTokenStore):
        _wasm = abi_module("2")

    Store("app", "/nonexistent", identity=pinned).close()


def test_abi_mismatch_refused() -> None:
    class Store(ResumeTokenStore):
        _wasm = abi_module("1")

    with pytest.raises(PluginError) as e:
        Store("app", "/nonexistent", identity=pinned)
    assert 'plugin ABI version "1", this host implements "2"' in str(e.value)


def test_abi_export_missing() -> None:
    class Store(ResumeTokenStore):
        _wasm = abi_module(None)

    with pytest.raises(PluginError, match='ABI version unknown.*this host implements "2"'):
        Store("app", "/nonexistent", identity=pinned)


def test_not_wasm_refused() -> None:
    class Store(ResumeTokenStore):
        _wasm = b"not wasm at all"

    with pytest.raises(PluginError, match="^mcp-resume plugin unusable: compiling"):
        Store("app", "/nonexistent", identity=pinned)


# --- the three calls ---------------------------------------------------------------------------


def test_flow(tmp_path: Path, capture: Capture) -> None:
    lg = logger_for(capture, "flow")
    with ResumeTokenStore("app", tmp_path, logger=lg, identity=pinned) as s:
        assert s.load() is None
        s.store("tok-A")
        assert s.list() == [TokenFile(TOKEN_NAME, PID, START)]
    with ResumeTokenStore("app", tmp_path, logger=lg, identity=pinned) as s:
        assert s.load() == "tok-A"
        s.store("tok-B")
    with ResumeTokenStore("app", tmp_path, logger=lg, identity=pinned) as s:
        assert s.load() == "tok-B"
        s.reject()
        assert s.load() is None
        s.store("tok-C")
    assert (tmp_path / TOKEN_NAME).read_text() == "tok-C"
    assert capture.events() == ["token_not_found", "session_resumed", "token_rejected", "token_not_found"]
    for r in capture.records:
        assert "tok-" not in r.getMessage() and "tok-" not in str(getattr(r, "detail", ""))


@pytest.mark.parametrize(
    "token", ["", "tok A", "tok\n", "té", "x" * 4097, "\udcff"], ids=["empty", "space", "newline", "non-ascii", "too long", "surrogate"]
)
def test_invalid_token(tmp_path: Path, token: str) -> None:
    with ResumeTokenStore("app", tmp_path, identity=pinned) as s:
        with pytest.raises(InvalidTokenError) as e:
            s.store(token)
    assert str(e.value).startswith("invalid token")
    if len(token) > 3:
        assert token not in str(e.value)
    assert os.listdir(tmp_path) == []


def test_invalid_token_type(tmp_path: Path) -> None:
    with ResumeTokenStore("app", tmp_path, identity=pinned) as s:
        with pytest.raises(InvalidTokenError, match="^invalid token"):
            s.store(b"tok")  # type: ignore[arg-type]


def test_invalid_token_rejected_even_when_resume_is_off(tmp_path: Path) -> None:
    def unavailable() -> tuple[int, str]:
        raise RuntimeError("no parent")

    with ResumeTokenStore("app", tmp_path, identity=unavailable) as s:
        s.store("fine")
        with pytest.raises(InvalidTokenError):
            s.store("not fine")


def test_never_crashes(tmp_path: Path, capture: Capture) -> None:
    """A state directory that is a file turns resume off; nothing raises."""
    (tmp_path / "file").write_text("x")
    with ResumeTokenStore("app", tmp_path / "file", logger=logger_for(capture, "crash"), identity=pinned) as s:
        assert s.load() is None
        s.store("tok")
        s.reject()
    assert capture.events() == ["state_dir_unusable"]


def test_missing_host_context_does_not_crash(tmp_path: Path) -> None:
    """Host functions answer an io error (never raise) when the call carries no context."""
    with ResumeTokenStore("app", tmp_path, identity=pinned) as s:
        assert s._plugin is not None
        assert bytes(s._plugin.call("load", b"", host_context=None)) == b""
    assert os.listdir(tmp_path) == []


def test_closed(tmp_path: Path, capture: Capture) -> None:
    s = ResumeTokenStore("app", tmp_path, logger=logger_for(capture, "closed"), identity=pinned)
    s.close()
    s.close()
    assert s.load() is None
    s.store("tok")
    s.reject()
    with pytest.raises(PluginError):
        s.list()
    assert set(capture.events()) == {"store_closed"}
    assert all(r.levelno == logging.DEBUG for r in capture.records)


def test_list_errors(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with ResumeTokenStore("app", tmp_path / "file", identity=pinned) as s:
        with pytest.raises(PluginError):
            s.list()
    with ResumeTokenStore("app", tmp_path / "missing", identity=pinned) as s:
        assert s.list() == []


def test_thread_safe(tmp_path: Path) -> None:
    errors: list[BaseException] = []
    tokens = [f"tok-{i}" for i in range(8)]
    with ResumeTokenStore("app", tmp_path, identity=pinned) as s:

        def work(tok: str) -> None:
            try:
                for _ in range(40):
                    s.store(tok)
                    got = s.load()
                    assert got in tokens
                    s.list()
            except BaseException as e:  # noqa: BLE001
                errors.append(e)

        threads = [threading.Thread(target=work, args=(t,)) for t in tokens]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    assert not errors
    assert (tmp_path / TOKEN_NAME).read_text() in tokens
    assert sorted(os.listdir(tmp_path)) == [LOCK_NAME, TOKEN_NAME]


def test_many_stores_share_one_compiled_plugin(tmp_path: Path) -> None:
    from mcp_resume import _runtime

    a = ResumeTokenStore("a", tmp_path / "a", identity=pinned)
    compiled = _runtime.compiled_plugin()
    b = ResumeTokenStore("b", tmp_path / "b", identity=lambda: (77, "1.a"))
    assert _runtime.compiled_plugin() is compiled
    a.store("tok-a")
    b.store("tok-b")
    assert (tmp_path / "a" / TOKEN_NAME).read_text() == "tok-a"
    assert (tmp_path / "b" / "token-77-1.a").read_text() == "tok-b"
    a.close()
    b.close()


def test_default_logger_and_no_stdout(tmp_path: Path, capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="mcp_resume")
    (tmp_path / TOKEN_NAME).write_bytes(b"\x00garbage")
    with ResumeTokenStore("app", tmp_path, identity=pinned) as s:
        assert s.load() is None
        s.store("tok-N")
    assert [(r.name, r.getMessage()) for r in caplog.records] == [("mcp_resume", "Token file corrupted, treating as stale")]
    assert capfd.readouterr().out == ""


# --- instances, the lock, prune ------------------------------------------------------------------------


def suffix(instance: str) -> str:
    return hashlib.sha256(instance.encode()).hexdigest()[:16]


def test_resolve_instance(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MCP_RESUME_INSTANCE")
    monkeypatch.setattr(sys, "argv", ["server.py", "--profile", "work"])
    assert resolve_instance() == "--profile\0work"
    assert resolve_instance("") == "" and resolve_instance("-") == ""
    assert resolve_instance("config-hash") == "config-hash"
    monkeypatch.setenv("MCP_RESUME_INSTANCE", "")
    assert resolve_instance() == "--profile\0work", "an empty variable counts as unset"
    monkeypatch.setenv("MCP_RESUME_INSTANCE", "from-env")
    assert resolve_instance() == "from-env"
    assert resolve_instance("explicit") == "explicit" and resolve_instance("") == ""
    monkeypatch.setenv("MCP_RESUME_INSTANCE", "-")
    assert resolve_instance() == ""
    monkeypatch.delenv("MCP_RESUME_INSTANCE")
    monkeypatch.setattr(sys, "argv", ["server.py"])
    assert resolve_instance() == ""


def test_instance_names_the_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MCP_RESUME_INSTANCE")
    monkeypatch.setattr(sys, "argv", ["server.py", "--profile", "work"])
    with ResumeTokenStore("app", tmp_path, identity=pinned) as s:
        assert s.instance == "--profile\0work"
        s.store("tok-W")
        sfx = suffix("--profile\0work")
        assert sfx == "b24b083fc1a60d91"  # the conformance case instance_suffix
        assert s.list() == [TokenFile(f"{TOKEN_NAME}-{sfx}", PID, START, sfx)]
    assert sorted(os.listdir(tmp_path)) == [f"{LOCK_NAME}-{sfx}", f"{TOKEN_NAME}-{sfx}"]
    with pytest.raises(TypeError):
        ResumeTokenStore("app", tmp_path, identity=pinned, instance=5)  # type: ignore[arg-type]


def test_instances_resume_independently(tmp_path: Path, capture: Capture) -> None:
    """Two stores under one host at once: different keys never meet, each resumes its own token."""
    lg = logger_for(capture, "independent")
    kw = {"logger": lg, "identity": pinned, "alive": pinned_alive}
    a = ResumeTokenStore("app", tmp_path, instance="a", **kw)  # type: ignore[arg-type]
    b = ResumeTokenStore("app", tmp_path, instance="b", **kw)  # type: ignore[arg-type]
    assert a.load() is None and b.load() is None
    a.store("tok-a")
    b.store("tok-b")
    a.close()
    b.close()
    a = ResumeTokenStore("app", tmp_path, instance="a", **kw)  # type: ignore[arg-type]
    b = ResumeTokenStore("app", tmp_path, instance="b", **kw)  # type: ignore[arg-type]
    assert b.load() == "tok-b" and a.load() == "tok-a"
    a.close()
    b.close()
    assert capture.events() == ["token_not_found", "token_not_found"], "no instance_busy, nothing pruned"
    assert sorted(os.listdir(tmp_path)) == sorted(f"{kind}-{PID}-{START}-{suffix(i)}" for kind in ("lock", "token") for i in "ab")
    assert sorted(f.instance for f in ResumeTokenStore("app", tmp_path, identity=pinned).list()) == sorted([suffix("a"), suffix("b")])


def test_same_instance_busy_until_closed(tmp_path: Path, capture: Capture) -> None:
    """Two stores launched the same way under one host: the first holds the file, the second runs without resume."""
    first = ResumeTokenStore("app", tmp_path, logger=logger_for(capture, "first"), identity=pinned)
    assert first.load() is None
    first.store("tok-1")
    second_logs = Capture()
    second = ResumeTokenStore("app", tmp_path, logger=logger_for(second_logs, "second"), identity=pinned)
    assert second.load() is None
    second.store("tok-2")
    second.reject()
    assert second.load() is None
    assert second_logs.events() == ["instance_busy"]
    r = second_logs.records[0]
    assert r.levelno == logging.WARNING
    assert r.getMessage() == "Another server instance under this host holds the token file, session resume disabled for this instance"
    assert (tmp_path / TOKEN_NAME).read_text() == "tok-1"
    second.close()
    first.close()
    third = ResumeTokenStore("app", tmp_path, identity=pinned)
    assert third.load() == "tok-1", "close released the lock"
    third.close()
    assert sorted(os.listdir(tmp_path)) == [LOCK_NAME, TOKEN_NAME]


def test_lock_failed_turns_resume_off(tmp_path: Path, capture: Capture) -> None:
    (tmp_path / LOCK_NAME).mkdir()
    (tmp_path / TOKEN_NAME).write_text("tok-1")
    with ResumeTokenStore("app", tmp_path, logger=logger_for(capture, "lockfail"), identity=pinned) as s:
        assert s.load() is None
        s.store("tok-2")
    assert capture.events() == ["lock_failed"]
    assert capture.records[0].getMessage() == "Could not lock the token file, session resume disabled for this instance"
    assert (tmp_path / TOKEN_NAME).read_text() == "tok-1"


def test_prune(tmp_path: Path, capture: Capture) -> None:
    old = {"token-7777-2.cd": "gone", "lock-7777-2.cd": "", "token-8888-3.ef": "live", "lock-8888-3.ef": "",
           f"token-9999-4.ab-{suffix('x')}": "gone too", "token-nonsense": "not ours", "other": "x"}
    for n, text in old.items():
        (tmp_path / n).write_text(text)
    lg = logger_for(capture, "prune")
    with ResumeTokenStore("app", tmp_path, logger=lg, identity=pinned, alive=lambda pid, start: pid == 8888) as s:
        removed = s.prune()
        assert sorted(removed) == sorted(["token-7777-2.cd", "lock-7777-2.cd", f"token-9999-4.ab-{suffix('x')}"])
        assert s.prune() == []
    assert sorted(os.listdir(tmp_path)) == ["lock-8888-3.ef", "other", "token-8888-3.ef", "token-nonsense"]
    assert capture.events() == ["stale_removed"] * 3
    closed = ResumeTokenStore("app", tmp_path, identity=pinned)
    closed.close()
    with pytest.raises(PluginError):
        closed.prune()


def test_first_call_prunes_but_never_own_files(tmp_path: Path) -> None:
    """Load prunes once; this instance's own files stay even when its host looks gone."""
    (tmp_path / TOKEN_NAME).write_text("tok-own")
    (tmp_path / "token-7777-2.cd").write_text("stale")
    with ResumeTokenStore("app", tmp_path, identity=pinned, alive=lambda pid, start: False) as s:
        assert s.load() == "tok-own"
    assert sorted(os.listdir(tmp_path)) == [LOCK_NAME, TOKEN_NAME]


# --- compilation cache and environment, in fresh processes -----------------------------------------

CHILD = r"""
import json, os, sys, time
t0 = time.perf_counter()
from mcp_resume import ResumeTokenStore
s = ResumeTokenStore("app", sys.argv[1], identity=lambda: (4242, "1.a"))
t1 = time.perf_counter()
s.load(); s.store("tok"); s.close()
print(json.dumps({"open_s": t1 - t0, "cache_env": os.environ.get("EXTISM_CACHE_CONFIG"),
                  "wasi_env": os.environ.get("EXTISM_ENABLE_WASI_OUTPUT")}))
"""


def run_child(tmp_path: Path, env: dict[str, str]) -> tuple[dict, str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("EXTISM_")}
    full.update(env)
    p = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path / "state")], env=full, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout), p.stderr


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="XDG_CACHE_HOME moves the user cache dir on Linux only")
def test_compile_cache(tmp_path: Path) -> None:
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    cold, _ = run_child(tmp_path, env)
    toml = tmp_path / "cache" / "mcp-resume" / "wasmtime.toml"
    assert toml.read_text().endswith(f'[cache]\ndirectory = "{tmp_path / "cache" / "mcp-resume" / "wasmtime"}"\n')
    cached = list((tmp_path / "cache" / "mcp-resume" / "wasmtime").rglob("*"))
    assert any(p.is_file() for p in cached), "wasmtime wrote nothing to the cache"
    warm, _ = run_child(tmp_path, env)
    assert cold["cache_env"] is None and warm["cache_env"] is None, "EXTISM_CACHE_CONFIG leaked into the process"
    assert warm["open_s"] < cold["open_s"], (cold, warm)


def test_user_cache_config_respected(tmp_path: Path) -> None:
    user = tmp_path / "user.toml"
    user.write_text(f'[cache]\ndirectory = "{tmp_path / "usercache"}"\n')
    out, _ = run_child(tmp_path, {"EXTISM_CACHE_CONFIG": str(user), "XDG_CACHE_HOME": str(tmp_path / "cache")})
    assert out["cache_env"] == str(user)
    assert any(p.is_file() for p in (tmp_path / "usercache").rglob("*"))
    assert not (tmp_path / "cache" / "mcp-resume" / "wasmtime.toml").exists()


def test_broken_user_cache_config_falls_back(tmp_path: Path) -> None:
    user = tmp_path / "old.toml"
    user.write_text("[cache]\nenabled = true\n")  # the pre-wasmtime-33 format, refused by extism-sys 1.41
    out, err = run_child(tmp_path, {"EXTISM_CACHE_CONFIG": str(user)})
    assert out["cache_env"] == str(user)
    assert "compiling without it" in err
    assert (tmp_path / "state" / "token-4242-1.a").read_text() == "tok"


def test_wasi_output_env_hidden_and_restored(tmp_path: Path) -> None:
    out, err = run_child(tmp_path, {"EXTISM_ENABLE_WASI_OUTPUT": "1", "XDG_CACHE_HOME": str(tmp_path / "cache")})
    assert out["wasi_env"] == "1"
    assert "ignoring EXTISM_ENABLE_WASI_OUTPUT" in err

"""The public API of mcp_resume on the real plugin in the real Extism runtime.

The shipped bytes, the ABI check (with real Wasm modules), the plugin's
``open`` answers and error codes (app names, state directory from the real
process facts), the three calls, token validation, thread safety, never
crashing the server, logging never on stdout, instances and their lock,
``list``/``prune``/``whoami``, and the wasmtime compilation cache (in fresh
processes, since the plugin is compiled once per process). Calls that need a
host identity run on the default conformance system (hostfuncs/conformance/
systems/default.json: host pid 4242), materialised under the test's
temporary directory; everything else is the real system.
"""

from __future__ import annotations

import importlib.resources
import json
import logging
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

import mcp_resume
from mcp_resume import (InvalidAppError, InvalidTokenError, PluginError, MCPResumeError, ResumeTokenStore,
                        TokenFile)

from conftest import REPO_ROOT
from pinned import (DEFAULT_NAMESPACES, DEFAULT_SUFFIX, KEY_NAMESPACES, LOCK_NAME, MARKER_NAME, PID, PLAIN_LOCK_NAME,
                    PLAIN_TOKEN_NAME, START, TOKEN_NAME, Capture, default_instance_key, instance_suffix, logger_for,
                    pinned_store)
from system import CONFORMANCE



@pytest.fixture
def capture() -> Capture:
    return Capture()


@pytest.fixture
def Pinned(tmp_path_factory: pytest.TempPathFactory) -> type[ResumeTokenStore]:
    """ResumeTokenStore on the default conformance system: the MCP host is pid 4242, nothing else runs."""
    return pinned_store(tmp_path_factory.mktemp("system"))


# --- the shipped plugin ------------------------------------------------------------------


def test_shipped_wasm_is_the_repository_plugin() -> None:
    shipped = importlib.resources.files("mcp_resume").joinpath("plugin.wasm").read_bytes()
    assert shipped == (REPO_ROOT / "plugin" / "plugin.wasm").read_bytes(), (
        "the packaged plugin.wasm differs from plugin/plugin.wasm: reinstall the package (make python-setup)"
    )


def test_public_api() -> None:
    assert mcp_resume.ABI_VERSION == "11" and mcp_resume.NO_INSTANCE == "-"
    for e in (InvalidTokenError, InvalidAppError, mcp_resume.InvalidOptionError):
        assert issubclass(e, ValueError) and issubclass(e, MCPResumeError)
    assert issubclass(PluginError, MCPResumeError)
    assert not hasattr(mcp_resume, "default_state_dir"), "the state-directory rule lives in the plugin"


# --- open: the plugin's defaults and rules, from the real process facts ------------------------


def test_state_dir_defaults_from_real_facts(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The state directory from the real facts: XDG_STATE_HOME when absolute, else ~/.local/state (macOS:
    Application Support), MCP_RESUME_STATE_DIR, an explicit root, case folding, and a relative root made
    absolute against the directory the process started in (facts.cwd, read at the first import of
    mcp_resume), not the current one. Nothing touches disk here: open only computes the directory."""
    from mcp_resume._hostfuncs import _START_CWD

    launched = Path(_START_CWD)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("MCP_RESUME_STATE_DIR", raising=False)
    macos = sys.platform == "darwin"
    with ResumeTokenStore("app1") as s:
        want = tmp_path / "home/Library/Application Support/mcp-resume/app1" if macos else tmp_path / "xdg/mcp-resume/app1"
        assert s.state_dir == str(want)
    if not macos:
        monkeypatch.setenv("XDG_STATE_HOME", "relative/x")  # not absolute: ignored, so a relative XDG_STATE_HOME never makes the directory drift with the working directory
        with ResumeTokenStore("app1") as s:
            assert s.state_dir == str(tmp_path / "home/.local/state/mcp-resume/app1")
    monkeypatch.setenv("MCP_RESUME_STATE_DIR", str(tmp_path / "env"))
    with ResumeTokenStore("app1") as s:
        assert s.state_dir == str(tmp_path / "env" / "app1"), "MCP_RESUME_STATE_DIR is the root of one directory per app"
    with ResumeTokenStore("app1", state_root=tmp_path / "explicit") as s:
        assert s.state_dir == str(tmp_path / "explicit" / "app1") and s.state_root == str(tmp_path / "explicit")
    with ResumeTokenStore("App1", state_root=tmp_path / "explicit") as s:
        assert s.state_dir == str(tmp_path / "explicit" / "+app1"), "case-folding file systems must not merge apps"
    monkeypatch.chdir(tmp_path)  # after the import: the launch directory stays what it was
    assert launched.is_absolute() and launched != tmp_path
    with ResumeTokenStore("app1", state_root="rel") as s:
        assert s.state_dir == str(launched / "rel" / "app1"), (
            "the plugin makes a relative state_root absolute against the launch directory (facts.cwd at import)")
    with ResumeTokenStore("app1", state_root="./rel/../rel2//") as s:
        assert s.state_dir == str(launched / "rel2" / "app1"), "and clean"
    for d in ("xdg", "env", "explicit", "rel", "rel2"):
        assert not (tmp_path / d).exists(), f"open created {d}"


def test_state_root_sent_as_given() -> None:
    """The host neither makes state_root absolute nor cleans it: the plugin does, against facts.cwd."""
    from mcp_resume._store import _open_request

    for given, sent in (("rel/../x/", "rel/../x/"), (Path("rel"), "rel"), ("/a//b/", "/a//b/"), (b"rel", "rel")):
        assert json.loads(_open_request("app", given, None, None))["state_root"] == sent, given
    assert "state_root" not in json.loads(_open_request("app", "", None, None)), "empty: the default"


def test_resume_off_switch(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capture: Capture) -> None:
    monkeypatch.setenv("MCP_RESUME", "off")
    with ResumeTokenStore("app", state_root=tmp_path / "state", logger=logger_for(capture, "off")) as s:
        assert s.resume is False
        assert s.load() is None
        s.store("tok")
    assert capture.events() == ["resume_off"] and not (tmp_path / "state").exists()


@pytest.mark.parametrize("app", ["", ".hidden", "-x", "a/b", "a b", "x" * 65, "é", "a\n"])
def test_invalid_app(app: str, tmp_path: Path) -> None:
    with pytest.raises(InvalidAppError):
        ResumeTokenStore(app, state_root=tmp_path)


APP_MISSING = ("app name missing: give the server's application name, 1-64 letters, digits, '.', '_' or '-', "
               "starting with a letter or digit")
LAUNCHERS_HINT = 'give a list of process names, e.g. ["my-wrapper"]'


@pytest.mark.parametrize("app, message", [
    (5, "app must be a string, not a number"),
    (None, APP_MISSING),
    (["a"], "app must be a string, not a list"),
    (b"app", "app must be a string, not bytes"),
])
def test_app_not_a_string(app: Any, message: str, tmp_path: Path) -> None:
    """The plugin's words, once: never an empty name quoted for None, never the codec's internals."""
    with pytest.raises(InvalidAppError) as e:
        ResumeTokenStore(app, state_root=tmp_path)
    assert str(e.value) == message


@pytest.mark.parametrize("kwargs, message", [
    ({"launchers": "npx"}, f"launchers must be a list of strings, not a string: {LAUNCHERS_HINT}"),
    ({"launchers": ["ok", 5]}, f"launchers must be a list of strings, not a list holding a number: {LAUNCHERS_HINT}"),
    ({"launchers": 5}, f"launchers must be a list of strings, not a number: {LAUNCHERS_HINT}"),
    ({"launchers": [b"npx"]}, "launchers must be a list of strings, not a list holding bytes"),
    ({"state_root": 5}, "state_root must be a string, not a number: give an absolute path, or leave it out for the default"),
    ({"instance": 1.5}, "instance must be a string, not a number"),
    ({"instance": object()}, "instance must be a string, not object"),
])
def test_option_of_the_wrong_type(kwargs: dict[str, Any], message: str, tmp_path: Path) -> None:
    """A wrongly typed option is refused with its name, the type expected and the type given; a string for
    ``launchers`` is never split into letters."""
    with pytest.raises(mcp_resume.InvalidOptionError) as e:
        ResumeTokenStore("app", **({"state_root": tmp_path} | kwargs))
    assert str(e.value) == message and "wire:" not in str(e.value)


def test_launchers_any_iterable(tmp_path: Path) -> None:
    """Lists, tuples and generators of names are taken as they are."""
    for launchers in (["my-wrapper"], ("a", "b"), (n for n in ["x"])):
        with ResumeTokenStore("app", state_root=tmp_path / "s", launchers=launchers):
            pass


@pytest.mark.parametrize("app", ["a", "x" * 64, "github-server", "A.b_c-9"])
def test_valid_app(app: str, tmp_path: Path) -> None:
    ResumeTokenStore(app, state_root=tmp_path).close()


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


def test_abi_mismatch_refused() -> None:
    for version in ("5", "4", "3", "2", "1"):
        class Store(ResumeTokenStore):
            _wasm = abi_module(version)

        with pytest.raises(PluginError) as e:
            Store("app", state_root="/nonexistent")
        assert f'plugin ABI version "{version}", this host implements "11"' in str(e.value)


def test_abi_export_missing() -> None:
    class Store(ResumeTokenStore):
        _wasm = abi_module(None)

    with pytest.raises(PluginError, match='ABI version "unknown.*this host implements "11"'):
        Store("app", state_root="/nonexistent")


def test_not_wasm_refused() -> None:
    class Store(ResumeTokenStore):
        _wasm = b"not wasm at all"

    with pytest.raises(PluginError, match="^mcp-resume plugin unusable: compiling"):
        Store("app", state_root="/nonexistent")


# --- the three calls ---------------------------------------------------------------------------


def test_flow(tmp_path: Path, capture: Capture, Pinned: type[ResumeTokenStore]) -> None:
    """load, store and reject on the default system: the token is filed under the host's identity with the
    default instance key's suffix (the namespaces and the launch always enter it), the next store resumes it,
    reject deletes it, and no log line carries a token."""
    lg = logger_for(capture, "flow")
    with Pinned("app", state_root=tmp_path, logger=lg) as s:
        assert s.load() is None
        s.store("tok-A")
        (f,) = s.list()
        assert f == TokenFile(TOKEN_NAME, PID, START, DEFAULT_SUFFIX, "alive", f.age_seconds)
    with Pinned("app", state_root=tmp_path, logger=lg) as s:
        assert s.load() == "tok-A"
        s.store("tok-B")
    with Pinned("app", state_root=tmp_path, logger=lg) as s:
        assert s.load() == "tok-B"
        s.reject()
        assert s.load() is None
        s.store("tok-C")
    assert (tmp_path / "app" / TOKEN_NAME).read_text() == "tok-C"
    assert capture.events() == ["token_not_found", "session_resumed", "token_rejected", "token_not_found"]
    for r in capture.records:
        assert "tok-" not in r.getMessage() and "tok-" not in str(getattr(r, "detail", ""))


@pytest.mark.parametrize(
    "token", ["", "tok A", "tok\n", "té", "x" * 4097, "\udcff", b"tok"],
    ids=["empty", "space", "newline", "non-ascii", "too long", "surrogate", "bytes"],
)
def test_invalid_token(tmp_path: Path, token: Any, Pinned: type[ResumeTokenStore]) -> None:
    with Pinned("app", state_root=tmp_path) as s:
        with pytest.raises(InvalidTokenError) as e:
            s.store(token)
    assert "invalid token" in str(e.value)
    if isinstance(token, str) and len(token) > 3:
        assert token not in str(e.value)
    assert os.listdir(tmp_path) == []


def test_invalid_token_rejected_even_when_resume_is_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_RESUME", "off")
    with ResumeTokenStore("app", state_root=tmp_path) as s:
        s.store("fine")
        with pytest.raises(InvalidTokenError):
            s.store("not fine")


def test_never_crashes(tmp_path: Path, capture: Capture, Pinned: type[ResumeTokenStore]) -> None:
    """A state directory that is a file turns resume off; nothing raises."""
    (tmp_path / "file").write_text("x")
    with Pinned("app", state_root=tmp_path / "file", logger=logger_for(capture, "crash")) as s:
        assert s.load() is None
        s.store("tok")
        s.reject()
    assert capture.events() == ["state_dir_unusable"]


def test_missing_host_context_does_not_crash(tmp_path: Path, Pinned: type[ResumeTokenStore]) -> None:
    """Host functions answer an io error (never raise) when the call carries no context."""
    with Pinned("app", state_root=tmp_path) as s:
        assert s._plugin is not None
        assert bytes(s._plugin.call("load", b"", host_context=None)) == b""
    assert os.listdir(tmp_path) == []


def test_closed(tmp_path: Path, capture: Capture, Pinned: type[ResumeTokenStore]) -> None:
    s = Pinned("app", state_root=tmp_path, logger=logger_for(capture, "closed"))
    s.close()
    s.close()
    assert s.load() is None
    s.store("tok")
    s.reject()
    for method in (s.list, s.prune, s.whoami):
        with pytest.raises(PluginError):
            method()
    assert {getattr(r, "event", "") for r in capture.records} == {"store_closed"}
    assert all(r.levelno == logging.DEBUG for r in capture.records)


def test_list_and_prune_before_use(tmp_path: Path, Pinned: type[ResumeTokenStore]) -> None:
    with Pinned("app", state_root=tmp_path / "missing") as s:
        assert s.list() == [] and s.prune() == []
    assert not (tmp_path / "missing").exists(), "listing created the state directory"


def test_thread_safe(tmp_path: Path, Pinned: type[ResumeTokenStore]) -> None:
    """Eight threads storing, loading and listing on one store: no error, the file holds one of their tokens,
    and the directory holds only the token file and its lock (one instance: no ambiguity marker)."""
    errors: list[BaseException] = []
    tokens = [f"tok-{i}" for i in range(8)]
    with Pinned("app", state_root=tmp_path) as s:

        def work(tok: str) -> None:
            try:
                for _ in range(40):
                    s.store(tok)
                    assert s.load() in tokens
                    s.list()
            except BaseException as e:  # noqa: BLE001
                errors.append(e)

        threads = [threading.Thread(target=work, args=(t,)) for t in tokens]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    assert not errors
    assert (tmp_path / "app" / TOKEN_NAME).read_text() in tokens
    assert sorted(os.listdir(tmp_path / "app")) == [LOCK_NAME, TOKEN_NAME]


def test_many_stores_share_one_compiled_plugin(tmp_path: Path, Pinned: type[ResumeTokenStore]) -> None:
    """Two stores of two apps share the process's one compiled plugin, each writing its own token file."""
    from mcp_resume import _runtime

    a = Pinned("a", state_root=tmp_path / "a")
    compiled = _runtime.compiled_plugin()
    b = Pinned("b", state_root=tmp_path / "b")
    assert _runtime.compiled_plugin() is compiled
    a.store("tok-a")
    b.store("tok-b")
    assert (tmp_path / "a" / "a" / TOKEN_NAME).read_text() == "tok-a"
    assert (tmp_path / "b" / "b" / TOKEN_NAME).read_text() == "tok-b"
    a.close()
    b.close()


def test_default_logger_and_no_stdout(tmp_path: Path, capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture,
                                      Pinned: type[ResumeTokenStore]) -> None:
    """With no logger given, the plugin's lines go to logging's ``mcp_resume`` logger (a corrupt token file:
    one warning with its detail), and nothing reaches stdout."""
    caplog.set_level(logging.INFO, logger="mcp_resume")
    (tmp_path / "app").mkdir(mode=0o700)
    (tmp_path / "app" / TOKEN_NAME).write_bytes(b"\x00garbage")
    with Pinned("app", state_root=tmp_path) as s:
        assert s.load() is None
        s.store("tok-N")
    assert [(r.name, r.msg) for r in caplog.records] == [("mcp_resume", "Token file corrupted, treating as stale: %s")]
    assert caplog.records[0].getMessage().startswith("Token file corrupted, treating as stale: ")
    assert capfd.readouterr().out == ""


DEFAULT_LOGGING = r"""
import logging, sys
if sys.argv[2] == "basicConfig":
    logging.basicConfig()
from mcp_resume import ResumeTokenStore
with ResumeTokenStore("app", state_root=sys.argv[1]) as s:  # this test process is the MCP host: the directory is checked
    s.load()
"""


@pytest.mark.parametrize("config", ["basicConfig", "lastResort"])
def test_default_logging_prints_the_path_and_the_fix(tmp_path: Path, config: str) -> None:
    """With logging's default output (basicConfig's format, or no configuration at all: the last-resort
    handler), which shows the message only, the unusable state directory's line names the directory and the
    fix, as Go's and TypeScript's default loggers do."""
    root = tmp_path / "root"
    root.mkdir(mode=0o700)
    state = root / "app"  # the app's directory under the root the store is given
    state.mkdir(mode=0o755)
    state.chmod(0o755)
    p = subprocess.run([sys.executable, "-c", DEFAULT_LOGGING, str(root), config], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    line = next((x for x in p.stderr.splitlines() if "State directory unusable" in x), "")
    assert str(state) in line and f"chmod 700 {state}" in line, p.stderr
    assert p.stdout == ""


# --- instances, the lock, list, prune, whoami ---------------------------------------------------------


def suffix(instance: str) -> str:
    """The suffix of the declared key ``instance`` on the default system (its namespaces and the key)."""
    return instance_suffix(DEFAULT_NAMESPACES, instance)


def test_default_suffix_is_the_default_systems_launch() -> None:
    """The default system's suffix is the key material of its server's namespaces and its default key v2: the
    program and arguments as exec'd (100/cmdline), facts.cwd and the environment at exec (100/environ); a
    declared key, other namespaces or another launch (argument, environment entry, directory) give others."""
    system = json.loads((CONFORMANCE / "systems" / "default.json").read_text())
    proc, facts = system["proc"], system["facts"]
    argv = proc["100/cmdline"]["text"].split("\0")[:-1]
    env = [e for e in proc["100/environ"]["text"].split("\0") if e]
    assert tuple(proc[f"100/ns/{n}"]["symlink"] for n in KEY_NAMESPACES) == DEFAULT_NAMESPACES
    assert tuple(proc[f"4242/ns/{n}"]["symlink"] for n in KEY_NAMESPACES) == DEFAULT_NAMESPACES, "the host's"
    assert argv == ["/usr/local/bin/conformance-server"] and env == [] and facts.get("cwd", "") == ""
    key = default_instance_key(argv, facts.get("cwd", ""), env)
    assert instance_suffix(DEFAULT_NAMESPACES, key) == DEFAULT_SUFFIX and DEFAULT_SUFFIX in system["description"]
    others = {suffix(key + "x"), instance_suffix(DEFAULT_NAMESPACES[1:] + ("cgroup:[1]",), key),
              instance_suffix(DEFAULT_NAMESPACES, default_instance_key([*argv, "--x"], "", env)),
              instance_suffix(DEFAULT_NAMESPACES, default_instance_key(argv, "", ["A=1"])),
              instance_suffix(DEFAULT_NAMESPACES, default_instance_key(argv, "/srv", env))}
    assert len(others) == 5 and DEFAULT_SUFFIX not in others


def test_instance_names_the_files(tmp_path: Path, Pinned: type[ResumeTokenStore]) -> None:
    """A declared instance names the files by the digest of the namespaces and the key (never the key itself);
    no instance (``""`` or ``"-"``) keeps the spec's plain names, the server being in its host's namespaces;
    an instance that is not a string is refused."""
    with Pinned("app", state_root=tmp_path, instance="--profile\0work") as s:
        s.store("tok-W")
        sfx = suffix("--profile\0work")
        assert [(f.name, f.instance) for f in s.list()] == [(f"{PLAIN_TOKEN_NAME}-{sfx}", sfx)]
        assert s.whoami()["instance_suffix"] == sfx
    assert sorted(os.listdir(tmp_path / "app")) == [f"{PLAIN_LOCK_NAME}-{sfx}", f"{PLAIN_TOKEN_NAME}-{sfx}"]
    assert sfx != DEFAULT_SUFFIX, "a declared key replaces the default one"
    for none in ("", "-"):
        with Pinned("app", state_root=tmp_path / none.replace("-", "dash") if none else tmp_path / "empty", instance=none) as s:
            s.store("tok")
            assert [f.name for f in s.list()] == [PLAIN_TOKEN_NAME]
    with pytest.raises(mcp_resume.InvalidOptionError, match="^instance must be a string, not a number$"):
        Pinned("app", state_root=tmp_path, instance=5)  # type: ignore[arg-type]


def test_instances_resume_independently(tmp_path: Path, capture: Capture, Pinned: type[ResumeTokenStore]) -> None:
    """Two stores under one host at once: different keys never meet, each resumes its own token."""
    lg = logger_for(capture, "independent")
    a, b = Pinned("app", state_root=tmp_path, instance="a", logger=lg), Pinned("app", state_root=tmp_path, instance="b", logger=lg)
    assert a.load() is None and b.load() is None
    a.store("tok-a")
    b.store("tok-b")
    a.close()
    b.close()
    a, b = Pinned("app", state_root=tmp_path, instance="a", logger=lg), Pinned("app", state_root=tmp_path, instance="b", logger=lg)
    assert b.load() == "tok-b" and a.load() == "tok-a"
    a.close()
    b.close()
    assert capture.events() == ["token_not_found", "token_not_found"], "no instance_busy or instance_ambiguous, nothing pruned"
    assert sorted(os.listdir(tmp_path / "app")) == sorted(f"{kind}-{PID}-{START}-{suffix(i)}" for kind in ("lock", "token") for i in "ab")


MSG_BUSY = "Another server instance under this host holds the token file, session resume disabled for this instance"
MSG_AMBIGUOUS = ("Two server instances under this host were launched identically (same program, arguments, working "
                 "directory and environment), so neither resumes a session: give each server entry its own "
                 "MCP_RESUME_INSTANCE")
MSG_AMBIGUOUS_DECLARED = ("Two server instances under this host declared the same instance key, so neither resumes a "
                          "session: give each server entry its own MCP_RESUME_INSTANCE")


def test_same_instance_busy_until_closed(tmp_path: Path, capture: Capture, Pinned: type[ResumeTokenStore]) -> None:
    """Two stores with no instance (``"-"``: one session per host by choice) under one host at once: the first
    holds the plain token file, the second says so (``instance_busy``, no marker) and runs without resume, and
    after both close the next store resumes the first's token."""
    first = Pinned("app", state_root=tmp_path, instance="-", logger=logger_for(capture, "first"))
    assert first.load() is None
    first.store("tok-1")
    second_logs = Capture()
    second = Pinned("app", state_root=tmp_path, instance="-", logger=logger_for(second_logs, "second"))
    assert second.load() is None
    second.store("tok-2")
    second.reject()
    assert second.load() is None
    assert second_logs.events() == ["instance_busy"]
    assert second_logs.records[-1].getMessage().startswith(MSG_BUSY + ": ")
    assert (tmp_path / "app" / PLAIN_TOKEN_NAME).read_text() == "tok-1"
    second.close()
    first.close()
    third = Pinned("app", state_root=tmp_path, instance="-")
    assert third.load() == "tok-1", "close released the lock"
    third.close()
    assert sorted(os.listdir(tmp_path / "app")) == [PLAIN_LOCK_NAME, PLAIN_TOKEN_NAME], "no ambiguity marker"


@pytest.mark.parametrize("instance", [None, "shared"], ids=["default key", "declared key"])
def test_identical_instances_marked_ambiguous(tmp_path: Path, instance: str | None,
                                              Pinned: type[ResumeTokenStore]) -> None:
    """Two stores with one instance key (launched identically, or declaring the same key) under one host at
    once: the second finds the lock busy, writes the marker ``ambiguous-<suffix>`` (0600, no host part),
    deletes the key's token file and logs ``instance_ambiguous``; from then on neither resumes: the first's
    next store deletes the token and writes none (it logs the marker once), its load offers nothing, and a
    relaunch after both closed finds the marker and neither loads nor stores. ``list`` shows the marker;
    another key and no instance are not covered by it and resume."""
    sfx = DEFAULT_SUFFIX if instance is None else suffix(instance)
    token, lock, marker = f"{PLAIN_TOKEN_NAME}-{sfx}", f"{PLAIN_LOCK_NAME}-{sfx}", f"ambiguous-{sfx}"
    assert instance is not None or (token, lock, marker) == (TOKEN_NAME, LOCK_NAME, MARKER_NAME)
    msg = MSG_AMBIGUOUS if instance is None else MSG_AMBIGUOUS_DECLARED
    opts: dict[str, Any] = {} if instance is None else {"instance": instance}
    state = tmp_path / "app"
    first_logs, second_logs, third_logs = Capture(), Capture(), Capture()

    first = Pinned("app", state_root=tmp_path, logger=logger_for(first_logs, "amb.first"), **opts)
    assert first.load() is None
    first.store("tok-1")
    assert (state / token).read_text() == "tok-1" and not (state / marker).exists()
    second = Pinned("app", state_root=tmp_path, logger=logger_for(second_logs, "amb.second"), **opts)
    assert second.load() is None
    assert second_logs.events() == ["instance_ambiguous"]
    (rec,) = [r for r in second_logs.records if r.levelno > logging.DEBUG]
    assert rec.levelno == logging.WARNING and rec.getMessage().startswith(msg + ": ")
    assert f"holds {lock}; wrote {marker}" in str(getattr(rec, "detail", "")), getattr(rec, "detail", "")
    assert (state / marker).is_file() and (state / marker).stat().st_mode & 0o777 == 0o600
    assert not (state / token).exists(), "the key's token file is deleted"
    second.store("tok-2")
    second.reject()
    assert second.load() is None and not (state / token).exists()

    first.store("tok-1b")  # the instance that holds the lock stops too
    assert not (state / token).exists()
    assert first.load() is None
    first.store("tok-1c")
    assert not (state / token).exists()
    assert first_logs.events() == ["token_not_found", "instance_ambiguous"], "logged once per store"
    assert f"found {marker}" in str(getattr([r for r in first_logs.records if r.levelno > logging.DEBUG][-1], "detail", ""))
    second.close()
    first.close()

    third = Pinned("app", state_root=tmp_path, logger=logger_for(third_logs, "amb.third"), **opts)
    assert third.load() is None, "the marker outlives both instances"
    third.store("tok-3")
    assert not (state / token).exists()
    assert third_logs.events() == ["instance_ambiguous"]
    (f,) = third.list()
    assert f == TokenFile(marker, 0, "", sfx, "ambiguous", f.age_seconds)
    third.close()
    assert sorted(os.listdir(state)) == sorted([lock, marker])

    for other in ("other", "-"):  # another key, or no instance: no marker applies
        for expect in (None, f"tok-{other}"):
            with Pinned("app", state_root=tmp_path, instance=other) as s:
                assert s.load() == expect
                s.store(f"tok-{other}")


def test_lock_failed_turns_resume_off(tmp_path: Path, capture: Capture, Pinned: type[ResumeTokenStore]) -> None:
    """A directory where the key's lock file goes: the lock cannot be taken, so resume is off (``lock_failed``)
    and the token file is left as it was."""
    (tmp_path / "app").mkdir(mode=0o700)
    (tmp_path / "app" / LOCK_NAME).mkdir()
    (tmp_path / "app" / TOKEN_NAME).write_text("tok-1")
    with Pinned("app", state_root=tmp_path, logger=logger_for(capture, "lockfail")) as s:
        assert s.load() is None
        s.store("tok-2")
    assert capture.events() == ["lock_failed"]
    assert (tmp_path / "app" / TOKEN_NAME).read_text() == "tok-1"


def test_prune_and_whoami(tmp_path: Path, capture: Capture, Pinned: type[ResumeTokenStore]) -> None:
    """On the pinned system only pid 4242 runs: the files of other hosts are gone; ours stay (named with the
    default key's suffix, as whoami says). Ambiguity markers of other keys stay until unseen for 30 days."""
    other = f"2.{START.split('.', 1)[1]}"  # another start time on this boot, in this PID namespace
    seen, unseen = f"ambiguous-{suffix('seen')}", f"ambiguous-{suffix('unseen')}"
    old = {f"token-7777-{other}": "gone", f"lock-7777-{other}": "", f"token-9999-{other}-{suffix('x')}": "gone too",
           "token-nonsense": "not ours", "other": "x", TOKEN_NAME: "ours", seen: "", unseen: ""}
    for n, text in old.items():
        (tmp_path / "app").mkdir(mode=0o700, exist_ok=True)
        (tmp_path / "app" / n).write_text(text)
    month = 31 * 24 * 3600
    os.utime(tmp_path / "app" / unseen, (os.stat(tmp_path / "app" / unseen).st_atime - month,) * 2)
    with Pinned("app", state_root=tmp_path, logger=logger_for(capture, "prune")) as s:
        removed = s.prune()
        gone = [f"token-7777-{other}", f"lock-7777-{other}", f"token-9999-{other}-{suffix('x')}"]
        assert sorted(r["name"] for r in removed) == sorted([*gone, unseen])
        assert {(r["name"], r["reason"], r["host"]) for r in removed} == {
            *((n, "host_gone", "gone") for n in gone), (unseen, "unseen", "ambiguous")}
        assert s.prune() == []
        who = s.whoami()
        assert (who["pid"], who["start_time"], who["token_file"], who["lock_file"]) == (PID, START, TOKEN_NAME, LOCK_NAME)
        assert who["instance_suffix"] == DEFAULT_SUFFIX
        assert who["state_dir"] == str(tmp_path / "app") and who["chain"][-1]["pid"] == PID and "error" not in who
        assert s.load() == "ours"
    assert sorted(os.listdir(tmp_path / "app")) == sorted([LOCK_NAME, "other", TOKEN_NAME, "token-nonsense", seen])
    assert capture.events() == ["stale_removed"] * 4


# --- compilation cache and environment, in fresh processes -----------------------------------------

CHILD = r"""
import json, os, sys, time
t0 = time.perf_counter()
from mcp_resume import ResumeTokenStore
s = ResumeTokenStore("app", state_root=sys.argv[1])
t1 = time.perf_counter()
s.load(); s.store("tok"); s.close()
print(json.dumps({"open_s": t1 - t0, "cache_env": os.environ.get("EXTISM_CACHE_CONFIG"),
                  "wasi_env": os.environ.get("EXTISM_ENABLE_WASI_OUTPUT")}))
"""


def run_child(tmp_path: Path, env: dict[str, str]) -> tuple[dict[str, Any], str]:
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
    tokens = [n for n in os.listdir(tmp_path / "state" / "app") if n.startswith(f"token-{os.getpid()}-")]
    assert len(tokens) == 1 and (tmp_path / "state" / "app" / tokens[0]).read_text() == "tok", "this test process is the host"


def test_wasi_output_env_hidden_and_restored(tmp_path: Path) -> None:
    out, err = run_child(tmp_path, {"EXTISM_ENABLE_WASI_OUTPUT": "1", "XDG_CACHE_HOME": str(tmp_path / "cache")})
    assert out["wasi_env"] == "1"
    assert "ignoring EXTISM_ENABLE_WASI_OUTPUT" in err


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="XDG_CACHE_HOME moves the user cache dir on Linux only")
def test_precompile_at_install_fills_the_cache(tmp_path: Path) -> None:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("EXTISM_")}, "XDG_CACHE_HOME": str(tmp_path)}
    subprocess.run([sys.executable, "-m", "mcp_resume", "precompile"], env=env, check=True, timeout=300)
    assert any(p.is_file() for p in (tmp_path / "mcp-resume" / "wasmtime").rglob("*")), "nothing cached"


BACKGROUND = r"""
import json, threading, time
import mcp_resume
from mcp_resume import _runtime
names = [t.name for t in threading.enumerate()]
deadline = time.monotonic() + 240
while _runtime._started and _runtime._compiled is None and time.monotonic() < deadline:
    time.sleep(0.01)
print(json.dumps({"threads": names, "compiled": _runtime._compiled is not None}))
"""


@pytest.mark.parametrize("off", [False, True])
def test_import_compiles_in_the_background(tmp_path: Path, off: bool) -> None:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("EXTISM_", "MCP_RESUME"))},
           "XDG_CACHE_HOME": str(tmp_path), **({"MCP_RESUME": "off"} if off else {})}
    p = subprocess.run([sys.executable, "-c", BACKGROUND], env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["compiled"] is not off and ("mcp-resume-compile" in out["threads"]) is not off, out
    assert (tmp_path / "mcp-resume").exists() is not off, "MCP_RESUME=off must write nothing"


MEMORY = r"""
import gc, json, sys
from mcp_resume import ResumeTokenStore
def rss_kib():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
out = {}
with ResumeTokenStore("memory", state_root=sys.argv[1], instance="") as s:
    s.load()
    for i in range(1, 10001):
        s.store(f"tok-{i}")
        if i in (1000, 5000, 10000):
            gc.collect()
            out[i] = rss_kib()
    out["who"] = s.whoami()["token_file"]
print(json.dumps(out))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_memory_flat_over_10000_calls(tmp_path: Path) -> None:
    """10,000 store() calls on one store (this test process is the MCP host): RSS settles (the guest's Go heap
    sizes itself in the first few thousand calls, ~3 MiB) and then stays flat: < 1 MiB from 5,000 to 10,000."""
    p = subprocess.run([sys.executable, "-c", MEMORY, str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert (tmp_path / "memory" / out["who"]).read_text() == "tok-10000", "resume was off: nothing was measured"
    assert out["10000"] - out["1000"] < 4096 and out["10000"] - out["5000"] < 1024, out

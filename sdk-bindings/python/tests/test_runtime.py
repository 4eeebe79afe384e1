"""The runtime around the plugin, in fresh processes: the compilation cache is code, and no file of ours
lands on fds 0-2.

Compiled code read from a cache directory is executed, so the wasmtime cache gets the state directory's
rules: a directory another user owns (a real second user, made with ``useradd`` when this runs as root),
one that is group or world writable, a symbolic link, a foreign or linked entry inside it, or a home that
is another user's must each mean "no cache": the plugin is compiled in memory, the cache is left untouched,
and exactly one log line says why. The cache's TOML is written through an exclusively created temporary
file, so a symlink planted at its name is never written through. Every scenario failed before the fix.

A process started with fd 0, 1 or 2 closed gets ``/dev/null`` there at import, before the plugin's memory
image (a memfd) or anything else of ours is opened; the background compile started at import opens its
files in a private descriptor table, so a descriptor the program frees meanwhile stays free.

Nothing the environment asks of the Extism runtime reaches stdout: neither the guest's WASI stdout nor a
dump of its memory.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

linux_root = pytest.mark.skipif(not sys.platform.startswith("linux") or os.geteuid() != 0,
                                reason="needs Linux (XDG_CACHE_HOME) and root (files of another user)")

OTHER_USER = "mcpresume-other"

CHILD = r"""
import json, sys
from mcp_resume import ResumeTokenStore
with ResumeTokenStore("app", state_root=sys.argv[1], instance="") as s:  # this test process is the MCP host
    s.load()
    s.store("tok")
print(json.dumps({"ok": True}))
"""

UNUSABLE = "compilation cache unusable, compiling the plugin in memory"


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EXTISM_", "MCP_RESUME"))}
    env.update(extra)
    return env


def run_child(tmp_path: Path, cache: Path, user: str | None = None) -> str:
    """Run CHILD with ``XDG_CACHE_HOME=cache`` (as ``user`` if given); its stderr. The store must work."""
    state = tmp_path / ("state-" + (user or "self"))
    p = subprocess.run([sys.executable, "-c", CHILD, str(state)], env=clean_env(XDG_CACHE_HOME=str(cache)),
                       capture_output=True, text=True, timeout=300, user=user, cwd="/")
    assert p.returncode == 0 and json.loads(p.stdout) == {"ok": True}, p.stderr
    return p.stderr


def snapshot(root: Path) -> dict[str, Any]:
    """Every entry under ``root`` with its type, owner, mode, size and modification time (ns)."""
    out: dict[str, Any] = {}
    for p in sorted(root.rglob("*")):
        st = p.lstat()
        out[str(p.relative_to(root))] = (st.st_mode, st.st_uid, st.st_size, st.st_mtime_ns)
    return out


def cached_files(base: Path) -> list[Path]:
    return [p for p in (base / "wasmtime").rglob("*") if p.is_file() and not p.is_symlink()]


@pytest.fixture(scope="module")
def other() -> pwd.struct_passwd:
    """A real second user (created with useradd if missing)."""
    try:
        return pwd.getpwnam(OTHER_USER)
    except KeyError:
        pass
    if shutil.which("useradd") is None:
        pytest.skip("useradd is not available")
    subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", OTHER_USER], check=True)
    return pwd.getpwnam(OTHER_USER)


def unusable_once(stderr: str, *words: str) -> None:
    lines = [x for x in stderr.splitlines() if UNUSABLE in x]
    assert len(lines) == 1, f"want exactly one line saying the cache is unusable:\n{stderr}"
    for w in words:
        assert w in lines[0], (w, lines[0])


# --- the compilation cache ---------------------------------------------------------------------------


@linux_root
def test_cache_of_another_user_is_never_used(tmp_path: Path, other: pwd.struct_passwd) -> None:
    """The attack: another user compiles the plugin into a cache directory root's server also uses."""
    cache = tmp_path / "shared"
    cache.mkdir(mode=0o777)
    cache.chmod(0o777)
    try:
        run_child(tmp_path, cache, user=OTHER_USER)  # the other user fills the cache
    except (AssertionError, PermissionError):
        # This checkout is not readable by that user: fill it here and hand every file to them, which
        # is the same cache, owned the same way.
        run_child(tmp_path, cache)
        for p in [cache / "mcp-resume", *(cache / "mcp-resume").rglob("*")]:
            os.chown(p, other.pw_uid, other.pw_gid, follow_symlinks=False)
    base = cache / "mcp-resume"
    assert base.stat().st_uid == other.pw_uid and cached_files(base), "the other user's compile cached nothing"
    before = snapshot(base)
    stderr = run_child(tmp_path, cache)
    unusable_once(stderr, str(base), f"owned by uid {other.pw_uid}")
    assert snapshot(base) == before, "root's server read or wrote the other user's cache"


@linux_root
@pytest.mark.parametrize("mode", [0o770, 0o707, 0o755], ids=["0770", "0707", "0755"])
def test_cache_dir_open_to_others_is_not_used(tmp_path: Path, mode: int) -> None:
    cache = tmp_path / "cache"
    run_child(tmp_path, cache)  # a good cache first
    base = cache / "mcp-resume"
    base.chmod(mode)
    before = snapshot(base)
    unusable_once(run_child(tmp_path, cache), str(base), f"mode {mode:04o}", f"chmod 700 {base}")
    assert snapshot(base) == before
    base.chmod(0o700)  # the fix the line gives: the cache is used again
    assert UNUSABLE not in run_child(tmp_path, cache)


@linux_root
def test_cache_dir_symlink_is_not_used(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    real = tmp_path / "elsewhere"
    real.mkdir(mode=0o700)
    (cache / "mcp-resume").symlink_to(real)
    unusable_once(run_child(tmp_path, cache), str(cache / "mcp-resume"), "symbolic link")
    assert list(real.iterdir()) == [], "the cache was written through the symlink"


@linux_root
@pytest.mark.parametrize("plant", ["foreign_file", "symlink"])
def test_planted_entry_inside_the_cache(tmp_path: Path, plant: str, other: pwd.struct_passwd) -> None:
    """Left from a time the directory was open: an entry of another user, or a link to code elsewhere."""
    cache = tmp_path / "cache"
    run_child(tmp_path, cache)
    base = cache / "mcp-resume"
    victim = sorted(cached_files(base))[0]
    if plant == "foreign_file":
        os.chown(victim, other.pw_uid, -1)
    else:
        moved = tmp_path / "code"
        victim.rename(moved)
        victim.symlink_to(moved)
    before = snapshot(base)
    unusable_once(run_child(tmp_path, cache), str(victim))
    assert snapshot(base) == before


@linux_root
def test_no_cache_directory_inside_another_users_home(tmp_path: Path, other: pwd.struct_passwd) -> None:
    """Root with the user's HOME (sudo -E): creating ~/.cache/mcp-resume as root would break the user's cache."""
    home_cache = tmp_path / "home" / ".cache"
    home_cache.mkdir(parents=True)
    os.chown(home_cache, other.pw_uid, other.pw_gid)
    unusable_once(run_child(tmp_path, home_cache), str(home_cache), f"owned by uid {other.pw_uid}")
    assert list(home_cache.iterdir()) == [], "root created a directory in another user's home"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="XDG_CACHE_HOME moves the user cache dir on Linux only")
def test_planted_symlink_at_the_temporary_config_is_not_written_through(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    base = cache / "mcp-resume"
    base.mkdir(parents=True, mode=0o700)
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    # The temporary name of CHILD's own pid cannot be known in advance: plant it for the pid a child
    # started through os.exec in a shell gets (the shell's pid).
    script = f'ln -s {victim} {base}/wasmtime.toml.$$.tmp && exec {sys.executable} -c "$0" "$1"'
    p = subprocess.run(["sh", "-c", script, CHILD, str(tmp_path / "state")], env=clean_env(XDG_CACHE_HOME=str(cache)),
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert victim.read_text() == "precious\n", "the cache configuration was written through a planted symlink"
    assert (base / "wasmtime.toml").read_text().startswith("# Written by mcp-resume")
    assert not (base / "wasmtime.toml").is_symlink() and UNUSABLE not in p.stderr
    assert not list(base.glob("wasmtime.toml.*.tmp"))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="XDG_CACHE_HOME moves the user cache dir on Linux only")
def test_fresh_cache_is_private(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    stderr = run_child(tmp_path, cache)
    assert UNUSABLE not in stderr
    base = cache / "mcp-resume"
    for d in (base, base / "wasmtime"):
        assert d.stat().st_mode & 0o777 == 0o700, d
    assert (base / "wasmtime.toml").stat().st_mode & 0o777 == 0o600
    assert cached_files(base)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="XDG_CACHE_HOME moves the user cache dir on Linux only")
def test_cache_written_by_an_earlier_version_is_tightened(tmp_path: Path) -> None:
    """wasmtime created base/wasmtime 0755 for earlier versions, inside the 0700 base: it is kept and tightened."""
    cache = tmp_path / "cache"
    run_child(tmp_path, cache)
    (cache / "mcp-resume" / "wasmtime").chmod(0o755)
    assert UNUSABLE not in run_child(tmp_path, cache)
    assert (cache / "mcp-resume" / "wasmtime").stat().st_mode & 0o777 == 0o700


# --- fds 0-2 ------------------------------------------------------------------------------------------

FDS_CHILD = r"""
import json, os, sys
from mcp_resume import ResumeTokenStore
s = ResumeTokenStore("app", state_root=sys.argv[1], instance="")
s.load()
s.store("tok")
def target(fd):
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None
std = {fd: target(fd) for fd in (0, 1, 2)}
memfd = [int(n) for n in os.listdir("/proc/self/fd") if "memfd" in (target(n) or "")]
with open(sys.argv[2], "w") as f:
    json.dump({"std": std, "memfd": memfd}, f)
s.close()
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/fd")
@pytest.mark.parametrize("fd", [0, 1, 2])
def test_closed_standard_fd_gets_dev_null(tmp_path: Path, fd: int) -> None:
    """Started with fd 0, 1 or 2 closed (``2>&-``): the closed one is /dev/null, the other two untouched,
    and the plugin's memory image (a memfd) is above 2."""
    out = tmp_path / "out.json"
    script = f'exec {sys.executable} -c "$0" "$1" "$2" {fd}>&-'
    p = subprocess.run(["sh", "-c", script, FDS_CHILD, str(tmp_path / "state"), str(out)],
                       env=clean_env(XDG_CACHE_HOME=str(tmp_path / "cache")), stdin=subprocess.PIPE,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    assert p.returncode == 0, p.stderr.decode(errors="replace")
    doc = json.loads(out.read_text())
    std = {int(k): v for k, v in doc["std"].items()}
    assert std[fd] == "/dev/null", std
    for other_fd in {0, 1, 2} - {fd}:
        assert std[other_fd] is not None and "pipe:" in std[other_fd], std
    assert doc["memfd"] and all(n > 2 for n in doc["memfd"]), doc


FREED_CHILD = r"""
import json, os, sys, threading
os.environ["MCP_RESUME"] = "off"  # no compile at import: this child starts it by hand, below
from mcp_resume import _runtime
del os.environ["MCP_RESUME"]
got = []
real = _runtime.plugin_bytes
def plugin_bytes():  # the compile thread's first file: which number does it get?
    fd = os.open(os.devnull, os.O_RDONLY)
    got.append(fd)
    os.close(fd)
    return real()
_runtime.plugin_bytes = plugin_bytes
_runtime._lock.acquire()        # the compile thread waits here...
_runtime.precompile()
os.close(0)                     # ...while the program frees fd 0,
_runtime._lock.release()
while _runtime._compiled is None:
    threading.Event().wait(0.01)
mine = os.open(os.devnull, os.O_RDONLY)  # the next file the program opens still gets the number it freed
print(json.dumps({"thread": got, "program": mine}))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the private descriptor table is Linux's")
def test_background_compile_never_takes_a_freed_standard_fd(tmp_path: Path) -> None:
    p = subprocess.run([sys.executable, "-c", FREED_CHILD], env=clean_env(XDG_CACHE_HOME=str(tmp_path)),
                       stdin=subprocess.PIPE, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["thread"] and all(fd > 2 for fd in doc["thread"]), f"the compile thread took fd {doc['thread']}"
    assert doc["program"] == 0


# --- the example server with fd 2 closed ------------------------------------------------------------

from test_e2e import SERVER, broker, broker_bin  # noqa: E402,F401 - the e2e tests' real Go broker fixtures


def _rpc(proc: subprocess.Popen[bytes], msg: dict[str, Any]) -> dict[str, Any] | None:
    """Send one JSON-RPC message; for a request, read lines until its response."""
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps(msg).encode() + b"\n")
    proc.stdin.flush()
    if "id" not in msg:
        return None
    while True:
        line = proc.stdout.readline()
        assert line, "the server closed stdout"
        doc = json.loads(line)
        if doc.get("id") == msg["id"]:
            return dict(doc)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/<pid>/fd")
def test_example_server_started_with_stderr_closed(tmp_path: Path, broker: Any) -> None:
    """A host that runs the server with ``2>&-``: the server serves, a tool call answers, and while it
    serves (the SDK has pointed fd 1 at a copy of fd 2) none of fds 0-2 is a file of ours."""
    env = clean_env(MCP_EXAMPLE_BROKER_URL=broker.url, MCP_RESUME_STATE_DIR=str(tmp_path / "state"),
                    XDG_CACHE_HOME=str(tmp_path / "cache"))
    proc = subprocess.Popen(["sh", "-c", f'exec {sys.executable} "$0" 2>&-', str(SERVER)], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        init = _rpc(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})
        assert init is not None and "result" in init, init
        _rpc(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        call = _rpc(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                           "params": {"name": "session_info", "arguments": {}}})
        assert call is not None and not call["result"].get("isError"), call
        std = {fd: os.readlink(f"/proc/{proc.pid}/fd/{fd}") for fd in (0, 1, 2)}
        assert std[2] == "/dev/null", std
        assert not any("memfd" in t or "anon_inode" in t for t in std.values()), std
    finally:
        proc.kill()
        proc.wait(30)


NICE_CHILD = r"""
import json, threading, time
import mcp_resume
from mcp_resume import _runtime
t = next(t for t in threading.enumerate() if t.name == "mcp-resume-compile")
nice = None
deadline = time.monotonic() + 60
while nice is None and t.is_alive() and time.monotonic() < deadline:
    try:
        with open(f"/proc/self/task/{t.native_id}/stat") as f:
            nice = int(f.read().rsplit(")", 1)[1].split()[16])  # field 19 of stat(5)
    except (OSError, TypeError):
        pass
    if nice in (None, 0):
        nice = None
        time.sleep(0.005)
with open("/proc/self/stat") as f:
    main = int(f.read().rsplit(")", 1)[1].split()[16])
print(json.dumps({"thread": nice, "main": main}))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="nice is per thread on Linux")
def test_import_time_compile_yields_the_cpu(tmp_path: Path) -> None:
    """On a cold cache the compile thread runs at nice +10, the program's own startup at its own priority."""
    p = subprocess.run([sys.executable, "-c", NICE_CHILD], env=clean_env(XDG_CACHE_HOME=str(tmp_path)),
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["main"] == os.getpriority(os.PRIO_PROCESS, 0)
    assert out["thread"] == min(19, out["main"] + 10), out


# --- nothing the environment asks reaches stdout -----------------------------------------------------------


def _leb(n: int) -> bytes:
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _vec(*items: bytes) -> bytes:
    return _leb(len(items)) + b"".join(items)


def _str(s: str) -> bytes:
    return _leb(len(s)) + s.encode()


def stdout_writer_module(text: bytes) -> bytes:
    """A real Wasm module whose ``mcp_resume_abi_version`` writes ``text`` to its WASI stdout (``fd_write`` on fd 1)
    and then traps (``unreachable``), so the call fails."""
    sec = lambda sid, body: bytes([sid]) + _leb(len(body)) + body  # noqa: E731
    types = _vec(b"\x60\x04\x7f\x7f\x7f\x7f\x01\x7f", b"\x60\x00\x01\x7f")  # fd_write; the export
    imports = _vec(_str("wasi_snapshot_preview1") + _str("fd_write") + b"\x00\x00")
    exports = _vec(_str("memory") + b"\x02\x00", _str("mcp_resume_abi_version") + b"\x00\x01")
    # fd_write(fd 1, iovs at 0, 1 iov, nwritten at 8); drop; unreachable
    body = b"\x00" + b"\x41\x01\x41\x00\x41\x01\x41\x08\x10\x00\x1a\x00\x0b"
    data = (16).to_bytes(4, "little") + len(text).to_bytes(4, "little") + b"\0" * 8 + text  # the iovec, then text
    return (b"\x00asm\x01\x00\x00\x00" + sec(1, types) + sec(2, imports) + sec(3, _vec(b"\x01"))
            + sec(5, _vec(b"\x00\x01")) + sec(7, exports) + sec(10, _vec(_leb(len(body)) + body))
            + sec(11, _vec(b"\x00\x41\x00\x0b" + _leb(len(data)) + data)))


WASI_CHILD = r"""
import sys
wasm, how, state = bytes.fromhex(sys.argv[1]), sys.argv[2], sys.argv[3]
if how == "extism":  # the SDK as is: what the environment asks for is done
    import extism
    try:
        extism.Plugin(wasm, wasi=True).call("mcp_resume_abi_version", b"")
    except extism.Error:
        pass
else:
    from mcp_resume import PluginError, ResumeTokenStore
    class Store(ResumeTokenStore):
        _wasm = wasm
    try:
        Store("app", state_root=state)
    except PluginError:
        pass
    try:  # the shipped plugin, its open export failing
        ResumeTokenStore("app", state_root=state, launchers="npx")
    except ValueError:
        pass
"""


def test_environment_cannot_connect_the_guest_to_stdout(tmp_path: Path) -> None:
    """``EXTISM_ENABLE_WASI_OUTPUT`` would put the guest's stdout on the MCP stream and ``EXTISM_MEMDUMP`` would
    dump the guest's memory (tokens included) whenever an export fails, to any path, ``/dev/stdout`` too: the
    Extism runtime honours both (the bare SDK run shows it), the store neither."""
    wasm = stdout_writer_module(b"guest stdout\n").hex()
    for how in ("extism", "store"):
        dump = tmp_path / f"memdump-{how}"
        env = clean_env(EXTISM_ENABLE_WASI_OUTPUT="1", EXTISM_MEMDUMP=str(dump))
        p = subprocess.run([sys.executable, "-c", WASI_CHILD, wasm, how, str(tmp_path / "state")], env=env,
                           capture_output=True, timeout=300, cwd="/")
        assert p.returncode == 0, p.stderr.decode()
        if how == "extism":
            assert p.stdout == b"guest stdout\n" and dump.exists(), "the runtime no longer honours these: rethink the test"
        else:
            assert p.stdout == b"", p.stdout
            assert not dump.exists(), "the guest's memory was dumped"

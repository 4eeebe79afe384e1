"""Loading the mcp-resume plugin in Extism's Python SDK (hostfuncs/README.md, "Loading the plugin").

``plugin.wasm`` (copied from ``plugin/plugin.wasm`` at build time) is compiled
once per process; every store instantiates its own plugin from it. The twelve
host functions are registered once and find the store's :class:`HostFunctions`
through Extism's per-call host context. Unless ``EXTISM_CACHE_CONFIG`` is set,
the compile uses a wasmtime cache under ``platformdirs.user_cache_dir("mcp-resume")``
if that passes the state directory's rules (:func:`cache_config`: compiled code
is code), else compiles in memory and logs one warning saying why.
Nothing the environment asks may make the runtime write to stdout, the MCP
stream: ``EXTISM_ENABLE_WASI_OUTPUT`` (the guest's stdout and stderr become the
process's) is hidden from the runtime while an instance is created (the only
time it reads it: Extism builds the WASI context once per instance and rebuilds
it only after a ``_start`` call, which the plugin does not export), and
``EXTISM_MEMDUMP`` / ``EXTISM_COREDUMP`` (the guest's memory, tokens included,
written to the path they name whenever an export fails) while the plugin is
compiled (the runtime reads them then). The Python SDK has no other setting
that reaches stdout: its log file is set only by an explicit
``extism.set_log_file`` call, which this package never makes.
"""

from __future__ import annotations

import contextlib
import importlib.resources
import json
import logging
import os
import stat
import sys
import threading
from typing import Any
from collections.abc import Iterator

import extism
from extism import ValType
from extism.extism import CompiledPlugin

from ._errors import PluginError
from ._fds import fill_std_fds, private_fd_table
from ._hostfuncs import FUNCTIONS, NAMESPACE, HostFunctions

__all__ = ["CACHE_ENV", "cache_config", "cache_config_path", "cache_dir", "compiled_plugin", "new_plugin", "plugin_bytes",
           "precompile"]

#: The Extism runtime's variable naming the wasmtime cache TOML ("" disables the cache).
CACHE_ENV = "EXTISM_CACHE_CONFIG"
#: The Extism runtime's variable that sends guest stdout/stderr to the process's.
WASI_OUTPUT_ENV = "EXTISM_ENABLE_WASI_OUTPUT"
#: The Extism runtime's variables naming files it dumps the guest's memory into when a call fails.
DUMP_ENVS = ("EXTISM_MEMDUMP", "EXTISM_COREDUMP")

_log = logging.getLogger("mcp_resume")
_lock = threading.Lock()
_functions: list[Any] | None = None
_compiled: CompiledPlugin | None = None
_started = False
#: Log lines of a background compile, emitted by the next compiled_plugin call: (level, message, extra).
_pending: list[tuple[int, str, dict[str, str]]] = []


def plugin_bytes() -> bytes:
    """The bytes of the shipped ``plugin.wasm``. Raises :class:`PluginError` when the package lacks it."""
    try:
        return importlib.resources.files("mcp_resume").joinpath("plugin.wasm").read_bytes()
    except OSError as e:
        raise PluginError(f"mcp-resume plugin unusable: plugin.wasm is missing from the mcp_resume package ({e}); "
                          "reinstall the package (pip install ./sdk-bindings/python)") from e


def _dir_problem(path: str) -> str | None:
    """Why ``path`` cannot hold compiled code, or ``None``: it must be a real directory (not a symlink), owned by
    the effective user, with no group or other permission bits (the state directory's rule, hostfuncs/README.md,
    ``mcp_resume_prepare_dir``). Raises ``OSError`` when it cannot be inspected."""
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        return f"{path} is not a directory (or is a symbolic link); remove it"
    if st.st_uid != os.geteuid():
        return (f"{path} is owned by uid {st.st_uid}, not by this user (uid {os.geteuid()}); "
                "remove it or set XDG_CACHE_HOME to a directory of your own")
    if st.st_mode & 0o077:
        return f"{path} has mode {stat.S_IMODE(st.st_mode):04o}, which lets other users in; run: chmod 700 {path}"
    return None


def _ensure_dir(path: str, tighten: bool = False) -> str | None:
    """Create ``path`` and its missing parents with mode 0700, never inside a directory that another user (other
    than root) owns, then check it (:func:`_dir_problem`). Returns why it is unusable, or ``None``. ``tighten``:
    first chmod a real directory of this user's to 0700 (for a directory inside one already checked, which no
    one else could reach)."""
    missing: list[str] = []
    top = path
    while not os.path.lexists(top):
        missing.append(top)
        parent = os.path.dirname(top)
        if parent == top:
            break
        top = parent
    if missing:
        owner = os.stat(top).st_uid
        if owner not in (os.geteuid(), 0):
            return (f"{top} is owned by uid {owner}, not by this user (uid {os.geteuid()}): not creating "
                    f"{missing[-1]} in it; set XDG_CACHE_HOME to a directory of your own")
        for d in reversed(missing):
            with contextlib.suppress(FileExistsError):
                os.mkdir(d, 0o700)
    if tighten:
        st = os.lstat(path)
        if stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and st.st_mode & 0o077:
            os.chmod(path, 0o700)
    return _dir_problem(path)


def _tree_problem(root: str) -> str | None:
    """Why a file under the cache directory ``root`` might not be this user's code: a symbolic link, or an entry
    owned by another user (planted while the directory was open to others). ``None`` when every entry is a
    real file or directory of the effective user. Raises ``OSError``."""
    uid = os.geteuid()
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                return f"{p} is a symbolic link; remove {root}"
            if st.st_uid != uid:
                return f"{p} is owned by uid {st.st_uid}, not by this user (uid {uid}); remove {root}"
    return None


def _write_exclusive(path: str, text: str) -> None:
    """Replace ``path`` with ``text`` through ``<path>.<pid>.tmp``, created ``O_EXCL|O_NOFOLLOW`` mode 0600 (a
    file or symlink already there, a leftover of a killed writer, is removed, never written through), then
    renamed over ``path``. Raises ``OSError``."""
    tmp = f"{path}.{os.getpid()}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(tmp, flags, 0o600)
    except FileExistsError:
        os.unlink(tmp)  # unlink removes a symlink itself
        fd = os.open(tmp, flags, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _read_own(path: str) -> str | None:
    """The text of ``path`` if it is a regular file of the effective user (opened ``O_NOFOLLOW``), else ``None``."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
            return None
        return f.read(64 * 1024).decode("utf-8", "replace")


def cache_dir() -> str:
    """``platformdirs.user_cache_dir("mcp-resume")``: ``$XDG_CACHE_HOME/mcp-resume`` or ``~/.cache/mcp-resume``
    on Linux, ``~/Library/Caches/mcp-resume`` on macOS. Raises ``ImportError`` without platformdirs."""
    import platformdirs

    return str(platformdirs.user_cache_dir("mcp-resume"))


def cache_config(base: str | None = None) -> tuple[str | None, str]:
    """Prepare the wasmtime compilation cache under ``base`` (default :func:`cache_dir`) and return
    ``(path of its TOML, "")``, or ``(None, why)`` when there must be no cache. Never raises.

    Compiled code is code: the cache gets the state directory's rules. ``base`` and ``base/wasmtime`` are
    created 0700 (never inside another user's directory) and must be real directories owned by the effective
    user with no group or other permission bits (``base/wasmtime``, which wasmtime itself created 0755 for
    earlier versions of this package inside the 0700 ``base``, is tightened to 0700 when it is this user's); nothing under ``base/wasmtime`` may be a symbolic link or
    another user's. ``base/wasmtime.toml``, whose ``[cache]`` has only ``directory`` (extism-sys >= 1.41 rejects
    ``enabled``), is rewritten through an exclusively created temporary file unless it already is this user's
    regular file with the right text. ``why`` says what is wrong and how to fix it."""
    try:
        base = base if base is not None else cache_dir()
        wasmtime = os.path.join(base, "wasmtime")
        problem = _ensure_dir(base) or _ensure_dir(wasmtime, tighten=True) or _tree_problem(wasmtime)
        if problem:
            return None, problem
        path = os.path.join(base, "wasmtime.toml")
        # A JSON string without ASCII escaping is a valid TOML basic string.
        text = ("# Written by mcp-resume (Python): wasmtime's compilation cache for the\n"
                "# mcp-resume plugin, read by the Extism runtime through EXTISM_CACHE_CONFIG.\n"
                f"[cache]\ndirectory = {json.dumps(wasmtime, ensure_ascii=False)}\n")
        if _read_own(path) != text:
            _write_exclusive(path, text)
        return path, ""
    except Exception as e:  # noqa: BLE001 - a missing cache only costs time
        return None, f"compilation cache directory {base or '(unknown)'}: {e}"


def cache_config_path() -> str | None:
    """The wasmtime cache TOML to use (:func:`cache_config`), ``None`` for no cache. Never raises."""
    return cache_config()[0]


@contextlib.contextmanager
def _env(name: str, value: str | None) -> Iterator[None]:
    """Set (``value``) or unset (``None``) one environment variable for the block, then restore it."""
    old = os.environ.get(name)
    os.environ.pop(name, None) if value is None else os.environ.update({name: value})
    try:
        yield
    finally:
        os.environ.pop(name, None) if old is None else os.environ.update({name: old})


@contextlib.contextmanager
def _compile_env(cache: str | None) -> Iterator[None]:
    """The environment the runtime reads while compiling: ``EXTISM_CACHE_CONFIG`` set to ``cache`` (``None``:
    unset), no :data:`DUMP_ENVS`."""
    with _env(CACHE_ENV, cache), _env(DUMP_ENVS[0], None), _env(DUMP_ENVS[1], None):
        yield


def _host_function(name: str) -> Any:
    """The Extism host function ``(i64) -> i64`` serving ``name`` through the call's HostFunctions. Never raises:
    no host context answers ``io``; an SDK failure leaves offset 0, which the plugin reads as "cannot tell"."""

    def fn(current: extism.CurrentPlugin, params: list[extism.Val], results: list[extism.Val], *_: Any) -> None:
        try:
            results[0].value = 0
            funcs = current.host_context()
            if isinstance(funcs, HostFunctions):
                resp = funcs.call(name, current.input_bytes(params[0]))
            else:
                resp = b'{"error":{"code":"io","message":"mcp-resume host context missing"}}'
            current.return_bytes(results[0], resp)
        except BaseException:  # noqa: BLE001 - never raise into Extism (the contract)
            with contextlib.suppress(BaseException):
                results[0].value = 0

    return extism.host_fn(name=name, namespace=NAMESPACE, signature=([ValType.PTR], [ValType.PTR]))(fn)


def _compile(wasm: bytes, notes: list[tuple[int, str, dict[str, str]]]) -> CompiledPlugin:
    """Compile with the cache (:func:`cache_config`); without one when the cache is unusable or its configuration
    breaks the compile. Log lines go to ``notes`` as ``(level, message, extra)``, for the caller to emit (the
    background compile must not log, :func:`mcp_resume._fds.private_fd_table`). Raises :class:`PluginError`."""
    global _functions
    if _functions is None:
        _functions = [_host_function(n) for n in FUNCTIONS]
    user_set = CACHE_ENV in os.environ
    config, why = (None, "") if user_set else cache_config()
    if why:
        notes.append((logging.WARNING, f"mcp-resume: compilation cache unusable, compiling the plugin in memory: {why}",
                      {"event": "cache_unusable", "detail": why}))
    try:
        try:
            with _compile_env(os.environ.get(CACHE_ENV) if user_set else (config or "")):
                return CompiledPlugin(wasm, wasi=True, functions=_functions)
        except extism.Error as first:
            if not user_set and config is None:
                raise
            notes.append((logging.WARNING, f"mcp-resume: compiling with the wasmtime cache failed, compiling without it: "
                          f"{first}", {"event": "cache_unavailable", "detail": str(first)}))
            with _compile_env(""):
                return CompiledPlugin(wasm, wasi=True, functions=_functions)
    except extism.Error as e:
        raise PluginError(f"mcp-resume plugin unusable: compiling: {e}") from e


def _emit(notes: list[tuple[int, str, dict[str, str]]]) -> None:
    """Log ``notes`` (:func:`_compile`) through the ``mcp_resume`` logger, then empty the list. Never raises."""
    while notes:
        level, message, extra = notes.pop(0)
        with contextlib.suppress(Exception):
            _log.log(level, "%s", message, extra=extra)


def compiled_plugin(wasm: bytes | None = None) -> CompiledPlugin:
    """The process-wide compiled plugin, compiled on first use (``wasm``: another module, tests only,
    not cached); logs what the compile (or an earlier background compile) had to say about the cache, once.
    Raises :class:`PluginError` when the module cannot be compiled."""
    notes: list[tuple[int, str, dict[str, str]]] = []
    try:
        return _compiled_plugin(wasm, notes)
    finally:
        _emit(notes)


def _compiled_plugin(wasm: bytes | None, notes: list[tuple[int, str, dict[str, str]]],
                     background: bool = False) -> CompiledPlugin:
    """:func:`compiled_plugin` with its log lines left in ``notes`` (also those a background compile left);
    ``background``: leave them for the next caller instead, under the same lock."""
    global _compiled
    fill_std_fds()  # nothing the compile opens may land on a closed fd 0-2
    with _lock:
        try:
            notes.extend(_pending)
            _pending.clear()
            if wasm is not None:
                return _compile(wasm, notes)
            if _compiled is None:
                _compiled = _compile(plugin_bytes(), notes)
            return _compiled
        finally:
            if background:
                _pending.extend(notes)
                notes.clear()


def precompile() -> None:
    """Start compiling the shipped plugin (:func:`compiled_plugin`) in a daemon thread, once per process and not
    with ``MCP_RESUME=off``, so the compile (wasmtime, GIL released) overlaps the importer's startup; importing
    ``mcp_resume`` calls it. On Linux the thread works in a private copy of the descriptor table
    (:func:`mcp_resume._fds.private_fd_table`), so no file it opens can take a number the program frees
    meanwhile (fds 0-2 included); its log lines wait for the next :func:`compiled_plugin` call (the first
    store). Never raises (a failure is raised again when a store opens); never delays exit."""
    global _started
    if not _started and os.environ.get("MCP_RESUME") != "off":
        _started = True
        threading.Thread(target=_compile_quietly, name="mcp-resume-compile", daemon=True).start()


def _compile_quietly() -> None:
    """The body of :func:`precompile`'s thread: compile, keep the log lines for later, raise nothing."""
    private_fd_table()
    _lower_priority()
    with contextlib.suppress(Exception):
        _compiled_plugin(None, [], background=True)


#: How much the background compile's thread lowers its scheduling priority (nice), so that on a cold cache
#: the compile (5 s of CPU over every core) yields the CPU to the program's own startup: the MCP SDK's import.
BACKGROUND_NICE = 10


def _lower_priority() -> None:
    """Lower the calling thread's priority by :data:`BACKGROUND_NICE` (Linux: nice is per thread, and the
    compiler threads wasmtime starts from it inherit it). Never raises; elsewhere it does nothing."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(Exception):
            tid = threading.get_native_id()
            os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + BACKGROUND_NICE))


def new_plugin(wasm: bytes | None = None) -> extism.Plugin:
    """A new plugin instance (one per store) of the compiled module, its stdout never the process's.
    Raises :class:`PluginError`."""
    compiled = compiled_plugin(wasm)
    fill_std_fds()  # the memory image (a memfd) and the runtime's event fds live as long as the plugin
    with _lock:
        if os.environ.get(WASI_OUTPUT_ENV) is not None:
            _log.warning("mcp-resume: ignoring %s for the plugin: its output would corrupt the MCP stream on stdout",
                         WASI_OUTPUT_ENV, extra={"event": "wasi_output_ignored", "detail": ""})
        try:
            with _env(WASI_OUTPUT_ENV, None):
                return extism.Plugin(compiled)
        except extism.Error as e:
            raise PluginError(f"mcp-resume plugin unusable: instantiating: {e}") from e

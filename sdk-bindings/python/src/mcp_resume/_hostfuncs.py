"""The nine host functions of the mcp-resume contract (``hostfuncs/README.md``, ABI 2).

:class:`HostFunctions` serves one JSON request and returns one JSON response,
exactly like the Go implementation ``hostfuncs/funcs.go``: the host's identity
(and which instance of the server this is), a filesystem confined to one state
directory, a lock that dies with the process, a liveness probe for the hosts
named by other files, and logging. It **never raises**:
every failure, a malformed request included, travels in the response as
``{"error": {"code": ..., "message": ...}}`` (Extism's Python SDK swallows
exceptions raised in host functions, and the plugin could not tell a crash
from an answer).

Error codes: ``not_found``, ``invalid_request``, ``unsafe``, ``unavailable``,
``busy``, ``io``.
"""

from __future__ import annotations

import base64
import binascii
import errno
import json
import logging
import os
import re
import secrets
import stat
import threading
import time
from typing import Any
from collections.abc import Callable

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no flock, and resume is off anyway
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "ABI_VERSION",
    "AliveFunc",
    "FUNCTIONS",
    "HostFunctions",
    "IdentityFunc",
    "LEVELS",
    "TEMP_MAX_AGE_S",
    "valid_name",
    "valid_start_time",
]

#: The version of the plugin/host contract this host implements (wire.ABIVersion).
ABI_VERSION = "2"

#: Wasm import module of every host function (wire.Namespace).
NAMESPACE = "extism:host/user"

FN_IDENTITY = "mcp_resume_identity"
FN_PREPARE_DIR = "mcp_resume_prepare_dir"
FN_READ = "mcp_resume_read"
FN_WRITE = "mcp_resume_write"
FN_REMOVE = "mcp_resume_remove"
FN_LIST = "mcp_resume_list"
FN_LOG = "mcp_resume_log"
FN_LOCK = "mcp_resume_lock"
FN_PROBE = "mcp_resume_probe"

#: Every host function name, in the order of the README.
FUNCTIONS = (FN_IDENTITY, FN_PREPARE_DIR, FN_READ, FN_WRITE, FN_REMOVE, FN_LIST, FN_LOG, FN_LOCK, FN_PROBE)

CODE_NOT_FOUND = "not_found"
CODE_INVALID_REQUEST = "invalid_request"
CODE_UNSAFE = "unsafe"
CODE_UNAVAILABLE = "unavailable"
CODE_IO = "io"
CODE_BUSY = "busy"

#: ``mcp_resume_probe`` answers: that process runs with that start time / it
#: does not (absent, zombie, reused pid, another boot) / the host cannot tell.
HOST_ALIVE, HOST_GONE, HOST_UNKNOWN = "alive", "gone", "unknown"

#: How old (seconds, by modification time) a leftover temporary file
#: ``.<name>.<random>.tmp`` must be before ``mcp_resume_prepare_dir`` deletes it
#: (hostfuncs.TempMaxAge): a live writer holds one for microseconds.
TEMP_MAX_AGE_S = 60

#: Contract log levels -> Python logging levels (``mcp_resume_log``).
LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warn": logging.WARNING,
    "error": logging.ERROR,
}

#: Largest ``limit`` a read may ask for (1 MiB).
MAX_READ_LIMIT = 1 << 20

#: Returns the MCP host's ``(pid, start_time)`` or raises when it cannot be verified.
IdentityFunc = Callable[[], "tuple[int, str]"]

#: Whether ``(pid, start_time)`` names a running process; raises when it cannot tell.
AliveFunc = Callable[[int, str], bool]

_NAME = re.compile(r"[A-Za-z0-9._-]{1,255}")
_START_TIME = re.compile(r"[0-9a-z.]{1,96}")

# O_NOFOLLOW and O_NONBLOCK exist on every POSIX system; O_CLOEXEC keeps the
# descriptor out of child processes.
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def valid_name(name: object) -> bool:
    """The name rule (wire.ValidName): 1-255 bytes of ``[A-Za-z0-9._-]``, not starting with ``.``.

    So no path separators, no NUL, no ``..`` and no hidden names (the host keeps
    dot-names for its temporary files). Input: anything; output: bool.
    """
    return isinstance(name, str) and not name.startswith(".") and _NAME.fullmatch(name) is not None


def valid_start_time(s: object) -> bool:
    """The start-time rule (wire.ValidStartTime): 1-96 bytes of ``[0-9a-z.]``."""
    return isinstance(s, str) and _START_TIME.fullmatch(s) is not None


class _Fail(Exception):
    """A contract error to put in the response: ``code`` and a human ``message`` (never a token)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


def _pad8(b: bytes) -> bytes:
    """Pad a JSON response with spaces to a multiple of 8 bytes (wire.Pad8).

    Optional in the contract: go-pdk copies Extism memory 8 bytes per kernel
    call and the rest one byte per call, so padding saves up to 7 calls.
    """
    return b + b" " * (-len(b) % 8)


def _error(code: str, message: str) -> bytes:
    return _pad8(json.dumps({"error": {"code": code, "message": message}}).encode())


def _io_error(op: str, err: OSError) -> _Fail:
    """Map an OS error to the contract's codes (hostfuncs/funcs.go ioError)."""
    if err.errno == errno.ENOENT:
        return _Fail(CODE_NOT_FOUND, f"{op}: {err.strerror or err}")
    if err.errno == errno.ELOOP:
        return _Fail(CODE_UNSAFE, f"{op}: it is a symbolic link, which is never followed")
    return _Fail(CODE_IO, f"{op}: {err.strerror or err}")


def _mkdir_all(path: str, mode: int) -> None:
    """Go's os.MkdirAll: create ``path`` and missing parents, **each** with ``mode``.

    (Python's ``os.makedirs`` gives parents the default mode; the contract says
    "missing parents with mode 0700".) Raises ``OSError``.
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        pass
    else:
        if stat.S_ISDIR(st.st_mode):
            return
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), path)
    parent = os.path.dirname(path.rstrip(os.sep))
    if parent and parent != path:
        _mkdir_all(parent, mode)
    try:
        os.mkdir(path, mode)
    except OSError:
        try:
            if stat.S_ISDIR(os.lstat(path).st_mode):
                return
        except OSError:
            pass
        raise


def _request(req: bytes) -> dict[str, Any]:
    try:
        doc = json.loads(req)
    except (ValueError, UnicodeDecodeError) as e:
        raise _Fail(CODE_INVALID_REQUEST, f"request is not the JSON document the contract defines: {e}") from None
    if not isinstance(doc, dict):
        raise _Fail(CODE_INVALID_REQUEST, "request is not the JSON document the contract defines: not an object")
    return doc


def _field(doc: dict[str, Any], key: str, kind: type) -> Any:
    value = doc.get(key)
    if kind is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, kind)
    if not ok:
        what = "missing" if key not in doc else f"not a {'string' if kind is str else 'integer'}"
        raise _Fail(CODE_INVALID_REQUEST, f"request field {key!r} is {what}")
    return value


def _open_regular(path: str, name: str, flags: int, op: str) -> int:
    """Open ``path`` with ``flags`` plus O_NOFOLLOW|O_NONBLOCK|O_CLOEXEC (mode 0600
    if created) and return the descriptor of a regular file (Go ``checkRegular``).

    O_NONBLOCK: a FIFO planted at the name must not hang the server. Raises
    ``_Fail``: ``unsafe`` for a symlink or a non-regular file, else the
    operating-system error mapped by ``_io_error`` (``op`` names the step).
    The descriptor is closed on every failure.
    """
    try:
        fd = os.open(path, flags | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC, 0o600)
    except OSError as e:
        raise _io_error(f"{op} {name}", e) from None
    try:
        st = os.fstat(fd)
    except OSError as e:
        os.close(fd)
        raise _io_error(f"inspect {name}", e) from None
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise _Fail(CODE_UNSAFE, f"{name} is not a regular file (mode {stat.filemode(st.st_mode)})")
    return fd


class HostFunctions:
    """The host functions over one state directory (Go ``hostfuncs.Funcs``).

    Inputs: ``state_dir`` (absolute path; created 0700 on the plugin's first
    ``mcp_resume_prepare_dir``, never before), ``identity`` (a callable
    returning ``(pid, start_time)`` or raising when the host cannot be
    verified; ``None`` answers ``unavailable``), ``logger`` (receives the
    plugin's log lines), ``instance`` (the instance key ``mcp_resume_identity``
    reports; ``""`` for none), ``alive`` (a callable ``(pid, start_time) ->
    bool`` that raises when it cannot tell, for ``mcp_resume_probe``; default
    :func:`mcp_resume._procid.alive`).

    Thread-safe. The only state it keeps is the locks taken through
    ``mcp_resume_lock``, held until :meth:`close` (or the process exits, or
    this object is garbage-collected). One instance is one lock holder: two
    ``HostFunctions`` on the same directory exclude each other like two
    processes do.
    """

    def __init__(
        self,
        state_dir: str,
        identity: IdentityFunc | None,
        logger: logging.Logger,
        *,
        instance: str = "",
        alive: AliveFunc | None = None,
    ) -> None:
        self.state_dir = state_dir
        self.identity = identity
        self.logger = logger
        self.instance = instance
        if alive is None:
            from ._procid import alive as _alive

            alive = _alive
        self.alive = alive
        self._mu = threading.Lock()
        self._locks: dict[str, int] = {}  # lock file name -> open descriptor holding the flock

    def close(self) -> None:
        """Release every lock taken through ``mcp_resume_lock`` (closing its descriptor).

        The lock files stay (hostfuncs/README.md: never delete a lock file on
        release). Safe to call more than once; raises nothing. A later
        ``mcp_resume_lock`` takes the lock again.
        """
        with self._mu:
            fds = list(self._locks.values())
            self._locks.clear()
        for fd in fds:
            try:
                os.close(fd)
            except OSError:
                pass

    def __del__(self) -> None:
        # Like Go's *os.File finalizer: an unreachable holder releases its locks.
        try:
            self.close()
        except Exception:  # noqa: BLE001 - never raise from a finalizer
            pass

    def held(self) -> list[str]:
        """The names of the locks this object holds, sorted."""
        with self._mu:
            return sorted(self._locks)

    def call(self, fn: str, req: bytes) -> bytes:
        """Serve one host-function call; never raises.

        Inputs: ``fn`` (one of :data:`FUNCTIONS`), ``req`` (the UTF-8 JSON
        request). Output: the UTF-8 JSON response, padded with spaces to a
        multiple of 8 bytes (wire.Pad8); an unknown function or a
        malformed request gets ``invalid_request`` (hostfuncs/README.md,
        "Calling convention").
        """
        try:
            if fn == FN_IDENTITY:
                resp: dict[str, Any] = self._identity()
            elif fn == FN_PREPARE_DIR:
                self.prepare_dir()
                resp = {}
            elif fn == FN_READ:
                resp = {"data": base64.b64encode(self._read(_request(req))).decode("ascii")}
            elif fn == FN_WRITE:
                self._write(_request(req))
                resp = {}
            elif fn == FN_REMOVE:
                self._remove(_request(req))
                resp = {}
            elif fn == FN_LIST:
                resp = {"names": self._list(_request(req))}
            elif fn == FN_LOG:
                self._log(_request(req))
                resp = {}
            elif fn == FN_LOCK:
                self._lock(_request(req))
                resp = {}
            elif fn == FN_PROBE:
                resp = self._probe(_request(req))
            else:
                return _error(CODE_INVALID_REQUEST, f"unknown host function {fn}")
            return _pad8(json.dumps(resp).encode())
        except _Fail as f:
            return _error(f.code, f.message)
        except Exception as e:  # noqa: BLE001 - the contract forbids raising
            return _error(CODE_IO, f"{fn}: unexpected {type(e).__name__}: {e}")

    # mcp_resume_identity
    def _identity(self) -> dict[str, Any]:
        """``{"pid", "start_time", "instance"}`` of the MCP host and this server instance, or ``unavailable``."""
        if self.identity is None:
            raise _Fail(CODE_UNAVAILABLE, "no identity source configured")
        try:
            pid, start = self.identity()
        except Exception as e:  # noqa: BLE001 - any failure means "cannot verify"
            raise _Fail(CODE_UNAVAILABLE, str(e) or type(e).__name__) from None
        if not isinstance(pid, int) or isinstance(pid, bool) or not isinstance(start, str):
            raise _Fail(CODE_UNAVAILABLE, f"identity source returned ({type(pid).__name__}, {type(start).__name__})")
        return {"pid": pid, "start_time": start, "instance": self.instance}

    # mcp_resume_prepare_dir
    def prepare_dir(self) -> None:
        """Create the state directory (and missing parents) 0700 and check it is safe.

        It must be an absolute path to a real directory (not a symlink), owned
        by the effective user, with no group or other permission bits.
        Raises ``_Fail`` (``unsafe`` with a fix-it message, or ``io``/``not_found``).
        Spec 000, Security Considerations. Once it passes, leftover temporary
        files are swept (:meth:`sweep_temporaries`).
        """
        d = self.state_dir
        if not os.path.isabs(d):
            raise _Fail(CODE_UNSAFE, f"state directory {d!r} is not an absolute path")
        try:
            _mkdir_all(d, 0o700)
        except OSError as e:
            raise _io_error("create state directory", e) from None
        try:
            st = os.lstat(d)
        except OSError as e:
            raise _io_error("inspect state directory", e) from None
        if not stat.S_ISDIR(st.st_mode):
            raise _Fail(
                CODE_UNSAFE,
                f"state directory {d} is not a directory (or is a symbolic link); "
                "point MCP_RESUME_STATE_DIR at a real directory",
            )
        euid = os.geteuid()
        if st.st_uid != euid:
            raise _Fail(
                CODE_UNSAFE,
                f"state directory {d} is owned by uid {st.st_uid}, not by this user (uid {euid}); "
                "remove it or choose another with MCP_RESUME_STATE_DIR",
            )
        perm = stat.S_IMODE(st.st_mode) & 0o777
        if perm & 0o077:
            raise _Fail(
                CODE_UNSAFE,
                f"state directory {d} has mode {perm:04o}, which lets other users in; run: chmod 700 {d}",
            )
        self.sweep_temporaries()

    def sweep_temporaries(self) -> None:
        """Delete leftover temporary files: regular files named ``.*.tmp`` older than :data:`TEMP_MAX_AGE_S`.

        They are what a writer killed between creating its temporary file and
        renaming it leaves behind. Never follows a symlink, never removes a
        directory. Best effort: every failure is ignored; raises nothing.
        """
        now = time.time()
        try:
            with os.scandir(self.state_dir) as it:
                entries = list(it)
        except OSError:
            return
        for e in entries:
            n = e.name
            if not n.startswith(".") or not n.endswith(".tmp"):
                continue
            try:
                if not e.is_file(follow_symlinks=False):
                    continue
                if now - e.stat(follow_symlinks=False).st_mtime > TEMP_MAX_AGE_S:
                    os.unlink(e.path)
            except OSError:
                pass

    def _path(self, name: object) -> str:
        if not valid_name(name):
            raise _Fail(
                CODE_INVALID_REQUEST,
                f"file name {name!r} is not allowed: names are 1-255 of [A-Za-z0-9._-], not starting with a dot",
            )
        assert isinstance(name, str)
        return os.path.join(self.state_dir, name)

    # mcp_resume_read
    def _read(self, doc: dict[str, Any]) -> bytes:
        """The first ``min(size, limit)`` bytes of a regular file; never follows a symlink, never blocks."""
        name = doc.get("name")
        p = self._path(name)
        limit = _field(doc, "limit", int)
        if limit <= 0 or limit > MAX_READ_LIMIT:
            raise _Fail(CODE_INVALID_REQUEST, f"limit {limit} is outside 1..{MAX_READ_LIMIT}")
        fd = _open_regular(p, str(name), os.O_RDONLY, "open")  # _path checked name is a str
        try:
            chunks: list[bytes] = []
            left = limit
            while left > 0:
                try:
                    chunk = os.read(fd, min(left, 65536))
                except OSError as e:
                    raise _io_error(f"read {name}", e) from None
                if not chunk:
                    break
                chunks.append(chunk)
                left -= len(chunk)
            return b"".join(chunks)
        finally:
            os.close(fd)

    # mcp_resume_write
    def _write(self, doc: dict[str, Any]) -> None:
        """Replace the file atomically: 0600 ``.<name>.<16 hex>.tmp`` with O_EXCL|O_NOFOLLOW, write, close, rename.

        The temporary file is removed on any failure. No fsync (a power loss
        may leave an empty file, which ``load`` treats as corrupt: spec 000,
        Token File Corrupted).
        """
        name = doc.get("name")
        p = self._path(name)
        encoded = _field(doc, "data", str)
        try:
            data = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError) as e:
            raise _Fail(CODE_INVALID_REQUEST, f"request field 'data' is not standard base64: {e}") from None
        tmp = os.path.join(self.state_dir, f".{name}.{secrets.token_hex(8)}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC, 0o600)
        except OSError as e:
            raise _io_error(f"create temporary file for {name}", e) from None
        try:
            try:
                view = memoryview(data)
                while view:
                    n = os.write(fd, view)
                    view = view[n:]
            finally:
                os.close(fd)
            os.rename(tmp, p)
        except OSError as e:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise _io_error(f"write {name}", e) from None
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise

    # mcp_resume_remove
    def _remove(self, doc: dict[str, Any]) -> None:
        """``unlink`` the file: never follows a symlink and never removes a directory."""
        name = doc.get("name")
        p = self._path(name)
        try:
            os.unlink(p)
        except OSError as e:
            raise _io_error(f"remove {name}", e) from None

    # mcp_resume_list
    def _list(self, doc: dict[str, Any]) -> list[str]:
        """Regular files directly in the state directory obeying the name rule and starting with ``prefix``, sorted."""
        prefix = _field(doc, "prefix", str)
        names: list[str] = []
        try:
            with os.scandir(self.state_dir) as it:
                for e in it:
                    if valid_name(e.name) and e.name.startswith(prefix) and e.is_file(follow_symlinks=False):
                        names.append(e.name)
        except OSError as e:
            raise _io_error("list state directory", e) from None
        names.sort(key=lambda n: n.encode())
        return names

    # mcp_resume_lock
    def _lock(self, doc: dict[str, Any]) -> None:
        """Take an exclusive ``flock`` on the file ``name`` (created 0600 if missing) and hold it until :meth:`close`.

        The kernel releases it when the process exits, however it exits. A
        lock this object already holds succeeds again; another holder (another
        process, or another ``HostFunctions`` in this one) answers ``busy``. A
        symlink or a non-regular file answers ``unsafe``. The file is never
        deleted here.
        """
        name = doc.get("name")
        p = self._path(name)
        if fcntl is None:  # pragma: no cover
            raise _Fail(CODE_IO, f"lock {name}: this platform has no flock")
        with self._mu:
            if name in self._locks:
                return
            fd = _open_regular(p, str(name), os.O_RDONLY | os.O_CREAT, "open lock")
            try:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError as e:
                    if isinstance(e, BlockingIOError) or e.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                        raise _Fail(CODE_BUSY, f"{name} is held by another server instance") from None
                    raise _io_error(f"lock {name}", e) from None
            except BaseException:
                os.close(fd)
                raise
            assert isinstance(name, str)
            self._locks[name] = fd

    # mcp_resume_probe
    def _probe(self, doc: dict[str, Any]) -> dict[str, Any]:
        """``{"host": "alive"|"gone"|"unknown", "age_seconds"}`` for file ``name`` and the host ``(pid, start_time)``.

        ``age_seconds`` is now minus the file's ``lstat`` modification time,
        truncated to whole seconds. ``host`` comes from :attr:`alive`:
        ``unknown`` when it raises. A vanished file answers ``not_found``.
        """
        name = doc.get("name")
        p = self._path(name)
        pid = _field(doc, "pid", int)
        start = _field(doc, "start_time", str)
        try:
            st = os.lstat(p)
        except OSError as e:
            raise _io_error(f"inspect {name}", e) from None
        age = int(time.time() - st.st_mtime)
        try:
            host = HOST_ALIVE if self.alive(pid, start) else HOST_GONE
        except Exception:  # noqa: BLE001 - any failure means "cannot tell"
            host = HOST_UNKNOWN
        return {"host": host, "age_seconds": age}

    # mcp_resume_log
    def _log(self, doc: dict[str, Any]) -> None:
        """Emit ``message`` at ``level`` with ``extra={"event", "detail"}``; never to stdout, never a token."""
        level = _field(doc, "level", str)
        event = _field(doc, "event", str)
        message = _field(doc, "message", str)
        detail = doc.get("detail")
        if not isinstance(detail, str):
            detail = ""
        try:
            self.logger.log(LEVELS.get(level, logging.INFO), message, extra={"event": event, "detail": detail})
        except Exception:  # noqa: BLE001 - a broken handler must not break the plugin
            pass

"""The nine host functions of the mcp-resume contract (``hostfuncs/README.md``, ABI 4).

OS primitives with no policy (the plugin decides what the answers mean):
process facts, read-only process questions (``/proc``, ``kill(pid, 0)``,
``fstat``, ``SO_PEERCRED``, macOS ``sysctl``), files confined to one state
directory, a lock that dies with the process, logging. Nothing here raises:
every failure is ``{"error": {"code", "message"}}`` (Extism's Python SDK
swallows exceptions raised in host functions).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import ctypes
import errno
import functools
import json
import logging
import math
import os
import re
import secrets
import socket
import stat
import struct
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any
from collections.abc import Callable

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no flock, and resume is off anyway
    fcntl = None  # type: ignore[assignment]

__all__ = ["ABI_VERSION", "FUNCTIONS", "NAMESPACE", "HostFunctions", "System"]

#: The version of the plugin/host contract this host implements (wire.ABIVersion).
ABI_VERSION = "4"
#: Wasm import module of every host function (wire.Namespace).
NAMESPACE = "extism:host/user"
#: Every host function name, in the order of the README.
FUNCTIONS = ("mcp_resume_facts", "mcp_resume_inspect", "mcp_resume_prepare_dir", "mcp_resume_read", "mcp_resume_write",
             "mcp_resume_remove", "mcp_resume_list", "mcp_resume_lock", "mcp_resume_log")

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warn": logging.WARNING, "error": logging.ERROR}
_NAME = re.compile(r"[A-Za-z0-9._-]{1,255}")
_PID = r"(?:self|[1-9][0-9]*)"
#: The /proc allowlist per inspect op (hostfuncs/README.md, "The allowlist").
_ALLOW = {"read": re.compile(rf"/proc/sys/kernel/random/boot_id|/proc/self/timens_offsets|/proc/{_PID}/(?:stat|cmdline)"),
          "readlink": re.compile(rf"/proc/self|/proc/{_PID}/ns/pid|/proc/{_PID}/fd/[0-9]+")}
_DIGITS = re.compile(r"[1-9][0-9]*")
_MAX_INSPECT_OPS = 64
_PROC_READ_CAP = 65536
_MAX_READ_LIMIT = 1 << 20
_O_FLAGS = os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass
class System:
    """A pinned system, for tests only (hostfuncs/conformance/README.md, "System"): ``facts`` answered as is;
    ``proc``, the directory read for ``/proc`` (after the allowlist); ``answers`` of ``kill0``, ``fstat``,
    ``peer``, ``sysctl``, ``procargs``, ``ps`` keyed ``"<op> <pid or fd>"`` (missing: kill0 ``not_found``,
    fstat ``char``, the others ``unsupported``); ``no_answer``, functions answering ``not json``."""

    facts: dict[str, Any]
    proc: str
    answers: dict[str, Any] = field(default_factory=dict)
    no_answer: frozenset[str] = frozenset()


class _Fail(Exception):
    """A contract error to answer: ``code`` and a human ``message`` (never a token)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(code, message)
        self.error = {"error": {"code": code, "message": message}}


def _err(code: str, message: str) -> dict[str, Any]:
    return _Fail(code, message).error


#: errno -> contract code (hostfuncs/README.md, "Error codes"); anything else is io.
_ERRNO_CODES = {errno.ENOENT: "not_found", errno.ESRCH: "not_found", errno.EACCES: "permission",
                errno.EPERM: "permission", errno.ELOOP: "unsafe", errno.ENOTDIR: "not_dir", errno.EEXIST: "exists",
                errno.ENOSPC: "no_space", errno.EDQUOT: "no_space", errno.EROFS: "read_only"}


def _os_fail(what: str, e: OSError) -> _Fail:
    """Map an OS error to a contract code: ENOENT/ESRCH not_found, EACCES/EPERM permission, ELOOP unsafe,
    ENOTDIR not_dir, EEXIST exists, ENOSPC/EDQUOT no_space, EROFS read_only, else io."""
    return _Fail(_ERRNO_CODES.get(e.errno or 0, "io"), f"{what}: {e.strerror or e}")


def _field(doc: dict[str, Any], key: str, kind: type) -> Any:
    """``doc[key]`` if it has type ``kind`` (bool is not an int), else ``invalid_request``."""
    v = doc.get(key)
    if not isinstance(v, kind) or (kind is int and isinstance(v, bool)):
        raise _Fail("invalid_request", f"request field {key!r} is missing or not a {kind.__name__}")
    return v


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _read_fd(fd: int, cap: int) -> bytes:
    """Read up to ``cap`` bytes from ``fd`` (until EOF). Raises ``OSError``."""
    data = b""
    while len(data) < cap and (chunk := os.read(fd, cap - len(data))):
        data += chunk
    return data


def _libc_sysctl(mib: list[int], size: int) -> bytes:
    """macOS ``sysctl(mib)`` through ctypes into a ``size``-byte buffer: the bytes it wrote. Raises ``OSError``.

    Never run by the Linux test suite (the ops answer ``unsupported`` there): kept minimal.
    """
    libc = ctypes.CDLL(None, use_errno=True)
    buf, n = ctypes.create_string_buffer(size), ctypes.c_size_t(size)
    if libc.sysctl((ctypes.c_int * len(mib))(*mib), len(mib), buf, ctypes.byref(n), None, 0) != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    return buf.raw[: n.value]


def _stat_answer(st: os.stat_result) -> dict[str, Any]:
    """The ``stat`` answer of ``mcp_resume_prepare_dir``: type, owner uid and ``st_mode & 0o7777``."""
    m = st.st_mode
    kind = ("symlink" if stat.S_ISLNK(m) else "dir" if stat.S_ISDIR(m) else "file" if stat.S_ISREG(m) else "other")
    return {"type": kind, "uid": st.st_uid, "mode": m & 0o7777}


#: Size of ``sockaddr_un.sun_path`` on Linux.
_SUN_PATH_LEN = 108


def _bind_abstract(name: str) -> list[socket.socket]:
    """Bind the lock's abstract Unix socket ``name`` in both forms hosts use (hostfuncs/README.md,
    ``mcp_resume_lock``): first the address Node binds, a NUL and ``name`` padded with NULs to the whole
    108-byte ``sun_path``, then the unpadded address (a NUL and ``name``). Padded first, so two hosts that
    both bind both never each hold one. Returns the bound (non-inheritable) sockets; raises ``OSError``
    (``EADDRINUSE``: held elsewhere), leaving nothing bound."""
    raw = name.encode()
    if len(raw) >= _SUN_PATH_LEN:
        raise OSError(errno.ENAMETOOLONG, "abstract socket name too long")
    socks: list[socket.socket] = []
    try:
        for addr in (b"\0" + raw + b"\0" * (_SUN_PATH_LEN - 1 - len(raw)), b"\0" + raw):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            socks.append(sock)
            sock.bind(addr)
    except OSError:
        for sock in socks:
            sock.close()
        raise
    return socks


def _proc_read(path: str) -> bytes:
    """The first 65536 bytes of a /proc file, opened ``O_RDONLY|O_NOFOLLOW``. Raises ``OSError``."""
    fd = os.open(path, os.O_RDONLY | _O_FLAGS)
    try:
        return _read_fd(fd, _PROC_READ_CAP)
    finally:
        os.close(fd)


def _kill0(pid: str) -> dict[str, Any]:
    """``kill(pid, 0)``: ``{}``, ``not_found`` (ESRCH) or ``permission`` (EPERM)."""
    try:
        os.kill(int(pid), 0)
    except OverflowError:
        raise _Fail("not_found", f"kill0 {pid}: no such process") from None
    except OSError as e:
        raise _os_fail(f"kill0 {pid}", e) from None
    return {}


def _exe(pid: str) -> dict[str, Any]:
    """``stat(2)`` of ``/proc/<pid>/exe``, following the link to the program file (Linux only): ``{"dev", "ino"}``
    as decimal strings; ``not_found`` (gone), ``permission`` (another user's or a non-dumpable process),
    ``unsupported`` (no ``/proc``)."""
    if not sys.platform.startswith("linux"):
        raise _Fail("unsupported", "exe: no /proc on this system")
    try:
        st = os.stat(f"/proc/{pid}/exe")
    except OSError as e:
        raise _os_fail(f"stat /proc/{pid}/exe", e) from None
    return {"dev": str(st.st_dev), "ino": str(st.st_ino)}


def _exact(v: Any) -> Any:
    """``v`` with every ``str`` in it (recursively) re-decoded so that bytes Python held as surrogates
    (``surrogateescape``: ``sys.argv``, ``os.environ``, ``os.getcwd()`` of bytes that are not UTF-8) become
    U+FFFD, as Go's JSON and Node's argv decoding send them: the plugin then sees the same text from every
    host and turns resume off for such an instance key (hostfuncs/README.md, ``mcp_resume_facts``)."""
    if isinstance(v, str):
        return v.encode("utf-8", "surrogateescape").decode("utf-8", "replace") if not v.isascii() else v
    if isinstance(v, list):
        return [_exact(x) for x in v]
    if isinstance(v, dict):
        return {_exact(k): _exact(x) for k, x in v.items()}
    return v


def _home() -> str:
    """``facts.home``: ``$HOME`` when set and absolute, else the password database's home directory of the
    effective uid (``pwd.getpwuid``), else ``""``: the same rule as the Go (``os/user``) and Node
    (``os.userInfo()``) hosts."""
    h = os.environ.get("HOME", "")
    if os.path.isabs(h):
        return h
    try:
        import pwd  # noqa: PLC0415 - not on Windows

        d = pwd.getpwuid(os.geteuid()).pw_dir
    except (ImportError, KeyError, AttributeError, OSError):
        return ""
    return d if os.path.isabs(d) else ""


def _cwd() -> str:
    """``facts.cwd``: ``getcwd(3)``; ``""`` when it fails (a deleted working directory)."""
    try:
        return os.getcwd()
    except OSError:
        return ""


def _fstat(fd: int) -> dict[str, Any]:
    """The file type of this process's fd (one of ``facts.stdio_fds``); ``not_found`` when it is closed."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError as e:
        raise _Fail("not_found" if e.errno == errno.EBADF else "io", f"fstat {fd}: {e.strerror or e}") from None
    kinds = ((stat.S_ISFIFO, "fifo"), (stat.S_ISSOCK, "socket"), (stat.S_ISCHR, "char"),
             (stat.S_ISREG, "file"), (stat.S_ISDIR, "dir"))
    return {"type": next((k for test, k in kinds if test(mode)), "other")}


def _peer(fd: int) -> dict[str, Any]:
    """``SO_PEERCRED`` pid of this process's socket fd (one of ``facts.stdio_fds``), which stays open (``detach``)."""
    opt = getattr(socket, "SO_PEERCRED", None)
    if opt is None:
        raise _Fail("unsupported", "peer: this system has no SO_PEERCRED")
    try:
        s = socket.socket(fileno=fd)
    except OSError as e:
        raise _Fail("not_found" if e.errno == errno.EBADF else "io", f"peer {fd}: {e.strerror or e}") from None
    try:
        pid = struct.unpack("3i", s.getsockopt(socket.SOL_SOCKET, opt, struct.calcsize("3i")))[0]
    except OSError as e:
        raise _Fail("io", f"peer {fd}: {e.strerror or e}") from None
    finally:
        s.detach()
    return {"peer_pid": pid}


def _macos(op: str, pid: str) -> dict[str, Any]:
    """macOS ``sysctl`` (raw ``struct kinfo_proc`` of ``kern.proc.pid.<pid>``) and ``procargs`` (raw
    ``kern.procargs2.<pid>``; EINVAL/EPERM: ``permission``); ``ps`` is never offered (the contract allows it)."""
    if sys.platform != "darwin" or op == "ps":
        raise _Fail("unsupported", f"{op}: not offered on this system (this host answers sysctl on macOS)")
    try:
        if op == "sysctl":
            data = _libc_sysctl([1, 14, 1, int(pid)], 4096)  # CTL_KERN, KERN_PROC, KERN_PROC_PID (kinfo_proc: 648)
        else:
            argmax = struct.unpack("i", _libc_sysctl([1, 8], 4))[0]  # CTL_KERN, KERN_ARGMAX
            data = _libc_sysctl([1, 49, int(pid)], argmax)  # KERN_PROCARGS2
    except OSError as e:
        code = "permission" if e.errno in (errno.EINVAL, errno.EPERM) and op == "procargs" else ""
        raise (_Fail(code, f"{op} {pid}: {e.strerror}") if code else _os_fail(f"{op} {pid}", e)) from None
    if not data:
        raise _Fail("not_found", f"{op} {pid}: no such process")
    return {"data": _b64(data)}


_REAL_OPS: dict[str, Callable[[Any], dict[str, Any]]] = {"kill0": _kill0, "exe": _exe, "fstat": _fstat, "peer": _peer, **{
    op: functools.partial(_macos, op) for op in ("sysctl", "procargs", "ps")}}


class HostFunctions:
    """The host functions of one store (Go ``hostfuncs.Funcs``); thread-safe.

    Inputs: ``logger`` (for ``mcp_resume_log``), ``system`` (a pinned :class:`System`; ``None``: the real
    one). State: ``dir``, fixed by the first successful ``mcp_resume_prepare_dir`` (the confinement rule),
    and the locks of ``mcp_resume_lock``, held until :meth:`close` (one instance is one lock holder).
    """

    def __init__(self, logger: logging.Logger | logging.LoggerAdapter[Any], system: System | None = None) -> None:
        self.logger = logger
        self.system = system
        self.dir: str | None = None
        self._mu = threading.Lock()
        self._locks: dict[str, tuple[int, list[socket.socket]]] = {}
        self._stdio: list[int] | None = None

    def keep_stdio(self) -> None:
        """Take close-on-exec copies (at fd 3 or above) of fds 0 and 1 as they are now, and report them in
        ``facts.stdio_fds`` until :meth:`release_stdio`, so the plugin's stdio check sees the server's MCP
        stdin and stdout as the host set them up even when its first identity call comes after the MCP SDK
        pointed fds 0 and 1 at ``/dev/null`` (mcp 2.x does while it serves stdio). A closed fd is reported
        as itself. Linux only (the check is Linux's), the real system only; raises nothing."""
        if self.system is not None or self._os() != "linux" or self._stdio is not None:
            return
        copies = []
        for fd in (0, 1):
            try:
                copies.append(fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3))
            except OSError:
                copies.append(fd)
        with self._mu:
            self._stdio = copies

    def release_stdio(self) -> None:
        """Close the copies of :meth:`keep_stdio` (once the plugin has resolved the host, it reads them no
        more): the host then sees end-of-file on the server's stdout as soon as fd 1 closes. Idempotent."""
        with self._mu:
            copies, self._stdio = self._stdio, None
        for fd in copies or ():
            if fd > 2:
                with contextlib.suppress(OSError):
                    os.close(fd)

    def close(self) -> None:
        """Release every lock (close its descriptor and socket; the files stay) and the stdio copies.
        Idempotent; raises nothing."""
        self.release_stdio()
        with self._mu:
            held, self._locks = list(self._locks.values()), {}
        for fd, socks in held:
            with contextlib.suppress(OSError):
                os.close(fd)
            for sock in socks:
                with contextlib.suppress(OSError):
                    sock.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()

    def call(self, fn: str, req: bytes) -> bytes:
        """Serve ``fn`` (a name of :data:`FUNCTIONS`) with ``req`` (UTF-8 JSON): the JSON response, padded
        to a multiple of 8 bytes (wire.Pad8). Never raises: a malformed request or an unknown function
        answers ``invalid_request``, an unexpected failure ``io``."""
        if self.system is not None and fn in self.system.no_answer:
            return b"not json"
        try:
            try:
                doc = json.loads(req)
            except (ValueError, UnicodeDecodeError) as e:
                raise _Fail("invalid_request", f"{fn}: request is not JSON: {e}") from None
            if not isinstance(doc, dict):
                raise _Fail("invalid_request", f"{fn}: request is not a JSON object")
            handler = getattr(self, "_" + fn.removeprefix("mcp_resume_"), None) if fn in FUNCTIONS else None
            if handler is None:
                raise _Fail("invalid_request", f"unknown host function {fn}")
            resp: dict[str, Any] = handler(doc)
        except _Fail as f:
            resp = f.error
        except Exception as e:  # noqa: BLE001 - the contract forbids raising
            resp = _err("io", f"{fn}: unexpected {type(e).__name__}: {e}")
        out = json.dumps(resp, separators=(",", ":")).encode()
        return out + b" " * (-len(out) % 8)

    def _facts(self, _doc: dict[str, Any]) -> dict[str, Any]:
        """This process's facts: os, pid, euid, home (``$HOME`` if absolute, else the password database),
        xdg_state_home, cwd, args, every environment variable, runtime; bytes that are not UTF-8 as U+FFFD."""
        if self.system is not None:
            return self.system.facts
        facts: dict[str, Any] = {"os": self._os(), "pid": os.getpid(), "euid": os.geteuid() if hasattr(os, "geteuid") else -1,
                 "home": _home(), "xdg_state_home": os.environ.get("XDG_STATE_HOME", ""), "cwd": _cwd(),
                 "args": sys.argv[1:], "env": dict(os.environ), "runtime": "python"}
        with self._mu:
            if self._stdio is not None:
                facts["stdio_fds"] = list(self._stdio)
        exact: dict[str, Any] = _exact(facts)
        return exact

    def _os(self) -> str:
        """``facts.os``: ``linux``, ``darwin`` or ``sys.platform`` as is (pinned: the system's)."""
        if self.system is not None:
            return str(self.system.facts.get("os", ""))
        return "linux" if sys.platform.startswith("linux") else sys.platform

    def _inspect(self, doc: dict[str, Any]) -> dict[str, Any]:
        """Answer 1-64 ``ops`` in order, one result (or per-op error) each."""
        ops = doc.get("ops")
        if not isinstance(ops, list) or not 1 <= len(ops) <= _MAX_INSPECT_OPS:
            raise _Fail("invalid_request", f"ops must be a list of 1-{_MAX_INSPECT_OPS} operations")
        linux = self._os() == "linux"
        results = []
        for op in ops:
            try:
                results.append(self._op(op, linux))
            except _Fail as f:
                results.append(f.error)
            except Exception as e:  # noqa: BLE001
                results.append(_err("io", f"inspect: unexpected {type(e).__name__}: {e}"))
        return {"results": results}

    def _proc(self, op: str, path: str, linux: bool) -> str:
        """``path`` under the proc root (``/proc``, or the pinned system's); ``unsupported`` off Linux."""
        if not linux:
            raise _Fail("unsupported", f"{op}: no /proc on this system")
        root = self.system.proc if self.system is not None else "/proc"
        return root + path[len("/proc"):]

    def _op(self, op: Any, linux: bool) -> dict[str, Any]:
        """One inspect operation (hostfuncs/README.md, the op table). Raises ``_Fail``."""
        if not isinstance(op, dict) or not isinstance(op.get("op"), str):
            raise _Fail("invalid_request", "an operation is not an object with a string 'op'")
        name = op["op"]
        if name in _ALLOW:  # read, readlink: the allowlist is checked before any system call
            path = op.get("path")
            if not isinstance(path, str) or not _ALLOW[name].fullmatch(path):
                raise _Fail("invalid_request", f"{name} {path!r}: not on the /proc allowlist")
            p = self._proc(name, path, linux)
            try:
                return {"data": _b64(_proc_read(p))} if name == "read" else {"target": os.readlink(p)}
            except OSError as e:
                raise _os_fail(f"{name} {path}", e) from None
        if name == "fds":
            return self._fds(op, linux)
        if name in ("kill0", "exe", "sysctl", "procargs", "ps"):
            key = op.get("pid")
            if not isinstance(key, str) or not _DIGITS.fullmatch(key):
                raise _Fail("invalid_request", f"{name}: pid must be decimal digits")
        elif name in ("fstat", "peer"):
            key = op.get("fd")
            if type(key) is not int or not 0 <= key <= 0x7FFFFFFF:
                raise _Fail("invalid_request", f"{name}: fd must be a file descriptor number (0 to 2147483647)")
        else:
            raise _Fail("invalid_request", f"unknown inspect operation {name!r}")
        if self.system is None:
            return _REAL_OPS[name](key)
        default = {"kill0": _err("not_found", "kill0: no such process (pinned)"), "fstat": {"type": "char"},
                   "exe": {"dev": "2049", "ino": "1234567"}}
        pinned = self.system.answers.get(f"{name} {key}")
        return dict(pinned if pinned is not None else default.get(name, _err("unsupported", f"{name}: not pinned")))

    def _fds(self, op: dict[str, Any], linux: bool) -> dict[str, Any]:
        """The fds of ``/proc/<pid>/fd`` sorted, each with its link target and fdinfo ``flags`` (-1 if unreadable)."""
        pid, targets = op.get("pid"), op.get("targets")
        if not isinstance(pid, str) or not re.fullmatch(_PID, pid):
            raise _Fail("invalid_request", "fds: pid must be 'self' or decimal digits")
        if targets is not None and not (isinstance(targets, list) and all(isinstance(t, str) for t in targets)):
            raise _Fail("invalid_request", "fds: targets must be a list of strings")
        base = self._proc("fds", f"/proc/{pid}", linux)
        try:
            names = os.listdir(base + "/fd")
        except OSError as e:
            raise _os_fail(f"fds /proc/{pid}/fd", e) from None
        out = []
        for n in sorted(int(n) for n in names if n.isdigit()):
            try:
                target = os.readlink(f"{base}/fd/{n}")
            except OSError as e:
                if e.errno in (errno.ENOENT, errno.ESRCH):
                    continue  # closed during the listing
                raise _os_fail(f"fds /proc/{pid}/fd/{n}", e) from None
            if targets is not None and target not in targets:
                continue
            try:
                m = re.search(rb"^flags:\s*([0-7]+)", _proc_read(f"{base}/fdinfo/{n}"), re.M)
            except OSError:
                m = None
            out.append({"fd": n, "target": target, "flags": int(m.group(1), 8) if m else -1})
        return {"fds": out}

    def _prepare_dir(self, doc: dict[str, Any]) -> dict[str, Any]:
        """One primitive on an absolute, clean ``path`` (no rule about owners or modes: the plugin judges):
        ``stat`` (lstat, or stat with ``follow``: type, uid, ``st_mode & 0o7777``), ``mkdir`` (one directory,
        0700; once a directory is fixed only it or an ancestor), ``fix`` (the confinement rule, then sweep
        temporaries older than ``sweep_seconds``)."""
        op, path = _field(doc, "op", str), _field(doc, "path", str)
        if not path.startswith("/") or path.startswith("//") or os.path.normpath(path) != path or "\0" in path:
            raise _Fail("invalid_request", f"path {path!r} is not an absolute, clean path")
        if op == "stat":
            follow = doc.get("follow", False)
            if not isinstance(follow, bool):
                raise _Fail("invalid_request", "request field 'follow' is not a bool")
            try:
                return _stat_answer(os.stat(path) if follow else os.lstat(path))
            except OSError as e:
                raise _os_fail(f"stat {path}", e) from None
        if op == "mkdir":
            fixed = self.dir
            if fixed is not None and path != "/" and fixed != path and not fixed.startswith(path + "/"):
                raise _Fail("invalid_request", f"this store's state directory is {fixed}; mkdir {path} is outside it")
            try:
                os.mkdir(path, 0o700)
            except OSError as e:
                raise _os_fail(f"mkdir {path}", e) from None
            return {}
        if op != "fix":
            raise _Fail("invalid_request", f"unknown mcp_resume_prepare_dir op {op!r}: want stat, mkdir or fix")
        sweep = _field(doc, "sweep_seconds", int)
        if sweep < 0:
            raise _Fail("invalid_request", "sweep_seconds must not be negative")
        with self._mu:
            if self.dir is not None and self.dir != path:
                raise _Fail("invalid_request", f"this store's state directory is {self.dir}; it cannot move to {path}")
            self.dir = path
        now = time.time()
        with contextlib.suppress(OSError), os.scandir(path) as it:  # best effort
            for ent in it:
                with contextlib.suppress(OSError):
                    if (ent.name.startswith(".") and ent.name.endswith(".tmp") and ent.is_file(follow_symlinks=False)
                            and now - ent.stat(follow_symlinks=False).st_mtime > sweep):
                        os.unlink(ent.path)
        return {}

    def _path(self, doc: dict[str, Any]) -> tuple[str, str]:
        """``(name, path)`` of the request's file; ``invalid_request`` for a bad name or no state directory yet."""
        name = doc.get("name")
        if not isinstance(name, str) or name.startswith(".") or not _NAME.fullmatch(name):
            raise _Fail("invalid_request", f"file name {name!r} is not allowed: "
                                           "1-255 of [A-Za-z0-9._-], not starting with a dot")
        if self.dir is None:
            raise _Fail("invalid_request", "no state directory: mcp_resume_prepare_dir has not succeeded")
        return name, os.path.join(self.dir, name)

    @staticmethod
    def _open_regular(name: str, path: str, flags: int) -> int:
        """Open without following a symlink or blocking on a FIFO; ``unsafe`` unless a regular file."""
        try:
            fd = os.open(path, flags | _O_FLAGS | os.O_NONBLOCK, 0o600)
        except IsADirectoryError:
            raise _Fail("unsafe", f"{name} is a directory, not a regular file") from None
        except OSError as e:
            raise _os_fail(f"open {name}", e) from None
        try:
            mode = os.fstat(fd).st_mode
        except OSError as e:
            os.close(fd)
            raise _os_fail(f"inspect {name}", e) from None
        if not stat.S_ISREG(mode):
            os.close(fd)
            raise _Fail("unsafe", f"{name} is not a regular file (mode {stat.filemode(mode)})")
        return fd

    def _read(self, doc: dict[str, Any]) -> dict[str, Any]:
        """The first ``min(size, limit)`` bytes of a regular file, ``limit`` in 1..1048576."""
        name, path = self._path(doc)
        limit = _field(doc, "limit", int)
        if not 1 <= limit <= _MAX_READ_LIMIT:
            raise _Fail("invalid_request", f"limit {limit} is outside 1..{_MAX_READ_LIMIT}")
        fd = self._open_regular(name, path, os.O_RDONLY)
        try:
            return {"data": _b64(_read_fd(fd, limit))}
        except OSError as e:
            raise _os_fail(f"read {name}", e) from None
        finally:
            os.close(fd)

    def _write(self, doc: dict[str, Any]) -> dict[str, Any]:
        """Replace the file atomically: 0600 ``.<name>.<16 hex>.tmp`` (O_EXCL|O_NOFOLLOW), write, rename. No fsync."""
        name, path = self._path(doc)
        try:
            data = base64.b64decode(_field(doc, "data", str), validate=True)
        except (binascii.Error, ValueError) as e:
            raise _Fail("invalid_request", f"request field 'data' is not standard base64: {e}") from None
        tmp = os.path.join(os.path.dirname(path), f".{name}.{secrets.token_hex(8)}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_FLAGS, 0o600)
        except OSError as e:
            raise _os_fail(f"create temporary file for {name}", e) from None
        try:
            with os.fdopen(fd, "wb") as f:  # closes fd
                f.write(data)
            os.rename(tmp, path)
        except BaseException as e:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            if isinstance(e, OSError):
                raise _os_fail(f"write {name}", e) from None
            raise
        return {}

    def _remove(self, doc: dict[str, Any]) -> dict[str, Any]:
        """``unlink`` the file (never follows a symlink, never removes a directory)."""
        name, path = self._path(doc)
        try:
            os.unlink(path)
        except OSError as e:
            raise _os_fail(f"remove {name}", e) from None
        return {}

    def _list(self, doc: dict[str, Any]) -> dict[str, Any]:
        """Regular files obeying the name rule and starting with ``prefix``, sorted, with whole-second ages."""
        prefix = _field(doc, "prefix", str)
        if self.dir is None:
            raise _Fail("invalid_request", "no state directory: mcp_resume_prepare_dir has not succeeded")
        now, files = time.time(), []
        try:
            with os.scandir(self.dir) as it:
                for e in it:
                    n = e.name
                    if n.startswith(prefix) and not n.startswith(".") and _NAME.fullmatch(n):
                        with contextlib.suppress(OSError):
                            st = e.stat(follow_symlinks=False)
                            if stat.S_ISREG(st.st_mode):
                                files.append({"name": n, "age_seconds": math.floor(now - st.st_mtime)})
        except OSError as e:
            raise _os_fail("list state directory", e) from None
        files.sort(key=lambda f: str(f["name"]).encode())
        return {"files": files}

    def _lock(self, doc: dict[str, Any]) -> dict[str, Any]:
        """Exclusive lock of the file (created 0600, never deleted) until :meth:`close`; ``busy`` if held
        elsewhere. With ``socket``, on Linux only, first bind that abstract Unix socket, which the Go and Node hosts
        bind for the same lock, then ``flock`` the file; ``busy`` from either releases the other."""
        name, path = self._path(doc)
        sock_name = doc.get("socket", "")
        if not isinstance(sock_name, str) or "\0" in sock_name:
            raise _Fail("invalid_request", "request field 'socket' is not a string without NUL")
        if fcntl is None:  # pragma: no cover
            raise _Fail("unsupported", "lock: this platform has no flock")
        with self._mu:
            if name in self._locks:
                return {}
            socks: list[socket.socket] = []
            if sock_name and sys.platform.startswith("linux"):  # elsewhere flock is the whole lock
                try:
                    socks = _bind_abstract(sock_name)
                except OSError as e:
                    if e.errno == errno.EADDRINUSE:
                        raise _Fail("busy", f"{name} is held by another server instance") from None
                    raise _os_fail(f"lock {name}: bind abstract socket", e) from None
            try:
                fd = self._open_regular(name, path, os.O_RDONLY | os.O_CREAT)
            except BaseException:
                for sock in socks:
                    sock.close()
                raise
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as e:
                os.close(fd)
                for sock in socks:
                    sock.close()
                if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                    raise _Fail("busy", f"{name} is held by another server instance") from None
                raise _os_fail(f"lock {name}", e) from None
            self._locks[name] = (fd, socks)
        return {}

    def _log(self, doc: dict[str, Any]) -> dict[str, Any]:
        """Emit ``message`` at ``level`` with ``extra={"event", "detail"}``; level, event and message required.
        Never stdout. A detail (the path, the cause, the fix) is also part of the printed text, as Go's and
        TypeScript's loggers print it, so that ``logging``'s default format (``basicConfig``, the last-resort
        handler), which shows only the message, carries it: the record's ``msg`` is ``message`` (``%``
        escaped) followed by ``": %s"``, its ``args`` ``(detail,)``; without a detail ``msg`` is ``message``."""
        level, event, message = (_field(doc, k, str) for k in ("level", "event", "message"))
        if level not in _LEVELS:
            raise _Fail("invalid_request", f"unknown log level {level!r}")
        detail = doc.get("detail") if isinstance(doc.get("detail"), str) else ""
        extra = {"event": event, "detail": detail}
        with contextlib.suppress(Exception):  # a broken handler must not break the plugin
            if detail:
                self.logger.log(_LEVELS[level], message.replace("%", "%%") + ": %s", detail, extra=extra)
            else:
                self.logger.log(_LEVELS[level], message, extra=extra)
        return {}

"""The twelve host functions of the mcp-resume contract, ABI 11: OS primitives with no policy (POSIX),
``mcp_resume_eval`` (one Lua script on Redis, JSON or binary, in :mod:`mcp_resume._eval`) and ``mcp_resume_crypto``
(binary: HKDF, HMAC, SHA-256, AES-256-GCM, and sealed files read or written in one call, in :mod:`mcp_resume._crypto`).

Requests, answers and error codes are ``hostfuncs/README.md``'s; the docstrings
say what this host does. Nothing raises: every failure is an answer
``{"error": {"code", "message"}}`` (Extism's Python SDK swallows exceptions).
Over the ~500-line guide on purpose: the file functions share the request
checks, the errno mapping and the per-store state, and splitting facts or
inspect into their own modules would move lines without removing any.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import ctypes
import errno
import fcntl
import json
import logging
import math
import os
import re
import socket
import stat
import struct
import sys
import threading
import time
from typing import Any

from . import _crypto, _fds
from ._eval import BINARY_FORM, EvalClients

__all__ = ["ABI_VERSION", "FUNCTIONS", "NAMESPACE", "HostFunctions"]

#: The version of the plugin/host contract this host implements (Go ``hostfuncs.ABIVersion``).
ABI_VERSION = "11"
#: Wasm import module of every host function (Go ``hostfuncs.Namespace``).
NAMESPACE = "extism:host/user"
#: Every host function name, in the order of the README.
FUNCTIONS = ("mcp_resume_facts", "mcp_resume_inspect", "mcp_resume_prepare_dir", "mcp_resume_read", "mcp_resume_write",
             "mcp_resume_remove", "mcp_resume_list", "mcp_resume_lock", "mcp_resume_log", "mcp_resume_unlock",
             "mcp_resume_eval", "mcp_resume_crypto")
#: The host function whose request and response are binary, not JSON (README, ``mcp_resume_crypto``).
_CRYPTO = "mcp_resume_crypto"
#: The host function that takes a binary form beside JSON (README, ``mcp_resume_eval``, "The binary form").
_EVAL = "mcp_resume_eval"
#: The first byte of ``mcp_resume_eval``'s binary form (a JSON request starts with ``{``).
_EVAL_BINARY = bytes((BINARY_FORM,))

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warn": logging.WARNING, "error": logging.ERROR}
_DIGITS = re.compile(r"[1-9][0-9]{0,9}")
_INT32_MAX = 0x7FFFFFFF
_MAX_INSPECT_OPS = 64
_PROC_READ_CAP = 65536
#: The read limit of ``environ`` and ``net``, files that grow with the system (Go ``hostfuncs.MaxProcTableRead``).
_PROC_TABLE_READ_CAP = 1 << 20
#: The namespaces ``ns`` reads, ``/proc/<P>/ns/<ns>`` (Go ``hostfuncs.Namespaces``).
_NAMESPACES = ("net", "mnt", "uts", "ipc", "user", "cgroup", "pid")
#: The socket tables ``net`` reads, ``/proc/<P>/net/<table>`` (Go ``hostfuncs.NetTables``).
_NET_TABLES = ("tcp", "tcp6", "udp", "udp6", "unix")
#: The largest ``mcp_resume_read`` limit (Go ``hostfuncs.MaxReadLimit``): a sealed handle record of the largest value.
_MAX_READ_LIMIT = 8 << 20
#: The largest ``mcp_resume_lock`` ``wait_ms`` (Go ``hostfuncs.MaxLockWaitMS``).
_MAX_LOCK_WAIT_MS = 10000
#: The sleeps between tries of a waiting lock (README, ``mcp_resume_lock``): 0.2 ms, doubling, at most 5 ms.
_LOCK_SLEEP_FIRST, _LOCK_SLEEP_MAX = 0.0002, 0.005
_SUN_PATH_LEN = 108  # sockaddr_un.sun_path on Linux
_O_FLAGS = os.O_NOFOLLOW | os.O_CLOEXEC
#: The /proc ops: op -> (answer field, path under the proc root); ``{pid}`` takes ``"self"`` too, ``{ns}`` one of
#: :data:`_NAMESPACES`, ``{table}`` one of :data:`_NET_TABLES` (Go ``hostfuncs.ProcOps``).
_PROC_OPS = {"boot_id": ("data", "sys/kernel/random/boot_id"), "self": ("target", "self"),
             "timens": ("data", "self/timens_offsets"), "stat": ("data", "{pid}/stat"),
             "cmdline": ("data", "{pid}/cmdline"), "pid_ns": ("target", "{pid}/ns/pid"),
             "fd_link": ("target", "{pid}/fd/{fd}"), "environ": ("data", "{pid}/environ"),
             "ns": ("target", "{pid}/ns/{ns}"), "net": ("data", "{pid}/net/{table}")}
#: The data ops read up to 1 MiB, not 64 KiB (README, ``mcp_resume_inspect``, "Data reads").
_PROC_TABLE_OPS = ("environ", "net")
#: The members an inspect op may have and their JSON types (``null`` counts as absent; Go ``hostfuncs.InspectOp``).
_OP_MEMBERS: dict[str, type] = {"op": str, "pid": str, "fd": int, "targets": list, "ns": str, "table": str}
#: The other ops, answered by :meth:`HostFunctions._primitive`: op -> the request field it takes.
_PRIMITIVES = {"kill0": "pid", "exe": "pid", "sysctl": "pid", "procargs": "pid", "ps": "pid",
               "fstat": "fd", "peer": "fd"}
#: errno -> contract code (README, "Error codes"); anything else is io.
_ERRNO_CODES = {errno.ENOENT: "not_found", errno.ESRCH: "not_found", errno.EBADF: "not_found",
                errno.EACCES: "permission", errno.EPERM: "permission", errno.ELOOP: "unsafe", errno.EISDIR: "unsafe",
                errno.ENOTDIR: "not_dir", errno.EEXIST: "exists", errno.ENOSPC: "no_space",
                errno.EDQUOT: "no_space", errno.EROFS: "read_only"}
#: One U+FFFD per byte that is not UTF-8: Python holds each such byte as one lone surrogate (surrogateescape).
_FFFD = {c: 0xFFFD for c in range(0xDC80, 0xDD00)}


class _Fail(Exception):
    """A contract error to answer: ``code`` and a human ``message`` (never a token)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(code, message)
        self.error = {"error": {"code": code, "message": message}}


def _os_fail(what: str, e: OSError) -> _Fail:
    """The contract error of an ``OSError`` (the errno table above), its message ``<what>: <strerror>``."""
    return _Fail(_ERRNO_CODES.get(e.errno or 0, "io"), f"{what}: {e.strerror or e}")


def _field(doc: dict[str, Any], key: str, kind: type) -> Any:
    """``doc[key]`` if it has type ``kind`` (bool is not an int), else ``invalid_request``."""
    v = doc.get(key)
    if not isinstance(v, kind) or (kind is int and isinstance(v, bool)):
        raise _Fail("invalid_request", f"request field {key!r} is missing or not a {kind.__name__}")
    return v


def _one_element(raw: bytes) -> bool:
    """Whether ``raw`` is one path element: 1-255 bytes, not ``.`` or ``..``, no ``/`` or NUL (the whole host
    rule, README, "Names and the state directory")."""
    return 1 <= len(raw) <= 255 and raw not in (b".", b"..") and b"/" not in raw and b"\0" not in raw


def _name(doc: dict[str, Any], key: str = "name") -> str:
    """``doc[key]`` if it is a string of one path element (:func:`_one_element` of its UTF-8), else
    ``invalid_request``."""
    v = doc.get(key)
    try:
        raw = v.encode() if isinstance(v, str) else b""
    except UnicodeError:  # a lone surrogate escape
        raw = b""
    if not _one_element(raw):
        raise _Fail("invalid_request", f"{key} {v!r} is not one path element of 1-255 bytes")
    return str(v)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _exact(v: Any) -> Any:
    """``v`` with each byte that was not UTF-8 (a ``surrogateescape`` surrogate in ``sys.argv``,
    ``os.environ``, ``os.getcwd()``, a file name) as U+FFFD, recursively: what Go's JSON sends."""
    if isinstance(v, str):
        return v if v.isascii() else v.translate(_FFFD)
    if isinstance(v, list):
        return [_exact(x) for x in v]
    if isinstance(v, dict):
        return {_exact(k): _exact(x) for k, x in v.items()}
    return v


def _read_file(path: str | bytes, cap: int, flags: int = 0, regular: bool = False) -> bytes:
    """The first ``cap`` bytes of ``path``, opened ``O_RDONLY|O_NOFOLLOW|O_CLOEXEC|flags``; ``regular``:
    ``unsafe`` unless the open descriptor is a regular file. Raises :class:`_Fail`."""
    name = os.fsdecode(os.path.basename(path))
    try:
        fd = os.open(path, os.O_RDONLY | _O_FLAGS | flags)
    except OSError as e:
        raise _os_fail(f"open {name}", e) from None
    try:
        # A regular file's size (+1, to see its end) bounds the first read, so a small record never costs a
        # buffer of ``cap`` bytes; then read on to the end of the file or ``cap``, as it may have grown.
        total = len(first := os.read(fd, min(cap, _regular(fd, name) + 1 if regular else 1 << 20)))
        parts = [first]
        while parts[-1] and total < cap:
            parts.append(os.read(fd, min(cap - total, 1 << 20)))
            total += len(parts[-1])
        return first if len(parts) == 2 and not parts[1] else b"".join(parts)  # no copy for one read
    except OSError as e:
        raise _os_fail(f"read {name}", e) from None
    finally:
        os.close(fd)


def _regular(fd: int, name: str) -> int:
    """The size in bytes of ``fd`` if it is a regular file, else ``unsafe``. Raises ``OSError`` when it cannot be
    inspected."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise _Fail("unsafe", f"{name} is not a regular file (mode {stat.filemode(st.st_mode)})")
    return st.st_size


def _kind(mode: int, kinds: tuple[str, ...] = ("file", "dir", "symlink")) -> str:
    """The type of ``mode`` among ``kinds`` (of file, dir, symlink, fifo, socket, char), else ``other``."""
    tests = {"file": stat.S_ISREG, "dir": stat.S_ISDIR, "symlink": stat.S_ISLNK, "fifo": stat.S_ISFIFO,
             "socket": stat.S_ISSOCK, "char": stat.S_ISCHR}
    return next((k for k in kinds if tests[k](mode)), "other")


def _home() -> str:
    """``facts.home``: ``$HOME`` when absolute, else the password database's entry of the euid, else ``""``."""
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
    """``getcwd(3)`` (``os.getcwd()``, never ``$PWD``); ``""`` when it fails (a deleted working directory)."""
    try:
        return os.getcwd()
    except OSError:
        return ""


#: ``facts.cwd``: the working directory when the ``mcp_resume`` package was imported (its ``__init__`` imports
#: this module), before the server's own startup code runs, so a server that changes directory later (to its
#: install directory, say, or in a FastMCP lifespan that opens the store) still reports the directory it was
#: launched in, which is part of the default instance key and the base of a relative ``state_root``; ``""``
#: when ``getcwd`` failed then. The Go host reads it at package init (hostfuncs/README.md, ``mcp_resume_facts``).
_START_CWD = _cwd()


def _libc_sysctl(mib: list[int], size: int) -> bytes:
    """macOS ``sysctl(mib)`` into a ``size``-byte buffer: the bytes written. Raises ``OSError``. Never run by
    the Linux test suite (the ops answer ``unsupported`` there): kept minimal."""
    libc = ctypes.CDLL(None, use_errno=True)
    buf, n = ctypes.create_string_buffer(size), ctypes.c_size_t(size)
    if libc.sysctl((ctypes.c_int * len(mib))(*mib), len(mib), buf, ctypes.byref(n), None, 0) != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    return buf.raw[: n.value]


def _real_primitive(op: str, key: Any) -> dict[str, Any]:
    """``kill0``, ``exe`` (Linux), ``fstat``, ``peer`` (``SO_PEERCRED``), ``sysctl`` and ``procargs`` (macOS) on
    this system; ``ps`` is never offered (README, ``mcp_resume_inspect``). Raises :class:`_Fail`."""
    try:
        if op == "kill0":
            os.kill(int(key), 0)
            return {}
        if op == "exe" and sys.platform.startswith("linux"):
            st = os.stat(f"/proc/{key}/exe")  # follows the link to the program file
            return {"dev": str(st.st_dev), "ino": str(st.st_ino)}
        if op == "fstat":
            return {"type": _kind(os.fstat(key).st_mode, ("fifo", "socket", "char", "file", "dir"))}
        if op == "peer" and hasattr(socket, "SO_PEERCRED"):
            s = socket.socket(fileno=key)
            try:
                creds = s.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
            finally:
                s.detach()  # the fd stays open: it is the server's stdio
            return {"peer_pid": struct.unpack("3i", creds)[0]}
        if op in ("sysctl", "procargs") and sys.platform == "darwin":
            if op == "sysctl":  # CTL_KERN, KERN_PROC, KERN_PROC_PID
                data = _libc_sysctl([1, 14, 1, int(key)], 4096)
            else:  # CTL_KERN, KERN_ARGMAX; then KERN_PROCARGS2 (EINVAL: another user's process)
                try:
                    data = _libc_sysctl([1, 49, int(key)], struct.unpack("i", _libc_sysctl([1, 8], 4))[0])
                except OSError as e:
                    raise OSError(errno.EPERM if e.errno == errno.EINVAL else e.errno, e.strerror) from None
            if not data:
                raise _Fail("not_found", f"{op} {key}: no such process")
            return {"data": _b64(data)}
    except OSError as e:
        raise _os_fail(f"{op} {key}", e) from None
    raise _Fail("unsupported", f"{op}: not offered on this system")


def _bind_abstract(raw: bytes) -> list[socket.socket]:
    """Bind the lock's abstract Unix socket ``raw`` (1-107 bytes) in both forms (README, ``mcp_resume_lock``):
    padded to the whole ``sun_path`` first (Node's form), then unpadded; one address when they coincide (107
    bytes). Returns the bound close-on-exec sockets; raises ``OSError`` (``EADDRINUSE``: held elsewhere),
    leaving nothing bound."""
    socks: list[socket.socket] = []
    try:
        for addr in dict.fromkeys((b"\0" + raw + b"\0" * (_SUN_PATH_LEN - 1 - len(raw)), b"\0" + raw)):
            socks.append(socket.socket(socket.AF_UNIX, socket.SOCK_STREAM))
            socks[-1].bind(addr)
    except OSError:
        for sock in socks:
            sock.close()
        raise
    return socks


class HostFunctions:
    """The host functions of one store (Go ``primitives.Funcs``); thread-safe.

    ``logger`` receives ``mcp_resume_log``'s lines. State: the store's state directory (:meth:`set_state_dir`,
    after ``open`` or ``handles_open`` succeeds; the file functions answer ``invalid_request`` before), the locks
    of ``mcp_resume_lock`` until ``mcp_resume_unlock`` or :meth:`close`, the stdio copies of :meth:`keep_stdio`, and
    ``mcp_resume_eval``'s Redis clients: ``evals`` when given (a :class:`~mcp_resume.HandleStore` shares one
    :class:`~mcp_resume._eval.EvalClients` among its plugin instances and closes it itself), else this object's own,
    closed by :meth:`close`. The conformance
    runner substitutes :meth:`facts`, :meth:`os_name`, :attr:`proc_root` and :meth:`_primitive` in a subclass
    (the pinned system, test code)."""

    #: Where the /proc ops read (README, ``mcp_resume_inspect``).
    proc_root = "/proc"

    def __init__(self, logger: logging.Logger | logging.LoggerAdapter[Any], evals: EvalClients | None = None) -> None:
        self.logger = logger
        # mcp_resume_eval's clients: the store's own (a HandleStore shares one among its plugin instances and
        # closes it itself), else this object's, closed by close().
        self._evals, self._own_evals = (evals, False) if evals is not None else (EvalClients(), True)
        self._state_dir = ""
        self._mu = threading.Lock()
        self._locks: dict[str, tuple[int, list[socket.socket]]] = {}
        self._stdio: list[int] | None = None
        self._closed = False

    @property
    def state_dir(self) -> str:
        """The state directory the file functions act in, ``""`` before :meth:`set_state_dir`."""
        return self._state_dir

    def set_state_dir(self, state_dir: str) -> None:
        """Fix ``state_dir`` (the ``state_dir`` of a successful ``open``, or of ``handles_open`` for a handle
        store) as this store's state directory for good (README, "Names and the state directory"); ``""`` leaves none. Raises ``ValueError`` when another one is fixed."""
        with self._mu:
            if self._state_dir and state_dir != self._state_dir:
                raise ValueError(f"state directory already fixed at {self._state_dir}, not {state_dir}")
            self._state_dir = state_dir

    def os_name(self) -> str:
        """``facts.os``: ``linux``, ``darwin`` or ``sys.platform`` as is."""
        return "linux" if sys.platform.startswith("linux") else sys.platform

    def facts(self) -> dict[str, Any]:
        """``mcp_resume_facts``: os, pid, euid, home, xdg_state_home, cwd (the working directory at import of the
        package, :data:`_START_CWD`), args, every environment variable, runtime and ``stdio_fds`` while
        :meth:`keep_stdio`'s copies are held; invalid bytes as U+FFFD. Raises nothing."""
        facts = {"os": self.os_name(), "pid": os.getpid(), "euid": os.geteuid() if hasattr(os, "geteuid") else -1,
                 "home": _home(), "xdg_state_home": os.environ.get("XDG_STATE_HOME", ""), "cwd": _START_CWD,
                 "args": sys.argv[1:], "env": dict(os.environ), "runtime": "python"}
        with self._mu:
            if self._stdio is not None:
                facts["stdio_fds"] = list(self._stdio)
        return dict(_exact(facts))

    def keep_stdio(self) -> None:
        """Take close-on-exec copies (fd 3 or above) of fds 0 and 1 as they were at import of the package (the
        copies :func:`mcp_resume._fds.keep_stdio_at_import` holds until a store has resolved its host; else as
        they are now) and report them as
        ``facts.stdio_fds`` until :meth:`release_stdio`: the MCP SDK points fds 0 and 1 at ``/dev/null`` while
        it serves, maybe before the plugin's stdio check (README, ``mcp_resume_facts``). A closed fd is
        reported as itself. Linux only; raises nothing."""
        if self.os_name() != "linux" or self._stdio is not None:
            return
        copies = []
        for fd in _fds.stdio_at_import() or (0, 1):  # fds 0 and 1 as at import of the package, else as now
            try:
                copies.append(fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3))
            except OSError:
                copies.append(fd)
        with self._mu:
            self._stdio = copies

    def release_stdio(self) -> None:
        """Close :meth:`keep_stdio`'s copies (the host is resolved), so the host sees end-of-file on the server's
        stdout as soon as fd 1 closes. Idempotent."""
        with self._mu:
            copies, self._stdio = self._stdio, None
        if copies is not None:  # a resume store has resolved its host: the import-time copies are done too
            _fds.release_stdio_at_import()
        for fd in copies or ():
            if fd > 2:
                with contextlib.suppress(OSError):
                    os.close(fd)

    def close(self) -> None:
        """Release every lock (its descriptor and sockets; the files stay), the stdio copies and the Redis clients
        this object owns; every call answers ``invalid_request`` from now on. Idempotent."""
        self.release_stdio()
        with self._mu:
            self._closed = True
            held, self._locks = list(self._locks.values()), {}
        for fd, socks in held:
            with contextlib.suppress(OSError):
                os.close(fd)
            for sock in socks:
                sock.close()
        if self._own_evals:
            self._evals.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()

    def call(self, fn: str, req: bytes) -> bytes:
        """Serve ``fn`` (one of :data:`FUNCTIONS`) with ``req`` (UTF-8 JSON): the JSON answer, padded with spaces
        to a multiple of 8 bytes; ``mcp_resume_crypto`` takes and answers binary (:meth:`crypto`), and so does
        ``mcp_resume_eval`` for a request whose first byte is ``0x01`` (:meth:`eval_binary`). Never raises: a
        malformed request or an unknown function answers ``invalid_request``, an unexpected failure ``io``."""
        if fn == _CRYPTO:
            return self.crypto(req)
        if fn == _EVAL and req[:1] == _EVAL_BINARY:
            return self.eval_binary(req)
        try:
            if self._closed:
                raise _Fail("invalid_request", f"{fn}: this store is closed")
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
            resp = _Fail("io", f"{fn}: unexpected {type(e).__name__}: {e}").error
        out = json.dumps(resp, separators=(",", ":")).encode()
        return out + b" " * (-len(out) % 8)

    def crypto(self, req: bytes) -> bytes:
        """``mcp_resume_crypto`` (README, "mcp_resume_crypto"; :func:`mcp_resume._crypto.serve`): the binary
        answer, status byte first (``0x00`` success, ``0x01`` the seal does not open), or the JSON error object,
        unpadded: ``invalid_request`` for a malformed request or a closed store, the codes of
        ``mcp_resume_read`` / ``mcp_resume_write`` for ``read_open`` / ``seal_write`` (:meth:`read_named`,
        :meth:`write_named`), ``io`` for anything unexpected. Never raises."""
        try:
            if self._closed:
                raise _Fail("invalid_request", f"{_CRYPTO}: this store is closed")
            return _crypto.serve(req, self.read_named, self.write_named)
        except _crypto.Malformed as e:
            err = _Fail("invalid_request", f"{_CRYPTO}: {e}").error
        except _Fail as f:
            err = f.error
        except Exception as e:  # noqa: BLE001 - the contract forbids raising
            err = _Fail("io", f"{_CRYPTO}: unexpected {type(e).__name__}: {e}").error
        return json.dumps(err, separators=(",", ":")).encode()

    def eval_binary(self, req: bytes) -> bytes:
        """``mcp_resume_eval`` in the binary form (README, "mcp_resume_eval", "The binary form";
        :meth:`mcp_resume._eval.EvalClients.run_binary`) on this store's clients, the ones the JSON form uses:
        ``0x00`` and the binary reply (strings as the exact bytes the server sent), or the JSON error object,
        unpadded, with the codes of the JSON form (``invalid_request`` for a request that breaks the layout or
        a rule, before any I/O, or a closed store). Works without a state directory. Never raises."""
        if self._closed:
            return json.dumps(_Fail("invalid_request", f"{_EVAL}: this store is closed").error,
                              separators=(",", ":")).encode()
        return self._evals.run_binary(req)

    def _facts(self, _doc: dict[str, Any]) -> dict[str, Any]:
        return self.facts()

    def _inspect(self, doc: dict[str, Any]) -> dict[str, Any]:
        """1-64 ``ops`` answered in order; a bad op answers ``invalid_request`` in its place."""
        ops = doc.get("ops")
        if not isinstance(ops, list) or not 1 <= len(ops) <= _MAX_INSPECT_OPS:
            raise _Fail("invalid_request", f"ops must be a list of 1-{_MAX_INSPECT_OPS} operations")
        results = []
        for op in ops:
            try:
                results.append(self._op(op if isinstance(op, dict) else {}))
            except _Fail as f:
                results.append(f.error)
            except Exception as e:  # noqa: BLE001
                results.append(_Fail("io", f"inspect: unexpected {type(e).__name__}: {e}").error)
        return {"results": results}

    def _op(self, op: dict[str, Any]) -> dict[str, Any]:
        """One inspect op: the request checked (``pid``: ``"self"`` where allowed or digits without a leading
        zero up to 2147483647; ``fd``: an integer 0..2147483647; ``ns``, ``table``: a name of the fixed list),
        then answered. A member of the wrong JSON type is ``invalid_request`` whatever the op, as the Go host's
        typed decoding answers. Raises :class:`_Fail`."""
        for key, want in _OP_MEMBERS.items():
            v = op.get(key)
            if v is not None and (not isinstance(v, want) or isinstance(v, bool)
                                  or (isinstance(v, list) and not all(isinstance(t, str) for t in v))):
                raise _Fail("invalid_request", f"inspect: member {key!r} of the operation is not a {want.__name__}")
        name = op.get("op")
        if name in _PRIMITIVES:
            return self._primitive(str(name), _pid(op, self_ok=False) if _PRIMITIVES[name] == "pid" else _fd(op))
        if name == "fds":
            kind, path = "fds", _pid(op, self_ok=True)
        elif name in _PROC_OPS:
            kind, path = _PROC_OPS[name]
            path = path.format(pid=_pid(op, self_ok=True) if "{pid}" in path else "",
                               fd=_fd(op) if "{fd}" in path else "",
                               ns=_one_of(op, "ns", _NAMESPACES) if "{ns}" in path else "",
                               table=_one_of(op, "table", _NET_TABLES) if "{table}" in path else "")
        else:
            raise _Fail("invalid_request", f"unknown inspect operation {name!r}")
        if self.os_name() != "linux":
            raise _Fail("unsupported", f"{name}: no /proc on this system")
        full = f"{self.proc_root}/{path}"
        if kind == "fds":
            return self._fds(full, op.get("targets"))
        if kind == "data":
            return {"data": _b64(_read_file(full, _PROC_TABLE_READ_CAP if name in _PROC_TABLE_OPS else _PROC_READ_CAP))}
        try:
            return {"target": _exact(os.readlink(full))}
        except OSError as e:
            raise _os_fail(f"readlink /proc/{path}", e) from None

    def _primitive(self, op: str, key: Any) -> dict[str, Any]:
        """``kill0``, ``exe``, ``fstat``, ``peer``, ``sysctl``, ``procargs``, ``ps`` of ``key`` (pid digits or an
        fd) on this system. Raises :class:`_Fail`."""
        return _real_primitive(op, key)

    @staticmethod
    def _fds(base: str, targets: Any) -> dict[str, Any]:
        """``<base>/fd`` sorted, each fd with its link target and ``<base>/fdinfo/<n>``'s octal ``flags``
        (-1 if unreadable); ``targets``: only those targets; an fd closed meanwhile is skipped."""
        if targets is not None and not (isinstance(targets, list) and all(isinstance(t, str) for t in targets)):
            raise _Fail("invalid_request", "fds: targets must be a list of strings")
        try:
            names = os.listdir(base + "/fd")
        except OSError as e:
            raise _os_fail("fds", e) from None
        out = []
        for n in sorted(int(n) for n in names if n.isdigit()):
            try:
                target = _exact(os.readlink(f"{base}/fd/{n}"))
            except OSError as e:
                if e.errno in (errno.ENOENT, errno.ESRCH):
                    continue
                raise _os_fail(f"fds: fd {n}", e) from None
            if targets is None or target in targets:
                try:
                    m = re.search(rb"^flags:\s*([0-7]+)", _read_file(f"{base}/fdinfo/{n}", _PROC_READ_CAP), re.M)
                except _Fail:
                    m = None
                out.append({"fd": n, "target": target, "flags": int(m.group(1), 8) if m else -1})
        return {"fds": out}

    def _prepare_dir(self, doc: dict[str, Any]) -> dict[str, Any]:
        """``stat`` (lstat, or stat with ``follow``: type, uid, ``st_mode & 0o7777``) or ``mkdir`` (0700; only
        the state directory or one of its ancestors) of an absolute, clean ``path``."""
        op, path = _field(doc, "op", str), _field(doc, "path", str)
        if not path.startswith("/") or path.startswith("//") or os.path.normpath(path) != path or "\0" in path:
            raise _Fail("invalid_request", f"path {path!r} is not an absolute, clean path")
        if op == "stat":
            follow = doc.get("follow")
            if follow is not None and not isinstance(follow, bool):
                raise _Fail("invalid_request", "request field 'follow' is not a bool")
            try:
                st = os.stat(path) if follow else os.lstat(path)
            except OSError as e:
                raise _os_fail(f"stat {path}", e) from None
            return {"type": _kind(st.st_mode), "uid": st.st_uid, "mode": st.st_mode & 0o7777}
        if op != "mkdir":
            raise _Fail("invalid_request", f"unknown mcp_resume_prepare_dir op {op!r}: want stat or mkdir")
        sd = self._state_dir
        if not sd or not (path == sd or path == "/" or sd.startswith(path + "/")):
            raise _Fail("invalid_request", f"mkdir {path}: not the state directory {sd or '(none yet)'} or an ancestor")
        try:
            os.mkdir(path, 0o700)
        except OSError as e:
            raise _os_fail(f"mkdir {path}", e) from None
        return {}

    def _dir(self) -> str:
        """The state directory; ``invalid_request`` before :meth:`set_state_dir`."""
        if not self._state_dir:
            raise _Fail("invalid_request", "no state directory: open has not succeeded")
        return self._state_dir

    def _read(self, doc: dict[str, Any]) -> dict[str, Any]:
        """``mcp_resume_read``: :meth:`read_named` of ``name`` and ``limit``, as base64."""
        name = _name(doc)
        return {"data": _b64(self.read_named(name.encode(), _field(doc, "limit", int)))}

    def read_named(self, name: bytes, limit: int) -> bytes:
        """The first ``min(size, limit)`` bytes of the state directory's regular file ``name`` (one path element,
        :func:`_one_element`; ``limit`` 1..8388608), opened ``O_RDONLY|O_NOFOLLOW|O_NONBLOCK|O_CLOEXEC`` (a FIFO
        never blocks). Serves ``mcp_resume_read`` and ``mcp_resume_crypto``'s ``read_open``. Raises
        :class:`_Fail`: ``invalid_request`` (the name, the limit, no state directory), ``not_found``, ``unsafe``
        (a symlink, not a regular file), and the other errno codes."""
        if not _one_element(name):
            raise _Fail("invalid_request", f"name {name!r} is not one path element of 1-255 bytes")
        if not 1 <= limit <= _MAX_READ_LIMIT:
            raise _Fail("invalid_request", f"limit {limit} is outside 1..{_MAX_READ_LIMIT}")
        return _read_file(os.fsencode(self._dir()) + b"/" + name, limit, os.O_NONBLOCK, regular=True)

    def _write(self, doc: dict[str, Any]) -> dict[str, Any]:
        """``mcp_resume_write``: :meth:`write_named` of ``name``, ``temp`` and the base64 ``data``."""
        name, temp = _name(doc), _name(doc, "temp")
        try:
            data = base64.b64decode(_field(doc, "data", str), validate=True)
        except (binascii.Error, ValueError) as e:
            raise _Fail("invalid_request", f"request field 'data' is not standard base64: {e}") from None
        self.write_named(name.encode(), temp.encode(), data)
        return {}

    def write_named(self, name: bytes, temp: bytes, data: bytes) -> None:
        """Write ``data`` to the state directory's file ``name`` through ``temp`` (both one path element,
        :func:`_one_element`): create ``temp`` (``O_EXCL|O_NOFOLLOW``, 0600), write all of ``data``, close,
        rename it over ``name``; on a failure after the create, unlink ``temp``. No fsync. Serves
        ``mcp_resume_write`` and ``mcp_resume_crypto``'s ``seal_write``. Raises :class:`_Fail`:
        ``invalid_request`` (a name, no state directory), ``exists`` (``temp`` is there; nothing removed),
        ``unsafe`` (a directory at ``name``), and the other errno codes."""
        for key, raw in (("name", name), ("temp", temp)):
            if not _one_element(raw):
                raise _Fail("invalid_request", f"{key} {raw!r} is not one path element of 1-255 bytes")
        d = os.fsencode(self._dir()) + b"/"
        path, tmp = d + name, d + temp
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_FLAGS, 0o600)
        except OSError as e:
            raise _os_fail(f"create {os.fsdecode(temp)}", e) from None
        try:
            with os.fdopen(fd, "wb") as f:  # closes fd
                f.write(data)
            os.rename(tmp, path)
        except BaseException as e:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            if isinstance(e, OSError):
                raise _os_fail(f"write {os.fsdecode(name)}", e) from None
            raise
        return None

    def _remove(self, doc: dict[str, Any]) -> dict[str, Any]:
        """``unlink`` (a directory answers ``unsafe``)."""
        name = _name(doc)
        try:
            os.unlink(os.path.join(self._dir(), name))
        except OSError as e:
            raise _os_fail(f"remove {name}", e) from None
        return {}

    def _list(self, _doc: dict[str, Any]) -> dict[str, Any]:
        """Every entry of the state directory with its ``lstat`` type and whole-second age (floor); an entry
        whose lstat fails is skipped. Any order."""
        now, files = time.time(), []
        try:
            with os.scandir(self._dir()) as it:
                for e in it:
                    with contextlib.suppress(OSError):
                        st = e.stat(follow_symlinks=False)
                        age = math.floor(now - st.st_mtime)
                        files.append({"name": _exact(e.name), "type": _kind(st.st_mode), "age_seconds": age})
        except OSError as e:
            raise _os_fail("list state directory", e) from None
        return {"files": files}

    def _lock(self, doc: dict[str, Any]) -> dict[str, Any]:
        """Hold the lock ``name`` until :meth:`_unlock` or :meth:`close` (README, ``mcp_resume_lock``): on Linux
        first bind the abstract ``socket`` (both forms), then open the file (created 0600, ``O_NONBLOCK``;
        ``unsafe`` unless regular) and ``flock(LOCK_EX|LOCK_NB)`` it. ``busy`` from either releases the other.
        Held already: ``{}``. ``wait_ms`` (integer 0..10000, default 0): while the answer would be ``busy``, try
        again after 0.2 ms, doubling to at most 5 ms, until ``wait_ms`` milliseconds have passed, then answer
        ``busy``; other errors answer at once. No other call of this store waits for the sleeps."""
        name, raw = _name(doc), _socket(doc)
        wait = doc.get("wait_ms")
        if wait is None:
            wait = 0
        elif type(wait) is not int or not 0 <= wait <= _MAX_LOCK_WAIT_MS:
            raise _Fail("invalid_request", f"request field 'wait_ms' must be an integer 0..{_MAX_LOCK_WAIT_MS}, "
                        f"not {wait!r}")
        deadline = time.monotonic() + wait / 1000
        sleep = _LOCK_SLEEP_FIRST
        while True:
            try:
                return self._try_lock(name, raw)
            except _Fail as f:
                left = deadline - time.monotonic()
                if f.error["error"]["code"] != "busy" or left <= 0:
                    raise
            time.sleep(min(sleep, left))
            sleep = min(sleep * 2, _LOCK_SLEEP_MAX)

    def _try_lock(self, name: str, raw: bytes) -> dict[str, Any]:
        """One try of :meth:`_lock`, under the store's mutex. Raises :class:`_Fail` (``busy``: held elsewhere)."""
        with self._mu:
            if self._closed:
                raise _Fail("invalid_request", "mcp_resume_lock: this store is closed")
            if name in self._locks:
                return {}
            path = os.path.join(self._dir(), name)
            socks: list[socket.socket] = []
            fd = -1
            try:
                if raw and sys.platform.startswith("linux"):
                    socks = _bind_abstract(raw)
                fd = os.open(path, os.O_RDONLY | os.O_CREAT | os.O_NONBLOCK | _O_FLAGS, 0o600)
                _regular(fd, name)
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BaseException as e:
                for sock in socks:
                    sock.close()
                if fd >= 0:
                    os.close(fd)
                if isinstance(e, OSError):
                    busy = e.errno in (errno.EADDRINUSE, errno.EWOULDBLOCK)
                    raise (_Fail("busy", f"{name} is held by another server instance") if busy
                           else _os_fail(f"lock {name}", e)) from None
                raise
            self._locks[name] = (fd, socks)
        return {}

    def _unlock(self, doc: dict[str, Any]) -> dict[str, Any]:
        """Release the lock ``name`` this store holds (README, ``mcp_resume_unlock``; ``socket`` checked as for
        ``mcp_resume_lock``): close its descriptor (which drops the flock) and its sockets. Never deletes the lock
        file. Not held: ``{}`` (idempotent)."""
        name = _name(doc)
        _socket(doc)
        self._dir()
        with self._mu:
            fd, socks = self._locks.pop(name, (-1, []))
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)
        for sock in socks:
            sock.close()
        return {}

    def _eval(self, doc: dict[str, Any]) -> dict[str, Any]:
        """``mcp_resume_eval`` on this store's clients (:meth:`mcp_resume._eval.EvalClients.run`): the request
        checked before any I/O, one EVALSHA or EVAL, the reply as JSON or an error (``invalid_request``,
        ``noscript``, ``script``, ``auth``, ``timeout``, ``unavailable``). Works without a state directory."""
        return self._evals.run(doc)

    def _log(self, doc: dict[str, Any]) -> dict[str, Any]:
        """``message`` at ``level`` (debug, info, warn, error) with ``extra={"event", "detail"}``, never to stdout.
        A detail is also printed, as the Go and TypeScript loggers print it: the record's ``msg`` is
        ``message`` (``%`` escaped) + ``": %s"``, its ``args`` ``(detail,)``. A broken handler is ignored."""
        level, event, message = (_field(doc, k, str) for k in ("level", "event", "message"))
        if level not in _LEVELS:
            raise _Fail("invalid_request", f"unknown log level {level!r}: want debug, info, warn or error")
        detail = doc.get("detail")
        if detail is not None and not isinstance(detail, str):
            raise _Fail("invalid_request", "request field 'detail' is not a string")
        extra = {"event": event, "detail": detail or ""}
        with contextlib.suppress(Exception):
            if detail:
                self.logger.log(_LEVELS[level], message.replace("%", "%%") + ": %s", detail, extra=extra)
            else:
                self.logger.log(_LEVELS[level], message, extra=extra)
        return {}


def _socket(doc: dict[str, Any]) -> bytes:
    """The lock request's ``socket`` as bytes: absent, ``null`` or ``""`` is ``b""`` (no socket); otherwise a string
    of 1-107 bytes without NUL (the room of an abstract address), else ``invalid_request`` (README,
    ``mcp_resume_lock``), on every system."""
    v = doc.get("socket")
    if v is None or v == "":
        return b""
    raw = v.encode("utf-8", "surrogatepass") if isinstance(v, str) else b""
    if not (raw and len(raw) < _SUN_PATH_LEN and b"\0" not in raw):
        raise _Fail("invalid_request", "request field 'socket' is not a string of 1-107 bytes without NUL")
    return raw


def _pid(op: dict[str, Any], self_ok: bool) -> str:
    """The op's ``pid``: ``"self"`` (if ``self_ok``) or decimal digits, 1..2147483647; else ``invalid_request``."""
    p = op.get("pid")
    if isinstance(p, str) and ((self_ok and p == "self") or (_DIGITS.fullmatch(p) and int(p) <= _INT32_MAX)):
        return p
    want = "'self' or " if self_ok else ""
    raise _Fail("invalid_request", f"{op.get('op')}: pid must be {want}decimal digits 1..2147483647, not {p!r}")


def _one_of(op: dict[str, Any], key: str, allowed: tuple[str, ...]) -> str:
    """The op's ``key`` (``ns`` or ``table``) if it is one of ``allowed``; missing, of another type or outside the
    list is ``invalid_request`` (README, ``mcp_resume_inspect``): no request names a path of its own."""
    v = op.get(key)
    if not isinstance(v, str) or v not in allowed:
        raise _Fail("invalid_request", f"{op.get('op')}: {key} must be one of {', '.join(allowed)}, not {v!r}")
    return v


def _fd(op: dict[str, Any]) -> int:
    """The op's ``fd``: an integer 0..2147483647; else ``invalid_request``."""
    n = op.get("fd")
    if type(n) is not int or not 0 <= n <= _INT32_MAX:
        raise _Fail("invalid_request", f"{op.get('op')}: fd must be an integer 0..2147483647, not {n!r}")
    return n

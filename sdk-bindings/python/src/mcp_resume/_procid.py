"""Identity of the MCP host process: a faithful port of the Go package ``procid``.

The token file is named after the MCP host that launched this stdio server
(spec 000, "Token File Naming Strategy": ``token-<parent_pid>-<parent_start_time>``).
This module finds that host and its start time exactly as ``procid`` does
(``procid/doc.go`` is the reference; keep the two in step):

* Linux: ``/proc/<pid>/stat`` parsed after the **last** ``)`` (a process name
  may hold spaces and parentheses), field 22 ``starttime`` in clock ticks;
  ``start_time = "<ticks>.<boot_id without dashes>.<pid namespace inode>"``,
  the inode read from the link ``/proc/<pid>/ns/pid`` (``"pid:[4026531836]"``).
  ``/proc`` is used only once ``/proc/self`` names this process: otherwise it
  belongs to another PID namespace (``unshare -p`` without ``--mount-proc``)
  and ``/proc/<pid>`` names other processes (:class:`NamespaceError`).
* macOS: ``sysctl kern.proc.pid.<pid>`` (``struct kinfo_proc``) decoded at the
  offsets of ``procid/kinfo.go``; ``start_time = "<tv_sec>.<tv_usec, 6 digits>"``.
* elsewhere: :class:`UnsupportedError`.

:func:`alive` (Go ``procid.Alive``) tells whether a recorded ``(pid,
start_time)`` still names a running process: how a stale token or lock file is
recognised (spec 000, "PID Reuse").

The walk skips **launchers** (``sh -c``, ``env``, ``uv``, ``npx``…), re-reads
each child after reading its parent to detect a reused pid, and refuses pid
0/1 and reapers such as ``dumb-init``. Every error means the same to a
caller: the host cannot be identified with certainty, so session resume is off
(spec 000, "Parent Process Information Unavailable").

**Stdio check** (Linux; ``docs/RELIABILITY.md`` fault 11c, Go
``procid/stdio.go``): when the host of the *current* process is resolved
(:func:`host_identity`, :func:`host`), the host must also hold the other end
of this process's stdin or stdout. An MCP host always does: it created the
pipes or socket pair it speaks MCP through. A subreaper that adopted an
orphaned server does not, and :class:`AdoptedError` turns resume off.
:func:`host_of` stays a pure walk.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import re
import socket
import stat
import struct
import sys
from typing import NamedTuple, Protocol
from collections.abc import Callable, Iterable, Sequence

_log = logging.getLogger("mcp_resume")

__all__ = [
    "DEFAULT_LAUNCHERS",
    "LAUNCHERS_ENV",
    "MAX_DEPTH",
    "REAPERS",
    "Identity",
    "Process",
    "ProcIdError",
    "UnsupportedError",
    "NotFoundError",
    "ReaperError",
    "RaceError",
    "NoBootIDError",
    "TooDeepError",
    "MalformedError",
    "NamespaceError",
    "AdoptedError",
    "FdInfo",
    "StdioProbe",
    "FD_OTHER",
    "FD_CLOSED",
    "FD_PIPE",
    "FD_SOCKET",
    "NO_SUBREAPERS",
    "LinuxSource",
    "hidden_pid",
    "DarwinSource",
    "alive",
    "host",
    "host_identity",
    "host_of",
    "check_stdio",
    "resolve",
    "launcher_set",
    "is_launcher",
    "is_reaper",
    "parse_stat",
    "parse_boot_id",
    "decode_kinfo",
    "decode_procargs",
    "start_time_matches",
]

# --- constants, identical to procid/launcher.go and procid/procid.go ---------

#: Process names always treated as launchers (procid.DefaultLaunchers). The
#: shells among them count only when their arguments show they run a command.
DEFAULT_LAUNCHERS: tuple[str, ...] = (
    # Shells, as used by "sh -c", spawn(..., {shell: true}) and wrapper scripts.
    "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish",
    # Command wrappers that exec or wait for one command.
    "env", "nice", "nohup", "setsid", "stdbuf", "time", "timeout", "ionice", "taskset", "chrt",
    # Python runners.
    "uv", "uvx", "pipx", "poetry", "hatch", "pdm",
    # JavaScript runners.
    "npm", "npx", "pnpm", "pnpx", "yarn", "bunx",
)

_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish"})

_NODE_TOOLS = frozenset({"npm", "npx", "npm-cli", "npx-cli", "pnpm", "pnpx", "yarn", "yarnpkg"})

#: Init systems, supervisors and subreapers: never taken for a host (procid.reapers).
REAPERS: tuple[str, ...] = (
    "init", "systemd", "launchd", "kthreadd",
    "tini", "docker-init", "dumb-init", "catatonit",
    "s6-svscan", "s6-supervise", "runit", "runsv", "runsvdir", "openrc-init",
    "containerd-shim", "containerd-shim-runc-v2", "conmon",
)

#: The most ancestors the walk reads, the host included (procid.MaxDepth).
MAX_DEPTH = 16

#: Environment variable with extra launcher names, comma-separated (procid.LaunchersEnv).
LAUNCHERS_ENV = "MCP_RESUME_LAUNCHERS"

# --- errors (procid's sentinel errors) ---------------------------------------


class ProcIdError(Exception):
    """The MCP host cannot be identified with certainty; session resume is off.

    Spec 000, "Parent Process Information Unavailable". Subclasses mirror the
    sentinel errors of Go ``procid``.
    """


class UnsupportedError(ProcIdError):
    """The operating system is neither Linux nor macOS (spec 000, "Platform Support")."""


class NotFoundError(ProcIdError):
    """No process with the requested pid exists, or the pid is not positive."""


class ReaperError(ProcIdError):
    """The host would be pid 0 or 1 or an init/reaper process shared by unrelated processes."""


class RaceError(ProcIdError):
    """The process tree changed while it was being read (a retry may succeed)."""


class NoBootIDError(ProcIdError):
    """Linux ``/proc/sys/kernel/random/boot_id`` is missing, unreadable or not a UUID."""


class TooDeepError(ProcIdError):
    """More than :data:`MAX_DEPTH` ancestors would have to be walked past launchers."""


class MalformedError(ProcIdError):
    """The kernel's description of a process cannot be parsed."""


class NamespaceError(ProcIdError):
    """Linux: the PID namespace cannot be verified (procid.ErrNamespace).

    ``/proc`` belongs to another PID namespace than this process (so
    ``/proc/<pid>`` would name other processes), or a process's
    ``/proc/<pid>/ns/pid`` cannot be read. Also raised by :func:`alive` for a
    start time recorded in another PID namespace, which cannot be checked.
    """


class AdoptedError(ProcIdError):
    """Linux: the resolved host provably does not hold the other end of the server's stdio (procid.ErrAdopted).

    Raised by :func:`host_identity`, :func:`host` and :func:`check_stdio`
    when neither stdin nor stdout is verified and at least one is disproved:
    a pipe the host does not hold, or a socket whose peer is another process.
    The server was probably orphaned and adopted by a subreaper that is not
    on the reaper list, or a launcher passed its stdio through. Source:
    ``docs/RELIABILITY.md`` fault 11c; like every :class:`ProcIdError` it
    means session resume is off (spec 000, "Parent Process Information
    Unavailable").
    """


# --- data ---------------------------------------------------------------------


class Process(NamedTuple):
    """One process as the kernel describes it (procid.Process).

    Attributes: ``pid`` and ``ppid`` (ints; ``ppid`` 0 outside this pid
    namespace), ``name`` (Linux ``comm``, at most 15 bytes; macOS ``p_comm``,
    at most 16), ``args`` (argument vector, or ``None`` when unreadable or
    empty), ``start_time`` (opaque string, see the module docstring).
    """

    pid: int
    ppid: int
    name: str
    args: tuple[str, ...] | None
    start_time: str


class Identity(NamedTuple):
    """The resolved MCP host (procid.Identity).

    Attributes: ``pid`` (int) and ``start_time`` (str) of the host; ``chain``,
    the processes walked, nearest first, the host last (never empty);
    ``stdio`` (str), how the stdio check went, for logs: ``"verified: ..."``
    or ``"not checked: ..."`` from :func:`host_identity` /
    :func:`check_stdio`, ``""`` from :func:`host_of`, which does not check
    (``docs/RELIABILITY.md`` fault 11c).
    """

    pid: int
    start_time: str
    chain: tuple[Process, ...]
    stdio: str = ""


class Source(Protocol):
    """Reads processes from one kernel interface (procid.source)."""

    def lookup(self, pid: int) -> Process:
        """Describe ``pid``; raise :class:`NotFoundError` when it does not exist."""
        ...


# --- Go helpers ----------------------------------------------------------------

_DECIMAL = re.compile(rb"[+-]?[0-9]+")
_UNSIGNED = re.compile(rb"[0-9]+")


def _go_atoi(b: bytes) -> int | None:
    """strconv.Atoi on bytes: optional sign, ASCII digits, int64 range; else None."""
    if not _DECIMAL.fullmatch(b):
        return None
    n = int(b)
    return n if -(1 << 63) <= n < (1 << 63) else None


def _go_parse_uint64(b: bytes) -> int | None:
    """strconv.ParseUint(b, 10, 64): ASCII digits only, uint64 range; else None."""
    if not _UNSIGNED.fullmatch(b):
        return None
    n = int(b)
    return n if n < (1 << 64) else None


def _go_base(p: str) -> str:
    """path.Base from Go: last element after stripping trailing slashes; "" -> "."."""
    if p == "":
        return "."
    p = p.rstrip("/")
    if p == "":
        return "/"
    i = p.rfind("/")
    return p[i + 1:] if i >= 0 else p


def _nbytes(s: str) -> int:
    """Length of ``s`` in bytes as the kernel stored it (names decode with surrogateescape)."""
    return len(s.encode("utf-8", "surrogateescape"))


def _truncate(data: bytes) -> bytes:
    return data[:64]


# --- launchers and reapers (procid/launcher.go) ----------------------------------


def launcher_set(extra: Iterable[str] | None = None, env: str | None = None) -> frozenset[str]:
    """Return :data:`DEFAULT_LAUNCHERS` plus ``extra`` plus the comma-separated names in ``env``.

    Inputs: ``extra`` (names, may be ``None``), ``env`` (the value of
    ``MCP_RESUME_LAUNCHERS``; ``None`` reads the environment). Spaces around
    names and empty names are ignored; nothing can remove a default. Output:
    a frozenset of names. Raises nothing.
    """
    if env is None:
        env = os.environ.get(LAUNCHERS_ENV, "")
    names = set(DEFAULT_LAUNCHERS)
    for n in extra or ():
        n = n.strip()
        if n:
            names.add(n)
    for n in env.split(","):
        n = n.strip()
        if n:
            names.add(n)
    return frozenset(names)


def _is_npm_exec_title(s: str) -> bool:
    return s in ("npm exec", "npm x") or s.startswith("npm exec ") or s.startswith("npm x ")


def _runs_command(args: Sequence[str] | None) -> bool:
    """Whether a shell with ``args`` runs a command (-c cluster, --command, or an operand)."""
    if args is None or len(args) < 2:
        return False
    for a in args[1:]:
        if a == "--command" or a.startswith("--command="):
            return True
        if a in ("-", "--") or a.startswith("--"):
            continue
        if a.startswith("-") or a.startswith("+"):
            if "c" in a[1:]:
                return True
            continue
        return True
    return False


def _name_matches(name: str, want: str) -> bool:
    """Kernel names are truncated (Linux 15 bytes, macOS 16): a long name matches any longer ``want`` it prefixes."""
    if name == want:
        return True
    return _nbytes(name) >= 15 and want.startswith(name)


def is_launcher(p: Process, names: frozenset[str] | None = None) -> bool:
    """Whether ``p`` only launches the server, under launcher set ``names``.

    Inputs: a :class:`Process`; ``names`` from :func:`launcher_set` (default:
    the defaults plus ``MCP_RESUME_LAUNCHERS``). Output: bool. The rules are
    procid's (doc.go, "Launchers"): a listed name that is not a shell; a shell
    that runs a command; npm's ``npm exec``/``npm x`` title; node running a
    package manager; ``bun x``.
    """
    if names is None:
        names = launcher_set()
    if _is_npm_exec_title(p.name):
        return True
    arg0 = ""
    args = p.args or ()
    if len(args) > 0:
        arg0 = args[0]
        if _is_npm_exec_title(arg0):
            return True
        arg0 = _go_base(arg0)
    if len(args) > 1:
        if arg0 in ("node", "nodejs"):
            tool = _go_base(args[1])
            for ext in (".js", ".cjs", ".mjs"):
                if tool.endswith(ext):
                    tool = tool[: -len(ext)]
            if tool in _NODE_TOOLS:
                return True
        elif arg0 == "bun" and args[1] == "x":
            return True
    for name in names:
        if not _name_matches(p.name, name) and arg0 != name:
            continue
        if name not in _SHELLS or _runs_command(p.args):
            return True
    return False


def is_reaper(p: Process) -> bool:
    """Whether ``p`` is pid 0/1 or an init/reaper by name or ``args[0]`` base name (procid.isReaper)."""
    if p.pid <= 1:
        return True
    arg0 = _go_base(p.args[0]) if p.args else ""
    return any(_name_matches(p.name, r) or arg0 == r for r in REAPERS)


# --- Linux (procid/procfs.go) -----------------------------------------------------


class StatInfo(NamedTuple):
    """The fields of ``/proc/<pid>/stat`` used here: pid, comm, state, ppid, start (field 22, ticks)."""

    pid: int
    comm: str
    state: str
    ppid: int
    start: int


def parse_stat(data: bytes) -> StatInfo:
    """Parse the contents of ``/proc/<pid>/stat`` (proc_pid_stat(5)).

    Input: the raw bytes. Output: :class:`StatInfo`. ``comm`` may contain any
    byte but NUL, so the fields after it are found from the **last** ``)``.
    Raises :class:`MalformedError` for anything that does not parse.
    """
    open_ = data.find(b"(")
    end = data.rfind(b")")
    if open_ < 0 or end < open_:
        raise MalformedError(f"no (comm) in {_truncate(data)!r}")
    pid = _go_atoi(data[:open_].strip())
    if pid is None or pid <= 0:
        raise MalformedError(f"bad pid before (comm) in {_truncate(data)!r}")
    rest = data[end + 1:].split()
    if len(rest) < 22 - 2:
        raise MalformedError(f"{len(rest)} fields after (comm), want at least {22 - 2}")
    if len(rest[0]) != 1:
        raise MalformedError(f"bad state {rest[0]!r}")
    ppid = _go_atoi(rest[4 - 3])
    if ppid is None or ppid < 0:
        raise MalformedError(f"bad ppid {rest[4 - 3]!r}")
    start = _go_parse_uint64(rest[22 - 3])
    if start is None:
        raise MalformedError(f"bad starttime {rest[22 - 3]!r}")
    return StatInfo(
        pid=pid,
        comm=data[open_ + 1:end].decode("utf-8", "surrogateescape"),
        state=rest[0].decode("latin-1"),
        ppid=ppid,
        start=start,
    )


_HEX = re.compile(r"[0-9a-f]{32}")


def parse_boot_id(data: bytes) -> str:
    """Turn ``/proc/sys/kernel/random/boot_id`` (a UUID) into 32 lowercase hex digits.

    Raises :class:`NoBootIDError` when it is not a UUID.
    """
    text = data.decode("utf-8", "replace").strip().replace("-", "").lower()
    if not _HEX.fullmatch(text):
        raise NoBootIDError(f"boot ID {_truncate(data)!r} is not a UUID")
    return text


def _gone(err: OSError) -> bool:
    return isinstance(err, FileNotFoundError) or err.errno in (errno.ENOENT, errno.ESRCH)


def hidden_pid(pid: int) -> bool:
    """Whether process ``pid`` exists although its ``/proc`` entry is missing (procid's ``hiddenPID``).

    Input: ``pid`` (an int). Output: ``True`` only when ``os.kill(pid, 0)``
    raises ``PermissionError`` (``EPERM``): the process exists and belongs
    to another user, which a ``/proc`` mounted ``hidepid=1`` or ``2`` does
    not show. ``False`` for a pid that does not exist (``ESRCH``), one this
    process may signal, a pid that is not positive (``kill`` would address
    a process group) or out of range. Sends no signal; raises nothing.
    Source: ``docs/RELIABILITY.md`` fault 12.
    """
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except PermissionError:
        return True
    except (OSError, OverflowError, ValueError):
        return False
    return False


class LinuxSource:
    """Reads processes from a ``/proc`` tree rooted at ``root`` (a fixture tree in tests).

    Not safe for concurrent use; :func:`host_of` makes one per call. The boot
    ID is read once per instance, so one walk uses one boot ID throughout.
    """

    def __init__(
        self,
        root: str = "/proc",
        after_stat: Callable[[int], None] | None = None,
        hidden: Callable[[int], bool] | None = None,
    ) -> None:
        """Inputs: ``root`` (path of the proc tree); ``after_stat`` (called with the pid after
        each successful stat read; tests use it to change the tree mid-walk); ``hidden``
        (procid's ``linuxReader.hidden``: asked with a pid whose ``<root>/<pid>/stat`` is
        missing, returns whether the process exists all the same, hidden by a ``/proc``
        mounted ``hidepid=1``/``2``). Production (:func:`new_source` on ``/proc``) passes
        :func:`hidden_pid`; fixture trees leave it ``None``: their pids are not this
        machine's. Source: ``docs/RELIABILITY.md`` fault 12."""
        self.root = root
        self.after_stat = after_stat
        self.hidden = hidden
        self._boot: str | None = None

    def boot_id(self) -> str:
        """Return the boot ID (32 hex digits). Raises :class:`NoBootIDError`."""
        if self._boot is not None:
            return self._boot
        name = os.path.join(self.root, "sys", "kernel", "random", "boot_id")
        try:
            with open(name, "rb") as f:
                data = f.read()
        except OSError as e:
            raise NoBootIDError(f"cannot read the kernel boot ID (is /proc mounted?): {e}") from e
        try:
            self._boot = parse_boot_id(data)
        except NoBootIDError as e:
            raise NoBootIDError(f"read {name}: {e}") from e
        return self._boot

    def stat(self, pid: int) -> StatInfo:
        """Read and parse ``<root>/<pid>/stat``.

        Input: ``pid`` (an int). Output: :class:`StatInfo`. Raises
        :class:`NotFoundError` when the process does not exist (the file is
        missing and ``hidden``, when set, does not claim the pid),
        :class:`MalformedError` when the file does not parse or describes
        another pid, :class:`ProcIdError` for other read errors, and for a
        missing file whose pid ``hidden`` says exists (``/proc`` mounted
        ``hidepid=1``/``2`` hides another user's process): ``read <name>: pid
        <pid> exists but <root> hides it (mounted hidepid=1 or 2) and it
        belongs to another user: permission denied``, so that :func:`resolve`
        does not report a race and :meth:`alive` cannot tell instead of
        answering "gone" (``docs/RELIABILITY.md`` fault 12).
        """
        if pid <= 0:
            raise NotFoundError(f"pid {pid} is not positive")
        name = os.path.join(self.root, str(pid), "stat")
        try:
            with open(name, "rb") as f:
                data = f.read()
        except OSError as e:
            if _gone(e):
                if self.hidden is not None and self.hidden(pid):
                    raise ProcIdError(
                        f"read {name}: pid {pid} exists but {self.root} hides it (mounted hidepid=1 or 2) "
                        "and it belongs to another user: permission denied"
                    ) from e
                raise NotFoundError(f"read {name}: process not found") from e
            raise ProcIdError(f"read {name}: {e}") from e
        try:
            st = parse_stat(data)
        except MalformedError as e:
            raise MalformedError(f"parse {name}: {e}") from e
        if st.pid != pid:
            raise MalformedError(f"parse {name}: it describes pid {st.pid}")
        if self.after_stat is not None:
            self.after_stat(pid)
        return st

    def args(self, pid: int) -> tuple[str, ...] | None:
        """Read ``<root>/<pid>/cmdline``: NUL-separated, trailing empty arguments dropped.

        Returns ``None`` when empty or unreadable; raises :class:`NotFoundError`
        when the process is gone.
        """
        name = os.path.join(self.root, str(pid), "cmdline")
        try:
            with open(name, "rb") as f:
                data = f.read()
        except OSError as e:
            if _gone(e):
                raise NotFoundError(f"read {name}: process not found") from e
            return None
        args = data.decode("utf-8", "surrogateescape").split("\x00")
        while args and args[-1] == "":
            args.pop()
        return tuple(args) if args else None

    def pid_ns(self, pid: int) -> str:
        """Return the inode number of ``pid``'s PID namespace (decimal digits), from the
        link ``<root>/<pid>/ns/pid`` (``"pid:[4026531836]"``); pid 0 means ``<root>/self``.

        Two PID namespaces hand out the same pids and share the boot ID and
        clock, so this is what tells their processes apart. Raises
        :class:`NotFoundError` when process ``pid`` (not 0) has vanished,
        :class:`NamespaceError` when the link is unreadable or malformed.
        """
        name = os.path.join(self.root, str(pid) if pid != 0 else "self", "ns", "pid")
        try:
            link = os.readlink(name)
        except OSError as e:
            if pid != 0 and _gone(e):
                raise NotFoundError(f"read {name}: process not found") from e
            raise NamespaceError(f"read {name}: cannot verify the PID namespace: {e}") from e
        ino = link[len("pid:["):-1] if link.startswith("pid:[") and link.endswith("]") else ""
        if _go_parse_uint64(ino.encode("utf-8", "surrogateescape")) is None:
            raise NamespaceError(f"{name} links to {link!r}, not pid:[<inode>]: cannot verify the PID namespace")
        return ino

    def check_own_proc(self) -> None:
        """Verify that ``root`` is the ``/proc`` of this process's PID namespace (procid's ``checkOwnProc``).

        ``<root>/self`` must name ``os.getpid()``. Under ``unshare -p`` without
        ``--mount-proc`` it names another pid, and ``<root>/<pid>`` other
        processes. Raises :class:`NamespaceError` otherwise.
        """
        name = os.path.join(self.root, "self")
        try:
            self_pid = os.readlink(name)
        except OSError as e:
            raise NamespaceError(f"read {name}: cannot verify the PID namespace: {e}") from e
        if self_pid != str(os.getpid()):
            raise NamespaceError(
                f"{name} is pid {self_pid} but this process is pid {os.getpid()}: {self.root} belongs to another "
                f"PID namespace (mount a /proc of this namespace, e.g. unshare --mount-proc); session resume is off"
            )

    def lookup(self, pid: int) -> Process:
        """Describe ``pid``: boot ID, stat, cmdline, PID namespace.

        Errors as :meth:`stat`, :meth:`boot_id` and :meth:`pid_ns`.
        """
        boot = self.boot_id()
        st = self.stat(pid)
        args = self.args(pid)
        # A process visible in this /proc (checked to be ours) is in our PID
        # namespace, so our own link names it; it is always readable, where
        # another user's /proc/<pid>/ns/pid is not (Go procid does the same).
        ns = self.pid_ns(0)
        return Process(pid=st.pid, ppid=st.ppid, name=st.comm, args=args, start_time=f"{st.start}.{boot}.{ns}")

    def alive(self, pid: int, want: str) -> bool:
        """Whether ``pid`` runs with start time ``want`` (procid's ``linuxReader.alive``).

        False when the process is absent, a zombie (state ``Z``) or dead
        (``X``/``x``), or its ``"<ticks>.<boot>.<ns>"`` differs from ``want``
        (pid reused, another boot, or a malformed ``want``). Raises
        :class:`NoBootIDError` (checked first), :class:`NamespaceError` when
        ``want`` was recorded in another PID namespace (its last of three
        fields is not this process's namespace: the pid cannot be checked from
        here, so the answer is unknown, never "gone") or this process's
        namespace cannot be read, or :class:`ProcIdError` when it cannot tell:
        among them a pid whose entry ``/proc`` hides (``hidepid``, see
        :meth:`stat`), so a prune never deletes a live hidden host's file
        (``docs/RELIABILITY.md`` fault 12).
        """
        boot = self.boot_id()
        own = self.pid_ns(0)
        if want.count(".") == 2:
            ns = want.rsplit(".", 1)[1]
            if ns != own:
                raise NamespaceError(
                    f"start time {want!r} was recorded in PID namespace {ns}, this is {own}: "
                    "cannot verify the PID namespace"
                )
        try:
            st = self.stat(pid)
        except NotFoundError:
            return False
        if st.state in ("Z", "X", "x"):
            return False
        return f"{st.start}.{boot}.{own}" == want


# --- macOS (procid/kinfo.go, procid/procid_darwin.go) --------------------------------

# Layout of struct kinfo_proc on darwin/amd64 and darwin/arm64 (LP64, little-endian).
KINFO_SIZE = 648
KINFO_START_SEC = 0  # kp_proc.p_starttime.tv_sec, int64
KINFO_START_USEC = 8  # kp_proc.p_starttime.tv_usec, int32
KINFO_STAT = 36  # kp_proc.p_stat, int8
KINFO_PID = 40  # kp_proc.p_pid, int32
KINFO_COMM = 243  # kp_proc.p_comm, 17 bytes, NUL-terminated
KINFO_COMM_LEN = 17
KINFO_PPID = 560  # kp_eproc.e_ppid, int32


class Kinfo(NamedTuple):
    """The fields of ``struct kinfo_proc`` used here."""

    pid: int
    ppid: int
    comm: str
    stat: int
    sec: int
    usec: int

    @property
    def start_time(self) -> str:
        """``"<tv_sec>.<tv_usec as 6 digits>"``, the macOS start time."""
        return f"{self.sec}.{self.usec:06d}"

    def process(self, args: tuple[str, ...] | None) -> Process:
        """This record as a :class:`Process` with ``args``."""
        return Process(pid=self.pid, ppid=self.ppid, name=self.comm, args=args, start_time=self.start_time)


#: ``p_stat`` of a zombie (SZOMB in sys/proc.h).
DARWIN_ZOMBIE = 5


def start_time_matches(have: str, want: str) -> bool:
    """Whether the macOS start time ``have`` (``"<tv_sec>.<tv_usec>"``) is the one recorded as ``want``.

    Hosts that cannot read microseconds (the TypeScript host reads ``ps``'s
    whole seconds) record ``"<tv_sec>"``, which matches on seconds alone
    (procid's ``startTimeMatches``). Erring towards "alive" only ever keeps a
    file that prune could have deleted, never resumes a session.
    """
    if have == want:
        return True
    sec, dot, _ = have.partition(".")
    return bool(dot) and "." not in want and want == sec


def decode_kinfo(b: bytes) -> Kinfo:
    """Decode one ``struct kinfo_proc`` as returned by ``sysctl kern.proc.pid``.

    Raises :class:`MalformedError` when ``b`` is shorter than 648 bytes, the
    pid is not positive, the ppid negative, ``p_comm`` empty, or the start
    time not positive seconds with microseconds in 0..999999.
    """
    if len(b) < KINFO_SIZE:
        raise MalformedError(f"kinfo_proc is {len(b)} bytes, want {KINFO_SIZE}")
    (pid,) = struct.unpack_from("<i", b, KINFO_PID)
    (ppid,) = struct.unpack_from("<i", b, KINFO_PPID)
    (stat,) = struct.unpack_from("<b", b, KINFO_STAT)
    (sec,) = struct.unpack_from("<q", b, KINFO_START_SEC)
    (usec,) = struct.unpack_from("<i", b, KINFO_START_USEC)
    comm = bytes(b[KINFO_COMM:KINFO_COMM + KINFO_COMM_LEN])
    i = comm.find(b"\x00")
    if i >= 0:
        comm = comm[:i]
    name = comm.decode("utf-8", "surrogateescape")
    if pid <= 0:
        raise MalformedError(f"kinfo_proc has pid {pid}")
    if ppid < 0:
        raise MalformedError(f"kinfo_proc of pid {pid} has ppid {ppid}")
    if name == "":
        raise MalformedError(f"kinfo_proc of pid {pid} has an empty p_comm")
    if sec <= 0 or usec < 0 or usec > 999999:
        raise MalformedError(f"kinfo_proc of pid {pid} has start time {sec} s {usec} us")
    return Kinfo(pid=pid, ppid=ppid, comm=name, stat=stat, sec=sec, usec=usec)


def decode_procargs(b: bytes) -> tuple[str, ...] | None:
    """Decode a ``kern.procargs2`` record: int32 argc, exec path, NUL padding, argc arguments, env.

    Trailing empty arguments are dropped (a retitled process leaves NUL
    padding). Returns ``None`` for no arguments. Raises :class:`MalformedError`.
    """
    if len(b) < 4:
        raise MalformedError(f"procargs2 is {len(b)} bytes")
    (argc,) = struct.unpack_from("<i", b, 0)
    if argc < 0 or argc > len(b):
        raise MalformedError(f"procargs2 has argc {argc}")
    rest = bytes(b[4:])
    i = rest.find(b"\x00")
    if i < 0:
        raise MalformedError("procargs2 has no executable path")
    rest = rest[i:].lstrip(b"\x00")
    args: list[str] = []
    while len(args) < argc:
        i = rest.find(b"\x00")
        if i < 0:
            raise MalformedError(f"procargs2 ends after {len(args)} of {argc} arguments")
        args.append(rest[:i].decode("utf-8", "surrogateescape"))
        rest = rest[i + 1:]
    while args and args[-1] == "":
        args.pop()
    return tuple(args) if args else None


class DarwinSource:
    """Reads processes with ``sysctl kern.proc.pid`` and ``kern.procargs2`` through ctypes (macOS only)."""

    def __init__(self) -> None:
        """Load libc. Raises :class:`UnsupportedError` when it has no ``sysctl``."""
        import ctypes  # only macOS needs it; keep it out of every other start
        import ctypes.util

        self._ctypes = ctypes
        path = ctypes.util.find_library("c") or "libc.dylib"
        try:
            self._libc = ctypes.CDLL(path, use_errno=True)
            self._sysctl = self._libc.sysctl
            self._nametomib = self._libc.sysctlnametomib
        except (OSError, AttributeError) as e:
            raise UnsupportedError(f"cannot load sysctl from {path}: {e}") from e
        self._sysctl.argtypes = [
            ctypes.POINTER(ctypes.c_int), ctypes.c_uint, ctypes.c_void_p,
            ctypes.POINTER(ctypes.c_size_t), ctypes.c_void_p, ctypes.c_size_t,
        ]
        self._sysctl.restype = ctypes.c_int
        self._nametomib.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_size_t)]
        self._nametomib.restype = ctypes.c_int

    def _sysctl_raw(self, name: str, *args: int) -> bytes:
        """``unix.SysctlRaw``: resolve ``name`` to a MIB, append ``args``, read the whole value.

        Raises ``OSError`` with the errno on failure.
        """
        ctypes = self._ctypes
        mib = (ctypes.c_int * 12)()
        n = ctypes.c_size_t(12 - len(args))
        if self._nametomib(name.encode(), mib, ctypes.byref(n)) != 0:
            e = ctypes.get_errno()
            raise OSError(e, f"sysctlnametomib {name}: {os.strerror(e)}")
        count = n.value
        for a in args:
            mib[count] = a
            count += 1
        size = ctypes.c_size_t(0)
        if self._sysctl(mib, count, None, ctypes.byref(size), None, 0) != 0:
            e = ctypes.get_errno()
            raise OSError(e, f"sysctl {name}: {os.strerror(e)}")
        if size.value == 0:
            return b""
        buf = ctypes.create_string_buffer(size.value)
        if self._sysctl(mib, count, buf, ctypes.byref(size), None, 0) != 0:
            e = ctypes.get_errno()
            raise OSError(e, f"sysctl {name}: {os.strerror(e)}")
        return bytes(buf.raw[: size.value])

    def kinfo(self, pid: int) -> Kinfo:
        """Read and decode ``struct kinfo_proc`` for ``pid``.

        Raises :class:`NotFoundError` when the process does not exist,
        :class:`MalformedError` for an undecodable record, :class:`ProcIdError`
        for other sysctl failures.
        """
        if pid <= 0:
            raise NotFoundError(f"pid {pid} is not positive")
        try:
            b = self._sysctl_raw("kern.proc.pid", pid)
        except OSError as e:
            if e.errno == errno.ESRCH:
                raise NotFoundError("sysctl kern.proc.pid: process not found") from e
            raise ProcIdError(f"sysctl kern.proc.pid: {e}") from e
        if len(b) == 0:
            raise NotFoundError("sysctl kern.proc.pid: process not found")
        try:
            k = decode_kinfo(b)
        except MalformedError as e:
            raise MalformedError(f"sysctl kern.proc.pid: {e}") from e
        if k.pid != pid:
            raise MalformedError(f"sysctl kern.proc.pid returned pid {k.pid}")
        return k

    def lookup(self, pid: int) -> Process:
        """Describe ``pid``; arguments are best effort (the kernel refuses them for other users)."""
        k = self.kinfo(pid)
        args: tuple[str, ...] | None = None
        try:
            args = decode_procargs(self._sysctl_raw("kern.procargs2", pid))
        except (OSError, MalformedError):
            args = None
        return k.process(args)

    def alive(self, pid: int, want: str) -> bool:
        """Whether ``pid`` runs with start time ``want`` (procid's ``darwinSource.alive``).

        False when absent, a zombie, or the start time differs (see
        :func:`start_time_matches`). Raises :class:`ProcIdError` when it cannot tell.
        """
        try:
            k = self.kinfo(pid)
        except NotFoundError:
            return False
        if k.stat == DARWIN_ZOMBIE:
            return False
        return start_time_matches(k.start_time, want)


# --- the walk (procid/procid.go) -------------------------------------------------


def _describe(p: Process) -> str:
    return f"pid {p.pid} ({p.name!r})"


def resolve(src: Source, pid: int, names: frozenset[str]) -> Identity:
    """Walk from ``pid``'s parent to the nearest ancestor that is not a launcher in ``names``.

    Inputs: a process source, the server's pid, a launcher set. Output:
    :class:`Identity`. Each step reads the child, then its parent, then the
    child again, and fails unless the child kept its parent and start time.
    Raises :class:`TooDeepError`, :class:`ReaperError` (pid 0/1 or a reaper),
    :class:`RaceError`, or the source's errors. Spec 000, "PID Reuse" and
    "Parent Process Information Unavailable".
    """
    try:
        child = src.lookup(pid)
    except ProcIdError as e:
        raise type(e)(f"procid: resolve MCP host of pid {pid}: {e}") from e
    chain: list[Process] = []
    while True:
        if len(chain) == MAX_DEPTH:
            raise TooDeepError(
                f"procid: resolve MCP host of pid {pid}: the {MAX_DEPTH} nearest ancestors "
                f"({chain[0].name!r} to {chain[-1].name!r}) are all launchers; session resume is off"
            )
        if child.ppid <= 1:
            raise ReaperError(
                f"procid: resolve MCP host of pid {pid}: {_describe(child)} has parent pid {child.ppid}: "
                "it was orphaned (restart the MCP host) or the host is outside this PID namespace; "
                "session resume is off"
            )
        try:
            parent = src.lookup(child.ppid)
        except NotFoundError as e:
            raise RaceError(
                f"procid: resolve MCP host of pid {pid}: parent of {_describe(child)} exited during the walk; retry: {e}"
            ) from e
        except ProcIdError as e:
            raise type(e)(f"procid: resolve MCP host of pid {pid}: read parent of {_describe(child)}: {e}") from e
        try:
            again = src.lookup(child.pid)
        except NotFoundError as e:
            raise RaceError(
                f"procid: resolve MCP host of pid {pid}: {_describe(child)} exited during the walk; retry: {e}"
            ) from e
        except ProcIdError as e:
            raise type(e)(f"procid: resolve MCP host of pid {pid}: re-read {_describe(child)}: {e}") from e
        if again.ppid != child.ppid or again.start_time != child.start_time:
            raise RaceError(
                f"procid: resolve MCP host of pid {pid}: {_describe(child)} changed from parent {child.ppid} "
                f"start {child.start_time} to parent {again.ppid} start {again.start_time} while its parent "
                "was read; retry"
            )
        chain.append(parent)
        if is_reaper(parent):
            raise ReaperError(
                f"procid: resolve MCP host of pid {pid}: the host would be {_describe(parent)}, "
                "which serves unrelated processes; session resume is off"
            )
        if not is_launcher(parent, names):
            return Identity(pid=parent.pid, start_time=parent.start_time, chain=tuple(chain))
        child = parent


def new_source(platform: str | None = None, root: str = "/proc") -> Source:
    """Return the process source of this OS: :class:`LinuxSource` or :class:`DarwinSource`.

    On Linux the proc tree at ``root`` (tests pass a fixture) is used only once
    :meth:`LinuxSource.check_own_proc` verifies it is this PID namespace's,
    else :class:`NamespaceError`. The real ``"/proc"`` gets :func:`hidden_pid`
    (a missing entry of a process that exists is reported as hidden by
    ``hidepid``, not as gone: ``docs/RELIABILITY.md`` fault 12); a fixture
    ``root`` does not, its pids are not this machine's. Raises
    :class:`UnsupportedError` on any other system (spec 000, "Platform
    Support").
    """
    platform = sys.platform if platform is None else platform
    if platform.startswith("linux"):
        src = LinuxSource(root, hidden=hidden_pid if root == "/proc" else None)
        try:
            src.check_own_proc()
        except NamespaceError as e:
            raise NamespaceError(f"procid: {e}") from e
        return src
    if platform == "darwin":
        return DarwinSource()
    raise UnsupportedError(
        f"procid: {platform} has no supported way to identify the MCP host process, so session resume is off"
    )


def host_of(pid: int, launchers: Iterable[str] | None = None) -> Identity:
    """Resolve the MCP host of process ``pid`` (procid.HostOf).

    Inputs: ``pid``; ``launchers``, extra launcher names added to
    :data:`DEFAULT_LAUNCHERS` and ``$MCP_RESUME_LAUNCHERS``. Output:
    :class:`Identity`. Raises a :class:`ProcIdError` subclass whenever the host
    cannot be identified with certainty.
    """
    src = new_source()
    return resolve(src, pid, launcher_set(launchers))


# --- the stdio check (procid/stdio.go; docs/RELIABILITY.md fault 11c) -----------------

#: :attr:`FdInfo.kind` of a tty, ``/dev/null``, a regular file, a directory...
FD_OTHER = "other"
#: :attr:`FdInfo.kind` of an fd that is not open (``fstat`` failed).
FD_CLOSED = "closed"
#: :attr:`FdInfo.kind` of ``S_IFIFO``: an anonymous pipe or a named FIFO.
FD_PIPE = "pipe"
#: :attr:`FdInfo.kind` of ``S_IFSOCK``.
FD_SOCKET = "socket"

_VERIFIED = "verified"
_DISPROVED = "disproved"
_NOT_CHECKED = "not checked"

_STDIO_NAMES = ("stdin", "stdout")

#: ``Identity.stdio`` on systems without subreapers (macOS: orphans go to launchd, pid 1).
NO_SUBREAPERS = "not checked: no subreapers on this system"

_ANON_PIPE = re.compile(r"pipe:\[[0-9]+\]")


class FdInfo(NamedTuple):
    """What one of the server's stdio fds is (procid's ``fdInfo``; spec 000, ``docs/RELIABILITY.md`` fault 11c).

    Attributes: ``kind``, one of :data:`FD_OTHER`, :data:`FD_CLOSED`,
    :data:`FD_PIPE`, :data:`FD_SOCKET`; ``peer_pid`` (int), for a socket the
    pid ``SO_PEERCRED`` reports (the process that created the socket pair or
    connected the socket, in this PID namespace), ``0`` when unknown (not a
    Unix socket, a peer outside this PID namespace, ``getsockopt`` failed).
    """

    kind: str
    peer_pid: int = 0


class StdioProbe:
    """The system calls of the stdio check that a fixture ``/proc`` tree cannot stand in for.

    :func:`check_stdio` asks the probe what the server's fds are
    (:meth:`fd_info`: ``fstat`` and ``SO_PEERCRED`` on the real fd) and lists
    the host's fd directory through it (:meth:`listdir`). Tests subclass it to
    describe fixture fds or to raise ``PermissionError`` as root, where
    ``chmod 000`` does not deny anything. Production uses this class as is.
    Spec 000 / ``docs/RELIABILITY.md`` fault 11c.
    """

    def fd_info(self, fd: int) -> FdInfo:
        """Describe this process's ``fd`` (an int): ``fstat`` for the kind, ``SO_PEERCRED`` for a socket's peer.

        Output: :class:`FdInfo`; ``FD_CLOSED`` when ``fstat`` fails. Raises nothing.
        """
        try:
            mode = os.fstat(fd).st_mode
        except OSError:
            return FdInfo(FD_CLOSED)
        if stat.S_ISFIFO(mode):
            return FdInfo(FD_PIPE)
        if stat.S_ISSOCK(mode):
            return FdInfo(FD_SOCKET, _peer_pid(fd))
        return FdInfo(FD_OTHER)

    def listdir(self, path: str) -> list[str]:
        """List directory ``path`` (a str) like :func:`os.listdir`; raises ``OSError`` like it."""
        return os.listdir(path)


def _peer_pid(fd: int) -> int:
    """The pid ``getsockopt(fd, SOL_SOCKET, SO_PEERCRED)`` reports, 0 when it fails or is unknown.

    ``socket.fromfd`` works on a duplicate of ``fd``, closed here; ``fd``
    itself is left open.
    """
    opt = getattr(socket, "SO_PEERCRED", None)
    if opt is None:
        return 0
    try:
        sock = socket.fromfd(fd, socket.AF_UNIX, socket.SOCK_STREAM)
    except OSError:
        return 0
    try:
        raw = sock.getsockopt(socket.SOL_SOCKET, opt, struct.calcsize("3i"))
    except OSError:
        return 0
    finally:
        sock.close()
    if len(raw) < struct.calcsize("3i"):
        return 0
    pid: int = struct.unpack_from("3i", raw)[0]
    return max(pid, 0)


def _go_quote(s: str) -> str:
    """A double-quoted string like Go's ``%q`` for the printable names the messages quote."""
    return json.dumps(s, ensure_ascii=False)


def _access_mode(root: str, who: str, fd: str) -> int:
    """``O_RDONLY``/``O_WRONLY``/``O_RDWR`` (0/1/2) of ``fd`` of ``who`` ("self" or a pid),
    from the octal ``flags:`` line of ``<root>/<who>/fdinfo/<fd>`` (proc_pid_fdinfo(5)).

    Raises ``OSError`` when the file cannot be read, :class:`MalformedError`
    when it has no octal ``flags:`` line.
    """
    name = os.path.join(root, who, "fdinfo", fd)
    with open(name, "rb") as f:
        data = f.read()
    for line in data.decode("utf-8", "replace").splitlines():
        if line.startswith("flags:"):
            v = line[len("flags:"):].strip()
            if re.fullmatch(r"[0-7]+", v):
                return int(v, 8) & os.O_ACCMODE
            break
    raise MalformedError(f"no octal flags: line in {name}")


def _other_end(mine: int, theirs: int) -> bool:
    """Whether a pipe fd opened ``theirs`` can be the other end of ours opened ``mine``.

    A reader's peer writes and a writer's peer reads; ``O_RDWR`` matches
    anything. A forking launcher's inherited copy of the server's own end is
    not the other end.
    """
    if mine == os.O_RDWR or theirs == os.O_RDWR:
        return True
    return mine != theirs


def _check_pipe(root: str, fd: int, name: str, link: str, host: Process, probe: StdioProbe) -> tuple[str, str]:
    """Look for the other end of anonymous pipe ``link`` (this process's ``fd``) among the host's fds.

    Output: ``(verdict, reason)``. Raises :class:`RaceError` (without the
    ``procid: resolve ...`` prefix) when the host's fd directory is gone.
    """
    try:
        mine = _access_mode(root, "self", str(fd))
    except (OSError, MalformedError) as e:
        return _NOT_CHECKED, f"{name} {link}: {_strerror(e)}"
    fd_dir = os.path.join(root, str(host.pid), "fd")
    try:
        entries = probe.listdir(fd_dir)
    except OSError as e:
        if _gone(e):
            raise RaceError(f"the host {_describe(host)} exited during the stdio check; retry") from e
        return _NOT_CHECKED, f"{name} {link}: cannot list the host's fds: {_strerror(e)}"
    for entry in sorted(entries, key=lambda e: (len(e), e)):
        try:
            if os.readlink(os.path.join(fd_dir, entry)) != link:
                continue
            theirs = _access_mode(root, str(host.pid), entry)
        except (OSError, MalformedError):
            continue  # closed since the listing, or unreadable: not evidence either way
        if _other_end(mine, theirs):
            return _VERIFIED, f"{name} {link} is held by the host as fd {entry}"
    return _DISPROVED, f"{name} {link} is not held by the host"


def _strerror(e: BaseException) -> str:
    """An error's text without the path of an ``OSError`` (long messages need not repeat /proc paths)."""
    if isinstance(e, OSError) and e.strerror:
        return e.strerror.lower()
    return str(e)


def _check_fd(root: str, fd: int, host: Process, info: FdInfo, probe: StdioProbe) -> tuple[str, str]:
    """The verdict on one stdio fd: ``(verdict, reason)``. Raises :class:`RaceError` when the host exited."""
    name = _STDIO_NAMES[fd] if 0 <= fd < len(_STDIO_NAMES) else f"fd {fd}"
    if info.kind == FD_CLOSED:
        return _NOT_CHECKED, f"{name} is closed"
    try:
        link = os.readlink(os.path.join(root, "self", "fd", str(fd)))
    except OSError:
        link = ""
    if info.kind == FD_SOCKET:
        what = f"{name} {link}" if link else name
        if info.peer_pid <= 0:
            return _NOT_CHECKED, f"{what} is a socket without peer credentials"
        if info.peer_pid == host.pid:
            return _VERIFIED, f"{what} peer is the host"
        return _DISPROVED, f"{what} peer is pid {info.peer_pid}, not the host"
    if info.kind == FD_PIPE:
        if not _ANON_PIPE.fullmatch(link):
            return _NOT_CHECKED, f"{name} is a named FIFO"
        return _check_pipe(root, fd, name, link, host, probe)
    return _NOT_CHECKED, f"{name} is not a pipe or socket"


def check_stdio(
    ident: Identity,
    self_pid: int | None = None,
    *,
    root: str = "/proc",
    probe: StdioProbe | None = None,
    fds: Sequence[int] = (0, 1),
) -> Identity:
    """Verify that the resolved host holds the other end of this process's stdin or stdout (Linux).

    Inputs: ``ident``, the :class:`Identity` :func:`host_of` resolved for
    this process (the host is ``ident.chain[-1]``); ``self_pid``, this
    process's pid for messages (default :func:`os.getpid`); ``root``, the proc
    tree (``"/proc"``; tests pass a fixture with ``self/fd/<n>`` links,
    ``self/fdinfo/<n>`` files and the host's ``<pid>/fd`` and
    ``<pid>/fdinfo``); ``probe``, the system calls on the real fds (default
    :class:`StdioProbe`); ``fds``, the fds checked (stdin then stdout).

    Per fd: a closed fd, a named FIFO, a socket without peer credentials and
    anything that is not a pipe or socket are *not checked*, as is a pipe
    when the host's ``/proc/<host>/fd`` cannot be read (another user). An
    anonymous pipe is *verified* when the host holds it with the other access
    mode (a forking launcher's copy of the server's own end does not count),
    else *disproved*; a socket is *verified* when its ``SO_PEERCRED`` peer is
    the host, else *disproved*.

    Output: ``ident`` with ``stdio`` set to ``"verified: <reason>"`` when an
    fd is verified, else ``"not checked: <reasons joined by "; ">"``.
    Raises :class:`AdoptedError` when no fd is verified and one is disproved,
    :class:`RaceError` when the host exits during the check. Source: spec 000
    ("Parent Process Information Unavailable") and ``docs/RELIABILITY.md``
    fault 11c; the Go twin is ``procid/stdio.go``.
    """
    self_pid = os.getpid() if self_pid is None else self_pid
    probe = StdioProbe() if probe is None else probe
    host = ident.chain[-1] if ident.chain else Process(ident.pid, 0, "", None, ident.start_time)
    verified = ""
    disproved: list[str] = []
    unchecked: list[str] = []
    for fd in fds:
        try:
            verdict, why = _check_fd(root, fd, host, probe.fd_info(fd), probe)
        except RaceError as e:
            raise RaceError(f"procid: resolve MCP host of pid {self_pid}: {e}") from e
        if verdict == _VERIFIED:
            verified = verified or why
        elif verdict == _DISPROVED:
            disproved.append(why)
        else:
            unchecked.append(why)
    if verified:
        return ident._replace(stdio=f"verified: {verified}")
    if disproved:
        raise AdoptedError(
            f"procid: resolve MCP host of pid {self_pid}: the host pid {host.pid} ({_go_quote(host.name)}) does not "
            f"hold the other end of the server's stdio ({'; '.join(disproved)}): the server was probably "
            f"orphaned and adopted by a subreaper, or {_go_quote(host.name)} passes its own stdio through (if it only "
            f"launches servers, add it to {LAUNCHERS_ENV}); session resume is off"
        )
    return ident._replace(stdio=f"not checked: {'; '.join(unchecked)}")


def host_identity(launchers: Iterable[str] | None = None) -> Identity:
    """Resolve the MCP host of the current process and run the stdio check (procid.Host).

    Input: ``launchers``, extra launcher names (see :func:`host_of`). Output:
    :class:`Identity` with ``stdio`` filled: on Linux by :func:`check_stdio`
    (``"verified: ..."`` or ``"not checked: ..."``), elsewhere
    :data:`NO_SUBREAPERS` (macOS has no subreapers: orphans go to launchd,
    pid 1, which the walk refuses). Raises the errors of :func:`host_of`,
    :class:`AdoptedError` when the host provably does not hold the other end
    of this process's stdin or stdout, and :class:`RaceError` when the host
    exits during the check; each means session resume is off (spec 000,
    "Parent Process Information Unavailable"; ``docs/RELIABILITY.md`` fault 11c).
    """
    pid = os.getpid()
    ident = host_of(pid, launchers)
    if not sys.platform.startswith("linux"):
        return ident._replace(stdio=NO_SUBREAPERS)
    return check_stdio(ident, pid)


def alive(pid: int, start_time: str) -> bool:
    """Whether process ``pid`` is running and is the same instance as ``start_time`` (procid.Alive).

    ``start_time`` is one recorded earlier (a token or lock file's name),
    possibly by another process or before a reboot. Returns ``False`` when no
    process ``pid`` exists, when it is a zombie, when its start time differs
    (the pid was reused), when ``start_time`` comes from a previous boot, and
    when it is malformed. On macOS a ``start_time`` of whole seconds matches on
    ``tv_sec`` alone. Raises a :class:`ProcIdError` subclass when the answer is
    unknown (:class:`UnsupportedError` on other systems,
    :class:`NoBootIDError`, or the process exists but cannot be read,
    including on Linux a process that exists but whose entry a ``/proc``
    mounted ``hidepid=1``/``2`` hides, ``docs/RELIABILITY.md`` fault 12); a
    caller must then not treat the process as alive. On Linux a
    ``start_time`` recorded in another PID namespace raises
    :class:`NamespaceError`, as does a ``/proc`` that is not this PID
    namespace's.
    """
    src = new_source()
    try:
        return bool(src.alive(pid, start_time))  # type: ignore[attr-defined]
    except ProcIdError as e:
        raise type(e)(f"procid: check whether pid {pid} is alive: {e}") from e


def host(launchers: Iterable[str] | None = None) -> tuple[int, str]:
    """Resolve the MCP host of the current process: ``(pid, start_time)``.

    The default identity of :class:`mcp_resume.ResumeTokenStore`: the walk
    and, on Linux, the stdio check of :func:`host_identity`, whose result
    (``Identity.stdio``) is logged at DEBUG on ``logging.getLogger("mcp_resume")``
    (event ``host_stdio``). Input: ``launchers``, extra launcher names.
    Output: ``(pid, start_time)``, an int and a str. Raises a
    :class:`ProcIdError` subclass when the host cannot be verified (spec 000,
    "Parent Process Information Unavailable"), :class:`AdoptedError` among
    them when it provably does not hold this process's stdio
    (``docs/RELIABILITY.md`` fault 11c).
    """
    ident = host_identity(launchers)
    _log.debug(
        "mcp-resume: MCP host pid %d, stdio %s",
        ident.pid,
        ident.stdio,
        extra={"event": "host_stdio", "detail": ident.stdio},
    )
    return ident.pid, ident.start_time

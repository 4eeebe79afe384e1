"""The stdio check of mcp_resume._procid (docs/RELIABILITY.md fault 11c, Go procid/stdio.go).

After the walk, the resolved host must hold the other end of the server's
stdin or stdout. Two layers:

* the verdict logic on fixture /proc trees (``self/fd/<n>`` links and
  ``fdinfo`` files, the host's ``<pid>/fd`` and ``<pid>/fdinfo``), with a
  probe standing in for fstat / SO_PEERCRED and for permission errors that
  root cannot provoke with chmod;
* real processes on this machine's /proc: a child spawned with pipes, a
  socket pair or /dev/null as stdio; a relay process that passes the
  test's pipe through; and a real subreaper (PR_SET_CHILD_SUBREAPER) that
  adopts an orphaned child.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from mcp_resume import _procid as procid
from mcp_resume._procid import (
    FD_CLOSED,
    FD_OTHER,
    FD_PIPE,
    FD_SOCKET,
    AdoptedError,
    FdInfo,
    Identity,
    Process,
    ProcIdError,
    RaceError,
    StdioProbe,
    check_stdio,
)

LINUX = sys.platform.startswith("linux")

HOST_PID = 4242
SELF_PID = 5151
HOST = Process(HOST_PID, 1000, "claude", ("claude",), "1.boot.ns")
IDENT = Identity(HOST_PID, HOST.start_time, (HOST,))

O_RDONLY, O_WRONLY, O_RDWR = os.O_RDONLY, os.O_WRONLY, os.O_RDWR

# --- fixture trees -----------------------------------------------------------------


def fdinfo(flags: int) -> str:
    """An fdinfo file as proc_pid_fdinfo(5) shows it (flags in octal, with O_LARGEFILE / O_CLOEXEC noise)."""
    return f"pos:\t0\nflags:\t0{flags | 0o100000 | 0o2000000:o}\nmnt_id:\t15\nino:\t123\n"


def write_fd(root: Path, who: str, fd: str, link: str, flags: int | None = None, info: str | None = None) -> None:
    """Add fd ``fd`` of ``who`` ("self" or a pid): a link to ``link`` and, unless both are None, its fdinfo."""
    (root / who / "fd").mkdir(parents=True, exist_ok=True)
    (root / who / "fdinfo").mkdir(parents=True, exist_ok=True)
    os.symlink(link, root / who / "fd" / fd)
    if info is None and flags is not None:
        info = fdinfo(flags)
    if info is not None:
        (root / who / "fdinfo" / fd).write_text(info)


def tree(tmp_path: Path, host_fds: dict[str, tuple[str, int]] | None = None) -> Path:
    """A fixture tree whose host (pid 4242) holds ``host_fds`` ({fd: (link, access mode)}).

    The host always has a tty at fd 0 and 1 and its fd directory exists.
    """
    root = tmp_path / "proc"
    (root / "self" / "fd").mkdir(parents=True)
    (root / "self" / "fdinfo").mkdir(parents=True)
    write_fd(root, str(HOST_PID), "0", "/dev/pts/0", O_RDWR)
    write_fd(root, str(HOST_PID), "1", "/dev/pts/0", O_RDWR)
    for fd, (link, flags) in (host_fds or {}).items():
        write_fd(root, str(HOST_PID), fd, link, flags)
    return root


class FixtureProbe(StdioProbe):
    """Describes fixture fds (default: neither a pipe nor a socket) and can fail listings."""

    def __init__(self, infos: dict[int, FdInfo] | None = None, list_error: int | None = None,
                 extra_entries: tuple[str, ...] = ()) -> None:
        self.infos = infos or {}
        self.list_error = list_error
        self.extra_entries = extra_entries
        self.listed: list[str] = []

    def fd_info(self, fd: int) -> FdInfo:
        return self.infos.get(fd, FdInfo(FD_OTHER))

    def listdir(self, path: str) -> list[str]:
        self.listed.append(path)
        if self.list_error is not None:
            raise OSError(self.list_error, os.strerror(self.list_error), path)
        return super().listdir(path) + list(self.extra_entries)


def check(root: Path, probe: StdioProbe) -> Identity:
    return check_stdio(IDENT, SELF_PID, root=str(root), probe=probe)


PIPE = FdInfo(FD_PIPE)

# --- one fd: pipes -------------------------------------------------------------------


@pytest.mark.parametrize(
    "fd,mine,theirs",
    [
        (0, O_RDONLY, O_WRONLY),  # the host writes the server's stdin
        (0, O_RDONLY, O_RDWR),
        (1, O_WRONLY, O_RDONLY),  # the host reads the server's stdout
        (1, O_WRONLY, O_RDWR),
        (0, O_RDWR, O_RDONLY),  # O_RDWR on our side matches any end
        (1, O_RDWR, O_WRONLY),
    ],
)
def test_pipe_held_by_host_with_other_end_verified(tmp_path: Path, fd: int, mine: int, theirs: int) -> None:
    root = tree(tmp_path, {"7": ("pipe:[123]", theirs)})
    write_fd(root, "self", str(fd), "pipe:[123]", mine)
    got = check(root, FixtureProbe({fd: PIPE}))
    name = ("stdin", "stdout")[fd]
    assert got.stdio == f"verified: {name} pipe:[123] is held by the host as fd 7"
    assert got._replace(stdio="") == IDENT


def test_pipe_same_end_only_disproved(tmp_path: Path) -> None:
    """The host holds only the server's own end (as a forking shell's copy would): not the other end."""
    root = tree(tmp_path, {"5": ("pipe:[123]", O_RDONLY), "9": ("pipe:[999]", O_WRONLY)})
    write_fd(root, "self", "0", "pipe:[123]", O_RDONLY)
    with pytest.raises(AdoptedError) as exc:
        check(root, FixtureProbe({0: PIPE}))
    msg = str(exc.value)
    assert msg.startswith(f'procid: resolve MCP host of pid {SELF_PID}: the host pid {HOST_PID} ("claude") does not '
                          "hold the other end of the server's stdio (stdin pipe:[123] is not held by the host): ")
    assert "adopted by a subreaper" in msg and msg.endswith("session resume is off")
    assert '"claude" passes its own stdio through (if it only launches servers, add it to MCP_RESUME_LAUNCHERS)' in msg
    assert isinstance(exc.value, ProcIdError)


def test_pipe_not_held_at_all_disproved(tmp_path: Path) -> None:
    root = tree(tmp_path)
    write_fd(root, "self", "1", "pipe:[77]", O_WRONLY)
    with pytest.raises(AdoptedError, match=r"\(stdout pipe:\[77\] is not held by the host\)"):
        check(root, FixtureProbe({1: PIPE}))


def test_pipe_host_fds_unreadable_not_checked(tmp_path: Path) -> None:
    """Another user's host: listing /proc/<host>/fd fails with EACCES/EPERM (modelled: tests run as root)."""
    root = tree(tmp_path, {"7": ("pipe:[123]", O_WRONLY)})
    write_fd(root, "self", "0", "pipe:[123]", O_RDONLY)
    for err in (errno.EACCES, errno.EPERM):
        got = check(root, FixtureProbe({0: PIPE}, list_error=err))
        why = os.strerror(err).lower()  # "permission denied", "operation not permitted"
        assert got.stdio == f"not checked: stdin pipe:[123]: cannot list the host's fds: {why}; stdout is not a pipe or socket"


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a chmod 000 directory anyway")
def test_pipe_host_fds_chmod_000_not_checked(tmp_path: Path) -> None:  # pragma: no cover - CI runs as root
    root = tree(tmp_path, {"7": ("pipe:[123]", O_WRONLY)})
    write_fd(root, "self", "0", "pipe:[123]", O_RDONLY)
    fd_dir = root / str(HOST_PID) / "fd"
    fd_dir.chmod(0)
    try:
        got = check(root, FixtureProbe({0: PIPE}))
    finally:
        fd_dir.chmod(0o755)
    assert got.stdio.startswith("not checked: stdin pipe:[123]: cannot list the host's fds: permission denied")


@pytest.mark.parametrize("err", [errno.ENOENT, errno.ESRCH])
def test_pipe_host_exited_race(tmp_path: Path, err: int) -> None:
    root = tree(tmp_path)
    write_fd(root, "self", "0", "pipe:[123]", O_RDONLY)
    with pytest.raises(RaceError, match=rf"^procid: resolve MCP host of pid {SELF_PID}: the host pid {HOST_PID} "
                                        r"\('claude'\) exited during the stdio check; retry$"):
        check(root, FixtureProbe({0: PIPE}, list_error=err))


def test_pipe_host_fd_dir_gone_race(tmp_path: Path) -> None:
    """A real missing <root>/<host>/fd (the host exited after the walk) through the real listing."""
    root = tmp_path / "proc"
    write_fd(root, "self", "0", "pipe:[123]", O_RDONLY)
    with pytest.raises(RaceError, match="exited during the stdio check"):
        check(root, FixtureProbe({0: PIPE}))


def test_pipe_host_entries_vanishing_skipped(tmp_path: Path) -> None:
    """Entries that close between the listing and the readlink are skipped, as is a missing host fdinfo."""
    root = tree(tmp_path, {"12": ("pipe:[123]", O_WRONLY)})
    write_fd(root, str(HOST_PID), "3", "pipe:[123]")  # link but no fdinfo: closed meanwhile
    write_fd(root, "self", "0", "pipe:[123]", O_RDONLY)
    got = check(root, FixtureProbe({0: PIPE}, extra_entries=("8", "9")))
    assert got.stdio == "verified: stdin pipe:[123] is held by the host as fd 12"


def test_pipe_own_fdinfo_malformed_not_checked(tmp_path: Path) -> None:
    root = tree(tmp_path, {"7": ("pipe:[123]", O_WRONLY)})
    write_fd(root, "self", "0", "pipe:[123]", info="pos:\t0\nflags:\t0x8000\n")
    got = check(root, FixtureProbe({0: PIPE}))
    assert got.stdio.startswith("not checked: stdin pipe:[123]: no octal flags: line in ")


def test_pipe_own_fdinfo_missing_not_checked(tmp_path: Path) -> None:
    root = tree(tmp_path, {"7": ("pipe:[123]", O_WRONLY)})
    write_fd(root, "self", "0", "pipe:[123]")
    got = check(root, FixtureProbe({0: PIPE}))
    assert got.stdio == "not checked: stdin pipe:[123]: no such file or directory; stdout is not a pipe or socket"


@pytest.mark.parametrize("link", ["/tmp/mcp.fifo", "pipe:[]", "pipe:[12a]", "pipe:123", "anon_inode:[eventfd]"])
def test_named_fifo_not_checked(tmp_path: Path, link: str) -> None:
    """A FIFO whose link is not pipe:[<digits>] is a named FIFO: anyone may hold it, nothing to look for."""
    root = tree(tmp_path, {"7": (link, O_WRONLY)})
    write_fd(root, "self", "0", link, O_RDONLY)
    probe = FixtureProbe({0: PIPE})
    got = check(root, probe)
    assert got.stdio == "not checked: stdin is a named FIFO; stdout is not a pipe or socket"
    assert probe.listed == []  # the host was not even looked at


# --- one fd: sockets, closed, other --------------------------------------------------


def test_socket_peer_is_host_verified(tmp_path: Path) -> None:
    root = tree(tmp_path)
    write_fd(root, "self", "0", "socket:[456]")
    got = check(root, FixtureProbe({0: FdInfo(FD_SOCKET, HOST_PID)}))
    assert got.stdio == "verified: stdin socket:[456] peer is the host"


def test_socket_peer_is_other_disproved(tmp_path: Path) -> None:
    root = tree(tmp_path)
    write_fd(root, "self", "1", "socket:[456]")
    with pytest.raises(AdoptedError, match=r"\(stdout socket:\[456\] peer is pid 99, not the host\)"):
        check(root, FixtureProbe({1: FdInfo(FD_SOCKET, 99)}))


def test_socket_without_peer_not_checked(tmp_path: Path) -> None:
    root = tree(tmp_path)
    write_fd(root, "self", "0", "socket:[456]")
    got = check(root, FixtureProbe({0: FdInfo(FD_SOCKET, 0)}))
    assert got.stdio == "not checked: stdin socket:[456] is a socket without peer credentials; stdout is not a pipe or socket"


def test_closed_and_other_not_checked(tmp_path: Path) -> None:
    root = tree(tmp_path)
    write_fd(root, "self", "1", "/dev/null")
    got = check(root, FixtureProbe({0: FdInfo(FD_CLOSED), 1: FdInfo(FD_OTHER)}))
    assert got.stdio == "not checked: stdin is closed; stdout is not a pipe or socket"


# --- combining fds -----------------------------------------------------------------------


def test_one_verified_fd_wins_over_disproved(tmp_path: Path) -> None:
    root = tree(tmp_path, {"4": ("pipe:[20]", O_RDONLY)})
    write_fd(root, "self", "0", "pipe:[10]", O_RDONLY)  # not held: disproved
    write_fd(root, "self", "1", "pipe:[20]", O_WRONLY)  # held as fd 4: verified
    got = check(root, FixtureProbe({0: PIPE, 1: PIPE}))
    assert got.stdio == "verified: stdout pipe:[20] is held by the host as fd 4"


def test_first_verified_fd_is_described(tmp_path: Path) -> None:
    root = tree(tmp_path, {"4": ("pipe:[20]", O_RDONLY), "5": ("pipe:[10]", O_WRONLY)})
    write_fd(root, "self", "0", "pipe:[10]", O_RDONLY)
    write_fd(root, "self", "1", "pipe:[20]", O_WRONLY)
    got = check(root, FixtureProbe({0: PIPE, 1: PIPE}))
    assert got.stdio == "verified: stdin pipe:[10] is held by the host as fd 5"


def test_disproved_beats_not_checked(tmp_path: Path) -> None:
    root = tree(tmp_path)
    write_fd(root, "self", "0", "/dev/null")
    write_fd(root, "self", "1", "pipe:[20]", O_WRONLY)
    with pytest.raises(AdoptedError, match=r"\(stdout pipe:\[20\] is not held by the host\)"):
        check(root, FixtureProbe({0: FdInfo(FD_OTHER), 1: PIPE}))


def test_both_disproved_reasons_joined(tmp_path: Path) -> None:
    root = tree(tmp_path)
    write_fd(root, "self", "0", "pipe:[10]", O_RDONLY)
    write_fd(root, "self", "1", "socket:[20]")
    with pytest.raises(AdoptedError, match=r"\(stdin pipe:\[10\] is not held by the host; "
                                           r"stdout socket:\[20\] peer is pid 7, not the host\)"):
        check(root, FixtureProbe({0: PIPE, 1: FdInfo(FD_SOCKET, 7)}))


def test_race_on_second_fd_fails_even_after_verified(tmp_path: Path) -> None:
    """Both fds are always examined (as in Go): the host exiting during the check is a race."""
    root = tmp_path / "proc"
    write_fd(root, "self", "0", "socket:[1]")
    write_fd(root, "self", "1", "pipe:[2]", O_WRONLY)
    with pytest.raises(RaceError):
        check(root, FixtureProbe({0: FdInfo(FD_SOCKET, HOST_PID), 1: PIPE}))


# --- host_identity / host ------------------------------------------------------------------


def test_host_identity_other_systems_not_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")
    monkeypatch.setattr(procid, "host_of", lambda pid, launchers=None: IDENT)
    assert procid.host_identity().stdio == "not checked: no subreapers on this system"


def test_host_logs_stdio_at_debug(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(procid, "host_identity", lambda launchers=None: IDENT._replace(stdio="verified: x"))
    with caplog.at_level(logging.DEBUG, logger="mcp_resume"):
        assert procid.host() == (HOST_PID, HOST.start_time)
    rec = [r for r in caplog.records if getattr(r, "event", "") == "host_stdio"]
    assert len(rec) == 1 and rec[0].levelno == logging.DEBUG and getattr(rec[0], "detail") == "verified: x"


def test_host_raises_adopted(monkeypatch: pytest.MonkeyPatch) -> None:
    def adopted(launchers: object = None) -> Identity:
        raise AdoptedError("adopted")

    monkeypatch.setattr(procid, "host_identity", adopted)
    with pytest.raises(AdoptedError):
        procid.host()


def test_host_of_stays_a_pure_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    """host_of never runs the check: Identity.stdio stays empty."""
    if not (LINUX or sys.platform == "darwin"):  # pragma: no cover
        pytest.skip("reads this machine's processes")

    def boom(*a: object, **k: object) -> Identity:
        raise AssertionError("host_of ran the stdio check")

    monkeypatch.setattr(procid, "check_stdio", boom)
    try:
        ident = procid.host_of(os.getpid())
    except ProcIdError as e:  # pragma: no cover - e.g. run directly under a reaper
        pytest.skip(f"no host here: {e}")
    assert ident.stdio == ""


# --- the real probe on this machine's fds --------------------------------------------------


@pytest.mark.skipif(not LINUX, reason="SO_PEERCRED and /proc/self/fd are Linux")
def test_real_probe_kinds() -> None:
    probe = StdioProbe()
    r, w = os.pipe()
    a, b = socket.socketpair()
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        assert probe.fd_info(r) == FdInfo(FD_PIPE)
        assert probe.fd_info(a.fileno()) == FdInfo(FD_SOCKET, os.getpid())  # socketpair: the creator
        assert probe.fd_info(tcp.fileno()) == FdInfo(FD_SOCKET, 0)  # not a Unix socket: no peer
        assert probe.fd_info(null) == FdInfo(FD_OTHER)
        before = sorted(os.listdir("/proc/self/fd"))
        probe.fd_info(b.fileno())
        assert sorted(os.listdir("/proc/self/fd")) == before  # the SO_PEERCRED dup is closed
        assert b.fileno() >= 0 and b.getsockname() is not None  # and the fd itself left open
    finally:
        for fd in (r, w, null):
            os.close(fd)
        for s in (a, b, tcp):
            s.close()
    assert probe.fd_info(r) == FdInfo(FD_CLOSED)


@pytest.mark.skipif(not LINUX, reason="/proc/self/fd")
def test_real_fds_in_process(tmp_path: Path) -> None:
    """check_stdio on real fds of this process against the real /proc, with this process as the 'host'."""
    me = Process(os.getpid(), os.getppid(), "me", None, "x")
    ident = Identity(me.pid, "x", (me,))
    r, w = os.pipe()
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    f = os.open(fifo, os.O_RDWR)
    try:
        got = check_stdio(ident, fds=(r,))
        assert got.stdio.startswith(f"verified: fd {r} pipe:[") and got.stdio.endswith(f"is held by the host as fd {w}")
        assert check_stdio(ident, fds=(f,)).stdio == f"not checked: fd {f} is a named FIFO"
        other = Identity(os.getppid(), "x", (Process(os.getppid(), 0, "parent", None, "x"),))
        with pytest.raises(AdoptedError, match=rf"fd {r} pipe:\[[0-9]+\] is not held by the host"):
            check_stdio(other, fds=(r,))
    finally:
        for fd in (r, w, f):
            os.close(fd)


# --- real processes ------------------------------------------------------------------------

#: The server stand-in: waits for $GO (if set), resolves its host with the
#: stdio check, writes the result as JSON to $OUT; never prints to stdout.
CHILD = textwrap.dedent(
    """
    import json, os, sys, time
    go = os.environ.get("GO")
    if go:
        deadline = time.monotonic() + 30
        while not os.path.exists(go) and time.monotonic() < deadline:
            time.sleep(0.01)
    from mcp_resume import _procid
    try:
        ident = _procid.host_identity()
        res = {"pid": ident.pid, "stdio": ident.stdio, "chain": [p.pid for p in ident.chain]}
    except _procid.ProcIdError as e:
        res = {"error": type(e).__name__, "message": str(e)}
    tmp = os.environ["OUT"] + ".tmp"
    with open(tmp, "w") as f:
        json.dump(res, f)
    os.rename(tmp, os.environ["OUT"])
    """
)

#: The intermediate process of the relay shape: spawns CHILD with the pipe
#: fd $W as its stdout and /dev/null as stdin, closes its own copy, lets the
#: child go, waits. $NAME, if set, becomes its comm (PR_SET_NAME).
RELAY = textwrap.dedent(
    """
    import ctypes, os, subprocess, sys
    if os.environ.get("NAME"):
        ctypes.CDLL(None).prctl(15, os.environ["NAME"].encode(), 0, 0, 0)
    w = int(os.environ["W"])
    p = subprocess.Popen([os.environ["PY"], "-c", os.environ["CHILD"]], stdin=subprocess.DEVNULL, stdout=w)
    os.close(w)
    open(os.environ["GO"], "w").close()
    sys.exit(p.wait())
    """
)

#: A subreaper: PR_SET_CHILD_SUBREAPER, then `sh -c 'child &'` with the pipe
#: fd $W as stdout; sh exits at once, orphaning the child, which the kernel
#: re-parents to this process. Exit 77 when prctl fails.
SUBREAPER = textwrap.dedent(
    """
    import ctypes, os, subprocess, sys
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(36, 1, 0, 0, 0) != 0:
        sys.exit(77)
    w = int(os.environ["W"])
    sh = subprocess.Popen(["sh", "-c", '"$PY" -c "$CHILD" &'], stdin=subprocess.DEVNULL, stdout=w)
    os.close(w)
    sh.wait()
    open(os.environ["GO"], "w").close()
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            break
    """
)


def child_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != procid.LAUNCHERS_ENV}
    env.update(OUT=str(tmp_path / "out.json"), PY=sys.executable, CHILD=CHILD, GO=str(tmp_path / "go"))
    env.update(extra)
    return env


def result(tmp_path: Path) -> dict[str, Any]:
    out = tmp_path / "out.json"
    assert out.exists(), "the child wrote no result"
    data: dict[str, Any] = json.loads(out.read_text())
    return data


needs_linux = pytest.mark.skipif(not LINUX, reason="the stdio check runs on Linux only")


@needs_linux
def test_real_child_with_pipes_verified(tmp_path: Path) -> None:
    env = child_env(tmp_path)
    del env["GO"]
    p = subprocess.Popen([sys.executable, "-c", CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    try:
        assert p.wait(timeout=60) == 0
        assert p.stdout is not None and p.stdout.read() == b""  # nothing on stdout
    finally:
        for f in (p.stdin, p.stdout):
            if f is not None:
                f.close()
    got = result(tmp_path)
    assert got.get("pid") == os.getpid(), got
    assert got["chain"] == [os.getpid()]
    assert got["stdio"].startswith("verified: stdin pipe:["), got
    assert "is held by the host as fd" in got["stdio"]


@needs_linux
def test_real_child_with_socketpair_verified(tmp_path: Path) -> None:
    env = child_env(tmp_path)
    del env["GO"]
    ours, theirs = socket.socketpair()
    try:
        p = subprocess.Popen([sys.executable, "-c", CHILD], stdin=theirs.fileno(), stdout=theirs.fileno(), env=env)
        theirs.close()
        assert p.wait(timeout=60) == 0
        ours.settimeout(10)
        assert ours.recv(1) == b""  # nothing on stdout: end of file once the child is gone
    finally:
        ours.close()
        theirs.close()
    got = result(tmp_path)
    assert got.get("pid") == os.getpid(), got
    assert got["stdio"].startswith("verified: stdin socket:[") and got["stdio"].endswith("peer is the host"), got


@needs_linux
def test_real_child_with_dev_null_not_checked(tmp_path: Path) -> None:
    env = child_env(tmp_path)
    del env["GO"]
    p = subprocess.run([sys.executable, "-c", CHILD], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       env=env, timeout=60)
    assert p.returncode == 0
    got = result(tmp_path)
    assert got.get("pid") == os.getpid(), got
    assert got["stdio"] == "not checked: stdin is not a pipe or socket; stdout is not a pipe or socket"


def run_relay(tmp_path: Path, script: str, **extra: str) -> tuple[int, int]:
    """Start ``script`` with the write end of a pipe this test holds the read end of; return (its pid, exit code)."""
    r, w = os.pipe()
    try:
        env = child_env(tmp_path, W=str(w), **extra)
        p = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.DEVNULL, pass_fds=(w,), env=env)
        os.close(w)
        w = -1
        code = p.wait(timeout=60)
    finally:
        if w >= 0:
            os.close(w)
        os.close(r)
    return p.pid, code


@needs_linux
def test_real_relay_passing_stdio_through_is_adopted(tmp_path: Path) -> None:
    """A non-launcher P passes the test's pipe to the child and closes its copy: P is the host and holds nothing."""
    pid, code = run_relay(tmp_path, RELAY)
    assert code == 0
    got = result(tmp_path)
    assert got.get("error") == "AdoptedError", got
    assert f"the host pid {pid} (" in got["message"]
    assert "stdout pipe:[" in got["message"] and "is not held by the host" in got["message"]


@needs_linux
def test_real_relay_listed_as_launcher_verified(tmp_path: Path) -> None:
    """The same P, named mcp-relay and listed in MCP_RESUME_LAUNCHERS: the host is this test, which holds the pipe."""
    _, code = run_relay(tmp_path, RELAY, NAME="mcp-relay", **{procid.LAUNCHERS_ENV: "mcp-relay"})
    assert code == 0
    got = result(tmp_path)
    assert got.get("pid") == os.getpid(), got
    assert got["stdio"].startswith("verified: stdout pipe:[") and "is held by the host as fd" in got["stdio"], got


@needs_linux
def test_real_subreaper_adoption_is_adopted(tmp_path: Path) -> None:
    """Fault 11c itself: the child is orphaned under `sh -c 'child &'` and adopted by subreaper S."""
    pid, code = run_relay(tmp_path, SUBREAPER)
    if code == 77:
        pytest.skip("prctl(PR_SET_CHILD_SUBREAPER) failed")
    assert code == 0
    got = result(tmp_path)
    assert got.get("error") == "AdoptedError", got
    assert "resolve MCP host of pid " in got["message"]
    assert f"the host pid {pid} (" in got["message"], got
    assert "stdout pipe:[" in got["message"] and "adopted by a subreaper" in got["message"]

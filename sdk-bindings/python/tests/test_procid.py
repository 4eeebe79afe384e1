"""Unit tests of the host-identity port (mcp_resume._procid), the Python twin of Go procid.

Linux: fixture /proc trees on real files (stat, cmdline, boot_id, ns/pid links), the same
fixtures and cases as procid/*_test.go. macOS: struct kinfo_proc and
kern.procargs2 decoded from fixture bytes built at procid's offsets. And the
real /proc of this machine where there is one.
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from mcp_resume import _procid as procid
from mcp_resume._procid import (
    DEFAULT_LAUNCHERS,
    LinuxSource,
    MalformedError,
    NamespaceError,
    NoBootIDError,
    NotFoundError,
    Process,
    RaceError,
    ReaperError,
    TooDeepError,
    UnsupportedError,
)

TEST_BOOT_UUID = "0f1e2d3c-4b5a-6978-8796-A5B4C3D2E1F0\n"
TEST_BOOT = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"
#: The PID namespace inode of every fixture process and of "self" (procid's testNS).
TEST_NS = "4026531836"
#: Another PID namespace's inode.
OTHER_NS = "4026532000"

#: Process names that trip naive /proc/<pid>/stat parsers (procid/procfs_test.go).
ODD_COMMS = ["a b", "x) (y", ")", "(", "", "((", "))", "a) S 1 2 3", "tab\there", "new\nline", "npm exec ./tiny"]


def argv(*args: str) -> str:
    return "".join(a + "\x00" for a in args)


@dataclass(frozen=True)
class FakeProc:
    """One process of a fixture /proc tree (procid's fakeProc)."""

    pid: int
    ppid: int
    comm: str
    state: str = "S"
    start: int = 0  # 0 means 1000 + pid
    cmdline: str = ""

    @property
    def ticks(self) -> int:
        return self.start or 1000 + self.pid

    def stat_line(self) -> str:
        mid = " ".join(["0"] * 17)
        tail = " ".join(["7"] * 30)
        return f"{self.pid} ({self.comm}) {self.state} {self.ppid} {mid} {self.ticks} {tail}\n"

    def want(self, *args: str) -> Process:
        return Process(self.pid, self.ppid, self.comm, tuple(args) or None, f"{self.ticks}.{TEST_BOOT}.{TEST_NS}")

    def with_ppid(self, ppid: int) -> FakeProc:
        return replace(self, ppid=ppid)


def write_proc(root: Path, p: FakeProc) -> None:
    d = root / str(p.pid)
    d.mkdir(parents=True, exist_ok=True)
    (d / "stat").write_bytes(p.stat_line().encode())
    (d / "cmdline").write_bytes(p.cmdline.encode())
    write_ns(d)


def write_ns(d: Path, ns: str = TEST_NS) -> None:
    """Link ``<d>/ns/pid`` to PID namespace ``ns``, as the kernel does."""
    (d / "ns").mkdir(parents=True, exist_ok=True)
    link = d / "ns" / "pid"
    if link.is_symlink():
        link.unlink()
    os.symlink(f"pid:[{ns}]", link)


def write_tree(root: Path, *procs: FakeProc, boot: bool = True) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for p in procs:
        write_proc(root, p)
    write_ns(root / "self")
    if boot:
        d = root / "sys" / "kernel" / "random"
        d.mkdir(parents=True, exist_ok=True)
        (d / "boot_id").write_text(TEST_BOOT_UUID)
    return root


# --- parse_stat ------------------------------------------------------------------


@pytest.mark.parametrize(
    "data,want",
    [
        (FakeProc(42, 7, "bash", start=98765).stat_line(), ("bash", "S", 7, 98765, 42)),
        (
            FakeProc(4194304, 4194303, "x", state="R", start=18446744073709551615).stat_line(),
            ("x", "R", 4194303, 18446744073709551615, 4194304),
        ),
        ("9 (z) Z 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 55", ("z", "Z", 1, 55, 9)),
    ]
    + [(FakeProc(1234, 1, c, start=5).stat_line(), (c, "S", 1, 5, 1234)) for c in ODD_COMMS],
    ids=["plain", "max values", "zombie no newline"] + [f"comm {c!r}" for c in ODD_COMMS],
)
def test_parse_stat(data: str, want: tuple) -> None:
    st = procid.parse_stat(data.encode())
    assert (st.comm, st.state, st.ppid, st.start, st.pid) == want


@pytest.mark.parametrize(
    "data",
    [
        "",
        "1 init S 0",
        "1 )init( S 0",
        "(init) S 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 5",
        "0 (init) S 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 5",
        "1 (init) S 0 0 0",
        "1 (init) SS 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 5",
        "1 (init) S -4 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 5",
        "1 (init) S 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 -5",
        "1 (init) S 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 18446744073709551616",
        "1_0 (init) S 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 5",
        "1 (init) S 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 5_0",
    ],
    ids=[
        "empty", "no parens", "close before open", "no pid", "pid zero", "too few fields", "long state",
        "bad ppid", "bad starttime", "starttime overflow", "python-only digit separator in pid",
        "python-only digit separator in starttime",
    ],
)
def test_parse_stat_malformed(data: str) -> None:
    with pytest.raises(MalformedError):
        procid.parse_stat(data.encode())


@pytest.mark.parametrize(
    "data,want",
    [("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0\n", TEST_BOOT), (TEST_BOOT_UUID, TEST_BOOT)],
    ids=["kernel format", "uppercase"],
)
def test_parse_boot_id(data: str, want: str) -> None:
    assert procid.parse_boot_id(data.encode()) == want


@pytest.mark.parametrize("data", ["", "0f1e2d3c-4b5a-6978-8796\n", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1fg\n"])
def test_parse_boot_id_bad(data: str) -> None:
    with pytest.raises(NoBootIDError):
        procid.parse_boot_id(data.encode())


# --- LinuxSource.lookup on a fixture tree -------------------------------------------


def test_linux_lookup(tmp_path: Path) -> None:
    plain = FakeProc(100, 1, "claude", start=98765, cmdline=argv("claude", "--resume"))
    spaced = FakeProc(101, 100, "a b", cmdline=argv("/opt/a b", ""))
    paren = FakeProc(102, 100, "x) (y", cmdline=argv("x", "", "y"))
    close_paren = FakeProc(103, 100, ")")
    empty = FakeProc(104, 100, "")
    titled = FakeProc(105, 100, "npm exec ./tiny", cmdline="npm exec ./tinypkg" + "\x00" * 17)
    mismatch = FakeProc(106, 100, "m")
    root = write_tree(tmp_path / "proc", plain, spaced, paren, close_paren, empty, titled, mismatch)
    (root / "107").mkdir()
    (root / "107" / "stat").write_text(mismatch.stat_line())  # /proc/107/stat describing pid 106
    src = LinuxSource(str(root))
    assert src.lookup(100) == plain.want("claude", "--resume")
    assert src.lookup(101) == spaced.want("/opt/a b")
    assert src.lookup(102) == paren.want("x", "", "y")
    assert src.lookup(103) == close_paren.want()
    assert src.lookup(104) == empty.want()
    assert src.lookup(105) == titled.want("npm exec ./tinypkg")
    for pid in (999, 0, -1):
        with pytest.raises(NotFoundError):
            src.lookup(pid)
    with pytest.raises(MalformedError):
        src.lookup(107)
    with pytest.raises(NoBootIDError):
        LinuxSource(str(write_tree(tmp_path / "noboot", plain, boot=False))).lookup(100)


# --- resolve (procid/resolve_test.go) ------------------------------------------------

INIT = FakeProc(1, 0, "systemd", cmdline=argv("/sbin/init"))
TERMINAL = FakeProc(50, 1, "tmux: server", cmdline=argv("tmux"))
CLAUDE = FakeProc(100, 50, "claude", cmdline=argv("claude"))
VSCODE = FakeProc(110, 50, "code", cmdline=argv("/usr/share/code/code", "--type=utility"))
NPM_EXEC = FakeProc(150, 100, "npm exec @model", cmdline="npm exec @modelcontextprotocol/server-everything" + "\x00" * 30)
SH_C = FakeProc(200, 150, "sh", cmdline=argv("sh", "-c", "mcp-server-everything"))
SERVER = FakeProc(300, 200, "node", cmdline=argv("node", "/home/u/.npm/_npx/1/node_modules/.bin/mcp-server-everything"))


def launcher_run(parent: int, start: int, n: int) -> list[FakeProc]:
    procs = []
    for i in range(1, n + 1):
        procs.append(FakeProc(start + i, parent, "sh", cmdline=argv("sh", "-c", "next")))
        parent = start + i
    return procs


RESOLVE_OK = [
    ("direct child", [INIT, TERMINAL, CLAUDE, SERVER.with_ppid(100)], None, "", [100]),
    ("npx: npm exec title then sh -c", [INIT, TERMINAL, CLAUDE, NPM_EXEC, SH_C, SERVER], None, "", [200, 150, 100]),
    (
        "npx: title truncated in comm, args unreadable",
        [INIT, TERMINAL, CLAUDE, FakeProc(150, 100, "npm exec @model"), SH_C, SERVER], None, "", [200, 150, 100],
    ),
    (
        "old npx: node running npx-cli.js",
        [INIT, TERMINAL, VSCODE,
         FakeProc(150, 110, "node", cmdline=argv("/usr/bin/node", "/usr/lib/node_modules/npm/bin/npx-cli.js", "-y", "server")),
         SERVER.with_ppid(150)], None, "", [150, 110],
    ),
    (
        "pnpm dlx: node running pnpm.cjs",
        [INIT, TERMINAL, VSCODE, FakeProc(150, 110, "node", cmdline=argv("node", "/opt/pnpm/bin/pnpm.cjs", "dlx", "server")),
         SERVER.with_ppid(150)], None, "", [150, 110],
    ),
    (
        "bun x",
        [INIT, TERMINAL, VSCODE, FakeProc(150, 110, "bun", cmdline=argv("/home/u/.bun/bin/bun", "x", "server")),
         SERVER.with_ppid(150)], None, "", [150, 110],
    ),
    (
        "uvx, env and timeout",
        [INIT, TERMINAL, CLAUDE,
         FakeProc(120, 100, "timeout", cmdline=argv("timeout", "600", "env", "FOO=1", "uvx", "mcp-server-fetch")),
         FakeProc(150, 120, "uv", cmdline=argv("/home/u/.local/bin/uv", "tool", "uvx", "mcp-server-fetch")),
         FakeProc(300, 150, "python3", cmdline=argv("python3", "-m", "mcp_server_fetch"))], None, "", [150, 120, 100],
    ),
    (
        "node is not a launcher by itself",
        [INIT, TERMINAL, FakeProc(100, 50, "node", cmdline=argv("node", "/usr/lib/node_modules/@anthropic-ai/claude-code/cli.js")),
         SERVER.with_ppid(100)], None, "", [100],
    ),
    (
        "wrapper script: comm is the script, args[0] the shell",
        [INIT, TERMINAL, CLAUDE, FakeProc(200, 100, "run-server.sh", cmdline=argv("/bin/bash", "/opt/run-server.sh")), SERVER],
        None, "", [200, 100],
    ),
    (
        "login shell running a command",
        [INIT, TERMINAL, CLAUDE, FakeProc(200, 100, "zsh", cmdline=argv("/bin/zsh", "-ilc", "mcp-server")), SERVER],
        None, "", [200, 100],
    ),
    ("interactive login shell is the host",
     [INIT, TERMINAL, FakeProc(100, 50, "bash", cmdline=argv("-bash")), SERVER.with_ppid(100)], None, "", [100]),
    ("interactive shell with options is the host",
     [INIT, TERMINAL, FakeProc(100, 50, "zsh", cmdline=argv("/bin/zsh", "-l", "--login")), SERVER.with_ppid(100)],
     None, "", [100]),
    ("shell reading stdin is the host",
     [INIT, TERMINAL, CLAUDE, FakeProc(200, 100, "sh", cmdline=argv("sh", "-s")), SERVER], None, "", [200]),
    ("shell with unknown args is the host", [INIT, TERMINAL, CLAUDE, FakeProc(200, 100, "sh"), SERVER], None, "", [200]),
    (
        "extra launcher from options",
        [INIT, TERMINAL, CLAUDE, FakeProc(200, 100, "my-wrapper", cmdline=argv("./my-wrapper", "server")), SERVER],
        ["my-wrapper"], "", [200, 100],
    ),
    (
        "extra launcher from environment",
        [INIT, TERMINAL, CLAUDE, FakeProc(200, 100, "direnv", cmdline=argv("direnv", "exec", ".", "server")), SERVER],
        None, " foo , direnv,,", [200, 100],
    ),
    (
        "extra launcher matched by truncated comm",
        [INIT, TERMINAL, CLAUDE, FakeProc(200, 100, "very-long-launc"), SERVER], ["very-long-launcher"], "", [200, 100],
    ),
    (
        "unknown wrapper is the host",
        [INIT, TERMINAL, CLAUDE, FakeProc(200, 100, "my-wrapper", cmdline=argv("./my-wrapper", "server")), SERVER],
        None, "", [200],
    ),
    (
        "odd host name a b",
        [INIT, TERMINAL, FakeProc(100, 50, "a b", cmdline=argv("/opt/a b")), SH_C.with_ppid(100), SERVER], None, "", [200, 100],
    ),
    (
        "odd host name x) (y",
        [INIT, TERMINAL, FakeProc(100, 50, "x) (y"), SH_C.with_ppid(100), SERVER], None, "", [200, 100],
    ),
    (
        "fifteen launchers",
        [INIT, TERMINAL, CLAUDE, SERVER.with_ppid(415), *launcher_run(100, 400, 15)], None, "",
        [415, 414, 413, 412, 411, 410, 409, 408, 407, 406, 405, 404, 403, 402, 401, 100],
    ),
]


@pytest.mark.parametrize("name,procs,extra,env,chain", RESOLVE_OK, ids=[c[0] for c in RESOLVE_OK])
def test_resolve(tmp_path: Path, name: str, procs: list[FakeProc], extra: list[str] | None, env: str, chain: list[int]) -> None:
    root = write_tree(tmp_path / "proc", *procs)
    got = procid.resolve(LinuxSource(str(root)), 300, procid.launcher_set(extra, env))
    by_pid = {p.pid: p for p in procs}
    host = by_pid[chain[-1]]
    assert (got.pid, got.start_time) == (host.pid, f"{host.ticks}.{TEST_BOOT}.{TEST_NS}")
    assert [p.pid for p in got.chain] == chain
    for p in got.chain:
        assert (p.name, p.ppid) == (by_pid[p.pid].comm, by_pid[p.pid].ppid)


RESOLVE_ERR = [
    ("sixteen launchers", [INIT, TERMINAL, CLAUDE, SERVER.with_ppid(416), *launcher_run(100, 400, 16)], None, TooDeepError),
    ("launcher cycle", [INIT, CLAUDE, FakeProc(200, 200, "sh", cmdline=argv("sh", "-c", "x")), SERVER], None, TooDeepError),
    ("server orphaned to pid 1", [INIT, SERVER.with_ppid(1)], None, ReaperError),
    ("host outside the pid namespace", [SERVER.with_ppid(0)], None, ReaperError),
    ("launcher orphaned to pid 1", [INIT, SH_C.with_ppid(1), SERVER], None, ReaperError),
    (
        "launcher orphaned to a user systemd",
        [INIT, FakeProc(900, 1, "systemd", cmdline=argv("/lib/systemd/systemd", "--user")), SH_C.with_ppid(900), SERVER],
        None, ReaperError,
    ),
    ("tini in a container", [FakeProc(7, 0, "tini", cmdline=argv("/sbin/tini", "--", "server")), SERVER.with_ppid(7)], None, ReaperError),
    ("containerd shim by truncated comm", [INIT, FakeProc(40, 1, "containerd-shim"), SERVER.with_ppid(40)], None, ReaperError),
    (
        "reaper listed as launcher is still a reaper",
        [FakeProc(7, 0, "dumb-init", cmdline=argv("dumb-init", "server")), SERVER.with_ppid(7)], ["dumb-init"], ReaperError,
    ),
    ("dumb-init copy of sh running the server", [INIT, CLAUDE.with_ppid(1), FakeProc(200, 100, "dumb-init", cmdline=argv("/tmp/x/dumb-init", "-c", "server; exit $?")), SERVER], None, ReaperError),
    ("parent exited", [INIT, SERVER.with_ppid(250)], None, RaceError),
    ("server absent", [INIT, CLAUDE], None, NotFoundError),
]


@pytest.mark.parametrize("name,procs,extra,err", RESOLVE_ERR, ids=[c[0] for c in RESOLVE_ERR])
def test_resolve_refuses(tmp_path: Path, name: str, procs: list[FakeProc], extra: list[str] | None, err: type) -> None:
    root = write_tree(tmp_path / "proc", *procs)
    with pytest.raises(err):
        procid.resolve(LinuxSource(str(root)), 300, procid.launcher_set(extra, ""))


def test_resolve_no_boot_id(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "proc", INIT, TERMINAL, CLAUDE, SERVER.with_ppid(100), boot=False)
    with pytest.raises(NoBootIDError):
        procid.resolve(LinuxSource(str(root)), 300, procid.launcher_set(None, ""))


RACES = [
    ("server re-parented after its parent was read", 200, lambda root: write_proc(root, SERVER.with_ppid(1))),
    ("server pid reused after its parent was read", 200, lambda root: write_proc(root, replace(SERVER, start=99999))),
    ("launcher re-parented after its parent was read", 150, lambda root: write_proc(root, SH_C.with_ppid(1))),
    ("launcher exited after its parent was read", 150, lambda root: shutil.rmtree(root / "200")),
]


@pytest.mark.parametrize("name,at_pid,change", RACES, ids=[r[0] for r in RACES])
def test_resolve_race(tmp_path: Path, name: str, at_pid: int, change) -> None:
    """The tree changes between the reads of one step: the child is re-read after its parent."""
    root = write_tree(tmp_path / "proc", INIT, TERMINAL, CLAUDE, NPM_EXEC, SH_C, SERVER)
    done = []

    def after_stat(pid: int) -> None:
        if pid == at_pid and not done:
            done.append(pid)
            change(root)

    with pytest.raises(RaceError):
        procid.resolve(LinuxSource(str(root), after_stat=after_stat), 300, procid.launcher_set(None, ""))
    assert done, "the tree was never changed"


def test_resolve_hidden_host(tmp_path: Path) -> None:
    """A host /proc hides (hidepid) but which exists is told apart from one that is gone
    (procid's TestLinuxReader_Hidden; docs/RELIABILITY.md fault 12): a permission-style
    error naming hidepid, not "exited during the walk"."""
    root = write_tree(tmp_path / "proc", SERVER)  # the host, pid 200, is not in the tree
    with pytest.raises(procid.ProcIdError) as exc:
        procid.resolve(LinuxSource(str(root), hidden=lambda pid: pid == 200), 300, procid.launcher_set(None, ""))
    assert not isinstance(exc.value, (NotFoundError, RaceError)), repr(exc.value)
    assert f"pid 200 exists but {root} hides it (mounted hidepid=1 or 2)" in str(exc.value)
    assert str(exc.value).endswith("and it belongs to another user: permission denied"), str(exc.value)
    with pytest.raises(RaceError, match="exited during the walk"):
        procid.resolve(LinuxSource(str(root), hidden=lambda pid: False), 300, procid.launcher_set(None, ""))


# --- launcher and reaper rules (procid/launcher_test.go) ----------------------------------

LAUNCHER_CASES = [
    ("sh -c", Process(0, 0, "sh", ("sh", "-c", "server"), ""), True),
    ("bash -lc", Process(0, 0, "bash", ("/bin/bash", "-lc", "server"), ""), True),
    ("fish --command=", Process(0, 0, "fish", ("fish", "--command=server"), ""), True),
    ("bash script after --", Process(0, 0, "run.sh", ("/bin/bash", "--", "run.sh"), ""), True),
    ("dash script", Process(0, 0, "run.sh", ("/bin/dash", "/opt/run.sh"), ""), True),
    ("login shell", Process(0, 0, "bash", ("-bash",), ""), False),
    ("interactive shell", Process(0, 0, "zsh", ("zsh", "-i"), ""), False),
    ("shell reading stdin", Process(0, 0, "sh", ("sh", "-s", "-"), ""), False),
    ("shell without args", Process(0, 0, "sh", None, ""), False),
    ("env without args", Process(0, 0, "env", None, ""), True),
    ("uv run", Process(0, 0, "uv", ("uv", "run", "server"), ""), True),
    ("uvx by args only", Process(0, 0, "python3", ("/usr/bin/uvx", "server"), ""), True),
    ("npm exec title in comm", Process(0, 0, "npm exec ./tiny", None, ""), True),
    ("npm x title in args", Process(0, 0, "node", ("npm x ./tinypkg",), ""), True),
    ("npm exec without package", Process(0, 0, "npm exec", None, ""), True),
    ("npm run title is not npm exec", Process(0, 0, "npm run dev", None, ""), False),
    ("node npm-cli.js exec", Process(0, 0, "node", ("node", "/usr/lib/node_modules/npm/bin/npm-cli.js", "exec", "x"), ""), True),
    ("nodejs npx", Process(0, 0, "nodejs", ("/usr/bin/nodejs", "/usr/bin/npx", "x"), ""), True),
    ("node yarn.mjs", Process(0, 0, "node", ("node", "/opt/yarn/yarn.mjs", "dlx", "x"), ""), True),
    ("node script", Process(0, 0, "node", ("node", "/opt/host/cli.js"), ""), False),
    ("node alone", Process(0, 0, "node", ("node",), ""), False),
    ("bun x", Process(0, 0, "bun", ("bun", "x", "server"), ""), True),
    ("bun run", Process(0, 0, "bun", ("bun", "run", "host.ts"), ""), False),
    ("sudo is not a launcher", Process(0, 0, "sudo", ("sudo", "server"), ""), False),
    ("host", Process(0, 0, "claude", ("claude",), ""), False),
    ("short name is not a prefix match", Process(0, 0, "s", ("s",), ""), False),
]


@pytest.mark.parametrize("name,p,want", LAUNCHER_CASES, ids=[c[0] for c in LAUNCHER_CASES])
def test_is_launcher(name: str, p: Process, want: bool) -> None:
    assert procid.is_launcher(p, procid.launcher_set(None, "")) is want


def test_launcher_set() -> None:
    names = procid.launcher_set(["baz", " ", " qux "], " foo, ,bar,")
    assert names == frozenset(DEFAULT_LAUNCHERS) | {"foo", "bar", "baz", "qux"}
    assert not names & {"", "sudo", "doas", "su"}


def test_launcher_set_reads_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(procid.LAUNCHERS_ENV, "direnv")
    assert "direnv" in procid.launcher_set()


REAPER_CASES = [
    ("pid 1", Process(1, 0, "process_api", None, ""), True),
    ("pid 0", Process(0, 0, "kernel_task", None, ""), True),
    ("systemd --user", Process(900, 1, "systemd", ("/lib/systemd/systemd", "--user"), ""), True),
    ("launchd", Process(900, 1, "launchd", None, ""), True),
    ("tini by args", Process(7, 1, "x", ("/sbin/tini", "--"), ""), True),
    ("shim truncated", Process(7, 1, "containerd-shim", None, ""), True),
    ("dumb-init", Process(7, 1, "dumb-init", ("/tmp/dumb-init", "-c", "x"), ""), True),
    ("host", Process(100, 1, "claude", None, ""), False),
    ("init-like prefix", Process(100, 1, "initrd-helper", None, ""), False),
]


@pytest.mark.parametrize("name,p,want", REAPER_CASES, ids=[c[0] for c in REAPER_CASES])
def test_is_reaper(name: str, p: Process, want: bool) -> None:
    assert procid.is_reaper(p) is want


def test_constants_match_go_procid() -> None:
    """The launcher and reaper lists are procid's (procid/launcher.go), read from the Go source."""
    from conftest import REPO_ROOT

    src = (REPO_ROOT / "procid" / "launcher.go").read_text()

    def go_list(var: str) -> list[str]:
        import re

        body = re.search(var + r"\s*=\s*(?:\[\]string|map\[string\]bool)\{(.*?)\n\}", src, re.S)
        assert body, f"{var} not found in procid/launcher.go"
        text = re.sub(r"//[^\n]*", "", body.group(1))
        return re.findall(r'"([^"]+)"', text)

    assert list(DEFAULT_LAUNCHERS) == go_list("DefaultLaunchers")
    assert list(procid.REAPERS) == go_list("reapers")
    assert sorted(procid._SHELLS) == sorted(go_list("shells"))
    assert sorted(procid._NODE_TOOLS) == sorted(go_list("nodeTools"))
    procid_go = (REPO_ROOT / "procid" / "procid.go").read_text()
    assert f"const MaxDepth = {procid.MAX_DEPTH}" in procid_go
    assert f'const LaunchersEnv = "{procid.LAUNCHERS_ENV}"' in procid_go


# --- macOS decoding on fixture bytes (procid/kinfo_test.go) -----------------------------------


def kinfo_bytes(pid: int, ppid: int, comm: bytes, stat: int, sec: int, usec: int) -> bytes:
    """A little-endian struct kinfo_proc with the fields at procid's offsets and 0xAA elsewhere."""
    b = bytearray(b"\xaa" * procid.KINFO_SIZE)
    struct.pack_into("<q", b, 0, sec)
    struct.pack_into("<i", b, 8, usec)
    struct.pack_into("<i", b, 12, 0)
    struct.pack_into("<b", b, 36, stat)
    struct.pack_into("<i", b, 40, pid)
    b[243:243 + 17] = comm.ljust(17, b"\x00")[:17]
    struct.pack_into("<i", b, 560, ppid)
    return bytes(b)


@pytest.mark.parametrize(
    "data,want,start",
    [
        (kinfo_bytes(4242, 1, b"Claude", 2, 1700000000, 42), (4242, 1, "Claude", 2), "1700000000.000042"),
        (kinfo_bytes(77, 4242, b"0123456789abcdef", 3, 1, 999999), (77, 4242, "0123456789abcdef", 3), "1.999999"),
        (kinfo_bytes(78, 77, b"x) (y", 5, 1700000001, 0), (78, 77, "x) (y", 5), "1700000001.000000"),
        (kinfo_bytes(80, 77, b"a b", 2, 1700000002, 7), (80, 77, "a b", 2), "1700000002.000007"),
        (kinfo_bytes(79, 1, b"sh", 2, 10, 10) + b"\x00" * 4, (79, 1, "sh", 2), "10.000010"),
    ],
    ids=["plain", "sixteen-byte comm", "odd comm x) (y", "odd comm a b", "longer record"],
)
def test_decode_kinfo(data: bytes, want: tuple, start: str) -> None:
    k = procid.decode_kinfo(data)
    assert (k.pid, k.ppid, k.comm, k.stat) == want
    assert k.start_time == start
    assert k.process(("a",)) == Process(k.pid, k.ppid, k.comm, ("a",), start)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        kinfo_bytes(79, 1, b"sh", 2, 10, 10)[:-1],
        kinfo_bytes(0, 0, b"kernel_task", 2, 10, 10),
        kinfo_bytes(-3, 1, b"x", 2, 10, 10),
        kinfo_bytes(3, -1, b"x", 2, 10, 10),
        kinfo_bytes(3, 1, b"", 2, 10, 10),
        kinfo_bytes(3, 1, b"x", 2, 0, 0),
        kinfo_bytes(3, 1, b"x", 2, 10, 1000000),
        kinfo_bytes(3, 1, b"x", 2, 10, -1),
    ],
    ids=["empty", "short", "pid 0", "negative pid", "negative ppid", "empty comm", "zero start", "usec too large", "negative usec"],
)
def test_decode_kinfo_malformed(data: bytes) -> None:
    with pytest.raises(MalformedError):
        procid.decode_kinfo(data)


def proc_args(argc: int, path: bytes, pad: int, args: list[bytes], env: list[bytes]) -> bytes:
    b = struct.pack("<i", argc) + path + b"\x00" * (1 + pad)
    for a in args + env:
        b += a + b"\x00"
    return b


@pytest.mark.parametrize(
    "data,want",
    [
        (proc_args(3, b"/bin/sh", 5, [b"sh", b"-c", b"server; exit $?"], [b"HOME=/Users/u", b"PATH=/bin"]),
         ("sh", "-c", "server; exit $?")),
        (proc_args(3, b"/usr/bin/env", 0, [b"env", b"", b"x"], []), ("env", "", "x")),
        (proc_args(4, b"/opt/homebrew/bin/node", 3, [b"npm exec foo", b"", b"", b""], [b"A=b"]), ("npm exec foo",)),
        (proc_args(0, b"/bin/x", 1, [], []), None),
    ],
    ids=["sh -c with environment", "no padding, empty inner arg", "npm exec title", "argc 0"],
)
def test_decode_procargs(data: bytes, want: tuple | None) -> None:
    assert procid.decode_procargs(data) == want


@pytest.mark.parametrize(
    "data",
    [
        b"\x01\x00",
        struct.pack("<i", 1) + b"/bin/sh",
        proc_args(3, b"/bin/sh", 1, [b"sh"], []),
        proc_args(-1, b"/bin/sh", 1, [b"sh"], []),
        proc_args(1 << 30, b"/bin/sh", 1, [b"sh"], []),
    ],
    ids=["short", "no path terminator", "fewer args than argc", "negative argc", "huge argc"],
)
def test_decode_procargs_malformed(data: bytes) -> None:
    with pytest.raises(MalformedError):
        procid.decode_procargs(data)


# --- platforms and the real process tree ------------------------------------------------------


def test_other_os_unsupported() -> None:
    with pytest.raises(UnsupportedError):
        procid.new_source("freebsd13")
    with pytest.raises(UnsupportedError):
        procid.new_source("win32")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads this machine's /proc")
def test_real_proc_lookup_matches_kernel() -> None:
    """The real /proc: our own entry parses, and our parent is what os.getppid says."""
    me = LinuxSource().lookup(os.getpid())
    assert me.pid == os.getpid() and me.ppid == os.getppid()
    boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip().replace("-", "")
    ns = re.fullmatch(r"pid:\[([0-9]+)\]", os.readlink("/proc/self/ns/pid"))
    assert ns, os.readlink("/proc/self/ns/pid")
    assert re.fullmatch(r"[0-9]+\.[0-9a-f]{32}\.[0-9]+", me.start_time), me.start_time
    assert me.start_time.endswith(f".{boot}.{ns.group(1)}")
    procid.new_source().check_own_proc()  # type: ignore[attr-defined]  # this /proc is ours
    assert procid.LinuxSource().lookup(os.getppid()).pid == os.getppid()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="POSIX kill(pid, 0)")
def test_real_hidden_pid() -> None:
    """The production hidden check (procid's hiddenPID), on this machine's processes."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()  # exited and reaped: kill(pid, 0) answers ESRCH
    assert procid.hidden_pid(child.pid) is False
    assert procid.hidden_pid(os.getpid()) is False  # ours: kill(pid, 0) succeeds
    assert procid.hidden_pid(0) is False and procid.hidden_pid(-1) is False  # never a process group
    assert procid.hidden_pid(2**22 + 12345) is False  # above Linux's pid_max: absent
    if sys.platform.startswith("linux"):
        assert procid.new_source().hidden is procid.hidden_pid  # type: ignore[attr-defined]
    if os.geteuid() == 0:
        return  # root may signal anything: kill(1, 0) succeeds, pid 1 is never hidden from it
    try:
        kill_cap = int(next(line.split()[1] for line in Path("/proc/self/status").read_text().splitlines()
                            if line.startswith("CapEff:")), 16) & (1 << 5)
        uids = next(line.split()[1:] for line in Path("/proc/1/status").read_text().splitlines()
                    if line.startswith("Uid:"))
    except (OSError, StopIteration):
        pytest.skip("cannot tell who owns pid 1 or whether this process has CAP_KILL")
    if kill_cap or {int(uids[0]), int(uids[2])} & {os.getuid(), os.geteuid()}:
        pytest.skip("this process may signal pid 1")
    # Another user's pid 1 and no CAP_KILL: kill(1, 0) answers EPERM, so pid 1 counts as hidden.
    assert procid.hidden_pid(1) is True


@pytest.mark.skipif(sys.platform != "darwin", reason="macOS sysctl")
def test_real_sysctl_lookup() -> None:  # pragma: no cover - runs on macOS only
    me = procid.DarwinSource().lookup(os.getpid())
    assert me.pid == os.getpid() and me.ppid == os.getppid()


# --- alive (procid.Alive) ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "pid,start,want",
    [
        (100, "98765." + TEST_BOOT + "." + TEST_NS, True),
        (100, "98765." + TEST_BOOT, False),  # two-part start time from before the namespace field
        (100, "98764." + TEST_BOOT + "." + TEST_NS, False),  # pid reused
        (100, "98765.00000000000000000000000000000000", False),  # previous boot
        (100, "98765", False),  # malformed
        (100, "", False),
        (100, "1700000000.000042", False),  # macOS format
        (101, "5." + TEST_BOOT + "." + TEST_NS, False),  # zombie
        (102, "6." + TEST_BOOT + "." + TEST_NS, False),  # dead
        (999, "98765." + TEST_BOOT + "." + TEST_NS, False),  # absent
        (0, "98765." + TEST_BOOT + "." + TEST_NS, False),
    ],
    ids=["same instance", "two-part", "pid reused", "previous boot", "malformed", "empty", "macOS format", "zombie", "dead",
         "absent", "pid zero"],
)
def test_linux_alive(tmp_path: Path, pid: int, start: str, want: bool) -> None:
    root = write_tree(
        tmp_path / "proc",
        FakeProc(100, 1, "claude", start=98765),
        FakeProc(101, 100, "gone", state="Z", start=5),
        FakeProc(102, 100, "gone", state="X", start=6),
    )
    assert LinuxSource(str(root)).alive(pid, start) is want


def test_linux_alive_no_boot_id(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "proc", FakeProc(100, 1, "claude", start=98765), boot=False)
    with pytest.raises(NoBootIDError):
        LinuxSource(str(root)).alive(100, "98765." + TEST_BOOT + "." + TEST_NS)


def test_linux_alive_unreadable_is_unknown(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "proc", FakeProc(100, 1, "claude", start=98765))
    (root / "100" / "stat").write_bytes(b"garbage")
    with pytest.raises(MalformedError):
        LinuxSource(str(root)).alive(100, "98765." + TEST_BOOT + "." + TEST_NS)


@pytest.mark.parametrize("pid", [100, 999], ids=["live pid", "absent pid"])
def test_linux_alive_another_namespace_is_unknown(tmp_path: Path, pid: int) -> None:
    """A pid recorded in another PID namespace names nothing here: unknown (an error), never "gone"."""
    root = write_tree(tmp_path / "proc", FakeProc(100, 1, "claude", start=98765))
    with pytest.raises(NamespaceError):
        LinuxSource(str(root)).alive(pid, "98765." + TEST_BOOT + "." + OTHER_NS)


def test_linux_alive_hidden_is_unknown(tmp_path: Path) -> None:
    """/proc mounted hidepid hides pid 998, which exists: unknown (an error), never "gone"
    (procid's "hidden by hidepid" case; docs/RELIABILITY.md fault 12)."""
    root = write_tree(tmp_path / "proc", FakeProc(100, 1, "claude", start=98765))
    src = LinuxSource(str(root), hidden=lambda pid: pid == 998)
    with pytest.raises(procid.ProcIdError, match=r"pid 998 exists but .* hides it \(mounted hidepid=1 or 2\)") as exc:
        src.alive(998, "98765." + TEST_BOOT + "." + TEST_NS)
    assert not isinstance(exc.value, NotFoundError)
    assert src.alive(999, "98765." + TEST_BOOT + "." + TEST_NS) is False  # absent and not hidden: gone
    assert src.alive(100, "98765." + TEST_BOOT + "." + TEST_NS) is True  # visible: hidden is not asked


def test_linux_alive_own_namespace_unreadable(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "proc", FakeProc(100, 1, "claude", start=98765))
    (root / "self" / "ns" / "pid").unlink()
    with pytest.raises(NamespaceError):
        LinuxSource(str(root)).alive(100, "98765." + TEST_BOOT + "." + TEST_NS)


@pytest.mark.parametrize(
    "link,want",
    [("pid:[4026531836]", "4026531836"), ("pid:[0]", "0"), ("pid:[18446744073709551615]", "18446744073709551615")],
)
def test_linux_pid_ns(tmp_path: Path, link: str, want: str) -> None:
    root = write_tree(tmp_path / "proc", FakeProc(100, 1, "claude"))
    os.unlink(root / "100" / "ns" / "pid")
    os.symlink(link, root / "100" / "ns" / "pid")
    assert LinuxSource(str(root)).pid_ns(100) == want
    assert LinuxSource(str(root)).pid_ns(0) == TEST_NS


@pytest.mark.parametrize(
    "link",
    ["", "pid:[]", "pid:[x]", "pid:[-1]", "pid:[+1]", "pid:[1_0]", "pid:4026531836", "net:[4026531836]",
     "pid:[4026531836", "pid:[18446744073709551616]", "pid:[ 1]"],
)
def test_linux_pid_ns_malformed(tmp_path: Path, link: str) -> None:
    """A malformed own ns/pid link (/proc/self/ns/pid): lookup fails (resume off), alive cannot tell."""
    root = write_tree(tmp_path / "proc", FakeProc(100, 1, "claude", start=98765))
    os.unlink(root / "self" / "ns" / "pid")
    if link:
        os.symlink(link, root / "self" / "ns" / "pid")
    else:
        (root / "self" / "ns" / "pid").write_text("not a link")
    src = LinuxSource(str(root))
    with pytest.raises(NamespaceError):
        src.lookup(100)
    with pytest.raises(NamespaceError):
        src.alive(100, "98765." + TEST_BOOT + "." + TEST_NS)


def test_linux_pid_ns_own_link_names_every_visible_process(tmp_path: Path) -> None:
    """A process visible in our /proc is in our PID namespace: its start time
    carries our own namespace inode, so another user's unreadable
    /proc/<pid>/ns/pid does not matter (Go procid reads /proc/self/ns/pid too)."""
    root = write_tree(tmp_path / "proc", FakeProc(100, 1, "claude", start=98765))
    shutil.rmtree(root / "100" / "ns")
    src = LinuxSource(str(root))
    with pytest.raises(NotFoundError):
        src.pid_ns(100)
    assert src.lookup(100).start_time == "98765." + TEST_BOOT + "." + TEST_NS
    assert src.alive(100, "98765." + TEST_BOOT + "." + TEST_NS) is True


def own_proc_tree(root: Path, self_pid: str | None) -> Path:
    """A fixture tree whose ``self`` is a symlink naming ``self_pid`` (None: no ``self`` at all)."""
    write_tree(root, INIT, TERMINAL, CLAUDE, SERVER.with_ppid(100))
    shutil.rmtree(root / "self")
    if self_pid is not None:
        os.symlink(self_pid, root / "self")
        write_ns(root / self_pid)
    return root


def test_check_own_proc(tmp_path: Path) -> None:
    root = own_proc_tree(tmp_path / "proc", str(os.getpid()))
    LinuxSource(str(root)).check_own_proc()
    assert isinstance(procid.new_source("linux", root=str(root)), LinuxSource)


@pytest.mark.parametrize("self_pid", ["1", "other", None], ids=["another pid", "not a pid", "no self"])
def test_check_own_proc_other_namespace(tmp_path: Path, self_pid: str | None) -> None:
    """/proc of another PID namespace (unshare -p -f without --mount-proc): resume off, never another process."""
    if self_pid == "1" and os.getpid() == 1:  # pragma: no cover - pid 1 in a container
        self_pid = "2"
    root = own_proc_tree(tmp_path / "proc", self_pid)
    with pytest.raises(NamespaceError) as exc:
        LinuxSource(str(root)).check_own_proc()
    if self_pid is not None:
        assert "mount a /proc of this namespace" in str(exc.value)
    with pytest.raises(NamespaceError):
        procid.new_source("linux", root=str(root))


def test_host_and_alive_refuse_foreign_proc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """host() and alive() both go through the own-/proc check."""
    root = own_proc_tree(tmp_path / "proc", "1" if os.getpid() != 1 else "2")
    real = procid.new_source
    monkeypatch.setattr(procid, "new_source", lambda platform=None: real("linux", root=str(root)))
    with pytest.raises(NamespaceError, match="another PID namespace"):
        procid.host()
    with pytest.raises(NamespaceError, match="another PID namespace"):
        procid.alive(100, f"1100.{TEST_BOOT}.{TEST_NS}")


@pytest.mark.parametrize(
    "have,want,ok",
    [
        ("1700000000.000042", "1700000000.000042", True),
        ("1700000000.000042", "1700000000", True),  # a TypeScript host's whole seconds
        ("1700000000.000042", "1700000001", False),
        ("1700000000.000042", "1700000000.000043", False),
        ("1700000000.000042", "", False),
        ("1700000000.000042", "170000000", False),
    ],
)
def test_start_time_matches(have: str, want: str, ok: bool) -> None:
    assert procid.start_time_matches(have, want) is ok


def test_darwin_alive_with_fixture_kinfo() -> None:
    """DarwinSource.alive on decoded records, without loading libc."""
    src = procid.DarwinSource.__new__(procid.DarwinSource)
    records = {
        100: procid.decode_kinfo(kinfo_bytes(100, 1, b"claude", 2, 1700000000, 42)),
        101: procid.decode_kinfo(kinfo_bytes(101, 100, b"gone", procid.DARWIN_ZOMBIE, 1700000001, 7)),
    }

    def kinfo(pid: int) -> procid.Kinfo:
        if pid not in records:
            raise NotFoundError("sysctl kern.proc.pid: process not found")
        return records[pid]

    src.kinfo = kinfo  # type: ignore[method-assign]
    assert src.alive(100, "1700000000.000042") is True
    assert src.alive(100, "1700000000") is True
    assert src.alive(100, "1700000000.000043") is False
    assert src.alive(101, "1700000001.000007") is False  # zombie
    assert src.alive(999, "1.000001") is False


def test_alive_unsupported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(procid.sys, "platform", "freebsd13")
    with pytest.raises(UnsupportedError):
        procid.alive(100, "1.a")


@pytest.mark.skipif(sys.platform not in ("linux", "darwin"), reason="reads this machine's processes")
def test_real_alive() -> None:
    me = procid.new_source().lookup(os.getpid())
    assert procid.alive(os.getpid(), me.start_time) is True
    assert procid.alive(os.getpid(), "9" + me.start_time) is False
    assert procid.alive(2**22 + 12345, me.start_time) is False  # above Linux's pid_max: absent


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux PID namespaces")
def test_real_alive_another_namespace_unknown() -> None:
    """A start time recorded in another PID namespace cannot be checked from here: an error, never False."""
    me = procid.new_source().lookup(os.getpid())
    ticks, boot, ns = me.start_time.split(".")
    other = str(int(ns) + 1)
    with pytest.raises(NamespaceError):
        procid.alive(os.getpid(), f"{ticks}.{boot}.{other}")
    with pytest.raises(NamespaceError):
        procid.alive(2**22 + 12345, f"{ticks}.{boot}.{other}")

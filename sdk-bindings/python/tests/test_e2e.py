"""End to end: the example server under the official Python MCP client, against the real Go broker.

Real processes throughout: the broker built from examples/broker, the example
server (examples/python-server/server.py) on the official SDK, and MCP hosts
that are separate Python processes running the SDK's stdio client
(tests/mcp_host.py), so the identity walk finds a real host with its own pid
and start time. Launch paths: direct, ``sh -c '<server>; exit $?'``,
``uv run``, and a copy of /bin/sh named like a reaper (``dumb-init``). One
host also runs two server instances at the same time, launched differently
(each resumes its own session) or identically (the second marks their key
ambiguous, and neither resumes from then on). The default instance key holds
the environment as exec'd: a server that changes ``os.environ`` after start
still resumes, two launches that differ in their environment at exec do not
share a session.

Every launch also checks that the server's stdout carried nothing but
JSON-RPC (the SDK reports any unparsable line) and that no token ever
appears in the server's stderr.
"""

from __future__ import annotations

import json
import os
import queue
import shlex
import shutil
import stat
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any
from collections.abc import Iterator

import pytest

from conftest import REPO_ROOT
from pinned import instance_suffix, real_namespaces

SERVER = REPO_ROOT / "examples" / "python-server" / "server.py"
HOST_SCRIPT = Path(__file__).resolve().parent / "mcp_host.py"
PYTHON = sys.executable
REQUEST_TIMEOUT_S = 120.0

MSG_NOT_FOUND = "Token file not found (first run or clean slate)"
MSG_RESUMED = "Session resumed successfully"
MSG_CORRUPTED = "Token file corrupted, treating as stale"
MSG_REJECTED = "Broker rejected resume token, starting fresh session"
MSG_UNVERIFIED = "Could not verify parent process start time, session resume disabled for this instance"
MSG_BUSY = "Another server instance under this host holds the token file, session resume disabled for this instance"
MSG_AMBIGUOUS = ("Two server instances under this host were launched identically (same program, arguments, working "
                 "directory and environment), so neither resumes a session: give each server entry its own "
                 "MCP_RESUME_INSTANCE")


# --- the broker -------------------------------------------------------------------------


@pytest.fixture(scope="session")
def broker_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Go broker, built once per test session (needs Go on PATH)."""
    go = shutil.which("go")
    if go is None:
        pytest.fail("Go is not on PATH: the end-to-end tests build the broker with `go build ./examples/broker`")
    out = tmp_path_factory.mktemp("bin") / "broker"
    subprocess.run([go, "build", "-o", str(out), "./examples/broker"], cwd=REPO_ROOT, check=True, timeout=600)
    return out


class Broker:
    """A running examples/broker process on a free loopback port."""

    def __init__(self, binary: Path, log: Path) -> None:
        self.binary = binary
        self.log = log
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""

    def start(self) -> None:
        errlog = open(self.log, "a")
        self.proc = subprocess.Popen(
            [str(self.binary), "-addr", "127.0.0.1:0"], stdout=subprocess.PIPE, stderr=errlog, text=True
        )
        errlog.close()
        assert self.proc.stdout is not None
        line = _readline(self.proc.stdout, 30.0)
        prefix = "broker listening on "
        assert line.startswith(prefix), f"unexpected broker output {line!r}"
        self.url = line[len(prefix):].strip()

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
            if self.proc.stdout:
                self.proc.stdout.close()
            self.proc = None

    def restart(self) -> None:
        """A new broker process: every token issued so far becomes unknown (401)."""
        self.stop()
        self.start()


def _readline(stream: Any, timeout: float) -> str:
    q: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: q.put(stream.readline()), daemon=True).start()
    try:
        return q.get(timeout=timeout)
    except queue.Empty:
        raise AssertionError(f"no line within {timeout} s") from None


@pytest.fixture
def broker(broker_bin: Path, tmp_path: Path) -> Iterator[Broker]:
    b = Broker(broker_bin, tmp_path / "broker.log")
    b.start()
    yield b
    b.stop()


# --- MCP hosts ----------------------------------------------------------------------------


class Host:
    """One MCP host process (tests/mcp_host.py) that launches servers with the official SDK client."""

    def __init__(self, log: Path) -> None:
        self.errlog = open(log, "a")
        self.proc = subprocess.Popen(
            [PYTHON, str(HOST_SCRIPT)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.errlog,
            text=True,
            cwd=REPO_ROOT,
        )
        assert self.proc.stdout is not None
        self.pid = json.loads(_readline(self.proc.stdout, 60.0))["pid"]
        assert self.pid == self.proc.pid

    def launch(self, command: str, args: list[str], env: dict[str, str], stderr: Path, calls: list[Any]) -> list[dict[str, Any]]:
        """Launch the server once, make ``calls``, shut it down; return the tool results."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        req = {"command": command, "args": args, "env": env, "cwd": str(REPO_ROOT), "stderr": str(stderr), "calls": calls}
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        answer = json.loads(_readline(self.proc.stdout, REQUEST_TIMEOUT_S))
        assert "error" not in answer, f"launch failed: {answer.get('error')}\n{answer.get('traceback')}\n{_text(stderr)}"
        assert answer["stream_errors"] == [], f"server stdout carried non-JSON-RPC: {answer['stream_errors']}"
        return answer["results"]

    def launch_together(self, servers: list[tuple[str, list[str], dict[str, str], Path, list[Any]]]) -> list[list[dict[str, Any]]]:
        """Run several servers at once: each is launched and makes its calls while the earlier ones
        keep running (so the first one started first); then all shut down. Returns each one's results."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        cmds = [
            {"command": c, "args": a, "env": e, "cwd": str(REPO_ROOT), "stderr": str(log), "calls": calls}
            for c, a, e, log, calls in servers
        ]
        self.proc.stdin.write(json.dumps({"servers": cmds}) + "\n")
        self.proc.stdin.flush()
        answer = json.loads(_readline(self.proc.stdout, REQUEST_TIMEOUT_S * len(cmds)))
        logs = "\n".join(_text(s[3]) for s in servers)
        assert "error" not in answer, f"launch failed: {answer.get('error')}\n{answer.get('traceback')}\n{logs}"
        for run in answer["runs"]:
            assert run["stream_errors"] == [], f"server stdout carried non-JSON-RPC: {run['stream_errors']}"
        return [run["results"] for run in answer["runs"]]

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        if self.proc.stdout:
            self.proc.stdout.close()
        self.errlog.close()


@pytest.fixture
def hosts(tmp_path: Path) -> Iterator[Any]:
    made: list[Host] = []

    def new() -> Host:
        h = Host(tmp_path / f"host{len(made)}.log")
        made.append(h)
        return h

    yield new
    for h in made:
        h.close()


@pytest.fixture(scope="session")
def cache_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One XDG cache for the session: the compile cache is cold once, then warm."""
    return tmp_path_factory.mktemp("cache")


#: The example server's app name: its state directory is $MCP_RESUME_STATE_DIR/APP.
APP = "example-python"


@pytest.fixture
def env(tmp_path: Path, broker: Broker, cache_home: Path) -> dict[str, str]:
    return {
        "MCP_EXAMPLE_BROKER_URL": broker.url,
        "MCP_RESUME_STATE_DIR": str(tmp_path / "state"),
        "XDG_CACHE_HOME": str(cache_home),
        "UV_CACHE_DIR": str(cache_home / "uv"),
        "UV_PYTHON_DOWNLOADS": "never",
        "UV_OFFLINE": "1",
    }


# --- helpers -------------------------------------------------------------------------------


def _text(p: Path) -> str:
    return p.read_text(errors="replace") if p.exists() else ""


def direct() -> tuple[str, list[str]]:
    return PYTHON, [str(SERVER)]


def via_sh(shell: str = "/bin/sh") -> tuple[str, list[str]]:
    return shell, ["-c", f"{shlex.quote(PYTHON)} {shlex.quote(str(SERVER))}; exit $?"]


def via_uv() -> tuple[str, list[str]]:
    uv = shutil.which("uv", path=os.path.dirname(PYTHON)) or shutil.which("uv")
    if uv is None:
        pytest.fail("uv is not installed in the venv (make python-setup installs it)")
    return uv, ["run", "--no-project", "--python", PYTHON, str(SERVER)]


def info(result: dict[str, Any]) -> dict[str, Any]:
    assert not result["is_error"], result
    return json.loads(result["text"])


def token_files(state: Path) -> dict[str, str]:
    """The token files of the state directory and what they hold (lock files aside)."""
    if not state.exists():
        return {}
    return {n: (state / n).read_text(errors="replace") for n in sorted(os.listdir(state)) if n.startswith("token-")}


def lock_files(state: Path) -> list[str]:
    return sorted(n for n in os.listdir(state) if n.startswith("lock-")) if state.exists() else []


def markers(state: Path) -> list[str]:
    """The ambiguity markers of the state directory."""
    return sorted(n for n in os.listdir(state) if n.startswith("ambiguous-")) if state.exists() else []


def suffix(instance: str) -> str:
    """The file-name suffix of the declared instance key ``instance`` for a server launched from this test (in
    this process's namespaces): the first 16 hex digits of the SHA-256 of the key material (namespaces, key)."""
    return instance_suffix(real_namespaces(), instance)


def assert_no_token_in(logs: list[Path], tokens: set[str]) -> None:
    for p in logs:
        text = _text(p)
        for t in tokens:
            assert t not in text, f"a token leaked into {p.name}"


# --- the scenarios ---------------------------------------------------------------------------


def test_resume_same_host_and_fresh_for_another_host(tmp_path: Path, env: dict[str, str], hosts: Any) -> None:
    """Spec 000, Success Criteria 1-3: the same host resumes, another host gets its own session."""
    state = tmp_path / "state" / APP  # the app's directory; the server gets its root
    host = hosts()
    log1, log2, log3 = tmp_path / "run1.log", tmp_path / "run2.log", tmp_path / "run3.log"

    r = host.launch(*direct(), env, log1, [["session_info", {}], ["remember", {"note": "first note"}]])
    first = info(r[0])
    assert first["resumed"] is False and r[1]["text"] == "remembered"
    assert MSG_NOT_FOUND in _text(log1)
    files = token_files(state)
    assert list(files) == [n for n in files if n.startswith(f"token-{host.pid}-")] and len(files) == 1
    name = next(iter(files))
    assert lock_files(state) == ["lock-" + name[len("token-"):]], "the instance's lock file"
    assert stat.S_IMODE(os.stat(state / name).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(state).st_mode) == 0o700
    tokens = {files[name]}

    r = host.launch(*direct(), env, log2, [["session_info", {}], ["recall", {}]])
    second = info(r[0])
    assert second == {"session_id": first["session_id"], "resumed": True}
    assert json.loads(r[1]["text"]) == {"notes": ["first note"]}
    assert MSG_RESUMED in _text(log2)
    files = token_files(state)
    assert list(files) == [name] and files[name] not in tokens, "the rotated token was not stored"
    tokens.add(files[name])

    other = hosts()  # a different host process: different pid and start time
    assert other.pid != host.pid
    r = other.launch(*direct(), env, log3, [["session_info", {}], ["recall", {}]])
    third = info(r[0])
    assert third["resumed"] is False and third["session_id"] != first["session_id"]
    assert json.loads(r[1]["text"]) == {"notes": []}
    files = token_files(state)
    assert len(files) == 2 and any(n.startswith(f"token-{other.pid}-") for n in files)
    tokens.update(files.values())
    assert_no_token_in([log1, log2, log3], tokens)


@pytest.mark.parametrize("launch", [via_sh, via_uv], ids=["sh -c", "uv run"])
def test_resume_through_launchers(tmp_path: Path, env: dict[str, str], hosts: Any, launch: Any) -> None:
    """Launchers between host and server are skipped: the token is filed under the host itself."""
    state = tmp_path / "state" / APP  # the app's directory; the server gets its root
    host = hosts()
    log1, log2 = tmp_path / "run1.log", tmp_path / "run2.log"
    first = info(host.launch(*launch(), env, log1, [["session_info", {}]])[0])
    assert first["resumed"] is False
    files = token_files(state)
    assert len(files) == 1 and next(iter(files)).startswith(f"token-{host.pid}-"), files
    tokens = set(files.values())
    second = info(host.launch(*launch(), env, log2, [["session_info", {}]])[0])
    assert second == {"session_id": first["session_id"], "resumed": True}
    assert MSG_RESUMED in _text(log2)
    tokens.update(token_files(state).values())
    assert_no_token_in([log1, log2], tokens)


def test_corrupt_token_file(tmp_path: Path, env: dict[str, str], hosts: Any) -> None:
    """Spec 000, Token File Corrupted: garbage in the file -> deleted, fresh session, the log line."""
    state = tmp_path / "state" / APP  # the app's directory; the server gets its root
    host = hosts()
    log1, log2 = tmp_path / "run1.log", tmp_path / "run2.log"
    first = info(host.launch(*direct(), env, log1, [["session_info", {}]])[0])
    (name,) = token_files(state)
    tokens = {(state / name).read_text()}
    (state / name).write_bytes(b"\x00\xffgarbage \n")
    second = info(host.launch(*direct(), env, log2, [["session_info", {}]])[0])
    assert second["resumed"] is False and second["session_id"] != first["session_id"]
    assert MSG_CORRUPTED in _text(log2)
    files = token_files(state)
    assert list(files) == [name] and files[name].isascii() and files[name].isprintable() and " " not in files[name]
    tokens.add(files[name])
    assert_no_token_in([log1, log2], tokens)


def test_broker_rejects_token(tmp_path: Path, env: dict[str, str], hosts: Any, broker: Broker) -> None:
    """Spec 000, Broker Rejects Token: a restarted broker does not know the token -> reject, fresh session."""
    state = tmp_path / "state" / APP  # the app's directory; the server gets its root
    # The restarted broker listens on another URL, which would change the default instance key (the environment is
    # part of it) and so the file: declare the instance to keep one file.
    env = {**env, "MCP_RESUME_INSTANCE": "broker-test"}
    host = hosts()
    log1, log2 = tmp_path / "run1.log", tmp_path / "run2.log"
    first = info(host.launch(*direct(), env, log1, [["session_info", {}]])[0])
    (name,) = token_files(state)
    tokens = {(state / name).read_text()}
    broker.restart()
    env = {**env, "MCP_EXAMPLE_BROKER_URL": broker.url}
    second = info(host.launch(*direct(), env, log2, [["session_info", {}]])[0])
    assert second["resumed"] is False and second["session_id"] != first["session_id"]
    assert MSG_REJECTED in _text(log2)
    assert MSG_RESUMED not in _text(log2)
    files = token_files(state)
    assert list(files) == [name] and files[name] not in tokens
    tokens.add(files[name])
    assert_no_token_in([log1, log2], tokens)


def test_broker_down_keeps_token(tmp_path: Path, env: dict[str, str], hosts: Any, broker: Broker) -> None:
    """The broker unreachable is not a rejection: the token file stays, the server still serves."""
    state = tmp_path / "state" / APP  # the app's directory; the server gets its root
    host = hosts()
    log1, log2 = tmp_path / "run1.log", tmp_path / "run2.log"
    info(host.launch(*direct(), env, log1, [["session_info", {}]])[0])
    before = token_files(state)
    broker.stop()
    r = host.launch(*direct(), env, log2, [["session_info", {}]])
    assert r[0]["is_error"] is True and "no broker session" in r[0]["text"]
    assert token_files(state) == before
    assert "could not offer the stored token to the broker" in _text(log2)
    assert MSG_REJECTED not in _text(log2)
    assert_no_token_in([log1, log2], set(before.values()))


def test_identity_unavailable_under_reaper(tmp_path: Path, env: dict[str, str], hosts: Any) -> None:
    """Spec 000, Parent Process Information Unavailable: a host named like a reaper (dumb-init is in
    the plugin's reaper list) cannot be verified -> resume off, no token file, the server still works."""
    state = tmp_path / "state" / APP  # the app's directory; the server gets its root
    fake = tmp_path / "bin" / "dumb-init"
    fake.parent.mkdir()
    shutil.copy2("/bin/sh", fake)
    host = hosts()
    logs = [tmp_path / "run1.log", tmp_path / "run2.log"]
    ids = []
    for log in logs:
        r = info(host.launch(*via_sh(str(fake)), env, log, [["session_info", {}]])[0])
        assert r["resumed"] is False
        ids.append(r["session_id"])
        assert MSG_UNVERIFIED in _text(log)
        assert token_files(state) == {}
    assert ids[0] != ids[1]


# --- several instances under one host at the same time ----------------------------------------


@pytest.mark.parametrize("how", ["arguments", "MCP_RESUME_INSTANCE"])
def test_instances_launched_differently_resume_independently(tmp_path: Path, env: dict[str, str], hosts: Any, how: str) -> None:
    """One host runs two instances at once, told apart by their arguments (server.py --profile a / b)
    or by MCP_RESUME_INSTANCE: each keeps its own token file and, relaunched, resumes its own session."""
    state = tmp_path / "state" / APP  # the app's directory; the server gets its root
    host = hosts()

    def servers(rnd: int, calls: dict[str, list[Any]]) -> list[Any]:
        out = []
        for p in ("a", "b"):
            if how == "arguments":
                cmd, args = PYTHON, [str(SERVER), "--profile", p]
                e = env
            else:
                (cmd, args), e = direct(), {**env, "MCP_RESUME_INSTANCE": f"profile-{p}"}
            out.append((cmd, args, e, tmp_path / f"{p}{rnd}.log", calls[p]))
        return out

    first = host.launch_together(servers(1, {p: [["session_info", {}], ["remember", {"note": f"note {p}"}]] for p in "ab"}))
    a1, b1 = info(first[0][0]), info(first[1][0])
    assert a1["resumed"] is False and b1["resumed"] is False and a1["session_id"] != b1["session_id"]
    files = token_files(state)
    assert len(files) == 2 and all(n.startswith(f"token-{host.pid}-") for n in files), files
    if how == "arguments":
        # The default key encodes the arguments with the working directory and the environment (the plugin's
        # DefaultInstanceKey), so its suffix is not computed here: two different 16-hex suffixes, one per profile.
        assert len({n.rsplit("-", 1)[1] for n in files}) == 2 and all(len(n.rsplit("-", 1)[1]) == 16 for n in files), files
    else:
        want = {p: f"-{suffix(f'profile-{p}')}" for p in "ab"}
        assert all(any(n.endswith(want[p]) for n in files) for p in "ab"), (files, want)
    assert lock_files(state) == sorted("lock-" + n[len("token-"):] for n in files)
    tokens = set(files.values())
    for p in "ab":
        log = _text(tmp_path / f"{p}1.log")
        assert MSG_NOT_FOUND in log and MSG_BUSY not in log and MSG_AMBIGUOUS not in log
    assert markers(state) == []

    second = host.launch_together(servers(2, {p: [["session_info", {}], ["recall", {}]] for p in "ab"}))
    assert info(second[0][0]) == {"session_id": a1["session_id"], "resumed": True}
    assert info(second[1][0]) == {"session_id": b1["session_id"], "resumed": True}
    assert json.loads(second[0][1]["text"]) == {"notes": ["note a"]}
    assert json.loads(second[1][1]["text"]) == {"notes": ["note b"]}
    logs = [tmp_path / f"{p}{r}.log" for p in "ab" for r in (1, 2)]
    for p in "ab":
        assert MSG_RESUMED in _text(tmp_path / f"{p}2.log")
    after = token_files(state)
    assert sorted(after) == sorted(files) and not tokens & set(after.values()), "rotated tokens not stored"
    assert_no_token_in(logs, tokens | set(after.values()))


def test_identical_instances_second_runs_without_resume(tmp_path: Path, env: dict[str, str], hosts: Any) -> None:
    """One host runs the same server twice at once, launched identically (one default key): the second finds
    the first's lock busy, so it writes the ambiguity marker, deletes the key's token file, says why with the
    fix (``instance_ambiguous``) and serves a fresh session; from then on neither resumes: a relaunch finds the
    marker, gets a fresh session and stores no token. A distinct MCP_RESUME_INSTANCE, the fix, resumes again."""
    state = tmp_path / "state" / APP  # the app's directory; the server gets its root
    host = hosts()
    log_a, log_b, log_again = tmp_path / "a.log", tmp_path / "b.log", tmp_path / "again.log"
    a, b = host.launch_together([
        (*direct(), env, log_a, [["session_info", {}], ["remember", {"note": "kept"}]]),
        (*direct(), env, log_b, [["session_info", {}]]),
    ])
    first, other = info(a[0]), info(b[0])
    assert first["resumed"] is False and other["resumed"] is False
    assert other["session_id"] != first["session_id"]
    assert MSG_NOT_FOUND in _text(log_a) and MSG_AMBIGUOUS not in _text(log_a), "the first ran before the second"
    assert MSG_AMBIGUOUS in _text(log_b) and MSG_NOT_FOUND not in _text(log_b) and MSG_BUSY not in _text(log_b)
    (marker,) = markers(state)
    sfx = marker[len("ambiguous-"):]
    assert len(sfx) == 16 and f"wrote {marker}" in _text(log_b)
    # Launched identically: one default key (program, arguments, working directory, environment), so one lock.
    (lock,) = lock_files(state)
    assert lock.startswith(f"lock-{host.pid}-") and lock.endswith(f"-{sfx}"), (lock, marker)
    assert token_files(state) == {}, "the second deleted the key's token file"
    assert stat.S_IMODE(os.stat(state / marker).st_mode) == 0o600

    r = host.launch(*direct(), env, log_again, [["session_info", {}], ["recall", {}]])
    again = info(r[0])
    assert again["resumed"] is False and again["session_id"] not in (first["session_id"], other["session_id"])
    assert json.loads(r[1]["text"]) == {"notes": []}
    assert MSG_AMBIGUOUS in _text(log_again) and f"found {marker}" in _text(log_again)
    assert MSG_RESUMED not in _text(log_again)
    assert token_files(state) == {} and markers(state) == [marker], "no token to resume from next time either"

    fixed = {**env, "MCP_RESUME_INSTANCE": "entry-1"}
    logs_fixed = [tmp_path / "fixed1.log", tmp_path / "fixed2.log"]
    one = info(host.launch(*direct(), fixed, logs_fixed[0], [["session_info", {}]])[0])
    two = info(host.launch(*direct(), fixed, logs_fixed[1], [["session_info", {}]])[0])
    assert one["resumed"] is False and two == {"session_id": one["session_id"], "resumed": True}
    assert all(MSG_AMBIGUOUS not in _text(p) for p in logs_fixed)
    files = token_files(state)
    assert list(files) == [f"token-{lock[len('lock-'):-len(sfx)]}{suffix('entry-1')}"], files
    assert_no_token_in([log_a, log_b, log_again, *logs_fixed], set(files.values()))


#: Run the example server after giving ``os.environ`` a variable whose value is new on every launch (what a
#: server may do before it imports mcp_resume): the command line stays the same, the environment as exec'd too.
ENV_CHANGER = r"""
import os, runpy, sys, time
os.environ["MCP_TEST_PER_LAUNCH"] = f"{os.getpid()}-{time.time_ns()}"
print(f"MCP_TEST_PER_LAUNCH={os.environ['MCP_TEST_PER_LAUNCH']}", file=sys.stderr, flush=True)
sys.argv = sys.argv[1:]
sys.path.insert(0, os.path.dirname(sys.argv[0]))
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def test_environment_as_execd_keys_the_instance(tmp_path: Path, env: dict[str, str], hosts: Any) -> None:
    """The default instance key holds the environment as exec'd (/proc/self/environ), not ``os.environ``: a
    server that sets a variable after start, to a new value on every launch, keeps its key, so a relaunch
    resumes; two launches of one command whose environments at exec differ in one variable get two token
    files and two sessions, never each other's, and each relaunch resumes its own."""
    state = tmp_path / "state" / APP  # the app's directory; the server gets its root
    host = hosts()
    changer = (PYTHON, ["-c", ENV_CHANGER, str(SERVER)])
    log1, log2 = tmp_path / "changer1.log", tmp_path / "changer2.log"
    first = info(host.launch(*changer, env, log1, [["session_info", {}]])[0])
    second = info(host.launch(*changer, env, log2, [["session_info", {}]])[0])
    values = [next(x for x in _text(p).splitlines() if x.startswith("MCP_TEST_PER_LAUNCH=")) for p in (log1, log2)]
    assert values[0] != values[1], "os.environ differed between the launches"
    assert first["resumed"] is False and second == {"session_id": first["session_id"], "resumed": True}
    assert MSG_RESUMED in _text(log2)
    (changer_file,) = token_files(state)

    flavours = {f: {**env, "MCP_TEST_FLAVOUR": f} for f in ("one", "two")}
    logs = {(f, n): tmp_path / f"{f}{n}.log" for f in flavours for n in (1, 2)}
    fresh = {f: info(host.launch(*direct(), e, logs[f, 1], [["session_info", {}], ["remember", {"note": f}]])[0])
             for f, e in flavours.items()}
    assert fresh["one"]["resumed"] is False and fresh["two"]["resumed"] is False
    assert len({first["session_id"], fresh["one"]["session_id"], fresh["two"]["session_id"]}) == 3
    assert MSG_NOT_FOUND in _text(logs["two", 1]) and MSG_RESUMED not in _text(logs["two", 1])
    files = token_files(state)
    assert len(files) == 3 and changer_file in files, files
    assert len({n.rsplit("-", 1)[1] for n in files}) == 3, "one suffix per environment at exec"
    for f, e in flavours.items():
        r = host.launch(*direct(), e, logs[f, 2], [["session_info", {}], ["recall", {}]])
        assert info(r[0]) == {"session_id": fresh[f]["session_id"], "resumed": True}
        assert json.loads(r[1]["text"]) == {"notes": [f]}
    assert all(MSG_AMBIGUOUS not in _text(p) for p in [log1, log2, *logs.values()])
    assert markers(state) == []
    assert_no_token_in([log1, log2, *logs.values()], set(files.values()) | set(token_files(state).values()))


# --- stdout and startup modes, with the server as a plain subprocess ----------------------------


def _run_server(env: dict[str, str], stdin: str = "", timeout: float = 120.0,
                argv: list[str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` (default: the example server) with ``env`` over a clean environment, to its exit."""
    full = {k: v for k, v in os.environ.items() if not k.startswith(("MCP_RESUME_", "MCP_EXAMPLE_"))}
    full.update(env)
    return subprocess.run([PYTHON, *(argv or [str(SERVER)])], input=stdin, env=full, capture_output=True, text=True,
                          timeout=timeout, cwd=REPO_ROOT)


def test_stdout_is_only_jsonrpc(tmp_path: Path, env: dict[str, str]) -> None:
    """Raw check of the server's stdout: every line is a JSON-RPC 2.0 message, nothing else."""
    msgs = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "session_info", "arguments": {}}},
    ]
    # Keep stdin open until the answers are in, then close it: the server exits.
    errlog = tmp_path / "server.log"
    with open(errlog, "w") as errf:
        proc = subprocess.Popen(
            [PYTHON, str(SERVER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errf, text=True,
            env={**{k: v for k, v in os.environ.items() if not k.startswith("MCP_RESUME_")}, **env}, cwd=REPO_ROOT,
        )
    assert proc.stdin and proc.stdout
    lines = []
    try:
        for m in msgs:
            proc.stdin.write(json.dumps(m) + "\n")
            proc.stdin.flush()
            if "id" in m:
                while True:
                    line = _readline(proc.stdout, 60.0)
                    assert line, "server closed stdout early"
                    lines.append(line)
                    if json.loads(line).get("id") == m["id"]:
                        break
        rest, _ = proc.communicate(timeout=30)  # closes stdin: the server exits
        assert proc.returncode == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    err = _text(errlog)
    lines += rest.splitlines(keepends=True)
    assert lines, "no output"
    for line in lines:
        doc = json.loads(line)
        assert doc.get("jsonrpc") == "2.0", line
    answer = next(json.loads(line) for line in lines if json.loads(line).get("id") == 2)
    content = answer["result"]["content"][0]["text"]
    assert json.loads(content)["resumed"] is False
    (name,) = token_files(tmp_path / "state" / APP)
    assert (tmp_path / "state" / APP / name).read_text() not in err


@pytest.mark.parametrize("mode", ["load", "baseline"])
def test_bench_stand_in_exits_before_serving(tmp_path: Path, mode: str, cache_home: Path) -> None:
    """The startup benchmark's stand-in for the server (examples/bench/python) stops where it measures."""
    p = _run_server({"MCP_RESUME_STATE_DIR": str(tmp_path / "state"), "XDG_CACHE_HOME": str(cache_home)},
                    argv=[str(REPO_ROOT / "examples" / "bench" / "python" / "server_start.py"), mode])
    assert p.returncode == 0, p.stderr
    assert p.stdout == ""
    if mode == "load":
        assert MSG_NOT_FOUND in p.stderr or MSG_UNVERIFIED in p.stderr
    else:
        assert "mcp_resume" not in p.stderr and not (tmp_path / "state").exists()


def test_missing_broker_url(tmp_path: Path, cache_home: Path) -> None:
    p = _run_server({"MCP_RESUME_STATE_DIR": str(tmp_path / "state"), "XDG_CACHE_HOME": str(cache_home)})
    assert p.returncode == 1
    assert p.stdout == ""
    assert "MCP_EXAMPLE_BROKER_URL is not set" in p.stderr


MSG_RESUME_OFF = "Session resume turned off by MCP_RESUME=off"


def test_resume_off_switch(tmp_path: Path, env: dict[str, str], hosts: Any) -> None:
    """MCP_RESUME=off: the real server answers its tools (a fresh session every launch), logs the
    plugin's resume_off line on stderr and writes no state directory."""
    state = tmp_path / "state" / APP  # the app's directory; the server gets its root
    host = hosts()
    off = {**env, "MCP_RESUME": "off"}
    ids = []
    for n in (1, 2):
        log = tmp_path / f"run{n}.log"
        r = host.launch(*direct(), off, log, [["session_info", {}], ["remember", {"note": "broker only"}]])
        first = info(r[0])
        assert first["resumed"] is False and r[1]["text"] == "remembered"
        ids.append(first["session_id"])
        assert _text(log).count(MSG_RESUME_OFF) == 1, _text(log)
        assert MSG_NOT_FOUND not in _text(log)
        assert not state.exists(), "MCP_RESUME=off created the state directory"
    assert ids[0] != ids[1]

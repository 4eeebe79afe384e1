"""``python -m mcp_resume``: the command line without Go, on the real plugin, as a real process.

The byte-for-byte comparison with the Go and TypeScript commands is host/cmd/mcp-resume/langs_test.go; these
tests pin what a Python user sees: help, usage errors, the app listing under the state root, one error line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

TOKEN_A = "token-2147480000-5.0f1e.4026531836"


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mcp_resume", *args], capture_output=True, text=True, timeout=120,
                          env=env if env is not None else os.environ.copy())


@pytest.fixture
def root(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A state root under XDG_STATE_HOME with apps a and b, a directory that is no app's name, a stray file."""
    base = tmp_path / "mcp-resume"
    for app in ("app-a", "app-b", ".not an app"):
        (base / app).mkdir(parents=True, mode=0o700)
    (base / "app-a" / TOKEN_A).write_text("secret-token")
    old = time.time() - 3 * 86400
    os.utime(base / "app-a" / TOKEN_A, (old, old))
    (base / "stray").write_text("")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_RESUME")} | {"XDG_STATE_HOME": str(tmp_path)}
    return base, env


def test_help_and_usage() -> None:
    p = cli("--help")
    assert p.returncode == 0 and p.stdout == "" and p.stderr.startswith("usage: mcp-resume <command> [flags]")
    p = cli()
    assert p.returncode == 2 and p.stdout == "" and "whoami" in p.stderr
    p = cli("list", "--bogus")
    assert p.returncode == 2 and p.stderr.startswith("mcp-resume list: flag provided but not defined: -bogus\n\nusage:")
    p = cli("nope")
    assert p.returncode == 2 and p.stderr.startswith('mcp-resume: unknown command "nope"')


def test_list_every_app_under_the_root(root: tuple[Path, dict[str, str]]) -> None:
    base, env = root
    p = cli("list", "--json", env=env)
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)
    assert [(r["app"], r["state_dir"], r["name"], r["host"]) for r in rows] == [("app-a", str(base / "app-a"), TOKEN_A, "gone")]
    p = cli("list", env=env)
    assert p.stdout.splitlines()[1].split()[:2] == ["app-a", "2147480000"] and "secret-token" not in p.stdout
    assert cli("list", "--app", "app-b", env=env).stdout == "no token files\n"


def test_one_error_line(root: tuple[Path, dict[str, str]]) -> None:
    base, env = root
    os.chmod(base / "app-a", 0o755)
    p = cli("list", "--app", "app-a", env=env)
    d = base / "app-a"
    assert (p.returncode, p.stdout) == (1, "")
    assert p.stderr == f"mcp-resume list: state directory {d} has mode 0755, which lets other users in; run: chmod 700 {d}\n"


def test_whoami_pid(tmp_path: Path) -> None:
    """--pid answers for a running server: a child of this test reading a pipe this process holds."""
    child = subprocess.Popen(["sleep", "60"], stdin=subprocess.PIPE)
    try:
        p = cli("whoami", "--json", "--pid", str(child.pid))
        assert p.returncode == 0, p.stderr
        me = json.loads(p.stdout)
        if me.get("error"):
            pytest.skip(f"no identity here: {me['error']}")
        assert me["pid"] == os.getpid() and me["stdio"].startswith("verified: stdin pipe:["), me
    finally:
        child.kill()
        child.wait()


def test_state_list_and_gc(root: tuple[Path, dict[str, str]]) -> None:
    """``state list|gc``: every app with a handle store under the root (app-b has none and is skipped, and
    nothing is created for it), the plugin's table and JSON, never a value, handle or principal."""
    from mcp_resume import HandleStore

    base, env = root
    clock = [time.time() - 7200]
    with HandleStore("app-a", state_root=base, clock=lambda: clock[0]) as s:
        live = s.create("principal-a", b"value-one")
        s.put(live.handle, "principal-a", b"value-two")
        gone = s.create("principal-a", b"value-idle", idle_ttl=60)
    p = cli("state", "list", "--json", env=env)
    assert p.returncode == 0, p.stderr
    (doc,) = json.loads(p.stdout)
    assert (doc["app"], doc["state_dir"], doc["live"], doc["tombstones"]) == ("app-a", str(base / "app-a" / "handles"), 1, 1)
    states = sorted((h["state"], h.get("generation"), h.get("size")) for h in doc["handles"])
    assert states == [("expired_idle", None, None), ("live", 2, 9)]
    text = cli("state", "list", env=env).stdout
    assert text.splitlines()[0].split() == ["APP", "KEY", "STATE", "GEN", "SIZE", "AGE", "IDLE"]
    assert "app-a: 1 live, 1 tombstones, 64 shards, 9 bytes in " in text
    for out in (p.stdout, text):
        for secret in (live.handle, gone.handle, "value-", "principal-a"):
            assert secret not in out
    assert not (base / "app-b" / "handles").exists(), "state list created a handle store"
    p = cli("state", "gc", "--json", env=env)
    assert p.returncode == 0, p.stderr
    (gc,) = json.loads(p.stdout)
    assert gc["app"] == "app-a" and gc["live"] == 1
    p = cli("state", "list", "app-b", env=env)
    assert (p.returncode, p.stdout) == (0, "no handle stores\n")
    assert not (base / "app-b" / "handles").exists()


def test_state_usage_and_errors(root: tuple[Path, dict[str, str]]) -> None:
    _, env = root
    for args in (["state"], ["state", "drop"]):
        p = cli(*args, env=env)
        assert p.returncode == 2 and p.stderr.startswith('mcp-resume state: want "state list" or "state gc"\n\nusage:')
    p = cli("state", "list", "a", "b", "c", env=env)
    assert p.returncode == 2 and p.stderr.startswith('mcp-resume state list: unexpected argument "c"')
    p = cli("state", "list", "--app", "a", "b", env=env)
    assert p.returncode == 2 and p.stderr.startswith('mcp-resume state list: unexpected argument "b"')
    p = cli("state", "gc", "bad app", env=env)
    assert (p.returncode, p.stdout) == (1, "") and p.stderr.startswith('mcp-resume state gc: invalid app name "bad app"')
    p = cli("state", "list", env=env)
    assert (p.returncode, p.stdout) == (0, "no handle stores\n")
    from mcp_resume import HandleStore

    with HandleStore("app-a", state_root=root[0]) as s:
        s.list()  # the directory appears at the first operation
    p = cli("state", "list", env={**env, "MCP_RESUME_STATE_IDLE_TTL": "soon"})
    assert (p.returncode, p.stdout) == (1, "") and "MCP_RESUME_STATE_IDLE_TTL" in p.stderr, p.stderr


def test_looking_in_the_wrong_place_is_an_error(root: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    """An unknown app, a root without app directories and a pid no process has exit 1 with one line naming
    what was missing; an app directory without files is still an empty answer."""
    base, env = root
    hint = ": no server has kept state there; give the root your servers use with --state-dir ROOT or MCP_RESUME_STATE_DIR\n"
    for cmd in (["list"], ["prune"], ["state", "list"], ["state", "gc"]):
        name = " ".join(cmd)
        p = cli(*cmd, "--app", "nope", env=env)
        assert (p.returncode, p.stdout, p.stderr) == (1, "", f'mcp-resume {name}: no app "nope" under {base}; the apps there: app-a, app-b\n')
        missing = tmp_path / "missing"
        p = cli(*cmd, "--state-dir", str(missing), env=env)
        assert (p.returncode, p.stdout, p.stderr) == (1, "", f"mcp-resume {name}: no app directories under {missing}{hint}")
        assert not missing.exists()
    assert cli("list", "--app", "app-b", env=env).returncode == 0
    assert cli("state", "list", "app-b", env=env).stdout == "no handle stores\n"
    child = subprocess.Popen(["true"])
    child.wait()  # reaped: no process has its pid (until it is reused)
    p = cli("whoami", "--pid", str(child.pid), env=env)
    assert (p.returncode, p.stdout, p.stderr) == (1, "", f"mcp-resume whoami: no process has pid {child.pid}: give the pid of a running MCP server\n")


def test_flags_after_arguments(root: tuple[Path, dict[str, str]]) -> None:
    """Flags may follow the arguments, in any order, as in the Go command; ``--`` ends them."""
    _, env = root
    def rows(p: subprocess.CompletedProcess[str]) -> list[dict[str, object]]:
        assert p.returncode == 0, p.stderr
        return [{k: v for k, v in r.items() if k != "age_seconds"} for r in json.loads(p.stdout)]  # ages tick
    want = rows(cli("list", "--json", "--app", "app-a", env=env))
    assert len(want) == 1 and rows(cli("list", "--app", "app-a", "--json", env=env)) == want
    p = cli("state", "list", "app-b", "--json", env=env)
    assert (p.returncode, p.stdout) == (0, "[]\n"), p.stderr
    p = cli("list", "x", "--json", env=env)
    assert p.returncode == 2 and p.stderr.startswith('mcp-resume list: unexpected argument "x"\n\nusage:')
    p = cli("state", "list", "--", "--json", env=env)
    assert p.returncode == 1 and p.stderr.startswith('mcp-resume state list: invalid app name "--json"')

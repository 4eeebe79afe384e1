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

"""The shared conformance cases of hostfuncs/conformance, run against the real plugin.

Each file in ``hostfuncs/conformance/cases/`` runs exactly as
``hostfuncs/conformance/README.md`` says: a fresh temporary root, the state
directory ``root/state``, the files before (``age_days`` backdates one), a
store on it with the case's pinned identity and instance and its pinned host
liveness (``hosts_alive``, ``liveness_unknown``), the calls (straight into the
plugin exports, so the bytes and errors are compared, not the API's translation
of them; ``hold_lock`` takes a lock through a second, independent
``HostFunctions`` standing in for another instance), then the files, the state
directory and every log line after. Real ``plugin.wasm``, real Extism
runtime, real files; the same cases the Go and TypeScript hosts run.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import stat
import time
from pathlib import Path
from typing import Any

import extism
import pytest

from mcp_resume import ResumeTokenStore
from mcp_resume._hostfuncs import FN_LOCK, HostFunctions

from conftest import REPO_ROOT

CASES_DIR = REPO_ROOT / "hostfuncs" / "conformance" / "cases"
CASES = sorted(CASES_DIR.glob("*.json"))

_LEVEL_NAMES = {logging.DEBUG: "debug", logging.INFO: "info", logging.WARNING: "warn", logging.ERROR: "error"}


def test_cases_present() -> None:
    """The suite must not pass vacuously: the shared cases are there."""
    assert len(CASES) >= 33, f"expected the shared conformance cases in {CASES_DIR}, found {len(CASES)}"


def content_bytes(c: Any) -> bytes:
    """Bytes of a content form: plain string, {"text"}, {"base64"}, {"repeat", "count"}."""
    if isinstance(c, str):
        return c.encode()
    if "text" in c:
        return c["text"].encode()
    if "base64" in c:
        return base64.b64decode(c["base64"])
    if c.get("count", 0) > 0:
        return (c["repeat"] * c["count"]).encode()
    return b""


def make_files(directory: Path, files: dict[str, Any]) -> None:
    for name, c in files.items():
        p = directory / name
        if c.get("dir"):
            os.mkdir(p, 0o700)
        elif "symlink" in c:
            os.symlink(c["symlink"], p)
        elif c.get("fifo"):
            os.mkfifo(p, 0o600)
        else:
            fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(content_bytes(c))
            if c.get("age_days", 0) > 0:
                old = time.time() - c["age_days"] * 24 * 3600
                os.utime(p, (old, old))


def check_files(directory: Path, want: dict[str, Any], exact: bool) -> list[str]:
    """Compare ``directory`` with ``want``; ``exact`` also forbids any other entry (temp files included)."""
    errors: list[str] = []
    got = sorted(os.listdir(directory)) if directory.is_dir() else []
    if exact and got != sorted(want):
        errors.append(f"files in {directory.name} = {got}, want {sorted(want)}")
    for name, c in sorted(want.items()):
        p = directory / name
        try:
            st = os.lstat(p)
        except OSError as e:
            errors.append(f"{name}: {e}")
            continue
        if c.get("dir"):
            if not stat.S_ISDIR(st.st_mode):
                errors.append(f"{name} is not a directory")
        elif "symlink" in c:
            if not stat.S_ISLNK(st.st_mode) or os.readlink(p) != c["symlink"]:
                errors.append(f"{name}: not a symlink to {c['symlink']!r}")
        else:
            if not stat.S_ISREG(st.st_mode):
                errors.append(f"{name} is not a regular file")
                continue
            data = p.read_bytes()
            if data != content_bytes(c):
                errors.append(f"{name} holds {data[:40]!r} ({len(data)} bytes), want {content_bytes(c)[:40]!r}")
            if "mode" in c and stat.S_IMODE(st.st_mode) != int(c["mode"], 8):
                errors.append(f"{name} mode = {stat.S_IMODE(st.st_mode):04o}, want {c['mode']}")
    return errors


class Capture(logging.Handler):
    """Records every log line, all levels, as conformance log entries."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[dict[str, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(
            {
                "level": _LEVEL_NAMES.get(record.levelno, record.levelname.lower()),
                "event": getattr(record, "event", ""),
                "message": record.getMessage(),
            }
        )


def call_export(store: ResumeTokenStore, export: str, data: bytes) -> tuple[bytes, str | None]:
    """Call a plugin export directly: (output bytes, error message or None)."""
    try:
        return store._call(export, data), None
    except extism.Error as e:
        return b"", str(e)


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_conformance(path: Path, tmp_path: Path) -> None:
    case = json.loads(path.read_text())
    root = tmp_path / "root"
    root.mkdir()
    state = root / "state"
    sd = case.get("state_dir", {})
    if sd.get("create", True):
        mode = int(sd.get("mode", "0700"), 8)
        os.mkdir(state, mode)
        os.chmod(state, mode)  # the umask cannot change it
    make_files(root, case.get("outside_before", {}))
    make_files(state, case.get("files_before", {}))

    ident = case["identity"]

    def identity() -> tuple[int, str]:
        if "error" in ident:
            raise RuntimeError(ident["error"])
        return ident["pid"], ident["start_time"]

    hosts_alive = {(h["pid"], h["start_time"]) for h in case.get("hosts_alive", [])}

    def alive(pid: int, start_time: str) -> bool:
        if case.get("liveness_unknown"):
            raise RuntimeError("liveness pinned unknown")
        return (pid, start_time) in hosts_alive

    capture = Capture()
    logger = logging.getLogger(f"mcp_resume.conformance.{case['name']}")
    logger.handlers[:] = [capture]
    logger.setLevel(logging.DEBUG)
    logger.propagate = False

    store = ResumeTokenStore(
        "conformance", state, logger=logger, identity=identity, instance=ident.get("instance", ""), alive=alive
    )
    others: list[HostFunctions] = []  # other instances holding locks until the case ends
    errors: list[str] = []
    try:
        for i, call in enumerate(case["calls"]):
            if call.get("action") == "put_file":
                (state / call["name"]).write_bytes(content_bytes(call["content"]))
                continue
            if call.get("action") == "hold_lock":
                other = HostFunctions(str(state), None, logging.getLogger("mcp_resume.conformance.other"))
                others.append(other)
                resp = json.loads(other.call(FN_LOCK, json.dumps({"name": call["name"]}).encode()))
                assert "error" not in resp, f"hold_lock {call['name']}: {resp}"
                continue
            export = call["export"]
            data = content_bytes(call["input"]) if "input" in call else b""
            out, err = call_export(store, export, data)
            want = call["want"]
            where = f"call {i} {export}"
            if want.get("error_prefix"):
                if err is None or not err.startswith(want["error_prefix"]):
                    errors.append(f"{where}: error = {err!r}, want prefix {want['error_prefix']!r}")
            elif err is not None:
                errors.append(f"{where}: unexpected error {err!r}")
            elif "output_json" in want:
                if json.loads(out) != want["output_json"]:
                    errors.append(f"{where}: output {out!r}, want {json.dumps(want['output_json'])}")
            elif want.get("output") is None:
                if out:
                    errors.append(f"{where}: output {len(out)} bytes, want none")
            elif out != content_bytes(want["output"]):
                errors.append(f"{where}: output {out[:40]!r}, want {content_bytes(want['output'])[:40]!r}")
    finally:
        store.close()
        for other in others:
            other.close()

    errors += check_files(state, case.get("files_after", {}), exact=True)
    errors += check_files(root, case.get("outside_after", {}), exact=False)
    after = case.get("state_dir_after")
    if after is not None:
        exists = state.exists()
        if exists != after["exists"]:
            errors.append(f"state directory exists = {exists}, want {after['exists']}")
        if exists and "mode" in after and stat.S_IMODE(os.stat(state).st_mode) != int(after["mode"], 8):
            errors.append(f"state directory mode = {stat.S_IMODE(os.stat(state).st_mode):04o}, want {after['mode']}")

    want_logs = case.get("logs", [])
    got = capture.lines
    if len(got) != len(want_logs):
        errors.append(f"logs: got {len(got)} lines {got}, want {len(want_logs)} lines {want_logs}")
    else:
        for i, (g, w) in enumerate(zip(got, want_logs)):
            ok = g["level"] == w["level"] and g["event"] == w["event"]
            if "message_prefix" in w:
                ok = ok and g["message"].startswith(w["message_prefix"])
            else:
                ok = ok and g["message"] == w.get("message", "")
            if not ok:
                errors.append(f"log line {i} = {g}, want {w}")
    assert not errors, f"{path.name} ({case.get('spec', '')}):\n  " + "\n  ".join(errors)

"""The conformance format's building blocks (hostfuncs/conformance/README.md), shared by the tests.

``content_bytes`` / ``make_files`` / ``check_files`` read and write the
*Content* forms; ``substitute`` replaces ``$ROOT`` and ``"$EUID"``. The pinned system a case
runs on is ``pinned.py``'s.
"""

from __future__ import annotations

import base64
import os
import stat
import time
from pathlib import Path
from typing import Any

from conftest import REPO_ROOT

CONFORMANCE = REPO_ROOT / "hostfuncs" / "conformance"


def substitute(doc: Any, root: Path) -> Any:
    """``doc`` with every ``$ROOT`` in every string replaced by ``root``, every string ``"$EUID"`` by the euid
    (a number), and ``$EUID`` inside any other string by its digits."""
    if isinstance(doc, dict):
        return {substitute(k, root): substitute(v, root) for k, v in doc.items()}
    if isinstance(doc, list):
        return [substitute(v, root) for v in doc]
    if doc == "$EUID":
        return os.geteuid()
    if isinstance(doc, str):
        return doc.replace("$ROOT", str(root)).replace("$EUID", str(os.geteuid()))
    return doc


def content_bytes(c: Any) -> bytes:
    """Bytes of a content form: a plain string, ``{"text"}``, ``{"base64"}`` or ``{"repeat", "count"}``."""
    if isinstance(c, str):
        return c.encode()
    if "text" in c:
        return str(c["text"]).encode()
    if "base64" in c:
        return base64.b64decode(c["base64"])
    if "repeat" in c:
        return (c["repeat"] * c["count"]).encode()
    return b""


def make_files(directory: Path, files: dict[str, Any]) -> None:
    """Create ``files`` (content forms keyed by relative path) under ``directory``, parents included; an entry's
    ``mode`` (octal string) is set after creating it, umask aside (a symlink's is left), as the Go and
    TypeScript runners do."""
    for name, c in files.items():
        c = {"text": c} if isinstance(c, str) else c  # a plain string is text, as for an input
        p = directory / name
        p.parent.mkdir(parents=True, exist_ok=True)
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
        if "mode" in c and "symlink" not in c:
            os.chmod(p, int(c["mode"], 8))
        if c.get("age_days", 0) > 0:  # the entry's own time, a symlink's or a directory's too
            old = time.time() - c["age_days"] * 24 * 3600
            os.utime(p, (old, old), follow_symlinks=False)


def check_files(directory: Path, want: dict[str, Any], exact: bool) -> list[str]:
    """Differences between ``directory`` and ``want``; ``exact`` also forbids any other entry (temporaries included)."""
    errors: list[str] = []
    got = sorted(os.listdir(directory)) if directory.is_dir() else []
    if exact and got != sorted(want):
        errors.append(f"files in {directory.name} = {got}, want {sorted(want)}")
    for name, c in sorted(want.items()):
        c = {"text": c} if isinstance(c, str) else c
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
        elif c.get("fifo"):
            if not stat.S_ISFIFO(st.st_mode):
                errors.append(f"{name} is not a FIFO")
        elif not stat.S_ISREG(st.st_mode):
            errors.append(f"{name} is not a regular file")
        else:
            data = p.read_bytes()
            if data != content_bytes(c):
                errors.append(f"{name} holds {data[:40]!r} ({len(data)} bytes), want {content_bytes(c)[:40]!r}")
            if "mode" in c and stat.S_IMODE(st.st_mode) != int(c["mode"], 8):
                errors.append(f"{name} mode = {stat.S_IMODE(st.st_mode):04o}, want {c['mode']}")
    return errors

"""The pinned system (hostfuncs/conformance/README.md, "System"), test code only: host functions that
answer ``facts`` and the primitives without a file from a case and read a fixture ``/proc`` tree, with
everything else (files, locks, logging) real. Also what the store tests share: the default system's token,
lock and ambiguity-marker names (its MCP host is pid 4242, every program image ``2049x1234567``), the
instance suffix as the plugin derives it (key material v2: namespaces and key), a log capture, a store
class pinned to that system, and the socket the ``hold_socket`` action holds."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import socket
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp_resume import ResumeTokenStore
from mcp_resume._hostfuncs import HostFunctions

from system import CONFORMANCE, make_files, substitute

PID, START = 4242, "98765.0f1e2d3c4b5a69788796a5b4c3d2e1f0.4026531836.2049x1234567"  # the conformance exe default
SUN_PATH_LEN = 108  # sockaddr_un.sun_path on Linux

#: The namespaces of every instance key material, in its order (plugin/internal/resume, KeyNamespaces).
KEY_NAMESPACES = ("net", "mnt", "uts", "ipc", "user", "cgroup")
#: The default system's server namespaces (its ``100/ns/*`` fixtures), the same as its host's (``4242/ns/*``).
DEFAULT_NAMESPACES = ("net:[4026531840]", "mnt:[4026531841]", "uts:[4026531838]", "ipc:[4026531839]",
                      "user:[4026531837]", "cgroup:[4026531835]")
#: The suffix of the default system's default instance key (systems/default.json names it in its description).
DEFAULT_SUFFIX = "380ed5242748ec80"
#: The spec's plain names, kept with no instance (``"-"`` or ``""``) by a server in its host's namespaces.
PLAIN_TOKEN_NAME = f"token-{PID}-{START}"
PLAIN_LOCK_NAME = f"lock-{PID}-{START}"
#: The names a store on the default system gets with its default instance key: the namespaces and the key
#: always enter the suffix.
TOKEN_NAME = f"{PLAIN_TOKEN_NAME}-{DEFAULT_SUFFIX}"
LOCK_NAME = f"{PLAIN_LOCK_NAME}-{DEFAULT_SUFFIX}"
#: The ambiguity marker of that key: no host part.
MARKER_NAME = f"ambiguous-{DEFAULT_SUFFIX}"


def _netstrings(parts: Iterable[str]) -> bytes:
    """Each part as a netstring (``<length in bytes>:<bytes>,``), concatenated: the plugin's encoding."""
    out = b""
    for part in parts:
        raw = part.encode("utf-8", "surrogateescape")
        out += str(len(raw)).encode() + b":" + raw + b","
    return out


def default_instance_key(argv: list[str], cwd: str, env: Iterable[str] = ()) -> str:
    """The plugin's default instance key v2 (``resume.DefaultInstanceKey``) of a launch: ``argv`` as exec'd
    (``/proc/<pid>/cmdline`` split at its NULs), ``cwd`` (``facts.cwd``) and ``env``, the ``NAME=value``
    entries of ``/proc/<pid>/environ`` the key keeps (the caller leaves out the plugin's volatile variables and
    ``MCP_RESUME_STATE_DIR``), sorted here byte-wise."""
    kept = sorted(env, key=lambda e: e.encode("utf-8", "surrogateescape"))
    parts = ["mcp-resume default instance key v2", "argv", str(len(argv)), *argv, "cwd", cwd,
             "env", str(len(kept)), *kept]
    return _netstrings(parts).decode("utf-8", "surrogateescape")


def instance_suffix(namespaces: Iterable[str], key: str) -> str:
    """The file-name suffix of ``key`` (declared or default) for a server in ``namespaces`` (link targets such
    as ``net:[4026531840]``, in :data:`KEY_NAMESPACES` order; none on macOS): the first 16 hex digits of the
    SHA-256 of the key material v2 (``resume.KeyMaterial``). No instance in the host's namespaces has none."""
    ns = list(namespaces)
    material = _netstrings(["mcp-resume instance key material v2", "ns", str(len(ns)), *ns, "key", key])
    return hashlib.sha256(material).hexdigest()[:16]


def real_namespaces(pid: str = "self") -> tuple[str, ...]:
    """The key namespaces of process ``pid`` on this system (readlink ``/proc/<pid>/ns/<ns>``); none off Linux,
    where the plugin reads none."""
    if not sys.platform.startswith("linux"):
        return ()
    return tuple(os.readlink(f"/proc/{pid}/ns/{n}") for n in KEY_NAMESPACES)


@dataclass
class System:
    """A case's system: ``facts`` answered as is; ``proc``, the fixture directory read for ``/proc``;
    ``answers`` of ``kill0``, ``exe``, ``fstat``, ``peer``, ``sysctl``, ``procargs``, ``ps`` keyed
    ``"<op> <pid or fd>"``; ``no_answer``, host functions not run at all, answered ``not json``."""

    facts: dict[str, Any]
    proc: str
    answers: dict[str, Any] = field(default_factory=dict)
    no_answer: frozenset[str] = frozenset()


#: What an op the case does not answer gets (the conformance README, "System"); else ``unsupported``.
DEFAULT_ANSWERS: dict[str, dict[str, Any]] = {
    "kill0": {"error": {"code": "not_found", "message": "kill0: no such process (pinned)"}},
    "fstat": {"type": "char"}, "exe": {"dev": "2049", "ino": "1234567"}}


class PinnedHostFunctions(HostFunctions):
    """The real host functions with the system substituted: ``facts``, ``facts.os`` (the /proc ops answer
    from the fixture tree only when it is ``linux``), the /proc root and the primitives without a file.
    A subclass per system sets :attr:`system` (:func:`pinned_functions`)."""

    system: System

    def os_name(self) -> str:
        return str(self.system.facts.get("os", ""))

    def facts(self) -> dict[str, Any]:
        return self.system.facts

    def keep_stdio(self) -> None:
        """No copies: the pinned facts name the stdio fds."""

    def _primitive(self, op: str, key: Any) -> dict[str, Any]:
        pinned = self.system.answers.get(f"{op} {key}")
        unsupported = {"error": {"code": "unsupported", "message": f"{op}: not pinned"}}
        return dict(pinned if pinned is not None else DEFAULT_ANSWERS.get(op, unsupported))

    def call(self, fn: str, req: bytes) -> bytes:
        """``fn`` as the real host answers it, unless the case lists it in ``no_answer``: then it is not run."""
        return b"not json" if fn in self.system.no_answer else super().call(fn, req)


def pinned_functions(system: System) -> type[HostFunctions]:
    """The host functions' class for a store on ``system``."""
    return type("PinnedHostFunctions", (PinnedHostFunctions,), {"system": system, "proc_root": system.proc})


def hold_abstract_socket(name: str) -> socket.socket:
    """The ``hold_socket`` action (the conformance README): bind the abstract Unix socket ``name`` in the form
    Node binds, a NUL, the name and NULs up to the whole 108-byte ``sun_path`` (address length 110), with a
    plain socket of the runner's own, not through the host functions. The caller closes it. Linux only;
    a name not of 1-107 bytes without NUL fails the case; raises ``OSError`` when the address is taken."""
    raw = name.encode()
    assert 1 <= len(raw) < SUN_PATH_LEN and b"\0" not in raw, f"hold_socket: {name!r} is not 1-107 bytes without NUL"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(b"\0" + raw + b"\0" * (SUN_PATH_LEN - 1 - len(raw)))
    except BaseException:
        sock.close()
        raise
    return sock


def load_system(spec: Any, root: Path) -> System:
    """The pinned system of a case: ``spec`` is a name (``systems/<name>.json``), an object or ``None``
    (``"default"``). Its ``proc`` entries are created under ``root/proc``."""
    if spec is None:
        spec = "default"
    if isinstance(spec, str):
        spec = json.loads((CONFORMANCE / "systems" / f"{spec}.json").read_text())
    spec = substitute(spec, root)
    proc = root / "proc"
    proc.mkdir()
    make_files(proc, spec.get("proc", {}))
    return System(facts=spec["facts"], proc=str(proc), answers=spec.get("answers", {}),
                  no_answer=frozenset(spec.get("no_answer", [])))


class Capture(logging.Handler):
    """Every record a logger emits, kept for assertions."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def events(self) -> list[str]:
        """The ``event`` of each record above debug, in order."""
        return [getattr(r, "event", "") for r in self.records if r.levelno > logging.DEBUG]


def logger_for(capture: Capture, name: str) -> logging.Logger:
    """The logger ``mcp_resume.test.<name>``, writing only to ``capture``, at every level."""
    lg = logging.getLogger(f"mcp_resume.test.{name}")
    lg.handlers[:] = [capture]
    lg.setLevel(logging.DEBUG)
    lg.propagate = False
    return lg


def pinned_store(root: Path) -> type[ResumeTokenStore]:
    """``ResumeTokenStore`` on the default conformance system, materialised under ``root``: the MCP host is
    pid 4242, nothing else runs."""

    class Store(ResumeTokenStore):
        _host_functions = pinned_functions(load_system("default", root))

    return Store

"""What the store tests share: the default conformance system's token and lock names (its MCP host is
pid 4242, every program image ``2049x1234567``), a log capture, and a store class pinned to that system."""

from __future__ import annotations

import logging
from pathlib import Path

from mcp_resume import ResumeTokenStore

from system import load_system

PID, START = 4242, "98765.0f1e2d3c4b5a69788796a5b4c3d2e1f0.4026531836.2049x1234567"  # the conformance exe default
TOKEN_NAME = f"token-{PID}-{START}"
LOCK_NAME = f"lock-{PID}-{START}"


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
        _system = load_system("default", root)

    return Store

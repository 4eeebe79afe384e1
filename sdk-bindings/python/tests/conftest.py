"""Shared fixtures of the mcp-resume Python tests.

``redis_server``: one real ``redis-server`` for the whole pytest session (hostfuncs/conformance/README.md,
"Redis: the same cases on the second backend"), on a free loopback port in a temporary directory, without
persistence, stopped at the end. Without ``redis-server`` on the PATH a test using it fails when
``MCP_RESUME_REQUIRE_REDIS=1`` (``make python-test`` sets it) and is skipped otherwise, saying why.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

#: The repository root (sdk-bindings/python/tests -> ../../..).
REPO_ROOT = Path(__file__).resolve().parents[3]

sys.path.insert(0, str(Path(__file__).resolve().parent))


@dataclass
class RedisServer:
    """A running ``redis-server``: ``url`` (``redis://127.0.0.1:<port>/0``), ``port``, ``process``, and
    ``client``, a redis-py client of the tests' own (never the host function's)."""

    url: str
    port: int
    process: subprocess.Popen[bytes]
    client: Any

    def flush(self) -> None:
        """``FLUSHALL`` and ``SCRIPT FLUSH``: what the runner sends before each case that uses the server."""
        self.client.flushall()
        self.client.script_flush()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(directory: Path) -> RedisServer:
    """Start ``redis-server`` in ``directory`` on a free port and wait for ``PING`` (10 s); a port taken
    between the probe and the start is retried on another. Raises ``RuntimeError``."""
    import redis  # noqa: PLC0415 - only when a test needs the server

    exe = shutil.which("redis-server")
    assert exe is not None
    for _attempt in range(5):
        port = _free_port()
        log = open(directory / f"redis-{port}.log", "wb")  # noqa: SIM115 - the server's output, never our stdout
        proc = subprocess.Popen([exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                                 "--dir", str(directory)], stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        log.close()
        client = redis.Redis(host="127.0.0.1", port=port, socket_timeout=5, socket_connect_timeout=1)
        deadline = time.monotonic() + 10
        while proc.poll() is None and time.monotonic() < deadline:
            try:
                if client.ping():
                    return RedisServer(f"redis://127.0.0.1:{port}/0", port, proc, client)
            except redis.ConnectionError:
                time.sleep(0.05)
        proc.kill()
        proc.wait()
    raise RuntimeError(f"redis-server did not start; see {directory}/redis-*.log")


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """One ``redis-server`` for the session (see the module docstring); a test flushes it itself."""
    if shutil.which("redis-server") is None:
        why = ("redis-server is not on the PATH: the Redis runs (conformance on the second backend, HandleStore "
               "on Redis) cannot run; install it (Debian: apt-get install redis-server)")
        if os.environ.get("MCP_RESUME_REQUIRE_REDIS") == "1":
            pytest.fail(why + " (MCP_RESUME_REQUIRE_REDIS=1)")
        pytest.skip("SKIPPED LOUDLY: " + why)
    server = _start(tmp_path_factory.mktemp("redis"))
    try:
        yield server
    finally:
        server.client.close()
        server.process.terminate()
        try:
            server.process.wait(10)
        except subprocess.TimeoutExpired:
            server.process.kill()
            server.process.wait()

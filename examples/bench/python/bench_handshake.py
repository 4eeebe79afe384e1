"""MCP handshake time of Python example servers on a cold compilation cache (a first start after ``pip install``).

For each server given (``--server LABEL=PATH[@PYTHONPATH]``, at least one; ``PYTHONPATH`` picks another
``mcp_resume``, for example an earlier version's ``src``), each run starts it from a fresh, empty user cache
directory (``XDG_CACHE_HOME``) and state directory, against the real Go broker (examples/broker), sends
``initialize`` at once as an MCP host does, and times process start to the ``initialize`` response, then to
the answer of a first ``session_info`` tool call; then kills it. Servers alternate run by run, so machine drift
hits all alike. Prints a markdown table: medians and p90 in ms, and each median's ratio to the first server's.

    .venv/bin/python examples/bench/python/bench_handshake.py --runs 9 \\
        --server before=/tmp/server_before.py --server after=examples/python-server/server.py

``--warm`` fills one cache directory first and reuses it (a warm start) instead.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[3]


def rpc(proc: subprocess.Popen[bytes], msg: dict[str, Any]) -> dict[str, Any] | None:
    """Send one JSON-RPC message; for a request, read stdout lines until its response."""
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps(msg).encode() + b"\n")
    proc.stdin.flush()
    if "id" not in msg:
        return None
    while True:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError("the server closed stdout")
        doc = json.loads(line)
        if doc.get("id") == msg["id"]:
            return dict(doc)


def run_once(python: str, server: str, env: dict[str, str]) -> tuple[float, float]:
    """One start: (ms to the initialize response, ms to the first session_info answer)."""
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen([python, server], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                                cwd=REPO_ROOT)
        try:
            init = rpc(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}})
            t_init = (time.perf_counter() - t0) * 1000.0
            if not init or "result" not in init:
                raise RuntimeError(f"initialize failed: {init}")
            rpc(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
            call = rpc(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                              "params": {"name": "session_info", "arguments": {}}})
            t_tool = (time.perf_counter() - t0) * 1000.0
            if not call or call.get("result", {}).get("isError"):
                err.seek(0)
                raise RuntimeError(f"session_info failed: {call}\n{err.read().decode(errors='replace')}")
        finally:
            proc.kill()
            proc.wait(30)
    return t_init, t_tool


def p90(xs: list[float]) -> float:
    """Nearest-rank 90th percentile."""
    s = sorted(xs)
    return s[max(0, math.ceil(0.9 * len(s)) - 1)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=9, help="runs per server")
    ap.add_argument("--python", default=sys.executable, help="interpreter that runs the servers")
    ap.add_argument("--server", action="append", required=True, help="LABEL=PATH[@PYTHONPATH] of a server script")
    ap.add_argument("--warm", action="store_true", help="reuse one filled cache instead of a fresh one per run")
    ap.add_argument("--broker", default=str(REPO_ROOT / "bin" / "broker"), help="the broker binary (make build)")
    args = ap.parse_args()
    servers = [tuple(s.split("=", 1)) for s in args.server]
    pythonpath = {label: path.partition("@")[2] for label, path in servers}
    servers = [(label, path.partition("@")[0]) for label, path in servers]
    broker = subprocess.Popen([args.broker, "-addr", "127.0.0.1:0"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              text=True)
    assert broker.stdout is not None
    url = broker.stdout.readline().removeprefix("broker listening on ").strip()
    base = {k: v for k, v in os.environ.items() if not k.startswith(("EXTISM_", "MCP_RESUME", "MCP_EXAMPLE"))}
    results: dict[str, list[tuple[float, float]]] = {label: [] for label, _ in servers}
    root = tempfile.mkdtemp(prefix="mcp-resume-handshake-")
    try:
        warm_cache = os.path.join(root, "warm-cache")
        for i in range(args.runs + 1):  # run 0 is a warm-up, not counted
            for label, path in servers:
                run_dir = tempfile.mkdtemp(dir=root)
                cache = warm_cache if args.warm else os.path.join(run_dir, "cache")
                env = {**base, "XDG_CACHE_HOME": cache, "MCP_RESUME_STATE_DIR": os.path.join(run_dir, "state"),
                       "MCP_EXAMPLE_BROKER_URL": url, **({"PYTHONPATH": pythonpath[label]} if pythonpath[label] else {})}
                t = run_once(args.python, path, env)
                if i > 0:
                    results[label].append(t)
                shutil.rmtree(run_dir, ignore_errors=True)
    finally:
        broker.kill()
        broker.wait()
        shutil.rmtree(root, ignore_errors=True)
    first = servers[0][0]
    med0 = statistics.median(t[0] for t in results[first])
    tool0 = statistics.median(t[1] for t in results[first])
    cache = "warm" if args.warm else "cold (fresh cache per run)"
    print(f"\n{args.runs} runs per server, alternating, {cache}, ms; ratios against `{first}`\n")
    print("| server | initialize median | p90 | ratio | first tool answer median | p90 | ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for label, _ in servers:
        init = [t[0] for t in results[label]]
        tool = [t[1] for t in results[label]]
        mi, mt = statistics.median(init), statistics.median(tool)
        print(f"| {label} | {mi:.0f} | {p90(init):.0f} | {mi / med0:.2f} | {mt:.0f} | {p90(tool):.0f} | {mt / tool0:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Startup cost of session resume in the Python example server.

Times, from process start to exit, the example server (examples/python-server/server.py) in:

* ``MCP_RESUME_BENCH=baseline``: imports, MCPServer construction, no store;
* ``MCP_RESUME_BENCH=load``, **warm** compile cache: plus importing mcp_resume,
  opening the store (the plugin compiled module comes from wasmtime's cache)
  and the first ``load`` answer (a token file is present, the resume path:
  identity, state directory, lock, prune, read);
* ``MCP_RESUME_BENCH=load``, **cold** compile cache: the same with a fresh
  user cache directory, so wasmtime compiles the 3 MB plugin with Cranelift.

Each mode runs ``--runs`` times (>= 10), interleaved so machine drift hits all
alike, after one unmeasured warm-up run. Prints a markdown table (median, p90
in ms) and the ratio warm/baseline; the target is at most +10 %.

    .venv/bin/python sdk-bindings/python/bench/bench_startup.py --runs 15
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]
SERVER = REPO_ROOT / "examples" / "python-server" / "server.py"
TARGET = 0.10


def run_once(python: str, env: dict[str, str]) -> float:
    """Run the server once; return its wall time in ms. Raises on a non-zero exit or any stdout."""
    t0 = time.perf_counter()
    p = subprocess.run([python, str(SERVER)], env=env, capture_output=True, text=True, timeout=120, cwd=REPO_ROOT)
    ms = (time.perf_counter() - t0) * 1000.0
    if p.returncode != 0 or p.stdout:
        raise RuntimeError(f"server failed (exit {p.returncode}, stdout {p.stdout!r}):\n{p.stderr}")
    return ms


def p90(xs: list[float]) -> float:
    """Nearest-rank 90th percentile."""
    s = sorted(xs)
    return s[max(0, math.ceil(0.9 * len(s)) - 1)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=15, help="runs per mode (at least 10)")
    ap.add_argument("--python", default=sys.executable, help="interpreter that runs the server")
    ap.add_argument("--check", action="store_true", help="exit 1 when the warm overhead exceeds the 10%% target")
    args = ap.parse_args()
    if args.runs < 10:
        ap.error("--runs must be at least 10")

    work = Path(tempfile.mkdtemp(prefix="mcp-resume-bench-"))
    try:
        state = work / "state"
        state.mkdir(mode=0o700)

        # PYTHONDONTWRITEBYTECODE would recompile every changed module on every
        # run; a deployed server has its .pyc files, so the benchmark does too.
        drop = ("MCP_RESUME", "EXTISM_", "XDG_CACHE_HOME", "PYTHONDONTWRITEBYTECODE")
        base = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
        base["MCP_RESUME_STATE_DIR"] = str(state)
        warm_home = work / "warm-home"
        warm_home.mkdir()
        baseline_env = {**base, "MCP_RESUME_BENCH": "baseline", "HOME": str(warm_home)}
        warm_env = {**base, "MCP_RESUME_BENCH": "load", "HOME": str(warm_home)}

        run_once(args.python, warm_env)  # fills the warm cache and the .pyc files; not measured
        # This process is the server's MCP host: the warm-up run's lock file names it, so the
        # token file next to it makes every measured `load` take the resume path.
        locks = [n for n in os.listdir(state) if n.startswith("lock-")]
        if len(locks) == 1:
            (state / ("token-" + locks[0][len("lock-"):])).write_text("bench-token-0123456789")
        else:
            print(f"note: no host identity ({locks}); load runs the resume-off path", file=sys.stderr)
        times: dict[str, list[float]] = {"baseline": [], "warm": [], "cold": []}
        for i in range(args.runs):
            times["baseline"].append(run_once(args.python, baseline_env))
            times["warm"].append(run_once(args.python, warm_env))
            cold_home = work / f"cold-home-{i}"
            cold_home.mkdir()
            times["cold"].append(run_once(args.python, {**base, "MCP_RESUME_BENCH": "load", "HOME": str(cold_home)}))
            shutil.rmtree(cold_home)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    med = {k: statistics.median(v) for k, v in times.items()}
    labels = {
        "baseline": "baseline (no store)",
        "warm": "load, warm compile cache",
        "cold": "load, cold compile cache",
    }
    print(f"Python example server, process start to first `load` answer ({args.runs} runs each)\n")
    print("| mode | median ms | p90 ms | vs baseline |")
    print("|---|---:|---:|---:|")
    for k in ("baseline", "warm", "cold"):
        delta = "" if k == "baseline" else f"{(med[k] / med['baseline'] - 1) * 100:+.1f}%"
        print(f"| {labels[k]} | {med[k]:.1f} | {p90(times[k]):.1f} | {delta} |")
    ratio = med["warm"] / med["baseline"]
    ok = ratio - 1 <= TARGET
    print(
        f"\nwarm/baseline = {ratio:.3f} ({(ratio - 1) * 100:+.1f}%, "
        f"{med['warm'] - med['baseline']:+.1f} ms); target <= +{TARGET * 100:.0f}%: {'met' if ok else 'NOT met'}"
    )
    return 0 if ok or not args.check else 1


if __name__ == "__main__":
    sys.exit(main())

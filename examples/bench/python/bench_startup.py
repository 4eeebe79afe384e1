"""Startup cost of session resume in the Python example server: its targets are start to the first ``load``
answer within 1.08x of the same start without the store, peak RSS within +20 MiB, and a first-ever start
within 1.5x of a warm one.

Times, from process start to exit, the example server's startup (examples/python-server/server.py, run by
its benchmark stand-in server_start.py, which stops at the measured point) in:

* ``baseline``: imports, MCPServer construction, no store;
* ``load``, **warm** compile cache: plus importing mcp_resume,
  opening the store (the plugin compiled module comes from wasmtime's cache)
  and the first ``load`` answer (a token file is present, the resume path:
  identity, state directory, lock, prune, read);
* the same, **mcp_resume imported first** (``python -c "import mcp_resume; runpy..."``),
  as the server's serving path does: the compile overlaps the SDK imports;
* ``load``, **cold** compile cache: the same with a fresh
  user cache directory, so wasmtime compiles the plugin with Cranelift;
* ``load``, **precompiled**: a fresh user cache directory
  filled beforehand (untimed) by ``python -m mcp_resume precompile``, as ``make
  python-setup`` does at install time: the first start after installing.

Each mode runs ``--runs`` times (>= 10), alternating so machine drift hits all
alike, after one unmeasured warm-up run. Each run's peak RSS is the child's
``ru_maxrss`` (``os.wait4``). Prints a markdown table (median, p90 in ms, peak
RSS in MiB) with every figure's ratio to the baseline of the same run, the
cold/warm ratio, and the targets: warm/baseline <= 1.08, peak RSS <= baseline
+ 20 MiB, cold/warm <= 1.5.

    .venv/bin/python examples/bench/python/bench_startup.py --runs 15      (or: make python-bench)
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
import threading
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]
#: The server's startup, stopped at the measured point (argument: load or baseline).
SERVER = Path(__file__).resolve().parent / "server_start.py"
#: The example server's app name: its state directory under the state root.
APP = "example-python"
TARGET_RATIO = 1.08
TARGET_RSS_MIB = 20.0
TARGET_COLD = 1.5


#: The load mode with ``mcp_resume`` imported first, as the server's serving path does (the store's thread starts
#: before the SDK imports): the import starts the compile in the background (``mcp_resume.precompile``). The
#: script sees the same ``sys.argv`` as when run directly, so the plugin's default instance key is the same.
EARLY = ["-c", f"import mcp_resume, runpy, sys; sys.argv = [{str(SERVER)!r}, 'load']; "
               f"runpy.run_path({str(SERVER)!r}, run_name='__main__')"]


def run_once(python: str, mode: str, env: dict[str, str], early: bool = False) -> tuple[float, float]:
    """Run the server's startup once in ``mode`` (load or baseline): (wall time in ms, peak RSS in MiB). Raises on
    a non-zero exit or any stdout.

    Its stdout is a pipe this process reads, as an MCP host's is: the plugin resolves this process as the host
    only when the server's stdio shows it (a file or /dev/null proves nothing), so the load takes the path of a
    real launch."""
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        p = subprocess.Popen([python, *(EARLY if early else [str(SERVER), mode])], env=env, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=err, cwd=REPO_ROOT)
        assert p.stdout is not None
        out: list[bytes] = []
        reader = threading.Thread(target=lambda: out.append(p.stdout.read()))  # type: ignore[union-attr]
        reader.start()
        _, status, usage = os.wait4(p.pid, 0)
        ms = (time.perf_counter() - t0) * 1000.0
        p.returncode = os.waitstatus_to_exitcode(status)
        reader.join()
        p.stdout.close()
        err.seek(0)
        stdout, stderr = b"".join(out), err.read().decode(errors="replace")
    if p.returncode != 0 or stdout:
        raise RuntimeError(f"server failed (exit {p.returncode}, stdout {stdout!r}):\n{stderr}")
    return ms, usage.ru_maxrss / 1024.0


def p90(xs: list[float]) -> float:
    """Nearest-rank 90th percentile."""
    s = sorted(xs)
    return s[max(0, math.ceil(0.9 * len(s)) - 1)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=15, help="runs per mode (at least 10)")
    ap.add_argument("--python", default=sys.executable, help="interpreter that runs the server")
    ap.add_argument("--check", action="store_true", help="exit 1 when warm/baseline or the RSS misses its target")
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
        warm_env = {**base, "HOME": str(warm_home)}

        run_once(args.python, "load", warm_env)  # fills the warm cache and the .pyc files; not measured
        # This process is the server's MCP host: the warm-up run's lock file names it, so the
        # token file next to it makes every measured `load` take the resume path.
        app_dir = state / APP  # the state root holds one directory per app
        locks = [n for n in os.listdir(app_dir) if n.startswith("lock-")] if app_dir.is_dir() else []
        if len(locks) == 1:
            (app_dir / ("token-" + locks[0][len("lock-"):])).write_text("bench-token-0123456789")
        else:
            print(f"note: no host identity ({locks}); load runs the resume-off path", file=sys.stderr)
        times: dict[str, list[float]] = {k: [] for k in MODES}
        rss: dict[str, list[float]] = {k: [] for k in MODES}

        def measure(mode: str, env: dict[str, str]) -> None:
            ms, mib = run_once(args.python, "baseline" if mode == "baseline" else "load", env, early=mode == "early")
            times[mode].append(ms)
            rss[mode].append(mib)

        for i in range(args.runs):
            order = list(MODES) if i % 2 == 0 else list(reversed(MODES))
            for mode in order:
                if mode in ("baseline", "warm", "early"):
                    measure(mode, warm_env)
                    continue
                home = work / f"{mode}-home-{i}"
                home.mkdir()
                env = {**base, "HOME": str(home)}
                if mode == "precompiled":  # what `make python-setup` does after installing
                    subprocess.run([args.python, "-m", "mcp_resume", "precompile"], env=env, check=True, cwd=REPO_ROOT)
                measure(mode, env)
                shutil.rmtree(home)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    med = {k: statistics.median(v) for k, v in times.items()}
    mrss = {k: statistics.median(v) for k, v in rss.items()}
    print(f"Python example server, process start to first `load` answer ({args.runs} runs each, alternating)\n")
    print("| mode | median ms | p90 ms | vs baseline | peak RSS MiB (median) | RSS vs baseline |")
    print("|---|---:|---:|---:|---:|---:|")
    for k in MODES:
        vs = "" if k == "baseline" else f"{med[k] / med['baseline']:.3f}×"
        rss_vs = "" if k == "baseline" else f"{mrss[k] - mrss['baseline']:+.1f} MiB"
        print(f"| {MODES[k]} | {med[k]:.1f} | {p90(times[k]):.1f} | {vs} | {mrss[k]:.1f} | {rss_vs} |")
    ratio = med["warm"] / med["baseline"]
    drss = mrss["warm"] - mrss["baseline"]
    eratio, edrss = med["early"] / med["baseline"], mrss["early"] - mrss["baseline"]
    cold = med["cold"] / med["warm"]
    pre = med["precompiled"] / med["warm"]
    verdict = {True: "met", False: "NOT met"}
    print(f"\nwarm/baseline = {ratio:.3f} ({med['warm'] - med['baseline']:+.1f} ms; target <= {TARGET_RATIO}: "
          f"{verdict[ratio <= TARGET_RATIO]}); peak RSS {drss:+.1f} MiB (target <= +{TARGET_RSS_MIB:.0f}: "
          f"{verdict[drss <= TARGET_RSS_MIB]})")
    print(f"importing mcp_resume first: {eratio:.3f} ({verdict[eratio <= TARGET_RATIO]}), peak RSS {edrss:+.1f} MiB "
          f"({verdict[edrss <= TARGET_RSS_MIB]})")
    print(f"cold/warm = {cold:.2f} (empty compile cache; target <= {TARGET_COLD}: {verdict[cold <= TARGET_COLD]}); "
          f"precompiled/warm = {pre:.2f} (first start after `python -m mcp_resume precompile` at install: "
          f"{verdict[pre <= TARGET_COLD]})")
    ok = ratio <= TARGET_RATIO and drss <= TARGET_RSS_MIB
    return 0 if ok or not args.check else 1


#: Measured modes and their labels.
MODES = {
    "baseline": "baseline (no store)",
    "warm": "load, warm compile cache",
    "early": "load, warm, `mcp_resume` imported first",
    "cold": "load, empty compile cache (first-ever start)",
    "precompiled": "load, cache filled at install (`python -m mcp_resume precompile`)",
}


if __name__ == "__main__":
    sys.exit(main())

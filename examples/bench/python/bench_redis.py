"""The handle store on Redis in Python: 16 concurrent callers doing ``get`` and unconditional ``put`` on pre-created
handles (1 KiB values) through ``mcp_resume.HandleStore(state_url=...)`` (threads) and, with ``--async``,
``AsyncHandleStore`` (asyncio tasks), each beside its floor measured in the same run on the same redis-server:
redis-py (``redis.Redis`` / ``redis.asyncio.Redis``, configured as the host's client: RESP2, no retries) running the
plugin's own Lua scripts by ``EVALSHA`` with the same keys and arguments the plugin sent, as recorded off the wire by
the Go benchmark (``go run ./examples/bench/redis -record FILE``, its record.go). Store and floor windows alternate
(which goes first too); the table gives medians over the rounds. Targets: ops/s >= 0.5x the floor, p50 <= floor +
200 us per operation. Docs: docs/BENCHMARKS.md, "Handle store on Redis".

The script starts its own ``redis-server`` (PATH) on a free loopback port in a temporary directory, with the flags of
the Go fixture (hostfuncs/conformance/redistest), loads the recorded scripts, replays the recorded creates (the floor's records:
the same app, buckets and shapes as the store's) and creates the store's own handles through the store.

    .venv/bin/python examples/bench/python/bench_redis.py --record FILE [--callers 16] [--rounds 5] [--window 2]
        [--async]

Progress goes to stderr, the Markdown tables to stdout. Exit status 1 only when an operation fails.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import datetime as dt
import json
import logging
import typing
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from statistics import median

import redis
import redis.asyncio
from redis.backoff import NoBackoff
from redis.retry import Retry

from mcp_resume import AsyncHandleStore, HandleStore

APP = "bench-redis"  # the app of the recording: the floor's records share the store's buckets


def progress(msg: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {msg}", file=sys.stderr, flush=True)


def pct(xs: list[float], p: float) -> float:
    """The p-th percentile (nearest rank), 0 for none."""
    if not xs:
        return 0.0
    c = sorted(xs)
    return c[max(0, min(len(c) - 1, int(p / 100 * len(c) + 0.5) - 1))]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_redis(work: str) -> tuple[subprocess.Popen[bytes], str]:
    """redis-server on a free loopback port in ``work`` (the Go fixture's flags), answering PING; its process and URL."""
    port = free_port()
    exe = shutil.which(os.environ.get("MCP_RESUME_REDIS_SERVER", "redis-server"))
    if exe is None:
        raise SystemExit("redis-server is not on PATH")
    # close_fds=False and an absolute path let subprocess use posix_spawn: the fork + exec path, which waits on a
    # pipe for the child's exec, hung here now and then once the plugin's runtime had started threads.
    proc = subprocess.Popen([exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--dir", work], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=False)
    url = f"redis://127.0.0.1:{port}/0"
    c = redis.Redis.from_url(url)
    for _ in range(200):
        try:
            c.ping()
            c.close()
            return proc, url
        except redis.ConnectionError:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit("redis-server did not answer PING within 10 s")


# The host's client options (sdk-bindings/python/src/mcp_resume/_eval.py): RESP2, no retries, the deadline per socket op.
CLIENT_OPTIONS = {"socket_connect_timeout": 2.0, "socket_timeout": 2.0, "retry": Retry(NoBackoff(), 0),
                  "retry_on_timeout": False, "protocol": 2}


def check(reply: object) -> None:
    if not isinstance(reply, list) or not reply or reply[0] != b"ok":
        raise RuntimeError(f"script answered {reply!r}")


def rewind(call: dict[str, typing.Any]) -> tuple[str, int]:
    """The record a recorded put writes and the generation it was at before: a put is sealed for the generation it
    makes (put's ARGV[9]), so the same call again would answer "stale" and write nothing; setting the record back
    first, in the same round trip, makes every replay do the recorded put's work (as the Go floor does). The
    record's key is KEYS[1] (the bucket's LRU set, ending in "lru") with "h:" and the key hash (ARGV[5]) in its
    place (redis.lua, key)."""
    return (call["keys"][0][:-3] + b"h:" + call["args"][4]).decode(), int(call["args"][8]) - 1


class Result:
    """One window: operations, seconds, latencies (seconds) by operation."""

    def __init__(self) -> None:
        self.get: list[float] = []
        self.put: list[float] = []
        self.elapsed = 0.0
        self.callers: list[int] = []  # operations done by each caller (fairness)

    @property
    def rate(self) -> float:
        return (len(self.get) + len(self.put)) / self.elapsed


def thread_window(callers: int, n: int, seconds: float, get: Callable[[int], object],
                  put: Callable[[int], object]) -> Result:
    """``callers`` threads for ``seconds``, each alternating get(i) and put(i) over 0..n-1 (caller c from c*n/callers)."""
    res, stop, lock, errors = Result(), threading.Event(), threading.Lock(), []

    def run(c: int) -> None:
        g: list[float] = []
        p: list[float] = []
        k = 0
        try:
            while not stop.is_set():
                i = (c * n // callers + k // 2) % n
                t = time.perf_counter()
                (get if k % 2 == 0 else put)(i)
                (g if k % 2 == 0 else p).append(time.perf_counter() - t)
                k += 1
        except BaseException as e:  # noqa: BLE001 - reported after the window
            errors.append(e)
            stop.set()
        with lock:
            res.get += g
            res.put += p
            res.callers.append(len(g) + len(p))

    threads = [threading.Thread(target=run, args=(c,)) for c in range(callers)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    stop.wait(seconds)
    stop.set()
    for t in threads:
        t.join()
    res.elapsed = time.perf_counter() - t0
    if errors:
        raise errors[0]
    return res


async def task_window(callers: int, n: int, seconds: float, get: Callable[[int], Awaitable[object]],
                      put: Callable[[int], Awaitable[object]]) -> Result:
    """:func:`thread_window` with asyncio tasks."""
    res, deadline = Result(), time.perf_counter() + seconds

    async def run(c: int) -> None:
        k = 0
        while time.perf_counter() < deadline:
            i = (c * n // callers + k // 2) % n
            t = time.perf_counter()
            await (get if k % 2 == 0 else put)(i)
            (res.get if k % 2 == 0 else res.put).append(time.perf_counter() - t)
            k += 1
        res.callers.append(k)

    t0 = time.perf_counter()
    await asyncio.gather(*(run(c) for c in range(callers)))
    res.elapsed = time.perf_counter() - t0
    return res


def table(title: str, callers: int, st: list[Result], fl: list[Result]) -> None:
    def spread(xs: list[float], f: str = "{:.0f}") -> str:
        return f"{f.format(min(xs))}–{f.format(max(xs))}"

    print(f"### {title}\n")
    print("| measure | store | floor | store vs floor | target | | rounds: store, floor |")
    print("|---|---:|---:|---:|---|---|---|")
    sr, fr = [r.rate for r in st], [r.rate for r in fl]
    ratio = median(sr) / median(fr)
    print(f"| ops/s | {median(sr):.0f} | {median(fr):.0f} | {ratio:.2f}× | ≥ 0.5× | {'met' if ratio >= 0.5 else 'missed'} | "
          f"{spread(sr)}; {spread(fr)} |")
    sl, fll = [callers / r * 1e6 for r in sr], [callers / r * 1e6 for r in fr]
    print(f"| mean time per op, callers ÷ ops/s (µs) | {median(sl):.0f} | {median(fll):.0f} | "
          f"{median(sl) - median(fll):+.0f} µs ({median(sl) / median(fll):.2f}×) | | | {spread(sl)}; {spread(fll)} |")
    for op in ("get", "put"):
        for p in (50, 99):
            s = [pct(getattr(r, op), p) * 1e6 for r in st]
            f = [pct(getattr(r, op), p) * 1e6 for r in fl]
            diff = median(s) - median(f)
            target, verd = ("≤ floor + 200 µs", "met" if diff <= 200 else "missed") if p == 50 else ("", "")
            print(f"| {op} p{p} (µs) | {median(s):.0f} | {median(f):.0f} | {diff:+.0f} µs ({median(s) / median(f):.2f}×) | "
                  f"{target} | {verd} | {spread(s)}; {spread(f)} |")
    share = [min(r.callers) / (sum(r.callers) / len(r.callers)) for r in st]
    fshare = [min(r.callers) / (sum(r.callers) / len(r.callers)) for r in fl]
    print(f"| slowest caller's ops / mean caller's | {median(share):.2f} | {median(fshare):.2f} | | | | "
          f"{spread(share, '{:.2f}')}; {spread(fshare, '{:.2f}')} |")
    print()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--record", required=True, help="the Go benchmark's recorded calls (go run ./examples/bench/redis -record FILE)")
    ap.add_argument("--callers", type=int, default=16, help="concurrent threads (and tasks)")
    ap.add_argument("--rounds", type=int, default=5, help="rounds, each one store and one floor window")
    ap.add_argument("--window", type=float, default=2.0, help="seconds of one window")
    ap.add_argument("--value", type=int, default=1024, help="value size in bytes of the store's handles")
    ap.add_argument("--pool-size", type=int, default=None, help="HandleStore pool_size (default: the store's, os.cpu_count())")
    ap.add_argument("--async", dest="use_async", action="store_true", help="also AsyncHandleStore tasks vs redis.asyncio")
    args = ap.parse_args()
    with open(args.record, encoding="utf-8") as f:
        rec = json.load(f)
    for op in ("create", "read", "put"):  # keys and arguments are any bytes, in base64 in the file
        for call in rec[op]:
            call["keys"] = [base64.b64decode(k) for k in call["keys"]]
            call["args"] = [base64.b64decode(a) for a in call["args"]]
    logging.getLogger("mcp_resume").setLevel(logging.WARNING)
    work = tempfile.mkdtemp(prefix="redis-bench-py-")
    proc, url = start_redis(work)
    try:
        floor = redis.Redis.from_url(url, retry_on_error=[], max_connections=args.callers + 4, **CLIENT_OPTIONS)
        for s in rec["scripts"].values():
            if floor.script_load(s["src"]) != s["sha"]:
                raise SystemExit(f"script sha mismatch for {s['sha']}")
        for call in rec["create"]:  # the floor's records, as the plugin created them in the Go run
            check(floor.evalsha(call["sha"], len(call["keys"]), *call["keys"], *call["args"]))
        n = len(rec["read"])

        def fget(i: int) -> None:
            c = rec["read"][i]
            check(floor.evalsha(c["sha"], len(c["keys"]), *c["keys"], *c["args"]))

        def fput(i: int) -> None:
            c = rec["put"][i]
            key, generation = rewind(c)
            pipe = floor.pipeline(transaction=False)
            pipe.hset(key, "g", generation)
            pipe.evalsha(c["sha"], len(c["keys"]), *c["keys"], *c["args"])
            check(pipe.execute()[1])

        opts = {"state_url": url, "timeout": 2.0}
        if args.pool_size:
            opts["pool_size"] = args.pool_size
        store = HandleStore(APP, **opts)
        value = secrets.token_bytes(args.value)
        handles = [store.create("", value).handle for _ in range(n)]
        progress(f"redis-server at {url.rsplit('/', 1)[0]}; {n} handles created, {n} recorded creates replayed; "
                 f"pool_size {store.pool_size}")

        def sget(i: int) -> None:
            if len(store.get(handles[i], "").data) != len(value):
                raise RuntimeError("short value")

        def sput(i: int) -> None:
            store.put(handles[i], "", value)

        thread_window(args.callers, n, args.window / 4, sget, sput)  # warm-up: the pool's instances, the connections
        thread_window(args.callers, n, args.window / 4, fget, fput)
        st: list[Result] = []
        fl: list[Result] = []
        for r in range(args.rounds):
            progress(f"threads: round {r + 1} of {args.rounds}")
            for which in ((0, 1) if r % 2 == 0 else (1, 0)):
                if which == 0:
                    st.append(thread_window(args.callers, n, args.window, sget, sput))
                else:
                    fl.append(thread_window(args.callers, n, args.window, fget, fput))
        pool = store.pool_size
        store.close()
        floor.close()
        print(f"{dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC, Python {sys.version.split()[0]}, redis-py "
              f"{redis.__version__}, {os.cpu_count()} cores, value {args.value} bytes\n")
        table(f"Python threads, {args.callers} concurrent callers, HandleStore pool_size {pool}, get and put alternating "
              f"(median of {args.rounds} rounds of {args.window:g} s)", args.callers, st, fl)
        if args.use_async:
            asyncio.run(run_async(args, rec, url, opts, value))
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(work, ignore_errors=True)
    return 0


async def run_async(args: argparse.Namespace, rec: dict, url: str, opts: dict, value: bytes) -> None:
    """The same load with asyncio tasks: AsyncHandleStore against redis.asyncio."""
    floor = redis.asyncio.Redis.from_url(url, retry_on_error=[], max_connections=args.callers + 4, **CLIENT_OPTIONS)
    store = AsyncHandleStore(APP, **opts)
    n = len(rec["read"])
    handles = [(await store.create("", value)).handle for _ in range(n)]

    async def fget(i: int) -> None:
        c = rec["read"][i]
        check(await floor.evalsha(c["sha"], len(c["keys"]), *c["keys"], *c["args"]))

    async def fput(i: int) -> None:
        c = rec["put"][i]
        key, generation = rewind(c)
        pipe = floor.pipeline(transaction=False)
        pipe.hset(key, "g", generation)
        pipe.evalsha(c["sha"], len(c["keys"]), *c["keys"], *c["args"])
        check((await pipe.execute())[1])

    async def sget(i: int) -> None:
        if len((await store.get(handles[i], "")).data) != len(value):
            raise RuntimeError("short value")

    async def sput(i: int) -> None:
        await store.put(handles[i], "", value)

    await task_window(args.callers, n, args.window / 4, sget, sput)
    await task_window(args.callers, n, args.window / 4, fget, fput)
    st: list[Result] = []
    fl: list[Result] = []
    for r in range(args.rounds):
        progress(f"asyncio: round {r + 1} of {args.rounds}")
        for which in ((0, 1) if r % 2 == 0 else (1, 0)):
            if which == 0:
                st.append(await task_window(args.callers, n, args.window, sget, sput))
            else:
                fl.append(await task_window(args.callers, n, args.window, fget, fput))
    pool = (await store.opened()).pool_size
    await store.aclose()
    await floor.aclose()
    table(f"Python asyncio, {args.callers} tasks, AsyncHandleStore (pool_size {pool}) vs redis.asyncio, get and put "
          f"alternating (median of {args.rounds} rounds of {args.window:g} s)", args.callers, st, fl)


if __name__ == "__main__":
    sys.exit(main())

"""Stress helper of the handle store's end-to-end tests (examples/handles), for the Python API
(``mcp_resume.HandleStore``): the same protocol as the Go helper, documented in
examples/handles/helpers_test.go.

Environment: HANDLES_HELPER (``cas`` or ``putloop``), HANDLES_ROOT (state root), HANDLES_APP,
HANDLES_HANDLE (an existing handle, principal ""), HANDLES_THREADS, HANDLES_OPS, HANDLES_SEED.

- ``cas``: print ``ready``, wait for a line on stdin, then HANDLES_THREADS threads each make
  HANDLES_OPS successful compare-and-set increments of ``{"count": N}``; print one JSON line
  ``{"puts", "conflicts", "errors", "failed"}``.
- ``putloop``: get, then put the next self-checking value expecting the generation read, forever;
  print ``ready`` after the first put.
- ``principals``: print the JSON list of codes (``ok`` for success) of: create with a 1025-byte
  principal, create with a lone surrogate (not valid UTF-8), get with a 1025-byte principal, create
  with a 1024-byte principal, get with "".

Only the protocol goes to stdout; the binding's log lines go to stderr.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sys
import threading
from collections.abc import Callable

from mcp_resume import ConflictError, HandleStore, MCPResumeError


def crash_value(gen: int, seed: int, i: int) -> bytes:
    """The putloop value of generation gen, writer seed, i-th put (crashValue in helpers_test.go)."""
    n = (seed * 131 + i * 977) % 65536
    pad = "".join(chr(ord("a") + (gen + j) % 26) for j in range(n))
    digest = hashlib.sha256(f"{gen}:{seed}:{pad}".encode()).hexdigest()[:16]
    return json.dumps({"gen": gen, "seed": seed, "pad": pad, "sum": digest}, separators=(",", ":")).encode()


def cas(store: HandleStore, handle: str, threads: int, ops: int) -> dict[str, object]:
    lock = threading.Lock()
    rep: dict[str, object] = {"puts": 0, "conflicts": 0, "errors": [], "failed": 0}

    def fail(msg: str) -> None:
        with lock:
            rep["failed"] = int(rep["failed"]) + 1  # type: ignore[call-overload]
            errors = rep["errors"]
            assert isinstance(errors, list)
            if len(errors) < 10:
                errors.append(msg)

    def bump(key: str) -> None:
        with lock:
            rep[key] = int(rep[key]) + 1  # type: ignore[call-overload]

    def worker() -> None:
        done = tries = 0
        while done < ops and tries < ops * 200:
            tries += 1
            try:
                v = store.get(handle, "")
            except Exception as e:  # noqa: BLE001 - reported, the test fails on any
                fail(f"get: {e!r}")
                continue
            count = json.loads(v.data)["count"]
            if count != v.generation - 1:
                fail(f"read count {count} at generation {v.generation}")
                continue
            try:
                gen = store.put(handle, "", json.dumps({"count": count + 1}).encode(), expect=v.generation)
            except ConflictError as e:
                if e.generation <= v.generation:
                    fail(f"conflict expecting {v.generation} named generation {e.generation}")
                bump("conflicts")
                continue
            except Exception as e:  # noqa: BLE001
                fail(f"put: {e!r}")
                continue
            if gen != v.generation + 1:
                fail(f"put expecting {v.generation} returned generation {gen}")
                continue
            done += 1
            bump("puts")

    ts = [threading.Thread(target=worker) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return rep


def main() -> int:
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    mode = os.environ["HANDLES_HELPER"]
    handle = os.environ["HANDLES_HANDLE"]
    store = HandleStore(os.environ["HANDLES_APP"], state_root=os.environ["HANDLES_ROOT"])
    if mode == "cas":
        print("ready", flush=True)
        sys.stdin.readline()
        rep = cas(store, handle, int(os.environ["HANDLES_THREADS"]), int(os.environ["HANDLES_OPS"]))
        print(json.dumps(rep), flush=True)
        store.close()
        return 0
    if mode == "principals":
        def code(f: Callable[[], object]) -> str:
            try:
                f()
            except MCPResumeError as e:
                return e.code
            except Exception as e:  # noqa: BLE001 - reported: the test wants the store's codes
                return f"error: {e!r}"
            return "ok"

        long = "p" * 1025
        print(json.dumps([code(lambda: store.create(long, b"{}")), code(lambda: store.create("\udcff", b"{}")),
                          code(lambda: store.get(handle, long)), code(lambda: store.create(long[:1024], b"{}")),
                          code(lambda: store.get(handle, ""))]), flush=True)
        store.close()
        return 0
    if mode == "putloop":
        seed = int(os.environ["HANDLES_SEED"])
        i = 0
        while True:
            v = store.get(handle, "")
            store.put(handle, "", crash_value(v.generation + 1, seed, i), expect=v.generation)
            if i == 0:
                print("ready", flush=True)
            i += 1
    print(f"unknown HANDLES_HELPER mode {mode}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())

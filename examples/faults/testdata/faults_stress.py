"""Stress helpers of the fault-injection suite (examples/faults/faults_test.go),
faults 8 (SIGKILL during store) and 9 (concurrent instances), for the Python
binding: the same three modes as the Go helpers in faults_helpers_test.go, through
the binding's public API (``mcp_resume.ResumeTokenStore``), the real plugin in
the real Python host.

Run by the suite as ``.venv/bin/python faults_stress.py`` with FAULTS_HELPER:

- ``storeloop``: open a store (state dir and instance from the environment:
  MCP_RESUME_STATE_DIR, MCP_RESUME_INSTANCE=-), store stress token
  ``s<FAULTS_SEED>.i0``, print ``ready``, then store ``.i1``, ``.i2``, ...
  until killed.
- ``loader``: for each state directory read on stdin, open a fresh store,
  load once, close, and print one JSON line ``{"found", "valid", "seed",
  "iter", "len", "events", "open_err"}``.
- ``hammer``: print ``ready``, wait for a line on stdin, then FAULTS_ROUNDS
  rounds of (open a store, FAULTS_OPS times load / reject one load in four /
  store, close); print one JSON report ``{"instance", "stored", "loads",
  "invalid", "rejects", "events", "open_errs"}``.

Stress tokens are self-checking (``s<seed>.i<iter>.<filler>.<crc32>``), so a
partial or garbled one is detected; the format is stressToken in
faults_helpers_test.go. Nothing but the protocol above goes to stdout; the
binding's log lines (warnings and up) go to stderr.
"""

from __future__ import annotations

import json
import logging
import os
import random
import re
import sys
import zlib
from collections import Counter

from mcp_resume import ResumeTokenStore

APP = "example-python"
_HEAD = re.compile(r"s(\d+)\.i(\d+)\.")


def stress_token(seed: int, it: int) -> str:
    """The stress token of (seed, iteration): 40 to ~4070 bytes of visible ASCII."""
    head = f"s{seed}.i{it}."
    n = 24 + (seed * 131 + it * 977) % 4000
    body = "".join(chr(ord("A") + (seed + it + j) % 26) for j in range(n))
    s = head + body
    return s + f".{zlib.crc32(s.encode()):08x}"


def parse_stress_token(tok: str) -> tuple[int, int, bool]:
    """(seed, iteration, complete) of a token; complete is False for anything no loop stored."""
    m = _HEAD.match(tok)
    if m is None:
        return 0, 0, False
    seed, it = int(m.group(1)), int(m.group(2))
    return seed, it, stress_token(seed, it) == tok


class EventCounter(logging.Handler):
    """Counts the binding's log records by their ``event`` field."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.counts: Counter[str] = Counter()

    def emit(self, record: logging.LogRecord) -> None:
        self.counts[str(getattr(record, "event", "") or record.getMessage())] += 1


def new_logger(name: str, counter: EventCounter) -> logging.Logger:
    """A logger that counts every record and passes warnings and up to stderr."""
    logger = logging.getLogger(name)
    logger.handlers[:] = [counter]
    err = logging.StreamHandler(sys.stderr)
    err.setLevel(logging.WARNING)
    logger.addHandler(err)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    return logger


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def storeloop() -> int:
    seed = int(os.environ["FAULTS_SEED"])
    store = ResumeTokenStore(APP, logger=new_logger("storeloop", EventCounter()))
    store.store(stress_token(seed, 0))
    say("ready")
    i = 1
    while True:
        store.store(stress_token(seed, i))
        i += 1


def loader() -> int:
    for line in sys.stdin:
        counter = EventCounter()
        ans: dict[str, object] = {"found": False, "valid": False, "seed": 0, "iter": 0, "len": 0}
        try:
            store = ResumeTokenStore(APP, state_root=line.rstrip("\n"), logger=new_logger("loader", counter))
            try:
                tok = store.load()
            finally:
                store.close()
            if tok is not None:
                seed, it, ok = parse_stress_token(tok)
                ans.update(found=True, len=len(tok), seed=seed, iter=it, valid=ok)
        except Exception as e:  # reported, not raised: the suite counts it as a problem
            ans["open_err"] = f"{type(e).__name__}: {e}"
        ans["events"] = dict(counter.counts)
        say(json.dumps(ans))
    return 0


def hammer() -> int:
    inst = int(os.environ["FAULTS_INSTANCE"])
    rounds = int(os.environ["FAULTS_ROUNDS"])
    ops = int(os.environ["FAULTS_OPS"])
    say("ready")
    sys.stdin.readline()
    rng = random.Random(inst * 1000 + 42)
    counter = EventCounter()
    logger = new_logger("hammer", counter)
    rep: dict[str, object] = {"instance": inst, "stored": 0, "loads": [], "invalid": 0, "rejects": 0, "open_errs": 0}
    loads: list[list[int]] = []
    stored = invalid = rejects = open_errs = 0
    for _ in range(rounds):
        try:
            store = ResumeTokenStore(APP, logger=logger)
        except Exception as e:
            print(f"open: {e}", file=sys.stderr)
            open_errs += 1
            continue
        for _ in range(ops):
            tok = store.load()
            if tok is not None:
                seed, it, ok = parse_stress_token(tok)
                if ok:
                    loads.append([seed, it])
                else:
                    invalid += 1
                if rng.randrange(4) == 0:
                    store.reject()
                    rejects += 1
            store.store(stress_token(inst, stored))
            stored += 1
        store.close()
    rep.update(stored=stored, loads=loads, invalid=invalid, rejects=rejects, open_errs=open_errs, events=dict(counter.counts))
    say(json.dumps(rep))
    return 0


if __name__ == "__main__":
    modes = {"storeloop": storeloop, "loader": loader, "hammer": hammer}
    mode = os.environ.get("FAULTS_HELPER", "")
    if mode not in modes:
        print(f"unknown FAULTS_HELPER {mode!r}", file=sys.stderr)
        sys.exit(2)
    sys.exit(modes[mode]())

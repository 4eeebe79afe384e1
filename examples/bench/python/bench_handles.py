"""The handle store per operation in Python: p50 and p99 of ``create``, ``get``, ``put`` and ``delete`` through
``mcp_resume.HandleStore`` (warm, 1 KiB values), each beside a native baseline measured in the same run, the two
alternating operation by operation (and which goes first alternating too).

The native baseline does the record file work of the operation directly in Python on a record of the same shape
(a 65-byte header, then the AES-256-GCM ciphertext of the value, the header bound as associated data), with no
index, no lock and no plugin:

* create: seal (``cryptography``'s ``AESGCM``), write a temporary file (``O_CREAT|O_EXCL|O_NOFOLLOW``, 0600),
  rename it over the record;
* get: read the record (``O_NOFOLLOW``, bounded), open it;
* put: read the header (the current generation, as the store's put does), seal, write temp + rename;
* delete: read the header, unlink.

Without the ``cryptography`` package the baseline does the same file work without the cipher (the value is
copied as is) and the output says so. Docs: docs/BENCHMARKS.md, "Handle store".

    .venv/bin/python examples/bench/python/bench_handles.py [--n 1000] [--value 1024] [--dir /tmp]
"""

from __future__ import annotations

import argparse
import datetime as dt
import logging
import os
import secrets
import shutil
import struct
import sys
import tempfile
import time
from collections.abc import Callable

from mcp_resume import HandleStore

try:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
except ImportError:  # the baseline then does the file work only
    AESGCM = None

HEADER = 4 + 1 + 8 + 8 + 8 + 8 + 16 + 12  # magic, version, generation, created, idle, max age, tag, nonce
AAD = b"mcp-resume handle v1\x00bench\x00"


class Native:
    """Sealed records in a directory, one file per key: the store's record file work, done directly."""

    def __init__(self, directory: str) -> None:
        os.makedirs(directory, mode=0o700, exist_ok=True)
        self.dir = directory

    def _seal(self, key: bytes, gen: int, value: bytes) -> bytes:
        nonce = secrets.token_bytes(12)
        header = b"MRH1\x01" + struct.pack(">Qqqq", gen, 0, 0, 0) + bytes(16) + nonce
        if AESGCM is None:
            return header + value + bytes(16)
        return header + AESGCM(key).encrypt(nonce, value, AAD + header)

    def _write(self, name: str, data: bytes) -> None:
        tmp = os.path.join(self.dir, f"{name}.{secrets.token_hex(8)}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        os.rename(tmp, os.path.join(self.dir, name))

    def _read(self, name: str, limit: int) -> bytes:
        fd = os.open(os.path.join(self.dir, name), os.O_RDONLY | os.O_NOFOLLOW)
        try:
            return os.read(fd, limit)
        finally:
            os.close(fd)

    def create(self, key: tuple[str, bytes], value: bytes) -> None:
        self._write(key[0], self._seal(key[1], 1, value))

    def get(self, key: tuple[str, bytes]) -> bytes:
        rec = self._read(key[0], HEADER + (4 << 20) + 17)
        if AESGCM is None:
            return rec[HEADER:-16]
        return AESGCM(key[1]).decrypt(rec[HEADER - 12:HEADER], rec[HEADER:], AAD + rec[:HEADER])

    def put(self, key: tuple[str, bytes], value: bytes) -> None:
        header = self._read(key[0], HEADER)
        self._write(key[0], self._seal(key[1], struct.unpack_from(">Q", header, 5)[0] + 1, value))

    def delete(self, key: tuple[str, bytes]) -> None:
        self._read(key[0], HEADER)
        os.unlink(os.path.join(self.dir, key[0]))


def pct(xs: list[float], p: float) -> float:
    """The p-th percentile (nearest rank)."""
    c = sorted(xs)
    return c[max(0, min(len(c) - 1, int(p / 100 * len(c) + 0.5) - 1))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1000, help="operations of each kind, store and native alike")
    ap.add_argument("--value", type=int, default=1024, help="value size in bytes")
    ap.add_argument("--dir", default=None, help="directory for the stores (default: the system's temporary one)")
    args = ap.parse_args()
    root = tempfile.mkdtemp(prefix="handles-bench-py-", dir=args.dir)
    logging.getLogger("mcp_resume").setLevel(logging.WARNING)
    try:
        store = HandleStore("bench-ops", state_root=os.path.join(root, "state"))
        native = Native(os.path.join(root, "native"))
        value = secrets.token_bytes(args.value)

        def new_key() -> tuple[str, bytes]:
            return "h-" + secrets.token_hex(16), secrets.token_bytes(32)

        for _ in range(50):  # warm-up: the compiled plugin, the page cache, the allocator
            h = store.create("", value).handle
            store.get(h, "")
            store.put(h, "", value)
            store.delete(h, "")
            k = new_key()
            native.create(k, value)
            native.get(k)
            native.put(k, value)
            native.delete(k)

        n = args.n
        st: list[list[float]] = [[], [], [], []]
        nt: list[list[float]] = [[], [], [], []]

        def pair(op: int, i: int, s: Callable[[], object], m: Callable[[], object]) -> None:
            for which in ((0, 1) if i % 2 == 0 else (1, 0)):
                fn, out = (s, st) if which == 0 else (m, nt)
                t = time.perf_counter()
                fn()
                out[op].append(time.perf_counter() - t)

        handles: list[str] = [""] * n
        keys = [new_key() for _ in range(n)]

        def create(i: int) -> None:
            handles[i] = store.create("", value).handle

        for i in range(n):
            pair(0, i, lambda: create(i), lambda: native.create(keys[i], value))
        perm = [(i * 7919) % n for i in range(n)]
        for i in range(n):
            j = perm[i]
            pair(1, i, lambda: store.get(handles[j], ""), lambda: native.get(keys[j]))
        for i in range(n):
            j = perm[i]
            pair(2, i, lambda: store.put(handles[j], "", value), lambda: native.put(keys[j], value))
        for i in range(n):
            j = perm[i]
            pair(3, i, lambda: store.delete(handles[j], ""), lambda: native.delete(keys[j]))
        store.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)

    cipher = "cryptography AESGCM" if AESGCM is not None else "NO cipher (cryptography not installed): read + write only"
    print(f"### Python per operation, warm, {n} each, value {args.value} bytes (ms)\n")
    print(f"{dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC, Python {sys.version.split()[0]}, baseline: {cipher}\n")
    print("| operation | store p50 | store p99 | native p50 | native p99 | p50 ratio | p99 ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for op, name in enumerate(("create", "get", "put", "delete")):
        s50, s99, n50, n99 = pct(st[op], 50), pct(st[op], 99), pct(nt[op], 50), pct(nt[op], 99)
        print(f"| {name} | {s50 * 1e3:.3f} | {s99 * 1e3:.3f} | {n50 * 1e3:.3f} | {n99 * 1e3:.3f} | "
              f"{s50 / n50:.2f}× | {s99 / n99:.2f}× |")
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``mcp_resume_crypto``, the one host function with a binary request and response (hostfuncs/README.md,
"mcp_resume_crypto"): batched HKDF-SHA256, HMAC-SHA256 and SHA-256, AES-256-GCM seal and open, and ``read_open`` /
``seal_write``, which open or seal a file of the state directory in one call so that a value crosses the Wasm
boundary once.

The plugin chooses every key, nonce, associated data, header and file name; this module only decodes the
request, computes with ``cryptography`` (HKDF, AES-GCM) and the standard library (HMAC, SHA-256), and reads or writes
through the store's own file primitives. It never interprets a record's bytes.
"""

from __future__ import annotations

import hashlib
import hmac
import struct
from collections.abc import Callable

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

__all__ = ["MAX_BATCH", "MAX_HEADER_LEN", "MAX_HKDF_LEN", "Malformed", "OP_HKDF", "OP_HMAC", "OP_OPEN", "OP_READ_OPEN",
           "OP_SEAL", "OP_SEAL_WRITE", "OP_SHA256", "serve"]

#: The operations, the request's first byte (Go ``hostfuncs.CryptoOp*``).
OP_HKDF, OP_HMAC, OP_SEAL, OP_OPEN, OP_READ_OPEN, OP_SEAL_WRITE, OP_SHA256 = 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07
#: The response's first byte: success, or the seal does not open (Go ``hostfuncs.CryptoStatus*``).
_OK, _NO_OPEN = b"\x00", b"\x01"
#: hkdf, hmac and sha256: at most this many items per request; hkdf: at most this many output bytes each.
MAX_BATCH, MAX_HKDF_LEN = 16, 64
#: read_open: the largest ``header_len``.
MAX_HEADER_LEN = 4096
_KEY_LEN, _NONCE_LEN, _TAG_LEN = 32, 12, 16
#: read_open: the largest ``limit``, that of ``mcp_resume_read`` (Go ``hostfuncs.MaxReadLimit``).
_MAX_READ_LIMIT = 8 << 20
_U16, _U32 = struct.Struct(">H"), struct.Struct(">I")

#: ``read(name, limit)``: the first ``limit`` bytes of the state directory's regular file ``name`` (bytes), as
#: ``mcp_resume_read`` reads them; raises the host's failure.
ReadFn = Callable[[bytes, int], bytes]
#: ``write(name, temp, data)``: ``data`` written to ``name`` through ``temp``, as ``mcp_resume_write`` writes it;
#: raises the host's failure.
WriteFn = Callable[[bytes, bytes, bytes], None]


class Malformed(ValueError):
    """A request that breaks the layout or a range: the host answers ``invalid_request`` with this message."""


class _Reader:
    """Walks a request's fields in order; reading past the end raises :class:`Malformed`."""

    __slots__ = ("buf", "pos")

    def __init__(self, buf: bytes) -> None:
        self.buf, self.pos = buf, 1  # after the op byte

    def take(self, n: int, what: str) -> bytes:
        end = self.pos + n
        if end > len(self.buf):
            raise Malformed(f"{what} runs past the end of the request")
        v = self.buf[self.pos:end]
        self.pos = end
        return v

    def u8(self, what: str) -> int:
        return self.take(1, what)[0]

    def u16(self, what: str) -> int:
        v: int = _U16.unpack(self.take(2, what))[0]
        return v

    def u32(self, what: str) -> int:
        v: int = _U32.unpack(self.take(4, what))[0]
        return v

    def b16(self, what: str) -> bytes:
        return self.take(self.u16(f"{what}'s length"), what)

    def b32(self, what: str) -> bytes:
        return self.take(self.u32(f"{what}'s length"), what)

    def rest(self) -> memoryview:
        v = memoryview(self.buf)[self.pos:]
        self.pos = len(self.buf)
        return v

    def end(self) -> None:
        if self.pos != len(self.buf):
            raise Malformed(f"{len(self.buf) - self.pos} bytes after the last field")


def _count(r: _Reader) -> int:
    n = r.u8("count")
    if not 1 <= n <= MAX_BATCH:
        raise Malformed(f"count must be 1..{MAX_BATCH}, not {n}")
    return n


def serve(req: bytes, read: ReadFn, write: WriteFn) -> bytes:
    """Answer one ``mcp_resume_crypto`` request ``req``: ``0x00`` and the operation's output, or ``0x01`` (the
    seal does not open: nothing for ``open``, the file's first ``min(size, header_len)`` bytes for
    ``read_open``). The request is decoded and checked completely before any computation or I/O. Raises
    :class:`Malformed` (empty, unknown op, a field past the end, bytes after the last field, a count, length,
    limit or offset out of range) and whatever ``read`` and ``write`` raise; the caller turns both into the
    JSON error object."""
    if not req:
        raise Malformed("empty request: the first byte is the operation")
    op, r = req[0], _Reader(req)
    if op == OP_HKDF:
        items = []
        for _ in range(_count(r)):
            ikm, salt, info, length = r.b16("ikm"), r.b16("salt"), r.b16("info"), r.u16("length")
            if not 1 <= length <= MAX_HKDF_LEN:
                raise Malformed(f"hkdf length must be 1..{MAX_HKDF_LEN}, not {length}")
            items.append((ikm, salt, info, length))
        r.end()
        return b"".join([_OK] + [HKDF(hashes.SHA256(), length, salt, info).derive(ikm)
                                 for ikm, salt, info, length in items])
    if op == OP_HMAC:
        pairs = [(r.b16("key"), r.b32("message")) for _ in range(_count(r))]
        r.end()
        return b"".join([_OK] + [hmac.digest(key, msg, "sha256") for key, msg in pairs])
    if op == OP_SHA256:
        messages = [r.b32("message") for _ in range(_count(r))]
        r.end()
        return b"".join([_OK] + [hashlib.sha256(m).digest() for m in messages])
    if op in (OP_SEAL, OP_OPEN):
        key, nonce, aad, payload = r.take(_KEY_LEN, "key"), r.take(_NONCE_LEN, "nonce"), r.b32("aad"), r.rest()
        if op == OP_SEAL:
            return _OK + AESGCM(key).encrypt(nonce, payload, aad)
        if len(payload) < _TAG_LEN:
            raise Malformed("open: the sealed bytes are shorter than the 16-byte tag")
        try:
            return _OK + AESGCM(key).decrypt(nonce, payload, aad)
        except InvalidTag:
            return _NO_OPEN
    if op == OP_READ_OPEN:
        key, name = r.take(_KEY_LEN, "key"), r.b16("name")
        limit, header_len, nonce_at = r.u32("limit"), r.u16("header_len"), r.u16("nonce_at")
        prefix = r.b32("aad_prefix")
        r.end()
        if not 1 <= limit <= _MAX_READ_LIMIT:
            raise Malformed(f"read_open limit must be 1..{_MAX_READ_LIMIT}, not {limit}")
        if not 1 <= header_len <= MAX_HEADER_LEN:
            raise Malformed(f"read_open header_len must be 1..{MAX_HEADER_LEN}, not {header_len}")
        if nonce_at + _NONCE_LEN > header_len:
            raise Malformed("read_open nonce_at + 12 must not pass header_len")
        record = read(name, limit)
        header = record[:header_len]
        if len(record) < header_len + _TAG_LEN:
            return _NO_OPEN + header
        try:
            opened = AESGCM(key).decrypt(header[nonce_at:nonce_at + _NONCE_LEN], memoryview(record)[header_len:],
                                         prefix + header)
        except InvalidTag:
            return _NO_OPEN + header
        return b"".join((_OK, header, opened))
    if op == OP_SEAL_WRITE:
        key, nonce, name, temp = r.take(_KEY_LEN, "key"), r.take(_NONCE_LEN, "nonce"), r.b16("name"), r.b16("temp")
        head, aad_prefix = r.b32("header"), r.b32("aad_prefix")
        write(name, temp, head + AESGCM(key).encrypt(nonce, r.rest(), aad_prefix + head))
        return _OK
    raise Malformed(f"unknown operation {op} (1 hkdf, 2 hmac, 3 seal, 4 open, 5 read_open, 6 seal_write, 7 sha256)")

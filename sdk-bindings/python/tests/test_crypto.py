"""``mcp_resume_crypto`` (hostfuncs/README.md, "mcp_resume_crypto") on the real host functions: known-answer
vectors (RFC 5869 A.1, RFC 4231 4.2, FIPS 180-2's SHA-256 of ``abc``, the AES-256-GCM test cases 13-16 of McGrew and Viega's GCM specification),
every ``invalid_request`` edge of the binary layout, and ``read_open`` / ``seal_write`` on real files in a real
state directory (the read and write rules of ``mcp_resume_read`` / ``mcp_resume_write``: the name rule,
``O_NOFOLLOW``, a FIFO never blocks, 0600, temp + rename). No answer is ever raised: every request gets bytes,
a status byte or the JSON error object.
"""

from __future__ import annotations

import json
import logging
import os
import random
import struct
from pathlib import Path

import pytest

from mcp_resume._hostfuncs import FUNCTIONS, HostFunctions

FN = "mcp_resume_crypto"
KEY = bytes(range(32))
NONCE = bytes(range(100, 112))
HEADER = b"HDR1" + bytes(8) + NONCE + b"tail"  # a header of 28 bytes, its nonce at offset 12
NONCE_AT = 12
TEMP = ".rec.0123456789abcdef.tmp"


def b16(v: bytes) -> bytes:
    return struct.pack(">H", len(v)) + v


def b32(v: bytes) -> bytes:
    return struct.pack(">I", len(v)) + v


def hkdf_req(*items: tuple[bytes, bytes, bytes, int]) -> bytes:
    return bytes([1, len(items)]) + b"".join(b16(i) + b16(s) + b16(n) + struct.pack(">H", ln) for i, s, n, ln in items)


def hmac_req(*items: tuple[bytes, bytes]) -> bytes:
    return bytes([2, len(items)]) + b"".join(b16(k) + b32(m) for k, m in items)


def sha_req(*messages: bytes) -> bytes:
    return bytes([7, len(messages)]) + b"".join(b32(m) for m in messages)


def seal_req(key: bytes, nonce: bytes, aad: bytes, data: bytes, op: int = 3) -> bytes:
    return bytes([op]) + key + nonce + b32(aad) + data


def read_open_req(name: bytes, key: bytes = KEY, limit: int = 1 << 20, header_len: int = len(HEADER),
                  nonce_at: int = NONCE_AT, prefix: bytes = b"prefix") -> bytes:
    return bytes([5]) + key + b16(name) + struct.pack(">IHH", limit, header_len, nonce_at) + b32(prefix)


def seal_write_req(name: bytes, plain: bytes, temp: bytes = TEMP.encode(), header: bytes = HEADER,
                   prefix: bytes = b"prefix", key: bytes = KEY, nonce: bytes = NONCE) -> bytes:
    return bytes([6]) + key + nonce + b16(name) + b16(temp) + b32(header) + b32(prefix) + plain


@pytest.fixture
def state(tmp_path: Path) -> Path:
    d = tmp_path / "state"
    d.mkdir(mode=0o700)
    return d


@pytest.fixture
def funcs(state: Path) -> HostFunctions:
    f = HostFunctions(logging.getLogger("mcp_resume.test.crypto"))
    f.set_state_dir(str(state))
    return f


def error_code(resp: bytes) -> str:
    """The code of a JSON error answer; fails the test for any other answer."""
    assert resp[:1] == b"{", f"not an error answer: {resp[:40]!r}"
    code: str = json.loads(resp)["error"]["code"]
    return code


def test_registered() -> None:
    assert FUNCTIONS[-1] == FN and len(FUNCTIONS) == 12


def test_hkdf_rfc5869_a1(funcs: HostFunctions) -> None:
    ikm, salt, info = b"\x0b" * 22, bytes(range(13)), bytes(range(0xF0, 0xFA))
    okm = bytes.fromhex("3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865")
    assert funcs.call(FN, hkdf_req((ikm, salt, info, 42))) == b"\x00" + okm
    # A batch answers each derivation in order; a shorter length is a prefix (expand's first blocks).
    assert funcs.call(FN, hkdf_req((ikm, salt, info, 10), (ikm, salt, info, 42))) == b"\x00" + okm[:10] + okm
    # RFC 5869 A.3: empty salt and info.
    okm3 = bytes.fromhex("8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8")
    assert funcs.call(FN, hkdf_req((ikm, b"", b"", 42))) == b"\x00" + okm3


def test_hmac_rfc4231_4_2(funcs: HostFunctions) -> None:
    tag = bytes.fromhex("b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
    # RFC 4231 4.3: key "Jefe".
    tag2 = bytes.fromhex("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    assert funcs.call(FN, hmac_req((b"\x0b" * 20, b"Hi There"))) == b"\x00" + tag
    assert funcs.call(FN, hmac_req((b"\x0b" * 20, b"Hi There"), (b"Jefe", b"what do ya want for nothing?"))) == \
        b"\x00" + tag + tag2


def test_sha256_fips180_2(funcs: HostFunctions) -> None:
    abc = bytes.fromhex("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    empty = bytes.fromhex("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    assert funcs.call(FN, sha_req(b"abc")) == b"\x00" + abc
    assert funcs.call(FN, sha_req(b"abc", b"", b"abc")) == b"\x00" + abc + empty + abc


GCM_K = bytes.fromhex("feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308")
GCM_IV = bytes.fromhex("cafebabefacedbaddecaf888")
GCM_P = bytes.fromhex("d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525"
                      "b16aedf5aa0de657ba637b39")
GCM_A = bytes.fromhex("feedfacedeadbeeffeedfacedeadbeefabaddad2")
# Test case 16 (AES-256, with associated data): ciphertext and tag.
GCM_C = bytes.fromhex("522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838"
                      "c5f61e6393ba7a0abcc9f662")
GCM_T = bytes.fromhex("76fc6ece0f4e1768cddf8853bb2d551b")


def test_seal_and_open_gcm_vectors(funcs: HostFunctions) -> None:
    # Test case 13 (zero key and nonce, empty plaintext) and 14 (one zero block).
    assert funcs.call(FN, seal_req(bytes(32), bytes(12), b"", b"")).hex() == "00530f8afbc74536b9a963b4f1c4cb738b"
    assert funcs.call(FN, seal_req(bytes(32), bytes(12), b"", bytes(16))).hex() == \
        "00cea7403d4d606b6e074ec5d3baf39d18d0d1c8a799996bf0265b98b5d48ab919"
    assert funcs.call(FN, seal_req(GCM_K, GCM_IV, GCM_A, GCM_P)) == b"\x00" + GCM_C + GCM_T
    assert funcs.call(FN, seal_req(GCM_K, GCM_IV, GCM_A, GCM_C + GCM_T, op=4)) == b"\x00" + GCM_P
    assert funcs.call(FN, seal_req(bytes(32), bytes(12), b"", bytes.fromhex("530f8afbc74536b9a963b4f1c4cb738b"),
                                   op=4)) == b"\x00"


@pytest.mark.parametrize("change", ["key", "nonce", "aad", "ciphertext", "tag"])
def test_open_that_does_not_open(funcs: HostFunctions, change: str) -> None:
    key, iv, aad, sealed = bytearray(GCM_K), bytearray(GCM_IV), bytearray(GCM_A), bytearray(GCM_C + GCM_T)
    target = {"key": key, "nonce": iv, "aad": aad, "ciphertext": sealed, "tag": sealed}[change]
    target[-1 if change == "tag" else 0] ^= 1
    assert funcs.call(FN, seal_req(bytes(key), bytes(iv), bytes(aad), bytes(sealed), op=4)) == b"\x01"


MALFORMED = {
    "empty": b"",
    "unknown op 0": b"\x00",
    "unknown op 8": b"\x08" + bytes(64),
    "sha256 count 0": b"\x07\x00",
    "sha256 count 17": sha_req(*[b"m"] * 17),
    "sha256 message past the end": sha_req(b"abc")[:-1],
    "sha256 trailing byte": sha_req(b"abc") + b"\x00",
    "json": b'{"op": 1}',
    "hkdf count 0": b"\x01\x00",
    "hkdf count 17": hkdf_req(*[(b"k", b"", b"", 32)] * 17),
    "hkdf length 0": hkdf_req((b"k", b"", b"", 0)),
    "hkdf length 65": hkdf_req((b"k", b"", b"", 65)),
    "hkdf truncated": hkdf_req((b"k", b"", b"", 32))[:-1],
    "hkdf fewer items than counted": hkdf_req((b"k", b"", b"", 32)).replace(b"\x01\x01", b"\x01\x02", 1),
    "hkdf trailing byte": hkdf_req((b"k", b"", b"", 32)) + b"\x00",
    "hmac count 0": b"\x02\x00",
    "hmac count 17": hmac_req(*[(b"k", b"m")] * 17),
    "hmac message past the end": hmac_req((b"k", b"m"))[:-1],
    "hmac trailing byte": hmac_req((b"k", b"m")) + b"\x00",
    "seal short key": b"\x03" + bytes(20),
    "seal aad past the end": b"\x03" + KEY + NONCE + struct.pack(">I", 5) + b"abc",
    "open shorter than the tag": seal_req(KEY, NONCE, b"", bytes(15), op=4),
    "read_open limit 0": read_open_req(b"rec", limit=0),
    "read_open limit over 8 MiB": read_open_req(b"rec", limit=(8 << 20) + 1),
    "read_open header_len 0": read_open_req(b"rec", header_len=0, nonce_at=0),
    "read_open header_len 4097": read_open_req(b"rec", header_len=4097),
    "read_open nonce past the header": read_open_req(b"rec", header_len=28, nonce_at=17),
    "read_open trailing byte": read_open_req(b"rec") + b"\x00",
    "read_open truncated": read_open_req(b"rec")[:-1],
    "seal_write header past the end": bytes([6]) + KEY + NONCE + b16(b"rec") + b16(TEMP.encode()) + b"\x00\x00\x01",
    "read_open bad name": read_open_req(b"../rec"),
    "read_open empty name": read_open_req(b""),
    "read_open name with NUL": read_open_req(b"a\x00b"),
    "read_open dot dot": read_open_req(b".."),
    "read_open name of 256 bytes": read_open_req(b"x" * 256),
    "seal_write bad name": seal_write_req(b"a/b", b"v"),
    "seal_write bad temp": seal_write_req(b"rec", b"v", temp=b"."),
}


@pytest.mark.parametrize("req", list(MALFORMED.values()), ids=list(MALFORMED))
def test_malformed_is_invalid_request(funcs: HostFunctions, state: Path, req: bytes) -> None:
    assert error_code(funcs.call(FN, req)) == "invalid_request"
    assert os.listdir(state) == [], "a refused request touched the state directory"


def test_seal_write_then_read_open(funcs: HostFunctions, state: Path) -> None:
    value = os.urandom(3000)
    assert funcs.call(FN, seal_write_req(b"rec", value)) == b"\x00"
    assert os.listdir(state) == ["rec"], "the temporary file is renamed"
    assert os.stat(state / "rec").st_mode & 0o777 == 0o600
    data = (state / "rec").read_bytes()
    assert data[:len(HEADER)] == HEADER and len(data) == len(HEADER) + len(value) + 16
    # The file is header || AES-256-GCM(key, nonce, value, aad = prefix || header): open does the same.
    assert funcs.call(FN, seal_req(KEY, NONCE, b"prefix" + HEADER, data[len(HEADER):], op=4)) == b"\x00" + value
    assert funcs.call(FN, read_open_req(b"rec")) == b"\x00" + HEADER + value
    # An empty plaintext is a header and a tag.
    assert funcs.call(FN, seal_write_req(b"rec", b"")) == b"\x00"
    assert funcs.call(FN, read_open_req(b"rec")) == b"\x00" + HEADER


NOT_OPENING = {"key": (read_open_req(b"rec", key=bytes(32)), HEADER),
               "prefix": (read_open_req(b"rec", prefix=b"other"), HEADER),
               "header_len": (read_open_req(b"rec", header_len=len(HEADER) - 1), HEADER[:-1]),
               "nonce_at": (read_open_req(b"rec", nonce_at=NONCE_AT - 1), HEADER)}


@pytest.mark.parametrize("change", list(NOT_OPENING))
def test_read_open_that_does_not_open_answers_the_header(funcs: HostFunctions, change: str) -> None:
    assert funcs.call(FN, seal_write_req(b"rec", b"value")) == b"\x00"
    req, header = NOT_OPENING[change]
    assert funcs.call(FN, req) == b"\x01" + header


def test_read_open_short_file_and_limit(funcs: HostFunctions, state: Path) -> None:
    # Shorter than header_len + 16: 0x01 and its first min(size, header_len) bytes.
    (state / "short").write_bytes(b"abc")
    assert funcs.call(FN, read_open_req(b"short")) == b"\x01abc"
    (state / "short").write_bytes(HEADER + bytes(15))
    assert funcs.call(FN, read_open_req(b"short")) == b"\x01" + HEADER
    # A record of limit bytes or more is read up to limit only: its seal then does not open.
    assert funcs.call(FN, seal_write_req(b"rec", b"v" * 100)) == b"\x00"
    size = len(HEADER) + 100 + 16
    assert funcs.call(FN, read_open_req(b"rec", limit=size)) == b"\x00" + HEADER + b"v" * 100
    assert funcs.call(FN, read_open_req(b"rec", limit=size - 1)) == b"\x01" + HEADER


def test_read_open_file_codes(funcs: HostFunctions, state: Path, tmp_path: Path) -> None:
    assert error_code(funcs.call(FN, read_open_req(b"missing"))) == "not_found"
    (tmp_path / "outside").write_bytes(HEADER + bytes(40))
    os.symlink(tmp_path / "outside", state / "link")
    assert error_code(funcs.call(FN, read_open_req(b"link"))) == "unsafe"
    os.mkfifo(state / "fifo")
    assert error_code(funcs.call(FN, read_open_req(b"fifo"))) == "unsafe"  # at once: O_NONBLOCK
    os.mkdir(state / "dir")
    assert error_code(funcs.call(FN, read_open_req(b"dir"))) == "unsafe"


def test_seal_write_file_codes(funcs: HostFunctions, state: Path, tmp_path: Path) -> None:
    (state / TEMP).write_bytes(b"another writer's")
    assert error_code(funcs.call(FN, seal_write_req(b"rec", b"v"))) == "exists"
    assert (state / TEMP).read_bytes() == b"another writer's", "a temp that is not this call's stays"
    os.unlink(state / TEMP)
    os.mkdir(state / "dir")
    assert error_code(funcs.call(FN, seal_write_req(b"dir", b"v"))) == "unsafe"
    assert sorted(os.listdir(state)) == ["dir"], "the temporary file is unlinked after a failed rename"
    # A symlink at the name is replaced, never followed.
    (tmp_path / "outside").write_bytes(b"keep")
    os.symlink(tmp_path / "outside", state / "rec")
    assert funcs.call(FN, seal_write_req(b"rec", b"v")) == b"\x00"
    assert (tmp_path / "outside").read_bytes() == b"keep" and not (state / "rec").is_symlink()


def test_names_not_utf8_are_one_path_element(funcs: HostFunctions, state: Path) -> None:
    """The host's name rule counts bytes only; a name that is not UTF-8 is one path element too."""
    assert funcs.call(FN, seal_write_req(b"rec\xff", b"v", temp=b".t\xfe")) == b"\x00"
    assert os.listdir(os.fsencode(state)) == [b"rec\xff"]
    assert funcs.call(FN, read_open_req(b"rec\xff")) == b"\x00" + HEADER + b"v"


def test_file_ops_before_open_and_after_close(state: Path) -> None:
    f = HostFunctions(logging.getLogger("mcp_resume.test.crypto"))
    assert error_code(f.call(FN, read_open_req(b"rec"))) == "invalid_request"
    assert error_code(f.call(FN, seal_write_req(b"rec", b"v"))) == "invalid_request"
    # The pure operations need no state directory.
    assert f.call(FN, hmac_req((b"k", b"m")))[:1] == b"\x00"
    f.set_state_dir(str(state))
    f.close()
    for req in (hmac_req((b"k", b"m")), seal_write_req(b"rec", b"v")):
        assert error_code(f.call(FN, req)) == "invalid_request"
    assert os.listdir(state) == []


def test_fuzz_never_raises(funcs: HostFunctions, state: Path) -> None:
    rng = random.Random(0)
    seeds = list(MALFORMED.values()) + [hkdf_req((b"k", b"s", b"i", 32)), hmac_req((b"k", b"m")), sha_req(b"m"),
                                        seal_req(KEY, NONCE, b"a", b"p"), read_open_req(b"rec"),
                                        seal_write_req(b"rec", b"v")]
    for _ in range(3000):
        req = bytearray(rng.choice(seeds))
        for _ in range(rng.randrange(4)):
            if req and rng.random() < 0.5:
                req[rng.randrange(len(req))] = rng.randrange(256)
            elif req:
                del req[rng.randrange(len(req)):]
        resp = funcs.call(FN, bytes(req))
        assert resp[:1] in (b"\x00", b"\x01") or error_code(resp)
    assert not [n for n in os.listdir(state) if n.startswith(".")], "no temporary file is left behind"

// mcp_resume_crypto (hostfuncs/README.md, "mcp_resume_crypto", ABI 10) as the
// host serves it, called directly on real files: the known-answer vectors
// (RFC 5869 A.1, RFC 4231 4.2, FIPS 180-2, the AES-256-GCM test case 16 of McGrew and
// Viega's GCM paper, which Go's crypto/cipher reproduces), the binary
// layout's edges (invalid_request, never a throw), and read_open/seal_write
// through the store's own read and write primitives (the name rule,
// O_NOFOLLOW, temp and rename). The conformance cases host_crypto_* pin the
// same answers in every host.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createHmac } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { after, describe, test } from "node:test";

import { hkdfSha256 } from "../src/crypto.js";
import { HostFunctions } from "../src/hostfuncs.js";
import type { Logger } from "../src/logger.js";
import { cleanupTemps, tempDir } from "./helpers.js";

after(cleanupTemps);

const quiet: Logger = { debug() {}, info() {}, warn() {}, error() {} };
const hex = (s: string): Buffer => Buffer.from(s, "hex");
const u16 = (n: number): Buffer => Buffer.from([n >> 8, n & 0xff]);
const u32 = (n: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
};
const b16 = (v: Buffer | string): Buffer => Buffer.concat([u16(Buffer.from(v).length), Buffer.from(v)]);
const b32 = (v: Buffer | string): Buffer => Buffer.concat([u32(Buffer.from(v).length), Buffer.from(v)]);

/** The requests, encoded as hostfuncs/crypto.go encodes them. */
const req = {
  hkdf: (...items: Array<[Buffer, Buffer, Buffer, number]>) => Buffer.concat([Buffer.of(1, items.length), ...items.flatMap(([ikm, salt, info, n]) => [b16(ikm), b16(salt), b16(info), u16(n)])]),
  sha256: (...messages: Buffer[]) => Buffer.concat([Buffer.of(7, messages.length), ...messages.map(b32)]),
  hmac: (...items: Array<[Buffer, Buffer]>) => Buffer.concat([Buffer.of(2, items.length), ...items.flatMap(([k, m]) => [b16(k), b32(m)])]),
  seal: (key: Buffer, nonce: Buffer, aad: Buffer, plain: Buffer) => Buffer.concat([Buffer.of(3), key, nonce, b32(aad), plain]),
  open: (key: Buffer, nonce: Buffer, aad: Buffer, sealed: Buffer) => Buffer.concat([Buffer.of(4), key, nonce, b32(aad), sealed]),
  readOpen: (key: Buffer, name: string | Buffer, limit: number, headerLen: number, nonceAt: number, aadPrefix: Buffer) =>
    Buffer.concat([Buffer.of(5), key, b16(name), u32(limit), u16(headerLen), u16(nonceAt), b32(aadPrefix)]),
  sealWrite: (key: Buffer, nonce: Buffer, name: string | Buffer, temp: string | Buffer, header: Buffer, aadPrefix: Buffer, plain: Buffer) =>
    Buffer.concat([Buffer.of(6), key, nonce, b16(name), b16(temp), b32(header), b32(aadPrefix), plain]),
};

/** Host functions confined to a fresh state directory (as after open). */
function setup() {
  const dir = path.join(tempDir("crypto-"), "state");
  fs.mkdirSync(dir, { mode: 0o700 });
  const f = new HostFunctions({ logger: quiet });
  f.confine(dir);
  const call = (r: Buffer): Buffer => Buffer.from(f.call("mcp_resume_crypto", r));
  return { dir, f, call };
}

/** The error code of a JSON error response (padded with spaces to a multiple of 8 bytes, as every JSON response of this host), else fails. */
function errorCode(out: Buffer): string {
  assert.equal(out[0], 0x7b, `want the JSON error object, got ${out.subarray(0, 40).toString("hex")}`);
  assert.equal(out.length % 8, 0, "padded");
  return (JSON.parse(out.toString()) as { error: { code: string } }).error.code;
}

// AES-256-GCM test case 16 (McGrew and Viega): key, nonce, associated data, plaintext, ciphertext and tag.
const GCM = {
  key: hex("feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308"),
  nonce: hex("cafebabefacedbaddecaf888"),
  aad: hex("feedfacedeadbeeffeedfacedeadbeefabaddad2"),
  plain: hex("d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39"),
  sealed: hex("522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662" + "76fc6ece0f4e1768cddf8853bb2d551b"),
};

describe("mcp_resume_crypto: known answers", () => {
  test("hkdf: RFC 5869 A.1 (a batch of two answers both, in order); HKDF-SHA256 with an empty salt and info", () => {
    const { call } = setup();
    const a1: [Buffer, Buffer, Buffer, number] = [Buffer.alloc(22, 0x0b), hex("000102030405060708090a0b0c"), hex("f0f1f2f3f4f5f6f7f8f9"), 42];
    const okm = "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865";
    assert.equal(call(req.hkdf(a1)).toString("hex"), "00" + okm);
    // RFC 5869 A.3: salt and info empty.
    const a3 = "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8";
    assert.equal(call(req.hkdf(a1, [Buffer.alloc(22, 0x0b), Buffer.alloc(0), Buffer.alloc(0), 42])).toString("hex"), "00" + okm + a3);
  });
  test("hkdf with an info over Node's 1024-byte limit: the RFC's HMAC construction, equal to hkdfSync where both apply", () => {
    const { call } = setup();
    const [ikm, salt] = [Buffer.from("input key"), Buffer.from("salt")];
    for (const n of [1, 32, 33, 64]) {
      const info = Buffer.alloc(1024, 7);
      const viaHmac = (() => {
        const prk = createHmac("sha256", salt).update(ikm).digest();
        let t = Buffer.alloc(0);
        const out: Buffer[] = [];
        for (let i = 1; Buffer.concat(out).length < n; i++) out.push((t = createHmac("sha256", prk).update(t).update(info).update(Buffer.of(i)).digest()));
        return Buffer.concat(out).subarray(0, n);
      })();
      assert.deepEqual(hkdfSha256(ikm, salt, info, n), viaHmac, `info of 1024 bytes, ${n} out`);
    }
    const long = Buffer.alloc(5000, 9);
    const out = call(req.hkdf([ikm, salt, long, 64]));
    assert.equal(out[0], 0);
    assert.equal(out.length, 65);
    assert.deepEqual(out.subarray(1), hkdfSha256(ikm, salt, long, 64));
  });
  test("hmac: RFC 4231 4.2 (test case 1) and 4.3 (a key shorter than the block); a batch answers 32 bytes per item", () => {
    const { call } = setup();
    const tc1 = "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7";
    const tc2 = "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843";
    assert.equal(call(req.hmac([Buffer.alloc(20, 0x0b), Buffer.from("Hi There")])).toString("hex"), "00" + tc1);
    assert.equal(call(req.hmac([Buffer.alloc(20, 0x0b), Buffer.from("Hi There")], [Buffer.from("Jefe"), Buffer.from("what do ya want for nothing?")])).toString("hex"), "00" + tc1 + tc2);
  });
  test("sha256: FIPS 180-2 (abc, the empty message, the two-block message) in one batch", () => {
    const { call } = setup();
    const abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
    const empty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
    const two = "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1";
    assert.equal(call(req.sha256(Buffer.from("abc"))).toString("hex"), "00" + abc);
    assert.equal(call(req.sha256(Buffer.from("abc"), Buffer.alloc(0), Buffer.from("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"))).toString("hex"), "00" + abc + empty + two);
  });
  test("seal and open: GCM test case 16; a changed key, nonce, associated data, ciphertext or tag does not open (0x01 alone)", () => {
    const { call } = setup();
    assert.deepEqual(call(req.seal(GCM.key, GCM.nonce, GCM.aad, GCM.plain)), Buffer.concat([Buffer.of(0), GCM.sealed]));
    assert.deepEqual(call(req.open(GCM.key, GCM.nonce, GCM.aad, GCM.sealed)), Buffer.concat([Buffer.of(0), GCM.plain]));
    const flip = (b: Buffer, i: number): Buffer => {
      const c = Buffer.from(b);
      c[i]! ^= 1;
      return c;
    };
    for (const [what, r] of [
      ["key", req.open(flip(GCM.key, 0), GCM.nonce, GCM.aad, GCM.sealed)],
      ["nonce", req.open(GCM.key, flip(GCM.nonce, 11), GCM.aad, GCM.sealed)],
      ["aad", req.open(GCM.key, GCM.nonce, flip(GCM.aad, 3), GCM.sealed)],
      ["ciphertext", req.open(GCM.key, GCM.nonce, GCM.aad, flip(GCM.sealed, 0))],
      ["tag", req.open(GCM.key, GCM.nonce, GCM.aad, flip(GCM.sealed, GCM.sealed.length - 1))],
    ] as const) {
      assert.deepEqual(call(r), Buffer.of(1), what);
    }
    // The empty plaintext: its tag alone (16 bytes) opens to nothing.
    const empty = call(req.seal(GCM.key, GCM.nonce, Buffer.alloc(0), Buffer.alloc(0)));
    assert.equal(empty.length, 17);
    assert.deepEqual(call(req.open(GCM.key, GCM.nonce, Buffer.alloc(0), empty.subarray(1))), Buffer.of(0));
  });
});

describe("mcp_resume_crypto: malformed requests are invalid_request, never a throw", () => {
  test("empty, unknown op, short or long fields, counts and lengths out of range, bytes after the last field", () => {
    const { call } = setup();
    const key = Buffer.alloc(32, 1);
    const nonce = Buffer.alloc(12, 2);
    const one: [Buffer, Buffer, Buffer, number] = [Buffer.from("k"), Buffer.alloc(0), Buffer.alloc(0), 32];
    const bad: Array<[string, Buffer]> = [
      ["empty", Buffer.alloc(0)],
      ["op 0", Buffer.of(0)],
      ["op 8", Buffer.of(8, 1)],
      ["op '{'", Buffer.from("{}")],
      ["hkdf without count", Buffer.of(1)],
      ["hkdf count 0", Buffer.of(1, 0)],
      ["hkdf count 17", req.hkdf(...Array.from({ length: 17 }, () => one))],
      ["hkdf length 0", req.hkdf([one[0], one[1], one[2], 0])],
      ["hkdf length 65", req.hkdf([one[0], one[1], one[2], 65])],
      ["hkdf item cut", req.hkdf(one).subarray(0, 8)],
      ["hkdf count 2, one item", Buffer.concat([Buffer.of(1, 2), req.hkdf(one).subarray(2)])],
      ["hkdf trailing byte", Buffer.concat([req.hkdf(one), Buffer.of(0)])],
      ["hkdf padded with spaces", Buffer.concat([req.hkdf(one), Buffer.from("   ")])],
      ["hmac count 0", Buffer.of(2, 0)],
      ["sha256 count 0", Buffer.of(7, 0)],
      ["sha256 count 17", req.sha256(...Array.from({ length: 17 }, () => Buffer.from("m")))],
      ["sha256 message past the end", req.sha256(Buffer.from("message")).subarray(0, 8)],
      ["sha256 trailing byte", Buffer.concat([req.sha256(Buffer.from("m")), Buffer.of(0)])],
      ["hmac message past the end", req.hmac([Buffer.from("k"), Buffer.from("message")]).subarray(0, 10)],
      ["hmac trailing byte", Buffer.concat([req.hmac([Buffer.from("k"), Buffer.from("m")]), Buffer.of(0)])],
      ["seal short key", Buffer.concat([Buffer.of(3), Buffer.alloc(20)])],
      ["seal aad past the end", Buffer.concat([Buffer.of(3), key, nonce, u32(10), Buffer.alloc(3)])],
      ["open shorter than the tag", req.open(key, nonce, Buffer.alloc(0), Buffer.alloc(15))],
      ["read_open limit 0", req.readOpen(key, "r", 0, 20, 0, Buffer.alloc(0))],
      ["read_open limit 8 MiB + 1", req.readOpen(key, "r", (8 << 20) + 1, 20, 0, Buffer.alloc(0))],
      ["read_open header_len 0", req.readOpen(key, "r", 100, 0, 0, Buffer.alloc(0))],
      ["read_open header_len 4097", req.readOpen(key, "r", 100, 4097, 0, Buffer.alloc(0))],
      ["read_open nonce past the header", req.readOpen(key, "r", 100, 20, 9, Buffer.alloc(0))],
      ["read_open trailing byte", Buffer.concat([req.readOpen(key, "r", 100, 20, 0, Buffer.alloc(0)), Buffer.of(0)])],
      ["seal_write temp past the end", req.sealWrite(key, nonce, "r", "t", Buffer.alloc(0), Buffer.alloc(0), Buffer.alloc(0)).subarray(0, 50)],
    ];
    for (const [what, r] of bad) {
      const out = call(r);
      assert.equal(errorCode(out), "invalid_request", what);
      assert.match(JSON.parse(out.toString()).error.message, /^mcp_resume_crypto: /, what);
    }
    // The edges that are allowed: 16 items, lengths 1 and 64, nonce_at + 12 = header_len, limit 8 MiB.
    assert.equal(call(req.hkdf(...Array.from({ length: 16 }, (): [Buffer, Buffer, Buffer, number] => [one[0], one[1], one[2], 64]))).length, 1 + 16 * 64);
    assert.equal(call(req.hkdf([one[0], one[1], one[2], 1])).length, 2);
    assert.equal(errorCode(call(req.readOpen(key, "r", 8 << 20, 20, 8, Buffer.alloc(0)))), "not_found", "a well-formed read_open of a missing file");
  });
  test("read_open and seal_write obey the name rule (raw bytes) and need the state directory; a closed store answers invalid_request", async () => {
    const { call, dir, f } = setup();
    const key = Buffer.alloc(32, 1);
    const nonce = Buffer.alloc(12, 2);
    for (const name of ["", ".", "..", "a/b", "a\0b", "x".repeat(256)]) {
      assert.equal(errorCode(call(req.readOpen(key, name, 100, 20, 0, Buffer.alloc(0)))), "invalid_request", `read_open ${JSON.stringify(name)}`);
      assert.equal(errorCode(call(req.sealWrite(key, nonce, name, ".t.tmp", Buffer.alloc(0), Buffer.alloc(0), Buffer.alloc(0)))), "invalid_request", `seal_write name ${JSON.stringify(name)}`);
      assert.equal(errorCode(call(req.sealWrite(key, nonce, "r", name, Buffer.alloc(0), Buffer.alloc(0), Buffer.alloc(0)))), "invalid_request", `seal_write temp ${JSON.stringify(name)}`);
    }
    assert.deepEqual(fs.readdirSync(dir), []);
    const unconfined = new HostFunctions({ logger: quiet });
    assert.equal(errorCode(Buffer.from(unconfined.call("mcp_resume_crypto", req.readOpen(key, "r", 100, 20, 0, Buffer.alloc(0))))), "invalid_request", "before open");
    // hkdf, hmac, seal and open need no directory (a Redis handle store has none).
    assert.equal(Buffer.from(unconfined.call("mcp_resume_crypto", req.hmac([Buffer.from("k"), Buffer.from("m")])))[0], 0);
    await f.close();
    assert.equal(errorCode(call(req.hmac([Buffer.from("k"), Buffer.from("m")]))), "invalid_request", "closed");
  });
});

describe("mcp_resume_crypto: read_open and seal_write on real files", () => {
  const key = hex("00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff");
  const nonce = hex("0102030405060708090a0b0c");
  // A header of 20 bytes with the nonce at 4 (the layout is the plugin's; any works).
  const header = Buffer.concat([Buffer.from("REC1"), nonce, Buffer.from("gen0")]);
  const prefix = Buffer.from("aad-prefix");
  const plain = Buffer.from("the value, in the clear only here");

  test("seal_write writes header || seal(prefix || header) through temp and rename, mode 0600; read_open gives header and plaintext back", () => {
    const { call, dir } = setup();
    assert.deepEqual(call(req.sealWrite(key, nonce, "h-rec", ".h-rec.0123456789abcdef.tmp", header, prefix, plain)), Buffer.of(0));
    assert.deepEqual(fs.readdirSync(dir), ["h-rec"], "the temporary file was renamed");
    const file = fs.readFileSync(path.join(dir, "h-rec"));
    assert.equal(fs.statSync(path.join(dir, "h-rec")).mode & 0o777, 0o600);
    assert.deepEqual(file.subarray(0, 20), header);
    assert.ok(!file.includes(plain), "sealed at rest");
    // The same bytes as the seal operation with the associated data prefix || header.
    assert.deepEqual(file.subarray(20), call(req.seal(key, nonce, Buffer.concat([prefix, header]), plain)).subarray(1));
    assert.deepEqual(call(req.readOpen(key, "h-rec", 1 << 20, 20, 4, prefix)), Buffer.concat([Buffer.of(0), header, plain]));
    // An empty plaintext is a header and a tag.
    assert.deepEqual(call(req.sealWrite(key, nonce, "h-empty", ".t", header, prefix, Buffer.alloc(0))), Buffer.of(0));
    assert.equal(fs.statSync(path.join(dir, "h-empty")).size, 36);
    assert.deepEqual(call(req.readOpen(key, "h-empty", 100, 20, 4, prefix)), Buffer.concat([Buffer.of(0), header]));
  });
  test("read_open that does not open: 0x01 and the header (another key or prefix, a flipped byte, a cut at limit); a short file: 0x01 and min(size, header_len) bytes", () => {
    const { call, dir } = setup();
    call(req.sealWrite(key, nonce, "h-rec", ".t", header, prefix, plain));
    const noOpen = Buffer.concat([Buffer.of(1), header]);
    assert.deepEqual(call(req.readOpen(Buffer.alloc(32), "h-rec", 1 << 20, 20, 4, prefix)), noOpen, "another key");
    assert.deepEqual(call(req.readOpen(key, "h-rec", 1 << 20, 20, 4, Buffer.from("other"))), noOpen, "another prefix");
    assert.deepEqual(call(req.readOpen(key, "h-rec", 1 << 20, 20, 0, prefix)), noOpen, "the nonce read elsewhere");
    const size = fs.statSync(path.join(dir, "h-rec")).size;
    assert.deepEqual(call(req.readOpen(key, "h-rec", size - 1, 20, 4, prefix)), noOpen, "read only up to limit");
    assert.deepEqual(call(req.readOpen(key, "h-rec", size, 20, 4, prefix))[0], 0, "limit = size reads it all");
    const data = fs.readFileSync(path.join(dir, "h-rec"));
    data[data.length - 1]! ^= 0xff;
    fs.writeFileSync(path.join(dir, "h-rec"), data);
    assert.deepEqual(call(req.readOpen(key, "h-rec", 1 << 20, 20, 4, prefix)), noOpen, "flipped");
    fs.writeFileSync(path.join(dir, "h-short"), data.subarray(0, 35));
    assert.deepEqual(call(req.readOpen(key, "h-short", 1 << 20, 20, 4, prefix)), noOpen, "header_len + 15 bytes");
    fs.writeFileSync(path.join(dir, "h-tiny"), data.subarray(0, 7));
    assert.deepEqual(call(req.readOpen(key, "h-tiny", 1 << 20, 20, 4, prefix)), Buffer.concat([Buffer.of(1), data.subarray(0, 7)]), "shorter than the header");
    fs.writeFileSync(path.join(dir, "h-zero"), "");
    assert.deepEqual(call(req.readOpen(key, "h-zero", 1 << 20, 20, 4, prefix)), Buffer.of(1), "empty file");
  });
  test("the codes of mcp_resume_read and mcp_resume_write: not_found, unsafe (symlink, FIFO, directory), exists (temp there), the temp removed on failure", () => {
    const { call, dir, root } = (() => {
      const s = setup();
      return { ...s, root: path.dirname(s.dir) };
    })();
    assert.equal(errorCode(call(req.readOpen(key, "missing", 100, 20, 4, prefix))), "not_found");
    fs.writeFileSync(path.join(root, "victim"), "secret");
    fs.symlinkSync(path.join(root, "victim"), path.join(dir, "link"));
    assert.equal(errorCode(call(req.readOpen(key, "link", 100, 20, 4, prefix))), "unsafe", "a symlink is never followed");
    fs.mkdirSync(path.join(dir, "sub"));
    assert.equal(errorCode(call(req.readOpen(key, "sub", 100, 20, 4, prefix))), "unsafe", "a directory");
    const t0 = Date.now();
    execFileSync("mkfifo", ["-m", "600", path.join(dir, "fifo")]);
    assert.equal(errorCode(call(req.readOpen(key, "fifo", 100, 20, 4, prefix))), "unsafe", "a FIFO does not block");
    assert.ok(Date.now() - t0 < 2000);
    // seal_write: a temp already there is exists (O_EXCL) and stays; a symlink at temp is not followed.
    fs.writeFileSync(path.join(dir, ".t"), "someone's");
    assert.equal(errorCode(call(req.sealWrite(key, nonce, "h-rec", ".t", header, prefix, plain))), "exists");
    assert.equal(fs.readFileSync(path.join(dir, ".t"), "utf8"), "someone's");
    fs.symlinkSync(path.join(root, "victim"), path.join(dir, ".s"));
    assert.equal(errorCode(call(req.sealWrite(key, nonce, "h-rec", ".s", header, prefix, plain))), "exists");
    assert.equal(fs.readFileSync(path.join(root, "victim"), "utf8"), "secret");
    // A directory at the name: the rename fails (unsafe, EISDIR) and the temporary file is removed.
    assert.equal(errorCode(call(req.sealWrite(key, nonce, "sub", ".u", header, prefix, plain))), "unsafe");
    assert.ok(!fs.existsSync(path.join(dir, ".u")), "the temp is unlinked on failure");
    // A symlink at the name is replaced, not followed.
    assert.deepEqual(call(req.sealWrite(key, nonce, "link", ".v", header, prefix, plain)), Buffer.of(0));
    assert.ok(fs.lstatSync(path.join(dir, "link")).isFile());
    assert.equal(fs.readFileSync(path.join(root, "victim"), "utf8"), "secret");
  });
  test("a name that is not UTF-8 is used byte for byte (as in Go), and read back by the same bytes", () => {
    const { call, dir } = setup();
    const name = Buffer.from([0x68, 0x2d, 0xff, 0xfe]);
    assert.deepEqual(call(req.sealWrite(key, nonce, name, Buffer.from([0x2e, 0xff]), header, prefix, plain)), Buffer.of(0));
    const names = fs.readdirSync(dir, { encoding: "buffer" });
    assert.deepEqual(names, [name]);
    assert.deepEqual(call(req.readOpen(key, name, 100, 20, 4, prefix)), Buffer.concat([Buffer.of(0), header, plain]));
  });
});

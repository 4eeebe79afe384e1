// The handle store per operation in Node: p50 and p99 of create, get, put
// and delete through the binding's HandleStore (warm, 1 KiB values), each
// beside a native baseline measured in the same run, the two alternating
// operation by operation (and which goes first alternating too).
//
// The native baseline does the record file work of the operation directly
// with node:fs and node:crypto, on a record of the same shape (a 65-byte
// header, then the AES-256-GCM ciphertext of the value and its tag, the
// header bound as associated data), with no index, no lock and no plugin:
//
//   create  seal, write a temporary file (O_CREAT|O_EXCL|O_NOFOLLOW, 0600),
//           rename it over the record
//   get     read the record (O_NOFOLLOW, bounded), open it
//   put     read the header (the current generation, as the store's put
//           does), seal, write temp + rename
//   delete  read the header, unlink
//
// Synchronous fs calls, as the store's host functions make them. Docs:
// docs/BENCHMARKS.md, "Handle store".
//
//   node examples/bench/typescript/handles.mjs [-n 1000] [--value 1024] [--dir /tmp]
//   (after make typescript-setup)

import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { closeSync, constants, mkdirSync, mkdtempSync, openSync, readSync, renameSync, rmSync, unlinkSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";

import { HandleStore } from "../../../sdk-bindings/typescript/dist/index.js";

const { values: args } = parseArgs({
  options: { n: { type: "string", short: "n", default: "1000" }, value: { type: "string", default: "1024" }, dir: { type: "string" } },
});
const N = Number(args.n);
const HEADER = 4 + 1 + 8 + 8 + 8 + 8 + 16 + 12; // magic, version, generation, created, idle, max age, tag, nonce
const AAD = Buffer.from("mcp-resume handle v1\0bench\0");

class Native {
  constructor(dir) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    this.dir = dir;
  }
  seal(key, gen, value) {
    const header = Buffer.alloc(HEADER);
    header.write("MRH1\x01", 0, "latin1");
    header.writeBigUInt64BE(BigInt(gen), 5);
    const nonce = randomBytes(12);
    nonce.copy(header, HEADER - 12);
    const c = createCipheriv("aes-256-gcm", key, nonce);
    c.setAAD(Buffer.concat([AAD, header]));
    return Buffer.concat([header, c.update(value), c.final(), c.getAuthTag()]);
  }
  write(name, data) {
    const tmp = path.join(this.dir, `${name}.${randomBytes(8).toString("hex")}.tmp`);
    const fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    try {
      writeSync(fd, data);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, path.join(this.dir, name));
  }
  read(name, limit) {
    const fd = openSync(path.join(this.dir, name), constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      const buf = Buffer.allocUnsafe(limit);
      let n = 0;
      for (let r; n < limit && (r = readSync(fd, buf, n, limit - n, null)) > 0; ) n += r;
      return buf.subarray(0, n);
    } finally {
      closeSync(fd);
    }
  }
  create(k, value) {
    this.write(k.name, this.seal(k.key, 1, value));
  }
  get(k) {
    // Bounded as the store's read: the header, the value (1 KiB here), the tag, a byte more.
    const rec = this.read(k.name, HEADER + value.length + 16 + 1);
    const d = createDecipheriv("aes-256-gcm", k.key, rec.subarray(HEADER - 12, HEADER));
    d.setAAD(Buffer.concat([AAD, rec.subarray(0, HEADER)]));
    d.setAuthTag(rec.subarray(rec.length - 16));
    return Buffer.concat([d.update(rec.subarray(HEADER, rec.length - 16)), d.final()]);
  }
  put(k, value) {
    const h = this.read(k.name, HEADER);
    this.write(k.name, this.seal(k.key, Number(h.readBigUInt64BE(5)) + 1, value));
  }
  delete(k) {
    this.read(k.name, HEADER);
    unlinkSync(path.join(this.dir, k.name));
  }
}

const pct = (xs, p) => {
  const c = [...xs].sort((a, b) => a - b);
  return c[Math.max(0, Math.min(c.length - 1, Math.round((p / 100) * c.length) - 1))];
};
const now = () => Number(process.hrtime.bigint()) / 1e6; // ms

const root = mkdtempSync(path.join(args.dir ?? tmpdir(), "handles-bench-ts-"));
const quiet = { debug() {}, info() {}, warn: (m, a) => console.error(m, a), error: (m, a) => console.error(m, a) };
const value = randomBytes(Number(args.value));
const newKey = () => ({ name: `h-${randomBytes(16).toString("hex")}`, key: randomBytes(32) });
let store;
const st = [[], [], [], []];
const nt = [[], [], [], []];
try {
  store = await HandleStore.open("bench-ops", { stateRoot: path.join(root, "state"), logger: quiet });
  const native = new Native(path.join(root, "native"));
  for (let i = 0; i < 50; i++) { // warm-up: V8's tiers, the page cache
    const { handle } = await store.create("", value);
    await store.get(handle, "");
    await store.put(handle, "", value);
    await store.delete(handle, "");
    const k = newKey();
    native.create(k, value);
    native.get(k);
    native.put(k, value);
    native.delete(k);
  }
  const pair = async (op, i, s, m) => {
    const order = i % 2 === 0 ? [[s, st], [m, nt]] : [[m, nt], [s, st]];
    for (const [fn, out] of order) {
      const t = now();
      await fn();
      out[op].push(now() - t);
    }
  };
  const handles = new Array(N);
  const keys = Array.from({ length: N }, newKey);
  for (let i = 0; i < N; i++) await pair(0, i, async () => { handles[i] = (await store.create("", value)).handle; }, () => native.create(keys[i], value));
  const perm = Array.from({ length: N }, (_, i) => (i * 7919) % N);
  for (let i = 0; i < N; i++) {
    const j = perm[i];
    await pair(1, i, () => store.get(handles[j], ""), () => native.get(keys[j]));
  }
  for (let i = 0; i < N; i++) {
    const j = perm[i];
    await pair(2, i, () => store.put(handles[j], "", value), () => native.put(keys[j], value));
  }
  for (let i = 0; i < N; i++) {
    const j = perm[i];
    await pair(3, i, () => store.delete(handles[j], ""), () => native.delete(keys[j]));
  }
} finally {
  await store?.close();
  rmSync(root, { recursive: true, force: true });
}

const out = [`### TypeScript per operation, warm, ${N} each, value ${value.length} bytes (ms)`, "",
  `${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC, Node ${process.versions.node}, baseline: node:crypto AES-256-GCM`, "",
  "| operation | store p50 | store p99 | native p50 | native p99 | p50 ratio | p99 ratio |", "|---|---:|---:|---:|---:|---:|---:|"];
["create", "get", "put", "delete"].forEach((name, op) => {
  const [s50, s99, n50, n99] = [pct(st[op], 50), pct(st[op], 99), pct(nt[op], 50), pct(nt[op], 99)];
  out.push(`| ${name} | ${s50.toFixed(3)} | ${s99.toFixed(3)} | ${n50.toFixed(3)} | ${n99.toFixed(3)} | ${(s50 / n50).toFixed(2)}× | ${(s99 / n99).toFixed(2)}× |`);
});
process.stdout.write(out.join("\n") + "\n\n");

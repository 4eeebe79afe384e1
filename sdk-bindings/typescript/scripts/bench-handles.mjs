// Per-operation cost of the handle store in Node: p50 and p99 of create,
// get, put and delete (warm, one store, 1 KiB values), each beside a native
// baseline in the same process doing the same file work without the plugin
// (read the record, AES-256-GCM open/seal, write a temporary file and
// rename it over the record), and one lock + unlock of the host function.
// Prints a Markdown table on stdout (a benchmark, not a server: stdout is
// its output).
//
//   node scripts/bench-handles.mjs [-n 2000]     (after npm run build)
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import * as fs from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";

const { HandleStore } = await import(new URL("../dist/index.js", import.meta.url).href);
const { HostFunctions } = await import(new URL("../dist/hostfuncs.js", import.meta.url).href);

const n = Number(process.argv[process.argv.indexOf("-n") + 1] || 2000);
const root = fs.mkdtempSync(path.join(tmpdir(), "bench-handles-"));
const quiet = { debug() {}, info() {}, warn() {}, error() {} };
const value = randomBytes(1024);

/** p50 and p99 in microseconds of `fn` run `n` times (after 100 warm-up runs), `fn` given the run's index. */
async function time(fn) {
  for (let i = 0; i < 100; i++) await fn(i);
  const t = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await fn(i);
    t.push(performance.now() - t0);
  }
  t.sort((a, b) => a - b);
  return [t[Math.floor(n / 2)] * 1000, t[Math.floor(n * 0.99)] * 1000];
}

const store = await HandleStore.open("bench", { stateRoot: root, logger: quiet, maxHandles: 100_000 });
const handles = [];
const ops = {};
ops.create = await time(async () => handles.push((await store.create("", value)).handle));
const h = handles[0];
ops.get = await time(() => store.get(h, ""));
ops.put = await time(() => store.put(h, "", value));
let d = 0;
ops.delete = await time(() => store.delete(handles[d++], ""));
await store.close();

// The native baseline: the same file work on one record, in the same directory kind.
const dir = path.join(root, "native");
fs.mkdirSync(dir, { mode: 0o700 });
const key = randomBytes(32);
const rec = path.join(dir, "h-record");
const seal = (v) => {
  const nonce = randomBytes(12);
  const c = createCipheriv("aes-256-gcm", key, nonce);
  return Buffer.concat([nonce, c.update(v), c.final(), c.getAuthTag()]);
};
const open = (b) => {
  const c = createDecipheriv("aes-256-gcm", key, b.subarray(0, 12));
  c.setAuthTag(b.subarray(b.length - 16));
  return Buffer.concat([c.update(b.subarray(12, b.length - 16)), c.final()]);
};
const write = (file, data) => {
  const tmp = path.join(dir, `.${path.basename(file)}.${randomBytes(8).toString("hex")}.tmp`);
  fs.writeFileSync(tmp, data, { mode: 0o600, flag: "wx" });
  fs.renameSync(tmp, file);
};
write(rec, seal(value));
const native = {};
let c = 0;
native.create = await time(() => write(path.join(dir, `h-${c++}`), seal(value)));
native.get = await time(() => open(fs.readFileSync(rec)));
native.put = await time(() => {
  open(fs.readFileSync(rec));
  write(rec, seal(value));
});
let r = 0;
native.delete = await time(() => fs.unlinkSync(path.join(dir, `h-${r++}`)));

const f = new HostFunctions({ logger: quiet });
f.confine(root);
const call = (fn) => f.call(fn, Buffer.from(JSON.stringify({ name: "lock-bench", socket: `mcp-resume-bench-${process.pid}`, wait_ms: 2000 })));
const lock = await time(() => {
  call("mcp_resume_lock");
  call("mcp_resume_unlock");
});
await f.close();
fs.rmSync(root, { recursive: true, force: true });

const us = (x) => `${x.toFixed(0)} µs`;
const lines = [`Node ${process.version}, ${n} runs each, 1 KiB values`, "", "| op | p50 | p99 | native p50 | native p99 | p50 ratio |", "|---|---|---|---|---|---|"];
for (const op of ["create", "get", "put", "delete"]) {
  lines.push(`| ${op} | ${us(ops[op][0])} | ${us(ops[op][1])} | ${us(native[op][0])} | ${us(native[op][1])} | ${(ops[op][0] / native[op][0]).toFixed(1)}× |`);
}
lines.push(`| lock + unlock (host function) | ${us(lock[0])} | ${us(lock[1])} | | | |`);
process.stdout.write(lines.join("\n") + "\n");

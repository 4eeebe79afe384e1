// The handle store on Redis in Node: 16 concurrent promises doing get and
// unconditional put on pre-created handles (1 KiB values) through
// HandleStore.open(app, { stateUrl }) (Extism's worker mode), beside the
// floor measured in the same run on the same redis-server: node-redis,
// configured as the host's client (RESP2, no offline queue), running the
// plugin's own Lua scripts by EVALSHA with the same keys and arguments the
// plugin sent, as recorded off the wire by the Go benchmark
// (go run ./examples/bench/redis -record FILE, its record.go). Store and
// floor windows alternate (which goes first too); medians over the rounds.
// Then one caller alone (--one-n rounds of a store get and put and the
// floor's, interleaved): the cost of one call without the queue.
// Targets: ops/s >= 0.5x the floor, p50 <= floor + 200 µs per operation.
// Docs: docs/BENCHMARKS.md, "Handle store on Redis".
//
// The script starts its own redis-server (PATH) on a free loopback port in
// a temporary directory (the Go fixture's flags), loads the recorded
// scripts, replays the recorded creates (the floor's records) and creates
// the store's own handles through the store.
//
//   node examples/bench/typescript/redis.mjs --record FILE [--callers 16] [--rounds 5] [--window 2] [--one-n 500]
//   (after make typescript-setup)
//
// Progress goes to stderr, the Markdown table to stdout.

import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { cpus } from "node:os";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

import { HandleStore } from "../../../sdk-bindings/typescript/dist/index.js";
import { startRedis } from "./redis-server.mjs";

// node-redis as the binding resolves it (its pinned version).
const requireFromBinding = createRequire(new URL("../../../sdk-bindings/typescript/package.json", import.meta.url));
const redis = await import(pathToFileURL(requireFromBinding.resolve("redis")).href);
const redisVersion = JSON.parse(readFileSync(requireFromBinding.resolve("redis/package.json"), "utf8")).version;

const { values: args } = parseArgs({
  options: {
    record: { type: "string" },
    callers: { type: "string", default: "16" },
    rounds: { type: "string", default: "5" },
    window: { type: "string", default: "2" },
    value: { type: "string", default: "1024" },
    "one-n": { type: "string", default: "500" },
  },
});
if (!args.record) {
  console.error("usage: node examples/bench/typescript/redis.mjs --record FILE (go run ./examples/bench/redis -record FILE)");
  process.exit(2);
}
const CALLERS = Number(args.callers);
const ROUNDS = Number(args.rounds);
const WINDOW_MS = Number(args.window) * 1000;
const ONE_N = Number(args["one-n"]);
const APP = "bench-redis"; // the recording's app: the floor's records share the store's buckets
const rec = JSON.parse(readFileSync(args.record, "utf8"));
// Keys and arguments are any bytes (a sealed value is raw), in base64 in the file: keys (ASCII) as strings,
// arguments as Buffers, which node-redis sends as they are.
for (const op of ["create", "read", "put"]) {
  for (const c of rec[op]) {
    c.keys = c.keys.map((k) => Buffer.from(k, "base64").toString("latin1"));
    c.args = c.args.map((a) => Buffer.from(a, "base64"));
  }
}

const progress = (m) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${m}\n`);
const pct = (xs, p) => {
  if (xs.length === 0) return 0;
  const c = [...xs].sort((a, b) => a - b);
  return c[Math.max(0, Math.min(c.length - 1, Math.round((p / 100) * c.length) - 1))];
};
const median = (xs) => {
  const c = [...xs].sort((a, b) => a - b);
  return c.length % 2 ? c[(c.length - 1) / 2] : (c[c.length / 2 - 1] + c[c.length / 2]) / 2;
};
const spread = (xs, d = 0) => `${Math.min(...xs).toFixed(d)}–${Math.max(...xs).toFixed(d)}`;

const { port, url: URL_, stop: cleanup } = await startRedis("redis-bench-ts-");

// The floor's client: the host's options (sdk-bindings/typescript/src/redis.ts).
const floor = redis.createClient({ url: URL_, RESP: 2, disableOfflineQueue: true, disableClientInfo: true, socket: { connectTimeout: 2000, reconnectStrategy: false } });
floor.on("error", () => undefined);
for (let i = 0; ; i++) {
  try {
    await floor.connect();
    break;
  } catch (e) {
    if (i > 200) throw e;
    await new Promise((r) => setTimeout(r, 50));
  }
}

const check = (reply) => {
  if (!Array.isArray(reply) || reply[0] !== "ok") throw new Error(`script answered ${JSON.stringify(reply)}`);
};
const replay = async (c) => check(await floor.evalSha(c.sha, { keys: c.keys, arguments: c.args }));
// A put is sealed for the generation it makes (put's ARGV[9]), so the same call again would answer "stale" and
// write nothing: set the record back to the generation before it, in the same round trip, so every replay does the
// recorded put's work (as the Go floor does). The record's key is KEYS[1] (the bucket's LRU set, ending in "lru")
// with "h:" and the key hash (ARGV[5]) in its place (redis.lua, key).
const replayPut = async (c) => {
  const key = c.keys[0].slice(0, -3) + "h:" + c.args[4].toString("latin1");
  const replies = await floor.multi().hSet(key, "g", String(Number(c.args[8].toString("latin1")) - 1)).evalSha(c.sha, { keys: c.keys, arguments: c.args }).execAsPipeline();
  check(replies[1]);
};

/** One window: `CALLERS` concurrent loops for `ms`, each alternating get(i) and put(i) over 0..n-1. */
async function window(ms, n, get, put) {
  const res = { get: [], put: [], callers: [], elapsed: 0 };
  const t0 = performance.now();
  const deadline = t0 + ms;
  await Promise.all(
    Array.from({ length: CALLERS }, async (_, c) => {
      let k = 0;
      while (performance.now() < deadline) {
        const i = (Math.floor((c * n) / CALLERS) + Math.floor(k / 2)) % n;
        const t = performance.now();
        await (k % 2 === 0 ? get : put)(i);
        (k % 2 === 0 ? res.get : res.put).push((performance.now() - t) * 1000);
        k++;
      }
      res.callers.push(k);
    }),
  );
  res.elapsed = (performance.now() - t0) / 1000;
  res.rate = (res.get.length + res.put.length) / res.elapsed;
  return res;
}

let store;
try {
  for (const s of Object.values(rec.scripts)) {
    if ((await floor.scriptLoad(s.src)) !== s.sha) throw new Error(`script sha mismatch for ${s.sha}`);
  }
  for (const c of rec.create) await replay(c);
  const n = rec.read.length;
  const fget = (i) => replay(rec.read[i]);
  const fput = (i) => replayPut(rec.put[i]);

  store = await HandleStore.open(APP, { stateUrl: URL_, timeoutMs: 2000, logger: { log() {} } });
  if (store.settings.backend !== "redis") throw new Error(`the store answered backend ${store.settings.backend}, not redis`);
  const value = randomBytes(Number(args.value));
  const handles = [];
  for (let i = 0; i < n; i++) handles.push((await store.create("", value)).handle);
  progress(`redis-server on 127.0.0.1:${port}; ${n} handles created, ${n} recorded creates replayed`);
  const sget = async (i) => {
    const v = await store.get(handles[i], "");
    if (v.data.length !== value.length) throw new Error("short value");
  };
  const sput = (i) => store.put(handles[i], "", value);

  await window(WINDOW_MS / 4, n, sget, sput); // warm-up: the worker, the connections, the JIT
  await window(WINDOW_MS / 4, n, fget, fput);
  const st = [];
  const fl = [];
  for (let r = 0; r < ROUNDS; r++) {
    progress(`round ${r + 1} of ${ROUNDS}`);
    for (const which of r % 2 === 0 ? [0, 1] : [1, 0]) {
      if (which === 0) st.push(await window(WINDOW_MS, n, sget, sput));
      else fl.push(await window(WINDOW_MS, n, fget, fput));
    }
  }

  console.log(`${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC, Node ${process.version}, node-redis ${redisVersion}, ${cpus().length} cores, value ${args.value} bytes\n`);
  console.log(`### TypeScript, ${CALLERS} concurrent promises, HandleStore in worker mode (one plugin instance, FIFO), get and put alternating (median of ${ROUNDS} rounds of ${args.window} s)\n`);
  console.log("| measure | store | floor | store vs floor | target | | rounds: store, floor |\n|---|---:|---:|---:|---|---|---|");
  const sr = st.map((r) => r.rate);
  const fr = fl.map((r) => r.rate);
  const ratio = median(sr) / median(fr);
  console.log(`| ops/s | ${median(sr).toFixed(0)} | ${median(fr).toFixed(0)} | ${ratio.toFixed(2)}× | ≥ 0.5× | ${ratio >= 0.5 ? "met" : "missed"} | ${spread(sr)}; ${spread(fr)} |`);
  const sl = sr.map((r) => (CALLERS / r) * 1e6);
  const fll = fr.map((r) => (CALLERS / r) * 1e6);
  console.log(`| mean time per op, callers ÷ ops/s (µs) | ${median(sl).toFixed(0)} | ${median(fll).toFixed(0)} | +${(median(sl) - median(fll)).toFixed(0)} µs (${(median(sl) / median(fll)).toFixed(2)}×) | | | ${spread(sl)}; ${spread(fll)} |`);
  for (const op of ["get", "put"]) {
    for (const p of [50, 99]) {
      const s = st.map((r) => pct(r[op], p));
      const f = fl.map((r) => pct(r[op], p));
      const diff = median(s) - median(f);
      const [target, verd] = p === 50 ? ["≤ floor + 200 µs", diff <= 200 ? "met" : "missed"] : ["", ""];
      console.log(`| ${op} p${p} (µs) | ${median(s).toFixed(0)} | ${median(f).toFixed(0)} | ${diff >= 0 ? "+" : ""}${diff.toFixed(0)} µs (${(median(s) / median(f)).toFixed(2)}×) | ${target} | ${verd} | ${spread(s)}; ${spread(f)} |`);
    }
  }
  const share = (r) => Math.min(...r.callers) / (r.callers.reduce((a, b) => a + b, 0) / r.callers.length);
  console.log(`| slowest caller's ops / mean caller's | ${median(st.map(share)).toFixed(2)} | ${median(fl.map(share)).toFixed(2)} | | | | ${spread(st.map(share), 2)}; ${spread(fl.map(share), 2)} |\n`);

  // One caller, no queue: what one call costs in worker mode against the floor's round trip.
  const kinds = [["floor: read script by EVALSHA", fget], ["floor: put script by EVALSHA", fput], ["store: get", sget], ["store: put", sput]];
  const one = kinds.map(() => []);
  for (let r = 0; r < ONE_N; r++) {
    for (let k = 0; k < kinds.length; k++) {
      const j = (k + r) % kinds.length; // which goes first rotates
      const t = performance.now();
      await kinds[j][1](r % n);
      one[j].push((performance.now() - t) * 1000);
    }
  }
  console.log(`### TypeScript, one caller (${ONE_N} rounds, kinds interleaved; µs)\n\n| call | p50 | p99 |\n|---|---:|---:|`);
  kinds.forEach(([what], k) => console.log(`| ${what} | ${pct(one[k], 50).toFixed(0)} | ${pct(one[k], 99).toFixed(0)} |`));
  console.log();
} finally {
  await store?.close();
  await floor.close().catch(() => floor.destroy());
  cleanup();
}

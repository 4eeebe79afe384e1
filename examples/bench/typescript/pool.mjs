// The TypeScript HandleStore's pool of plugin instances (poolSize): 16
// concurrent promises doing gets on pre-created handles (1 KiB values), one
// store with poolSize 1 (one instance, callers queued FIFO: the store as it
// was before the pool) beside one with poolSize --pool (default
// os.availableParallelism()), on a real redis-server (worker mode: each
// instance on its own thread with its own connection) and on files (the
// plugin on the main thread). Windows of the two stores alternate, and which
// goes first too; medians over the rounds; the ratio is the pool's ops/s
// over one instance's. Docs: docs/BENCHMARKS.md, "TypeScript: the handle
// store's pool of instances".
//
// The script starts its own redis-server (PATH, or $MCP_RESUME_REDIS_SERVER)
// on a free loopback port in a temporary directory, without persistence.
//
//   node examples/bench/typescript/pool.mjs [--callers 16] [--pool N] [--rounds 5] [--window 2] [--value 1024] [--only redis|files]
//   (after make typescript-setup)
//
// Progress goes to stderr, the Markdown table to stdout.

import { randomBytes } from "node:crypto";
import { availableParallelism, cpus } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";

import { HandleStore } from "../../../sdk-bindings/typescript/dist/index.js";
import { startRedis } from "./redis-server.mjs";

const { values: args } = parseArgs({
  options: {
    callers: { type: "string", default: "16" },
    pool: { type: "string", default: String(availableParallelism()) },
    rounds: { type: "string", default: "5" },
    window: { type: "string", default: "2" },
    value: { type: "string", default: "1024" },
    only: { type: "string" },
  },
});
const CALLERS = Number(args.callers);
const POOL = Number(args.pool);
const ROUNDS = Number(args.rounds);
const WINDOW_MS = Number(args.window) * 1000;
const N = 256; // handles per store

const progress = (m) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${m}\n`);
const median = (xs) => {
  const c = [...xs].sort((a, b) => a - b);
  return c.length % 2 ? c[(c.length - 1) / 2] : (c[c.length / 2 - 1] + c[c.length / 2]) / 2;
};
const spread = (xs) => `${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)}`;
const quiet = { debug() {}, info() {}, warn: (m, a) => console.error(m, a), error: (m, a) => console.error(m, a) };

/** One window: `CALLERS` concurrent loops of gets for `ms`; ops/s. */
async function window(ms, get) {
  let ops = 0;
  const t0 = performance.now();
  const deadline = t0 + ms;
  await Promise.all(
    Array.from({ length: CALLERS }, async (_, c) => {
      for (let k = c * 7; performance.now() < deadline; k++) {
        await get(k % N);
        ops++;
      }
    }),
  );
  return ops / ((performance.now() - t0) / 1000);
}

/** Opens the two stores with `options`, creates the handles, alternates windows; the medians and rounds. */
async function compare(name, options) {
  const value = randomBytes(Number(args.value));
  const stores = [];
  try {
    for (const poolSize of [1, POOL]) stores.push(await HandleStore.open(`bench-pool-${poolSize}`, { ...options, poolSize, logger: quiet }));
    const gets = [];
    for (const s of stores) {
      const handles = [];
      for (let i = 0; i < N; i++) handles.push((await s.create("", value)).handle);
      gets.push(async (i) => {
        const v = await s.get(handles[i], "");
        if (v.data.length !== value.length) throw new Error("short value");
      });
    }
    for (const g of gets) await window(WINDOW_MS / 4, g); // warm-up: the instances, the threads, the connections, the JIT
    const rates = [[], []];
    for (let r = 0; r < ROUNDS; r++) {
      progress(`${name}: round ${r + 1} of ${ROUNDS}`);
      for (const which of r % 2 === 0 ? [0, 1] : [1, 0]) rates[which].push(await window(WINDOW_MS, gets[which]));
    }
    return { name, rates, instances: stores.map((s) => s.instances) };
  } finally {
    for (const s of stores) await s.close();
  }
}

const { port, work, stop } = await startRedis("pool-bench-ts-");

const results = [];
try {
  await new Promise((r) => setTimeout(r, 300)); // the store's first call connects; a server not up yet is retried below
  for (let i = 0; ; i++) {
    try {
      const probe = await HandleStore.open("bench-pool-probe", { stateUrl: `redis://127.0.0.1:${port}/0`, logger: { debug() {}, info() {}, warn() {}, error() {} } });
      await probe.exists("mrh1_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "").finally(() => probe.close());
      break;
    } catch (e) {
      if (i > 100) throw e;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  if (args.only !== "files") results.push(await compare("Redis (worker mode)", { stateUrl: `redis://127.0.0.1:${port}/0`, timeoutMs: 5000 }));
  if (args.only !== "redis") results.push(await compare("files (main thread)", { stateRoot: path.join(work, "state") }));
} finally {
  stop();
}

console.log(`${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC, Node ${process.version}, ${cpus().length} cores (availableParallelism ${availableParallelism()}), value ${args.value} bytes\n`);
console.log(`### ${CALLERS} concurrent gets: poolSize 1 vs ${POOL} (ops/s, median of ${ROUNDS} alternating rounds of ${args.window} s)\n`);
console.log(`| backend | poolSize 1 | poolSize ${POOL} | ratio | instances at the end (1, ${POOL}) | rounds: 1; ${POOL} |\n|---|---:|---:|---:|---|---|`);
for (const { name, rates, instances } of results) {
  const [a, b] = rates.map(median);
  console.log(`| ${name} | ${a.toFixed(0)} | ${b.toFixed(0)} | ${(b / a).toFixed(2)}× | ${instances.join(", ")} | ${spread(rates[0])}; ${spread(rates[1])} |`);
}
console.log();

#!/usr/bin/env node
// Startup and memory benchmark of the TypeScript binding.
//
//   node examples/bench/typescript/startup.mjs [-n 20]      (or: make typescript-bench)
//
// 1. Startup: launches the example server's startup (examples/typescript-server, run by
//    its benchmark stand-in server-start.mjs, which stops at the measured point) as a
//    child of this process, alternating
//      baseline  the server's imports + McpServer construction, then exit
//      load      the same, then ResumeTokenStore.open() and one load(), then exit
//                right after the load answer
//    and times spawn -> exit (ms), and the child's peak RSS (process.resourceUsage().maxRSS,
//    read at exit by a --require'd hook both modes load). A token file for this process's
//    identity (the server's MCP host: the children's stdout is a FIFO it holds) is written
//    after a first load, named after that load's lock file, so load() finds and validates a
//    token as on a real relaunch. Prints median, p90 and mean per mode, the ratio load/
//    baseline (target: <= 1.25, so resume costs a quarter of the server's start at most)
//    and the RSS difference (target: <= +20 MiB).
// 2. Memory: one store, 10,000 store() calls (the binding's test/fixtures/memory.mjs in a fresh
//    process with --expose-gc): RSS, JS heap and external memory after 0, 1,000 and
//    10,000 calls; and the same loop on the bare Extism SDK without plugin.reset(),
//    the 1.0.3 trap the store avoids.
//
// Prints Markdown tables on stdout.
import { execFileSync, spawn } from "node:child_process";
import { chmodSync, closeSync, constants, copyFileSync, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, readSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const PKG = path.join(ROOT, "sdk-bindings", "typescript"); // the binding
const EXAMPLE = path.join(ROOT, "examples", "typescript-server");
const nIdx = process.argv.indexOf("-n");
const N = nIdx > 0 ? Number(process.argv[nIdx + 1]) : Number(process.env.N ?? 20);
const WARMUP = 2;

if (!existsSync(path.join(EXAMPLE, "dist", "broker.js")) || !existsSync(path.join(EXAMPLE, "node_modules")) || !existsSync(path.join(PKG, "dist", "index.js"))) {
  console.error("build first: make typescript-setup");
  process.exit(2);
}

const work = mkdtempSync(path.join(tmpdir(), "mcp-resume-ts-bench-"));
const stateRoot = path.join(work, "state");
mkdirSync(stateRoot, { mode: 0o700 });
chmodSync(stateRoot, 0o700);

// The server's startup, run from the work directory, whose node_modules links to the
// example's: its imports load exactly the files the server loads (server-start.mjs).
const SERVER = path.join(work, "server-start.mjs");
copyFileSync(fileURLToPath(new URL("./server-start.mjs", import.meta.url)), SERVER);
symlinkSync(path.join(EXAMPLE, "node_modules"), path.join(work, "node_modules"));

// The children's stdout is a FIFO this process holds open for reading, as an MCP host
// holds its end of a server's stdout, so the plugin resolves this process as the host.
// (Node's "pipe" stdio is a socket pair, whose peer the TypeScript host cannot identify.)
const STDOUT_FIFO = path.join(work, "stdout.fifo");
execFileSync("mkfifo", ["-m", "600", STDOUT_FIFO]);
const stdoutFd = openSync(STDOUT_FIFO, constants.O_RDONLY | constants.O_NONBLOCK);

/** What the children wrote to stdout since the last call ("" when nothing). */
function drainStdout() {
  const buf = Buffer.alloc(65536);
  let out = "";
  for (;;) {
    let n = 0;
    try {
      n = readSync(stdoutFd, buf);
    } catch (e) {
      if (e.code === "EAGAIN") return out;
      throw e;
    }
    if (n === 0) return out;
    out += buf.subarray(0, n).toString();
  }
}

// Loaded by every measured child (both modes alike): writes its peak RSS (KiB) to fd 3 at exit.
const RSS_HOOK = path.join(work, "rss-hook.cjs");
writeFileSync(RSS_HOOK, `process.on("exit", () => { try { require("fs").writeSync(3, String(process.resourceUsage().maxRSS)); } catch {} });\n`);

// "tierup": the load mode with V8's default tiering (node --no-liftoff-only: the binding then leaves
// the flags alone), to show what compiling the plugin for Liftoff only saves.
function once(mode) {
  return new Promise((resolve, reject) => {
    const flags = mode === "tierup" ? ["--no-liftoff-only"] : [];
    const stdout = openSync(STDOUT_FIFO, "w");
    const t0 = process.hrtime.bigint();
    const p = spawn(process.execPath, [...flags, "--require", RSS_HOOK, SERVER, mode === "tierup" ? "load" : mode], {
      cwd: ROOT,
      env: { ...process.env, MCP_RESUME_STATE_DIR: stateRoot },
      stdio: ["ignore", stdout, "pipe", "pipe"],
    });
    closeSync(stdout);
    let err = "";
    let rss = "";
    p.stderr.on("data", (d) => (err += d));
    p.stdio[3].on("data", (d) => (rss += d));
    p.on("close", (code) => {
      const ms = Number(process.hrtime.bigint() - t0) / 1e6;
      const out = drainStdout();
      if (code !== 0) return reject(new Error(`${mode}: exit ${code}: ${err}`));
      if (out !== "") return reject(new Error(`${mode}: wrote to stdout: ${out}`));
      if (err.includes("WARN") || err.includes("ERROR")) return reject(new Error(`${mode}: ${err}`));
      resolve({ ms, rssMiB: Number(rss) / 1024 });
    });
  });
}

const stats = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const q = (p) => s[Math.min(s.length - 1, Math.ceil(p * s.length) - 1)];
  return { median: (s[(s.length - 1) >> 1] + s[s.length >> 1]) / 2, p90: q(0.9), mean: s.reduce((a, b) => a + b, 0) / s.length, min: s[0], max: s[s.length - 1] };
};

// This process is the server's MCP host: a first load leaves the lock file of its identity,
// and a token file of that name makes every measured load find and validate a token, as
// on a real relaunch.
await once("load");
const TOKEN = "bench-token-" + "x".repeat(31);
const appDir = path.join(stateRoot, "example-typescript");
const locks = readdirSync(appDir).filter((n) => n.startsWith("lock-"));
if (locks.length !== 1) throw new Error(`after the first load, ${appDir} holds ${locks.length} lock files, want 1`);
const tokenFile = path.join(appDir, "token-" + locks[0].slice("lock-".length));
writeFileSync(tokenFile, TOKEN, { mode: 0o600 });

const times = { baseline: [], load: [], tierup: [] };
const rss = { baseline: [], load: [], tierup: [] };
for (let i = 0; i < WARMUP; i++) {
  await once("baseline");
  await once("load");
}
for (let i = 0; i < N; i++) {
  // Alternate so drift hits both modes alike.
  for (const mode of i % 2 ? ["load", "tierup", "baseline"] : ["baseline", "tierup", "load"]) {
    const r = await once(mode);
    times[mode].push(r.ms);
    rss[mode].push(r.rssMiB);
  }
}
if (readFileSync(tokenFile, "utf8") !== TOKEN) throw new Error("load() changed the token file");

const b = stats(times.baseline);
const l = stats(times.load);
const rb = stats(rss.baseline);
const rl = stats(rss.load);
const t = stats(times.tierup);
const rt = stats(rss.tierup);
const f = (x) => x.toFixed(1);
console.log(`### Startup: spawn to exit of the example server (N=${N} each, alternating, ${WARMUP} warm-up pairs, node ${process.version}, ${process.platform}/${process.arch})\n`);
console.log("| mode | median ms | p90 ms | mean ms | min ms | max ms | peak RSS MiB (median) |");
console.log("|---|---:|---:|---:|---:|---:|---:|");
console.log(`| baseline (imports + McpServer) | ${f(b.median)} | ${f(b.p90)} | ${f(b.mean)} | ${f(b.min)} | ${f(b.max)} | ${f(rb.median)} |`);
console.log(`| load (+ open + first load answer) | ${f(l.median)} | ${f(l.p90)} | ${f(l.mean)} | ${f(l.min)} | ${f(l.max)} | ${f(rl.median)} |`);
console.log(`| load, V8 default tiering (--no-liftoff-only) | ${f(t.median)} | ${f(t.p90)} | ${f(t.mean)} | ${f(t.min)} | ${f(t.max)} | ${f(rt.median)} |`);
console.log(`| **resume cost** (load − baseline) | **+${f(l.median - b.median)}** | +${f(l.p90 - b.p90)} | +${f(l.mean - b.mean)} | | | **+${f(rl.median - rb.median)}** |`);
const ratio = l.median / b.median;
const drss = rl.median - rb.median;
console.log(`\nload/baseline (median): **${ratio.toFixed(3)}** (target ≤ 1.25: ${ratio <= 1.25 ? "met" : "NOT met"}); ` +
  `peak RSS ${f(rl.median)} vs ${f(rb.median)} MiB: **+${f(drss)} MiB** (target ≤ +20 MiB: ${drss <= 20 ? "met" : "NOT met"}); ` +
  `with V8's default tiering: ${(t.median / b.median).toFixed(3)}, +${f(rt.median - rb.median)} MiB\n`);

function memory(mode) {
  const dir = path.join(work, `mem-${mode}`);
  mkdirSync(dir, { mode: 0o700 });
  return new Promise((resolve, reject) => {
    // Its stdout is the FIFO too: the store it drives must resolve this process as its host.
    const stdout = openSync(STDOUT_FIFO, "w");
    const p = spawn(process.execPath, ["--expose-gc", path.join(PKG, "test", "fixtures", "memory.mjs"), "dist", dir, "10000", mode], { stdio: ["ignore", stdout, "inherit"] });
    closeSync(stdout);
    p.on("exit", (code) => (code === 0 ? resolve(JSON.parse(drainStdout())) : reject(new Error(`memory.mjs ${mode} exited ${code}`))));
  });
}
const MiB = (x) => (x / 1048576).toFixed(1);
const withReset = await memory("store");
const noReset = await memory("noreset");
console.log("### Memory across 10,000 store() calls (after gc; MiB)\n");
console.log("| calls | RSS | JS heap used | external (incl. Wasm memory) | bare SDK, no reset: RSS | heap used |");
console.log("|---:|---:|---:|---:|---:|---:|");
for (const k of ["0", "1000", "10000"]) {
  console.log(`| ${Number(k).toLocaleString("en")} | ${MiB(withReset[k].rss)} | ${MiB(withReset[k].heapUsed)} | ${MiB(withReset[k].external)} | ${MiB(noReset[k].rss)} | ${MiB(noReset[k].heapUsed)} |`);
}
const grow = (r) => f((r["10000"].rss - r["1000"].rss) / 1048576);
const heap = (r) => `${MiB(r["1000"].heapUsed)} → ${MiB(r["10000"].heapUsed)}`;
console.log(`\nFrom 1,000 to 10,000 calls: RSS ${grow(withReset)} MiB, JS heap ${heap(withReset)} MiB with the store; ` +
  `RSS ${grow(noReset)} MiB, JS heap ${heap(noReset)} MiB on the bare SDK without reset\n`);
closeSync(stdoutFd);
rmSync(work, { recursive: true, force: true });

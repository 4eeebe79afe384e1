#!/usr/bin/env node
// The start cost of a Redis handle store in Node: Extism's worker mode (the plugin on a thread of
// its own, so that mcp_resume_eval may await node-redis) against the synchronous mode the file
// store and resume use. Each run is a fresh `node` process (module loading, compile, thread start
// and connect all count), the three modes alternating run by run (which goes first rotating too):
//
//   worker   HandleStore.open(app, {stateUrl}) on this script's own redis-server, then one create()
//   file     HandleStore.open(app, {stateRoot}) (synchronous mode), then one create()
//   resume   ResumeTokenStore.open({app, stateRoot}) and one load(), the stdio server's resume start
//   import   only the binding's import of node-redis (`redis`), which a worker store starts at open
//            while its thread starts: the share of the difference that is the client library's
//
// Two times per run: `inside`, from just before the child imports the binding to just after the
// first call answers (performance.now(), sent on stderr), and `process`, spawn to exit as seen
// from here. Prints medians, p90s and the ratios worker/file and worker/resume as a Markdown
// table on stdout, and the backend the worker store answered (a plugin without the Redis backend
// ignores stateUrl: the worker mode is then measured on files).
//
//   node examples/bench/typescript/worker_start.mjs [-n 20]   (after make typescript-setup; needs redis-server)
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const INDEX = path.join(ROOT, "sdk-bindings", "typescript", "dist", "index.js");
const { values: args } = parseArgs({ options: { n: { type: "string", short: "n", default: "20" } } });
const N = Number(args.n);
const WARMUP = 2;
if (!existsSync(INDEX)) {
  console.error("build first: make typescript-setup");
  process.exit(2);
}

const work = mkdtempSync(path.join(tmpdir(), "mcp-resume-ts-worker-bench-"));
const port = await new Promise((resolve, reject) => {
  const s = createServer().once("error", reject);
  s.listen(0, "127.0.0.1", () => {
    const p = s.address().port;
    s.close(() => resolve(p));
  });
});
const redis = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", work], { stdio: "ignore" });
redis.once("error", (e) => {
  console.error(`cannot start redis-server: ${e.message}`);
  process.exit(2);
});
const URL_ = `redis://127.0.0.1:${port}/0`;

// Each child: t0, import, open, first call, t1; "<ms> <backend>" on stderr; nothing on stdout.
const CHILD = {
  worker: `const t0 = performance.now(); const { HandleStore } = await import(${JSON.stringify(INDEX)});
const s = await HandleStore.open("bench", { stateUrl: process.env.URL_, logger: quiet });
await s.create("", new Uint8Array(16)); const t1 = performance.now(); process.stderr.write(\`\${t1 - t0} \${s.settings.backend}\\n\`); await s.close();`,
  file: `const t0 = performance.now(); const { HandleStore } = await import(${JSON.stringify(INDEX)});
const s = await HandleStore.open("bench", { stateRoot: process.env.ROOT_, logger: quiet });
await s.create("", new Uint8Array(16)); const t1 = performance.now(); process.stderr.write(\`\${t1 - t0} \${s.settings.backend}\\n\`); await s.close();`,
  resume: `const t0 = performance.now(); const { ResumeTokenStore } = await import(${JSON.stringify(INDEX)});
const s = await ResumeTokenStore.open("bench", { stateRoot: process.env.ROOT_, logger: quiet });
await s.load(); const t1 = performance.now(); process.stderr.write(\`\${t1 - t0} resume\\n\`); await s.close();`,
};
CHILD.import = `const t0 = performance.now(); const { loadRedis } = await import(${JSON.stringify(path.join(ROOT, "sdk-bindings", "typescript", "dist", "redis.js"))});
await loadRedis(); const t1 = performance.now(); process.stderr.write(\`\${t1 - t0} import\\n\`);`;
const QUIET = "const quiet = { debug() {}, info() {}, warn() {}, error() {} };\n";

function run(mode) {
  return new Promise((resolve, reject) => {
    const t = performance.now();
    const env = { ...process.env, URL_, ROOT_: path.join(work, "state"), MCP_RESUME_STATE_URL: "" };
    const child = spawn(process.execPath, ["--input-type=module", "-e", QUIET + CHILD[mode]], { env, stdio: ["ignore", "ignore", "pipe"] });
    let err = "";
    child.stderr.on("data", (d) => (err += d));
    child.on("exit", (code) => {
      const wall = performance.now() - t;
      const m = /^([0-9.]+) (\w+)$/m.exec(err);
      if (code !== 0 || !m) return reject(new Error(`${mode} exited ${code}: ${err}`));
      resolve({ inside: Number(m[1]), process: wall, backend: m[2] });
    });
  });
}

async function waitRedis() {
  for (let i = 0; i < 100; i++) {
    const ok = await new Promise((resolve) => {
      const s = createServer();
      s.once("error", () => resolve(true)); // in use: redis-server is listening
      s.listen(port, "127.0.0.1", () => s.close(() => resolve(false)));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error("redis-server did not start");
}

const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

try {
  await waitRedis();
  const modes = ["worker", "file", "resume", "import"];
  const got = { worker: [], file: [], resume: [], import: [] };
  let backend = "";
  for (let i = 0; i < N + WARMUP; i++) {
    for (let j = 0; j < modes.length; j++) {
      const mode = modes[(i + j) % modes.length]; // rotate which goes first
      const r = await run(mode);
      if (mode === "worker") backend = r.backend;
      if (i >= WARMUP) got[mode].push(r);
    }
  }
  const f = (x) => x.toFixed(1);
  console.log(`Start cost, ${N} runs per mode (after ${WARMUP} warm-up rounds), Node ${process.version}; worker store's backend: ${backend}\n`);
  console.log("| mode | inside median (ms) | inside p90 | process median (ms) | process p90 |");
  console.log("|---|---|---|---|---|");
  for (const mode of modes) {
    const i = got[mode].map((r) => r.inside);
    const p = got[mode].map((r) => r.process);
    console.log(`| ${mode} | ${f(median(i))} | ${f(pct(i, 90))} | ${f(median(p))} | ${f(pct(p, 90))} |`);
  }
  const m = (mode, k) => median(got[mode].map((r) => r[k]));
  console.log(`\nworker/file: inside ${(m("worker", "inside") / m("file", "inside")).toFixed(2)}x, process ${(m("worker", "process") / m("file", "process")).toFixed(2)}x`);
  console.log(`worker/resume: inside ${(m("worker", "inside") / m("resume", "inside")).toFixed(2)}x, process ${(m("worker", "process") / m("resume", "process")).toFixed(2)}x`);
} finally {
  redis.kill("SIGTERM");
  rmSync(work, { recursive: true, force: true });
}

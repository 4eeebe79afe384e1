// HandleStore on Redis with the real plugin in Extism's worker mode against
// a real redis-server (helpers.ts, startRedis; skipped with a line on stderr
// when there is none, failed when MCP_RESUME_REQUIRE_REDIS=1): every method
// end to end, two stores and a second process sharing handles through the
// server, the environment variable choosing the backend, an unreachable or
// busy server answering StoreUnavailableError within the deadline while the event
// loop keeps ticking, a restarted server reached again by the next call, and
// an idle store keeping neither the process nor its thread alive, and a
// three-master Redis Cluster (redis-cli --cluster create), a server with a
// password (right and wrong, never in a message or a line). Also the
// synchronous mode's answer: mcp_resume_eval is unsupported there.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { after, before, describe, test } from "node:test";

import { HostFunctions } from "../src/hostfuncs.js";
import { ConflictError, HandleNotFoundError, HandleStore, InvalidOptionError, StoreUnavailableError, type HandleStoreOptions } from "../src/index.js";
import type { Logger, LogFields } from "../src/logger.js";
import { evalError, loadRedis, replyJson } from "../src/redis.js";
import { callExport, loadStore } from "../src/store.js";
import { cleanupTemps, freePort, PKG, startCluster, startRedis, tempDir, type RedisServer } from "./helpers.js";

const enc = new TextEncoder();
const dec = new TextDecoder();
const quiet: Logger = { debug() {}, info() {}, warn() {}, error() {} };
const DIST = new URL("../dist/index.js", import.meta.url).href;

let redis: RedisServer | undefined;
before(async () => {
  redis = await startRedis();
  if (!redis) process.stderr.write("handles_redis.test.ts SKIPPED: no redis-server on PATH (MCP_RESUME_REQUIRE_REDIS=1 makes this a failure)\n");
});
after(async () => {
  await redis?.stop();
  cleanupTemps();
});

/** A Redis store on the test server with captured log lines (every level). */
async function open(options: HandleStoreOptions = {}, app = "hs-redis") {
  const lines: string[] = [];
  const add = (level: string) => (message: string, fields?: LogFields) => lines.push(`${level} ${message} ${JSON.stringify(fields ?? {})}`);
  const store = await HandleStore.open(app, { stateUrl: redis!.url, logger: { debug: add("debug"), info: add("info"), warn: add("warn"), error: add("error") }, ...options });
  return { store, lines };
}

/** Counts event-loop turns (a 5 ms interval) while `p` runs; resolves with its outcome, the ticks and the time taken. */
async function ticking<T>(p: () => Promise<T>): Promise<{ result: PromiseSettledResult<T>; ticks: number; ms: number }> {
  let ticks = 0;
  const timer = setInterval(() => ticks++, 5);
  const t0 = performance.now();
  const [result] = await Promise.allSettled([p()]);
  const ms = performance.now() - t0;
  clearInterval(timer);
  return { result, ticks, ms };
}

describe("HandleStore on Redis", () => {
  const skip = (t: { skip(m: string): void }) => (redis ? false : (t.skip("no redis-server on PATH"), true));

  test("a 4 MiB value (the largest maxValueBytes) round-trips", async (t) => {
    if (skip(t)) return;
    await redis!.flush();
    const { store } = await open({ maxValueBytes: 4 << 20, timeoutMs: 10_000 });
    try {
      const big = new Uint8Array(4 << 20);
      for (let i = 0; i < big.length; i++) big[i] = (i * 13 + 5) & 0xff;
      const c = await store.create("", big);
      const v = await store.get(c.handle, "");
      assert.ok(Buffer.from(v.data).equals(Buffer.from(big)));
      big[1] = 0;
      assert.equal(await store.put(c.handle, "", big, { expect: 1 }), 2);
    } finally {
      await store.close();
    }
  });

  test("every method end to end: settings, create, get, put with and without expect, touch, exists, list, gc, delete", async (t) => {
    if (skip(t)) return;
    await redis!.flush();
    const { store } = await open({ timeoutMs: 1500 });
    assert.equal(store.settings.backend, "redis");
    assert.equal(store.settings.stateUrl, redis!.url);
    assert.equal(store.settings.timeoutMs, 1500);
    assert.equal(store.settings.stateDir, "");
    const c = await store.create("alice", enc.encode("one"));
    assert.equal(c.generation, 1);
    const v = await store.get(c.handle, "alice");
    assert.equal(dec.decode(v.data), "one");
    assert.equal(await store.put(c.handle, "alice", enc.encode("two"), { expect: 1 }), 2);
    await assert.rejects(store.put(c.handle, "alice", enc.encode("x"), { expect: 1 }), (e: unknown) => e instanceof ConflictError && e.generation === 2);
    assert.equal(await store.put(c.handle, "alice", enc.encode("three")), 3);
    assert.equal((await store.touch(c.handle, "alice")).generation, 3);
    assert.equal(await store.exists(c.handle, "alice"), true);
    assert.equal(await store.exists(c.handle, "bob"), false);
    await assert.rejects(store.get(c.handle, "bob"), HandleNotFoundError);
    const l = await store.list();
    assert.equal(l.live, 1);
    assert.equal(l.handles[0]!.generation, 3);
    assert.equal((await store.gc()).live, 1);
    await store.delete(c.handle, "alice", { expect: 3 });
    await assert.rejects(store.get(c.handle, "alice"), HandleNotFoundError);
    const keys = (await redis!.client.sendCommand(["KEYS", "*"])) as string[];
    assert.ok(keys.every((k) => k.startsWith("mcp-resume:")), keys.join(" "));
    await store.close();
  });

  test("two stores, and another Node process, share handles through the server", async (t) => {
    if (skip(t)) return;
    const [{ store: a }, { store: b }] = await Promise.all([open(), open()]);
    const c = await a.create("", enc.encode("shared"));
    assert.equal(dec.decode((await b.get(c.handle, "")).data), "shared");
    await b.put(c.handle, "", enc.encode("from b"));
    const code = `import { HandleStore } from ${JSON.stringify(DIST)};
const s = await HandleStore.open("hs-redis", { stateUrl: process.env.URL_, logger: { debug() {}, info() {}, warn() {}, error() {} } });
const v = await s.get(process.env.H_, ""); await s.put(process.env.H_, "", new TextEncoder().encode(new TextDecoder().decode(v.data) + ", then the child"), { expect: v.generation });
await s.close();`;
    const r = await nodeEval(code, { ...process.env, URL_: redis!.url, H_: c.handle });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, "", "nothing on stdout");
    assert.equal(dec.decode((await a.get(c.handle, "")).data), "from b, then the child");
    await Promise.all([a.close(), b.close()]);
  });

  test("MCP_RESUME_STATE_URL alone selects Redis (and worker mode); an explicit stateUrl wins", async (t) => {
    if (skip(t)) return;
    const saved = process.env["MCP_RESUME_STATE_URL"];
    process.env["MCP_RESUME_STATE_URL"] = redis!.url;
    try {
      const s = await HandleStore.open("hs-env", { logger: quiet });
      assert.equal(s.settings.backend, "redis");
      const c = await s.create("", enc.encode("env"));
      assert.equal(dec.decode((await s.get(c.handle, "")).data), "env");
      await s.close();
      await assert.rejects(HandleStore.open("hs-env", { stateUrl: "http://nope", logger: quiet }), InvalidOptionError);
    } finally {
      if (saved === undefined) delete process.env["MCP_RESUME_STATE_URL"];
      else process.env["MCP_RESUME_STATE_URL"] = saved;
    }
  });

  test("nothing listening: StoreUnavailableError within the deadline, the event loop ticking meanwhile, no password anywhere", async (t) => {
    if (skip(t)) return;
    const port = await freePort();
    const { store, lines } = await open({ stateUrl: `redis://me:s3cretpw@127.0.0.1:${port}/0`, timeoutMs: 400 });
    assert.equal(store.settings.stateUrl, `redis://me:***@127.0.0.1:${port}/0`);
    const { result, ticks, ms } = await ticking(() => store.create("", enc.encode("x")));
    assert.equal(result.status, "rejected");
    const e = (result as PromiseRejectedResult).reason as Error;
    assert.ok(e instanceof StoreUnavailableError, String(e));
    assert.ok(!e.message.includes("s3cretpw"), e.message);
    assert.ok(ms < 400 + 1500, `took ${ms.toFixed(0)} ms, deadline 400 ms`);
    assert.ok(ticks >= 5, `the event loop turned ${ticks} times in ${ms.toFixed(0)} ms`);
    assert.ok(lines.length > 0 && lines.every((l) => !l.includes("s3cretpw")), lines.join("\n"));
    await store.close();
  });

  test("a busy server: StoreUnavailableError at the deadline (timeout), ticking meanwhile; the next call goes through", async (t) => {
    if (skip(t)) return;
    const { store } = await open({ timeoutMs: 200 });
    const c = await store.create("", enc.encode("v"));
    // Another client keeps the server in a 700 ms script: our command waits behind it.
    const busy = redis!.client.sendCommand(["EVAL", "local t = redis.call('TIME') local s = t[1]*1000000 + t[2] while true do local n = redis.call('TIME') if n[1]*1000000 + n[2] - s > 700000 then break end end return 1", "0"]);
    await new Promise((r) => setTimeout(r, 50));
    const { result, ticks, ms } = await ticking(() => store.get(c.handle, ""));
    assert.equal(result.status, "rejected");
    assert.ok((result as PromiseRejectedResult).reason instanceof StoreUnavailableError);
    assert.ok(ms >= 190 && ms < 200 + 1000, `took ${ms.toFixed(0)} ms, deadline 200 ms`);
    assert.ok(ticks >= 10, `the event loop turned ${ticks} times in ${ms.toFixed(0)} ms`);
    await busy;
    assert.equal(dec.decode((await store.get(c.handle, "")).data), "v");
    await store.close();
  });

  test("the server killed and started again on the same port: unavailable meanwhile, then the next call reconnects by itself", async (t) => {
    if (skip(t)) return;
    const own = await startRedis();
    const { store } = await open({ stateUrl: own!.url, timeoutMs: 500 });
    const c = await store.create("", enc.encode("before"));
    own!.kill();
    await assert.rejects(store.get(c.handle, ""), StoreUnavailableError);
    const again = await startRedis(own!.port);
    try {
      // The record died with the server (no persistence): the store answers, so it reconnected.
      await assert.rejects(store.get(c.handle, ""), HandleNotFoundError);
      const d = await store.create("", enc.encode("after"));
      assert.equal(dec.decode((await store.get(d.handle, "")).data), "after");
    } finally {
      await store.close();
      await again?.stop();
      await own!.stop();
    }
  });

  test("an unclosed Redis store keeps neither the process nor its worker thread alive", async (t) => {
    if (skip(t)) return;
    const code = `import { HandleStore } from ${JSON.stringify(DIST)};
const s = await HandleStore.open("hs-exit", { stateUrl: process.env.URL_, logger: { debug() {}, info() {}, warn() {}, error() {} } });
await s.create("", new Uint8Array(1)); process.stderr.write("created\\n");`;
    const r = await nodeEval(code, { ...process.env, URL_: redis!.url }, 15_000);
    assert.equal(r.code, 0, `the process did not exit by itself: ${r.stderr}`);
    assert.match(r.stderr, /created/);
  });
});

test("a server with a password: the right one works end to end; a wrong one or none is auth (the store: StoreUnavailable saying the server refused the credentials), and no password reaches a message", async (t) => {
  const own = await startRedis(undefined, ["--requirepass", "rightpw-1"], "rightpw-1");
  if (!own) return t.skip("no redis-server on PATH");
  const f = new HostFunctions({ logger: quiet });
  try {
    const url = (pw: string) => `redis://default:${pw}@127.0.0.1:${own.port}/0`;
    const ask = async (u: string) => JSON.parse(Buffer.from(await f.callAsync("mcp_resume_eval", Buffer.from(JSON.stringify({ url: u, script: "return 1", keys: [], args: [], timeout_ms: 2000 })))).toString());
    assert.deepEqual(await ask(url("rightpw-1")), { reply: 1 });
    const wrong = await ask(url("wrongpw-2"));
    assert.equal(wrong.error?.code, "auth", JSON.stringify(wrong));
    assert.ok(!JSON.stringify(wrong).includes("wrongpw-2"), JSON.stringify(wrong));
    const none = await ask(`redis://127.0.0.1:${own.port}/0`);
    assert.equal(none.error?.code, "auth", JSON.stringify(none));
    assert.match(none.error?.message ?? "", /^NOAUTH/);
    const lines: string[] = [];
    const add = (m: string, x?: LogFields) => lines.push(`${m} ${JSON.stringify(x ?? {})}`);
    const store = await HandleStore.open("hs-auth", { stateUrl: url("rightpw-1"), logger: { debug: add, info: add, warn: add, error: add } });
    assert.equal(store.settings.stateUrl, `redis://default:***@127.0.0.1:${own.port}/0`);
    const c = await store.create("", enc.encode("authed"));
    assert.equal(dec.decode((await store.get(c.handle, "")).data), "authed");
    await store.close();
    const bad = await HandleStore.open("hs-auth", { stateUrl: url("wrongpw-2"), logger: { debug: add, info: add, warn: add, error: add } });
    const e = await bad.create("", enc.encode("x")).then(() => assert.fail("created with a wrong password"), (x: unknown) => x as Error);
    assert.ok(e instanceof StoreUnavailableError && !e.message.includes("wrongpw-2"), String(e));
    assert.match(e.message, /refused the credentials .*check the user and password in the URL/);
    assert.equal((e as StoreUnavailableError).reason, "auth");
    await bad.close();
    assert.ok(lines.every((l) => !l.includes("rightpw-1") && !l.includes("wrongpw-2")), lines.join("\n"));
  } finally {
    await f.close();
    await own.stop();
  }
});

test("a Redis Cluster (?cluster=true): every operation reaches the node owning its slot; handles spread over the masters", async (t) => {
  const cluster = await startCluster(3);
  if (!cluster) return t.skip("no redis-server or redis-cli on PATH");
  try {
    const store = await HandleStore.open("hs-cluster", { stateUrl: cluster.url, timeoutMs: 3000, logger: quiet });
    assert.equal(store.settings.backend, "redis");
    const handles = [];
    for (let i = 0; i < 24; i++) handles.push((await store.create("", enc.encode(`v${i}`))).handle);
    for (const [i, h] of handles.entries()) assert.equal(dec.decode((await store.get(h, "")).data), `v${i}`);
    assert.equal((await store.list()).live, 24);
    // Each node holds only keys of its own slots; with 24 handles over 64 buckets every master holds some.
    const counts = await Promise.all(cluster.nodes.map(async (n) => Number(await n.client.sendCommand(["DBSIZE"]))));
    assert.ok(counts.every((c) => c > 0), `keys per master: ${counts.join(", ")}`);
    await store.close();
  } finally {
    await cluster.stop();
  }
});

test("worker mode with files: the synchronous host functions (files, the shard lock through the lock worker's Atomics.wait) run unchanged on the main thread", async () => {
  const root = tempDir("handles-worker-files-");
  const store = await loadStore(quiet, undefined, undefined, true);
  const call = async (name: string, input: object) => {
    const r = await callExport(store, name, Buffer.from(JSON.stringify(input)));
    assert.ok(r.ok, `${name}: ${r.ok ? "" : r.message}`);
    return JSON.parse(Buffer.from(r.output).toString()) as Record<string, unknown>;
  };
  try {
    assert.equal((await call("handles_open", { app: "hs-wf", state_root: root }))["backend"], "file");
    const { handle } = (await call("handle_create", { principal: "", value: "YQ==" })) as { handle: string };
    assert.equal((await call("handle_get", { handle, principal: "" }))["value"], "YQ==");
    const files = fs.readdirSync(path.join(root, "hs-wf", "handles"));
    assert.ok(files.some((f) => f.startsWith("lock")), `the shard lock file: ${files.join(" ")}`); // taken and released, or create would have failed
  } finally {
    await store.close();
  }
});

test("error replies by their prefix: NOSCRIPT noscript; NOAUTH, WRONGPASS auth; LOADING, BUSY, CLUSTERDOWN, READONLY, MASTERDOWN, TRYAGAIN, MOVED, ASK unavailable; others (NOPERM, CROSSSLOT) script, text kept; secrets cut", async () => {
  const { ErrorReply } = await loadRedis();
  const code = (text: string) => evalError(new ErrorReply(text), ErrorReply, []).code;
  assert.equal(code("NOSCRIPT No matching script. Please use EVAL."), "noscript");
  for (const p of ["NOAUTH Authentication required.", "WRONGPASS invalid username-password pair", "ERR invalid password"]) assert.equal(code(p), "auth", p);
  for (const p of ["LOADING Redis is loading the dataset in memory", "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.", "CLUSTERDOWN The cluster is down", "READONLY You can't write against a read only replica.", "MASTERDOWN Link with MASTER is down", "TRYAGAIN Multiple keys request during rehashing of slot", "MOVED 3999 127.0.0.1:6381", "ASK 3999 127.0.0.1:6381"]) assert.equal(code(p), "unavailable", p);
  for (const p of ["NOPERM User u has no permissions to run the 'eval' command", "CROSSSLOT Keys in request don't hash to the same slot"]) assert.equal(code(p), "script", p);
  const wrongtype = evalError(new ErrorReply("WRONGTYPE Operation against a key holding the wrong kind of value"), ErrorReply, []);
  assert.equal(wrongtype.code, "script");
  assert.match(wrongtype.message, /^WRONGTYPE /);
  const refused = evalError(Object.assign(new Error("connect ECONNREFUSED 10.0.0.1:6379 for redis://u:hunter22@10.0.0.1"), { code: "ECONNREFUSED" }), ErrorReply, ["redis://u:hunter22@10.0.0.1", "hunter22"]);
  assert.equal(refused.code, "unavailable");
  assert.ok(!refused.message.includes("hunter22"), refused.message);
  assert.deepEqual(replyJson([1, "a", null, [2, new ErrorReply("ERR x")], Buffer.from([0x62, 0xff])]), [1, "a", null, [2, { err: "ERR x" }], "b\ufffd"]);
});

test("synchronous mode (the file store, resume): mcp_resume_eval answers unsupported, naming worker mode; a malformed request invalid_request", async () => {
  const f = new HostFunctions({ logger: quiet });
  const call = (req: object) => JSON.parse(Buffer.from(f.call("mcp_resume_eval", Buffer.from(JSON.stringify(req)))).toString()) as { error?: { code: string; message: string } };
  const ok = call({ url: "redis://127.0.0.1:1/0", script: "return 1", keys: [], args: [], timeout_ms: 100 });
  assert.equal(ok.error?.code, "unsupported");
  assert.match(ok.error!.message, /worker mode/);
  assert.equal(call({ url: "redis://127.0.0.1:1/0", keys: [], args: [], timeout_ms: 100 }).error?.code, "invalid_request");
  await f.close();
});

/** Runs `node --input-type=module -e <code>` with stdio piped: stdout, stderr, exit code (null: killed after `killMs`). */
function nodeEval(code: string, env: NodeJS.ProcessEnv, killMs = 60_000): Promise<{ stdout: string; stderr: string; code: number | null }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, ["--input-type=module", "-e", code], { env, cwd: PKG, stdio: ["ignore", "pipe", "pipe"], timeout: killMs, killSignal: "SIGKILL" });
    let stdout = "";
    let stderr = "";
    p.stdout.on("data", (d: Buffer) => (stdout += d));
    p.stderr.on("data", (d: Buffer) => (stderr += d));
    p.on("exit", (code) => resolve({ stdout, stderr, code }));
  });
}

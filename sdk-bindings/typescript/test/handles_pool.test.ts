// HandleStore's pool of plugin instances (poolSize), with the real plugin:
// the option refused when not a positive integer; on a real redis-server
// (helpers.ts, startRedis; skipped with a line on stderr when there is none,
// failed when MCP_RESUME_REQUIRE_REDIS=1) concurrent calls on a pool of 4
// complete and overlap (through a loopback proxy that delays every reply, so
// four instances take a quarter of one's time), compare-and-set stays
// linearizable across instances (concurrent read-increment-put with expect
// never loses a write, on Redis and on files), and close with calls in
// flight lets them complete, then closes every instance. And the pool itself
// (Pool) on the Go-built test plugin, whose load export traps: the trapped
// instance is dropped, not reused, and the next call gets a new one.
import assert from "node:assert/strict";
import { connect, createServer, type Server, type Socket } from "node:net";
import { availableParallelism } from "node:os";
import * as path from "node:path";
import { after, before, describe, test } from "node:test";

import { Pool } from "../src/handles.js";
import { HostFunctions } from "../src/hostfuncs.js";
import { callExport, loadStore, type ResumeTokenStore } from "../src/store.js";
import { ConflictError, HandleStore, InvalidOptionError, MCPResumeError, type HandleStoreOptions } from "../src/index.js";
import type { Logger } from "../src/logger.js";
import { cleanupTemps, goBuild, startRedis, tempDir, type RedisServer } from "./helpers.js";
import { ABI_VERSION } from "../src/hostfuncs.js";

const enc = new TextEncoder();
const dec = new TextDecoder();
const quiet: Logger = { debug() {}, info() {}, warn() {}, error() {} };

let redis: RedisServer | undefined;
before(async () => {
  redis = await startRedis();
  if (!redis) process.stderr.write("handles_pool.test.ts: Redis cases SKIPPED: no redis-server on PATH (MCP_RESUME_REQUIRE_REDIS=1 makes this a failure)\n");
});
after(async () => {
  await redis?.stop();
  cleanupTemps();
});

/**
 * A TCP proxy on loopback to `port` that holds every chunk the server sends for `delayMs` before passing
 * it on (a distant server, as a network would make it), so a call's time is mostly waiting.
 */
async function delayingProxy(port: number, delayMs: number): Promise<{ url: string; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((c) => {
    const u = connect(port, "127.0.0.1");
    for (const s of [c, u]) {
      sockets.add(s);
      s.on("error", () => undefined);
      s.on("close", () => (c.destroy(), u.destroy()));
    }
    c.on("data", (d) => u.write(d));
    u.on("data", (d) => setTimeout(() => c.writable && c.write(d), delayMs));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const p = (server.address() as { port: number }).port;
  return {
    url: `redis://127.0.0.1:${p}/0`,
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/** `callers` concurrent loops, each adding 1 to the counter in `handle` `each` times by get, then put with expect, retrying on ConflictError. */
async function increments(store: HandleStore, handle: string, callers: number, each: number): Promise<number> {
  let conflicts = 0;
  await Promise.all(
    Array.from({ length: callers }, async () => {
      for (let i = 0; i < each; ) {
        const v = await store.get(handle, "p");
        try {
          await store.put(handle, "p", enc.encode(String(Number(dec.decode(v.data)) + 1)), { expect: v.generation });
          i++;
        } catch (e) {
          if (!(e instanceof ConflictError)) throw e;
          conflicts++;
        }
      }
    }),
  );
  return conflicts;
}

describe("HandleStore pool", () => {
  const skip = (t: { skip(m: string): void }) => (redis ? false : (t.skip("no redis-server on PATH"), true));

  test("poolSize: a positive integer, else InvalidOptionError naming it; never more instances than it", async () => {
    const root = tempDir();
    for (const bad of [0, -1, 1.5, Number.NaN, Infinity, "4", null]) {
      await assert.rejects(HandleStore.open("pool", { stateRoot: root, logger: quiet, poolSize: bad as unknown as number }), (e: unknown) => e instanceof InvalidOptionError && /poolSize must be a positive integer/.test(e.message), String(bad));
    }
    for (const [poolSize, most] of [[1, 1], [undefined, availableParallelism()]] as const) {
      await using store = await HandleStore.open("pool", { stateRoot: root, logger: quiet, ...(poolSize ? { poolSize } : {}) });
      assert.equal(store.instances, 1, "open makes one instance");
      const { handle } = await store.create("", enc.encode("x"));
      await Promise.all(Array.from({ length: 16 }, () => store.get(handle, "")));
      assert.ok(store.instances >= 1 && store.instances <= most, `${store.instances} instances, poolSize ${poolSize}`);
    }
  });

  test("Redis, pool of 4: 16 concurrent gets complete, the pool grows to 4 and no further, and calls overlap (4 instances take well under half one's time)", async (t) => {
    if (skip(t)) return;
    const proxy = await delayingProxy(redis!.port, 60);
    try {
      const timed = async (options: HandleStoreOptions) => {
        await using store = await HandleStore.open("pool-overlap", { stateUrl: proxy.url, logger: quiet, timeoutMs: 10_000, ...options });
        assert.equal(store.instances, 1, "open makes one instance");
        const handles = await Promise.all(Array.from({ length: 16 }, (_, i) => store.create("", enc.encode(`v${i}`)).then((c) => c.handle)));
        await Promise.all(handles.map((h) => store.get(h, ""))); // every instance connected and its scripts loaded
        const t0 = performance.now();
        const got = await Promise.all(handles.map((h) => store.get(h, "")));
        const ms = performance.now() - t0;
        assert.deepEqual(got.map((v) => dec.decode(v.data)), handles.map((_, i) => `v${i}`));
        return { ms, instances: store.instances };
      };
      const one = await timed({ poolSize: 1 });
      const four = await timed({ poolSize: 4 });
      assert.equal(one.instances, 1);
      assert.equal(four.instances, 4);
      // One instance: 16 gets in a row, each at least one delayed reply (≥ 960 ms); four: 4 rounds.
      assert.ok(one.ms >= 16 * 60, `one instance took ${one.ms.toFixed(0)} ms`);
      assert.ok(four.ms < one.ms / 2, `four instances took ${four.ms.toFixed(0)} ms, one ${one.ms.toFixed(0)} ms`);
    } finally {
      await proxy.close();
    }
  });

  test("Redis, pool of 4: concurrent compare-and-set across instances never loses a write", async (t) => {
    if (skip(t)) return;
    await using store = await HandleStore.open("pool-cas", { stateUrl: redis!.url, logger: quiet, poolSize: 4 });
    const { handle } = await store.create("p", enc.encode("0"));
    const conflicts = await increments(store, handle, 8, 25);
    assert.equal(store.instances, 4);
    const v = await store.get(handle, "p");
    assert.equal(dec.decode(v.data), "200");
    assert.equal(v.generation, 201);
    assert.ok(conflicts > 0, "the callers did race");
  });

  test("files, pool of 4: concurrent compare-and-set across instances never loses a write", async () => {
    await using store = await HandleStore.open("pool-cas", { stateRoot: path.join(tempDir(), "state"), logger: quiet, poolSize: 4 });
    const { handle } = await store.create("p", enc.encode("0"));
    await increments(store, handle, 8, 25);
    const v = await store.get(handle, "p");
    assert.equal(dec.decode(v.data), "200");
    assert.equal(v.generation, 201);
  });

  test("Redis, pool of 4: close with calls in flight lets every one complete, then closes every instance; later calls reject not_open", async (t) => {
    if (skip(t)) return;
    const store = await HandleStore.open("pool-close", { stateUrl: redis!.url, logger: quiet, poolSize: 4 });
    const handles = await Promise.all(Array.from({ length: 12 }, (_, i) => store.create("", enc.encode(`c${i}`)).then((c) => c.handle)));
    const calls = handles.map((h) => store.get(h, ""));
    const puts = handles.map((h, i) => store.put(h, "", enc.encode(`d${i}`)));
    const closing = store.close();
    assert.ok(store.instances > 1, "the calls overlapped");
    const got = await Promise.all(calls);
    assert.deepEqual(got.map((v) => dec.decode(v.data)), handles.map((_, i) => `c${i}`));
    assert.deepEqual(await Promise.all(puts), handles.map(() => 2));
    await closing;
    assert.equal(store.instances, 0);
    await assert.rejects(store.get(handles[0]!, ""), (e: unknown) => e instanceof MCPResumeError && e.code === "not_open");
    await store.close(); // idempotent
    // The writes made it before close.
    await using again = await HandleStore.open("pool-close", { stateUrl: redis!.url, logger: quiet });
    assert.equal(dec.decode((await again.get(handles[11]!, "")).data), "d11");
  });

  test("an instance that traps is dropped, not reused; the next call gets a new one; close closes every instance", async () => {
    const wasm = await goBuild("./sdk-bindings/typescript/test/testdata/testplugin", path.join(tempDir("testplugin-"), "cur.wasm"), { GOOS: "wasip1", GOARCH: "wasm" },
      ["-buildmode=c-shared", `-ldflags=-X main.abiVersion=${ABI_VERSION}`]);
    const made: ResumeTokenStore[] = [];
    const make = async () => {
      const s = await loadStore(quiet, wasm, new HostFunctions({ logger: quiet }));
      made.push(s);
      return s;
    };
    const warnings: string[] = [];
    const pool = new Pool(await make(), 2, make, { ...quiet, warn: (_m: string, f?: Record<string, unknown>) => void warnings.push(String(f?.["event"])) });
    const used: ResumeTokenStore[] = [];
    const run = (name: string) => pool.run((inst) => (used.push(inst), callExport(inst, name)));
    assert.equal((await run("reject")).ok, true);
    const trapped = await run("load");
    assert.equal(trapped.ok, false);
    assert.equal(!trapped.ok && trapped.code, "plugin_failed");
    assert.deepEqual(warnings, ["handle_instance_dropped"]);
    assert.equal(pool.size, 0, "the trapped instance is gone");
    assert.equal((await run("reject")).ok, true);
    assert.equal(made.length, 2, "a new instance was made");
    assert.notEqual(used[2], used[1], "the trapped instance was not reused");
    assert.equal(pool.size, 1);
    // Two overlapping calls: a second instance, then both closed by close.
    await Promise.all([run("reject"), run("reject")]);
    assert.equal(pool.size, 2);
    await pool.close();
    assert.equal(pool.size, 0);
    for (const s of made) await assert.rejects(s.list(), /closed/, "every instance is closed");
  });
});

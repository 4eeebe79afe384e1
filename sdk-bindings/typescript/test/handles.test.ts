// HandleStore with the real plugin on real files: every method and every
// error class, lifetimes with a clock the test controls, eviction, the
// shard lock held by another store, compare-and-set increments from many
// async callers and from two Node processes (the final count equals the
// successful puts), and the guest's random source behind the handles.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { after, describe, test } from "node:test";

import { HostFunctions } from "../src/hostfuncs.js";
import {
  ConflictError, HandleEvictedError, HandleExpiredError, HandleNotFoundError, HandleStore, MCPResumeError, InvalidHandleError, InvalidOptionError,
  InvalidPrincipalError, StoreUnavailableError, ValueTooLargeError, type HandleStoreOptions,
} from "../src/index.js";
import type { Logger, LogFields } from "../src/logger.js";
import { cleanupTemps, PKG, tempDir } from "./helpers.js";

after(cleanupTemps);

const enc = new TextEncoder();
const dec = new TextDecoder();
const quiet: Logger = { debug() {}, info() {}, warn() {}, error() {} };
const HANDLE = /^mrh1_[A-Za-z0-9_-]{32}$/;

/** A store of app `app` in a fresh root, with captured log lines. */
async function open(options: HandleStoreOptions = {}, app = "hs-test") {
  const root = tempDir("handles-");
  const logs: Array<{ level: string; message: string; fields?: LogFields }> = [];
  const add = (level: string) => (message: string, fields?: LogFields) => logs.push({ level, message, ...(fields ? { fields } : {}) });
  const store = await HandleStore.open(app, { stateRoot: root, logger: { debug: add("debug"), info: add("info"), warn: add("warn"), error: add("error") }, ...options });
  return { store, root, dir: path.join(root, app, "handles"), logs };
}

/** Resolves with the error `p` rejects with (failing when it resolves). */
async function failure<T extends Error>(p: Promise<unknown>, cls: new (...a: any[]) => T, code: string): Promise<T> {
  const e = await p.then(
    () => assert.fail(`resolved, want ${cls.name}`),
    (x: unknown) => x,
  );
  assert.ok(e instanceof cls, `want ${cls.name}, got ${(e as Error)?.name}: ${(e as Error)?.message}`);
  assert.ok(e instanceof MCPResumeError);
  assert.equal((e as MCPResumeError).code, code);
  return e as T;
}

describe("HandleStore", () => {
  test("create, get, put, touch, exists, list, gc, delete: shapes, units and generations", async () => {
    const { store, dir, logs } = await open();
    assert.equal(store.settings.stateDir, dir);
    assert.deepEqual({ ...store.settings, stateDir: "", stateRoot: "" }, {
      backend: "file", stateDir: "", stateRoot: "", idleTtlMs: 86_400_000, maxAgeMs: 30 * 86_400_000, tombstoneMs: 7 * 86_400_000, maxHandles: 10_000, maxHandlesPerPrincipal: 2_500, maxValueBytes: 1 << 20, shards: 64,
    });
    const before = Date.now();
    const c = await store.create("alice", enc.encode("the value"));
    assert.equal(fs.statSync(dir).mode & 0o777, 0o700, "made by the first operation, 0700");
    assert.match(c.handle, HANDLE);
    assert.equal(c.generation, 1);
    assert.equal(c.idleTtlMs, 86_400_000);
    assert.ok(c.createdMs >= before - 1000 && c.createdMs <= Date.now() + 1000, "Unix milliseconds");
    const v = await store.get(c.handle, "alice");
    assert.equal(dec.decode(v.data), "the value");
    assert.ok(v.data instanceof Uint8Array);
    assert.deepEqual({ ...v, data: undefined }, { data: undefined, generation: 1, createdMs: c.createdMs, idleTtlMs: 86_400_000, maxAgeMs: 30 * 86_400_000 });
    assert.equal(await store.put(c.handle, "alice", enc.encode("v2")), 2, "no expect: last writer wins");
    assert.equal(await store.put(c.handle, "alice", enc.encode("v3"), { expect: 2 }), 3);
    assert.deepEqual(await store.touch(c.handle, "alice"), { generation: 3, idleTtlMs: 86_400_000, maxAgeMs: 30 * 86_400_000 });
    assert.equal(await store.exists(c.handle, "alice"), true);
    assert.equal(await store.exists(c.handle, "bob"), false, "another principal: as unknown");
    const list = await store.list();
    assert.equal(list.live, 1);
    assert.equal(list.handles.length, 1);
    const e = list.handles[0]!;
    assert.match(e.key, /^[0-9a-f]{12}$/);
    assert.equal(e.state, "live");
    assert.equal(e.generation, 3);
    assert.ok(e.ageMs >= 0 && e.idleMs >= 0);
    assert.ok(!JSON.stringify(list).includes(c.handle) && !JSON.stringify(list).includes("alice"), "list never shows a handle or principal");
    assert.deepEqual(await store.gc(), { expiredIdle: 0, expiredMaxAge: 0, tombstonesDropped: 0, orphansRemoved: 0, tempsRemoved: 0, live: 1 });
    await failure(store.delete(c.handle, "alice", { expect: 2 }), ConflictError, "conflict");
    await store.delete(c.handle, "alice", { expect: 3 });
    await failure(store.get(c.handle, "alice"), HandleNotFoundError, "handle_not_found");
    assert.equal(await store.exists(c.handle, "alice"), false);
    await store.close();
    await store.close();
    const lines = JSON.stringify(logs);
    assert.ok(!lines.includes(c.handle) && !lines.includes("alice") && !lines.includes("the value"), "no secret in the log lines");
    assert.ok(logs.some((l) => l.fields?.event === "handle_created"), JSON.stringify(logs));
  });

  test("another app under the same root never reads a handle, even with the record copied into its directory", async () => {
    const { store: a, root } = await open({}, "app-a");
    const b = await HandleStore.open("app-b", { stateRoot: root, logger: quiet });
    try {
      const c = await a.create("alice", enc.encode("a's secret"));
      await failure(b.get(c.handle, "alice"), HandleNotFoundError, "handle_not_found");
      await b.create("alice", enc.encode("b's own")); // app-b's directory exists now
      for (const name of fs.readdirSync(a.settings.stateDir).filter((n) => n.startsWith("h-"))) {
        fs.copyFileSync(path.join(a.settings.stateDir, name), path.join(b.settings.stateDir, name));
        fs.chmodSync(path.join(b.settings.stateDir, name), 0o600);
      }
      await failure(b.get(c.handle, "alice"), HandleNotFoundError, "handle_not_found");
      assert.equal(dec.decode((await a.get(c.handle, "alice")).data), "a's secret");
    } finally {
      await b.close();
      await a.close();
    }
  });

  test("the value is sealed at rest: no file holds it; records are 0600", async () => {
    const { store, dir } = await open();
    const secret = "very-secret-notebook-content-0123456789";
    const c = await store.create("", enc.encode(secret));
    await store.put(c.handle, "", enc.encode(secret + secret));
    for (const f of fs.readdirSync(dir)) {
      const p = path.join(dir, f);
      assert.ok(!fs.readFileSync(p).includes(Buffer.from(secret)), `${f} holds the value`);
      assert.ok(!fs.readFileSync(p).includes(Buffer.from(c.handle)), `${f} holds the handle`);
      assert.equal(fs.statSync(p).mode & 0o777, 0o600, f);
    }
    assert.equal(fs.readdirSync(dir).filter((f) => f.startsWith("h-")).length, 1);
    await store.close();
  });

  test("errors: InvalidHandleError, HandleNotFoundError for another principal, ConflictError with the current generation, ValueTooLargeError writes nothing, InvalidPrincipalError, invalid_value", async () => {
    const { store, dir } = await open({ maxValueBytes: 16 });
    const c = await store.create("", enc.encode("x"));
    for (const h of ["", "mrh1_", "nope", c.handle + "A", c.handle.slice(0, -1) + "é", "mrh2_" + c.handle.slice(5)]) {
      await failure(store.get(h, ""), InvalidHandleError, "invalid_handle");
    }
    await failure(store.exists("nope", ""), InvalidHandleError, "invalid_handle");
    await failure(store.get(c.handle, "mallory"), HandleNotFoundError, "handle_not_found");
    await failure(store.put(c.handle, "mallory", enc.encode("y")), HandleNotFoundError, "handle_not_found");
    await store.put(c.handle, "", enc.encode("y"));
    const conflict = await failure(store.put(c.handle, "", enc.encode("z"), { expect: 1 }), ConflictError, "conflict");
    assert.equal(conflict.generation, 2);
    assert.equal(dec.decode((await store.get(c.handle, "")).data), "y", "nothing changed");
    const records = () => fs.readdirSync(dir).filter((f) => f.startsWith("h-")).length;
    await failure(store.create("", new Uint8Array(17)), ValueTooLargeError, "value_too_large");
    await failure(store.put(c.handle, "", new Uint8Array(17)), ValueTooLargeError, "value_too_large");
    assert.equal(records(), 1, "nothing written");
    assert.equal((await store.get(c.handle, "")).generation, 2);
    await failure(store.create("x".repeat(1025), enc.encode("v")), InvalidPrincipalError, "invalid_principal");
    await failure(store.get(c.handle, 5 as unknown as string), InvalidPrincipalError, "invalid_principal");
    const bad = await failure(store.create("", "text" as unknown as Uint8Array), MCPResumeError, "invalid_value");
    assert.match(bad.message, /Uint8Array/);
    await store.close();
    const closed = await failure(store.get(c.handle, ""), MCPResumeError, "not_open");
    assert.match(closed.message, /closed/);
  });

  test("options: a per-handle TTL may only shorten the store's; bad option types and environment values are InvalidOptionError", async () => {
    const { store, root } = await open({ idleTtlMs: 60_000, maxAgeMs: 120_000 });
    const c = await store.create("", enc.encode("v"), { idleTtlMs: 1000, maxAgeMs: 5000 });
    assert.deepEqual([c.idleTtlMs, c.maxAgeMs], [1000, 5000]);
    const e = await failure(store.create("", enc.encode("v"), { idleTtlMs: 60_001 }), InvalidOptionError, "invalid_option");
    assert.match(e.message, /idleTtlMs may only shorten/);
    await store.close();
    await failure(HandleStore.open("hs-test", { stateRoot: root, logger: quiet, maxHandles: "ten" as unknown as number }), InvalidOptionError, "invalid_option");
    for (const [k, v] of [["MCP_RESUME_STATE_IDLE_TTL", "banana"], ["MCP_RESUME_STATE_MAX_AGE", "-5s"]] as const) {
      process.env[k] = v;
      try {
        const err = await failure(HandleStore.open("hs-test", { stateRoot: root, logger: quiet }), InvalidOptionError, "invalid_option");
        assert.match(err.message, new RegExp(k));
      } finally {
        delete process.env[k];
      }
    }
    process.env["MCP_RESUME_STATE_IDLE_TTL"] = "90s";
    try {
      const s = await HandleStore.open("hs-test", { stateRoot: root, logger: quiet });
      assert.equal(s.settings.idleTtlMs, 90_000, "the environment sets the idle TTL");
      await s.close();
    } finally {
      delete process.env["MCP_RESUME_STATE_IDLE_TTL"];
    }
    await failure(HandleStore.open("no/slash", { stateRoot: root, logger: quiet }), MCPResumeError, "invalid_app");
  });

  test("MCP_RESUME=off turns resume off, not the handle store", async () => {
    process.env["MCP_RESUME"] = "off";
    try {
      const { store } = await open();
      const c = await store.create("", enc.encode("still here"));
      assert.equal(dec.decode((await store.get(c.handle, "")).data), "still here");
      await store.close();
    } finally {
      delete process.env["MCP_RESUME"];
    }
  });
});

describe("HandleStore lifetimes with a clock", () => {
  test("idle expiry, refreshed by get and put; then HandleExpiredError(idle) for the tombstone period, then HandleNotFoundError", async () => {
    let now = Date.UTC(2026, 0, 1);
    const { store, logs } = await open({ clock: () => now, idleTtlMs: 10_000, tombstoneMs: 60_000 });
    const c = await store.create("", enc.encode("v"));
    assert.equal(c.createdMs, now, "the clock is the store's");
    now += 9_000;
    await store.get(c.handle, ""); // refreshes idle
    now += 9_000;
    await store.put(c.handle, "", enc.encode("w"));
    now += 9_000;
    assert.equal(await store.exists(c.handle, ""), true, "exists never refreshes");
    now += 1_001;
    assert.equal(await store.exists(c.handle, ""), false);
    const e = await failure(store.get(c.handle, ""), HandleExpiredError, "handle_expired");
    assert.equal(e.reason, "idle");
    assert.ok(logs.some((l) => l.fields?.event === "handle_expired"), JSON.stringify(logs));
    now += 60_001;
    await failure(store.get(c.handle, ""), HandleNotFoundError, "handle_not_found");
    await store.close();
  });

  test("maximum age: nothing extends it; HandleExpiredError(max_age)", async () => {
    let now = Date.UTC(2026, 0, 1);
    const { store } = await open({ clock: () => now, idleTtlMs: 10_000, maxAgeMs: 25_000 });
    const c = await store.create("", enc.encode("v"));
    for (let i = 0; i < 4; i++) {
      now += 6_000;
      await store.touch(c.handle, "");
    }
    now += 1_001;
    const e = await failure(store.touch(c.handle, ""), HandleExpiredError, "handle_expired");
    assert.equal(e.reason, "max_age");
    await store.close();
  });

  test("capacity: the least recently used handle is evicted and answers HandleEvictedError; gc counts and drops tombstones", async () => {
    let now = Date.UTC(2026, 0, 1);
    // One principal: its quota is the whole cap (the default, a quarter, would evict at 1).
    const { store } = await open({ clock: () => now, maxHandles: 2, maxHandlesPerPrincipal: 2, tombstoneMs: 5_000 });
    assert.equal(store.settings.shards, 1);
    // Steps of two minutes: the LRU order has the refresh resolution,
    // min(idle TTL / 64, 60 s) on files.
    const a = await store.create("", enc.encode("a"));
    now += 120_000;
    const b = await store.create("", enc.encode("b"));
    now += 120_000;
    await store.get(a.handle, ""); // a is now more recent than b
    now += 120_000;
    const c = await store.create("", enc.encode("c"));
    await failure(store.get(b.handle, ""), HandleEvictedError, "handle_evicted");
    assert.equal(dec.decode((await store.get(a.handle, "")).data), "a");
    assert.equal(dec.decode((await store.get(c.handle, "")).data), "c");
    const list = await store.list();
    assert.deepEqual([list.live, list.tombstones], [2, 1]);
    assert.deepEqual(list.handles.map((h) => h.state).sort(), ["evicted", "live", "live"]);
    now += 5_001;
    const gc = await store.gc();
    assert.equal(gc.tombstonesDropped, 1);
    assert.equal(gc.live, 2);
    await failure(store.get(b.handle, ""), HandleNotFoundError, "handle_not_found");
    await store.close();
  });
});

describe("HandleStore concurrency", () => {
  test("a shard lock held by another store: StoreUnavailableError after lockWaitMs; released, the call goes through", async () => {
    const { store, dir } = await open({ maxHandles: 100, lockWaitMs: 150 });
    assert.equal(store.settings.shards, 1);
    const c = await store.create("", enc.encode("v"));
    const other = new HostFunctions({ logger: quiet });
    other.confine(dir);
    // The plugin names a lock's socket from its state directory and file name (plugin/internal/resume, LockSocket).
    const socket = "mcp-resume-lock-" + createHash("sha256").update(`${dir}/lock-00`).digest("hex").slice(0, 40);
    const call = (fn: string) => JSON.parse(Buffer.from(other.call(fn, Buffer.from(JSON.stringify({ name: "lock-00", socket })))).toString());
    assert.deepEqual(call("mcp_resume_lock"), {});
    const t0 = performance.now();
    // touch takes the shard's lock; a get right after the create may read the record alone, without it.
    const e = await failure(store.touch(c.handle, ""), StoreUnavailableError, "store_unavailable");
    assert.ok(performance.now() - t0 >= 140, "waited lockWaitMs");
    assert.match(e.message, /busy/);
    assert.deepEqual(call("mcp_resume_unlock"), {});
    assert.equal(dec.decode((await store.get(c.handle, "")).data), "v");
    await other.close();
    await store.close();
  });

  test("compare-and-set increments from many async callers of one store: the final count equals the successful puts", async () => {
    const { store } = await open();
    const c = await store.create("", enc.encode(JSON.stringify({ count: 0 })));
    let puts = 0;
    let conflicts = 0;
    const order: number[] = [];
    await Promise.all(
      Array.from({ length: 8 }, async (_, w) => {
        for (let done = 0; done < 10; ) {
          const v = await store.get(c.handle, "");
          const { count } = JSON.parse(dec.decode(v.data)) as { count: number };
          try {
            await store.put(c.handle, "", enc.encode(JSON.stringify({ count: count + 1 })), { expect: v.generation });
            order.push(w);
            done++;
            puts++;
          } catch (e) {
            if (!(e instanceof ConflictError)) throw e;
            conflicts++;
          }
        }
      }),
    );
    const v = await store.get(c.handle, "");
    assert.equal(JSON.parse(dec.decode(v.data)).count, puts);
    assert.equal(v.generation, 1 + puts);
    assert.equal(puts, 80);
    assert.ok(conflicts > 0, "interleaved callers conflict (calls queue FIFO, so a get-put pair is not atomic)");
    await store.close();
  });

  test("compare-and-set increments from two Node processes (and this one): the final count equals the successful puts", async () => {
    const { store, root } = await open({}, "hs-cas");
    const c = await store.create("", enc.encode(JSON.stringify({ count: 0 })));
    const children = [0, 1].map(() => spawn(process.execPath, [path.join(PKG, "test", "fixtures", "cas.mjs"), root, "hs-cas", c.handle, "4", "15"], { stdio: ["pipe", "pipe", "inherit"] }));
    const lines = children.map(
      (ch) =>
        new Promise<string[]>((resolve, reject) => {
          let out = "";
          ch.stdout!.on("data", (d: Buffer) => (out += d));
          ch.once("exit", (code) => (code === 0 ? resolve(out.trim().split("\n")) : reject(new Error(`cas.mjs exited ${code}: ${out}`))));
        }),
    );
    // Wait until both print "ready", then start them together.
    await Promise.all(children.map((ch) => new Promise<void>((r) => ch.stdout!.once("data", () => r()))));
    for (const ch of children) ch.stdin!.end("go\n");
    let mine = 0;
    for (let done = 0; done < 15; ) {
      const v = await store.get(c.handle, "");
      try {
        await store.put(c.handle, "", enc.encode(JSON.stringify({ count: JSON.parse(dec.decode(v.data)).count + 1 })), { expect: v.generation });
        done++;
        mine++;
      } catch (e) {
        if (!(e instanceof ConflictError)) throw e;
      }
    }
    const reports = (await Promise.all(lines)).map((l) => JSON.parse(l.at(-1)!) as { puts: number; conflicts: number; errors: string[] });
    for (const r of reports) assert.deepEqual(r.errors, []);
    const puts = mine + reports.reduce((n, r) => n + r.puts, 0);
    assert.equal(puts, 15 + 2 * 4 * 15);
    const v = await store.get(c.handle, "");
    assert.equal(JSON.parse(dec.decode(v.data)).count, puts, "no lost update");
    assert.equal(v.generation, 1 + puts);
    await store.close();
  });
});

test("handles come from the OS random source: 10,000 from two plugin instances are distinct, 24 bytes each", async () => {
  const root = tempDir("handles-rand-");
  const seen = new Set<string>();
  let ones = 0;
  for (const app of ["rand-a", "rand-b"]) {
    // Lifetimes and capacity do not matter here: evictions keep creating.
    const store = await HandleStore.open(app, { stateRoot: root, logger: quiet, maxValueBytes: 16 });
    for (let i = 0; i < 5000; i++) {
      const { handle } = await store.create("", new Uint8Array(0));
      assert.match(handle, HANDLE);
      const raw = Buffer.from(handle.slice(5), "base64url");
      assert.equal(raw.length, 24);
      for (const b of raw) for (let k = b; k; k &= k - 1) ones++;
      seen.add(raw.toString("hex"));
    }
    await store.close();
  }
  assert.equal(seen.size, 10_000, "a handle was drawn twice: the guest's random source is not real");
  const share = ones / (10_000 * 24 * 8);
  assert.ok(Math.abs(share - 0.5) < 0.01, `share of one bits ${share}`);
});

// The public API's one shape (docs/API.md): opening both stores with (app, options?), refusing unknown
// options, one error family, `await using`, the 4 MiB value limit on the file backend, and a store never
// closed leaving no FileHandle to the garbage collector (no DEP0137). Real plugin, real files, real child
// processes; run under a terminal (bin/withtty) so the resume store's lock is really taken.
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { cpSync, mkdirSync, symlinkSync } from "node:fs";
import * as path from "node:path";
import { after, test } from "node:test";

import {
  HandleStore, InvalidAppError, InvalidOptionError, InvalidValueError, MCPResumeError, ConflictError, HandleNotFoundError, ResumeTokenStore,
} from "../src/index.js";
import { cleanupTemps, PKG, tempDir } from "./helpers.js";

after(cleanupTemps);
const quiet = { debug() {}, info() {}, warn() {}, error() {} };
const enc = (s: string) => new TextEncoder().encode(s);

test("both stores refuse an unknown option with InvalidOptionError", async () => {
  const root = tempDir();
  await assert.rejects(ResumeTokenStore.open("app1", { stateRoot: root, logger: quiet, idleTtl: 5 } as never), (e: unknown) => {
    assert.ok(e instanceof InvalidOptionError && e instanceof MCPResumeError);
    assert.equal((e as InvalidOptionError).code, "invalid_option");
    assert.match((e as Error).message, /"idleTtl"/);
    return true;
  });
  await assert.rejects(HandleStore.open("app1", { stateRoot: root, logger: quiet, idleTTLMs: 5 } as never), (e: unknown) => {
    assert.ok(e instanceof InvalidOptionError);
    assert.match((e as Error).message, /"idleTTLMs"/);
    return true;
  });
});

test("a bad app name is the same InvalidAppError from both stores", async () => {
  const root = tempDir();
  const a = await ResumeTokenStore.open("-bad", { stateRoot: root, logger: quiet }).then(() => undefined, (e: unknown) => e);
  const b = await HandleStore.open("-bad", { stateRoot: root, logger: quiet }).then(() => undefined, (e: unknown) => e);
  assert.ok(a instanceof InvalidAppError, String(a));
  assert.ok(b instanceof InvalidAppError, String(b));
  assert.equal((a as InvalidAppError).code, "invalid_app");
  assert.equal((b as InvalidAppError).code, "invalid_app");
});

test("await using closes both stores; put and delete without expect are unconditional", async () => {
  const root = tempDir();
  let kept: HandleStore;
  {
    await using handles = await HandleStore.open("app2", { stateRoot: root, logger: quiet });
    await using tokens = await ResumeTokenStore.open("app2", { stateRoot: root, logger: quiet });
    kept = handles;
    const { handle } = await handles.create("p", enc("a"));
    assert.equal(await handles.put(handle, "p", enc("b")), 2);
    assert.equal(await handles.put(handle, "p", enc("c")), 3); // no expect: whatever the generation
    await assert.rejects(handles.put(handle, "p", enc("d"), { expect: 2 }), (e: unknown) => e instanceof ConflictError && e.generation === 3);
    await handles.delete(handle, "p");
    await assert.rejects(handles.get(handle, "p"), HandleNotFoundError);
    await assert.rejects(handles.create("p", "text" as never), InvalidValueError);
    void tokens;
  }
  await assert.rejects(kept.list(), (e: unknown) => e instanceof MCPResumeError && e.code === "not_open");
});

test("a 4 MiB value round-trips on the file backend", async () => {
  const root = tempDir();
  await using handles = await HandleStore.open("app3", { stateRoot: root, logger: quiet, maxValueBytes: 4 << 20 });
  const big = new Uint8Array(4 << 20);
  for (let i = 0; i < big.length; i++) big[i] = (i * 31 + 7) & 0xff;
  const { handle } = await handles.create("", big);
  const got = await handles.get(handle, "");
  assert.equal(got.data.length, big.length);
  assert.ok(Buffer.from(got.data).equals(Buffer.from(big)));
  big[0] = 1;
  assert.equal(await handles.put(handle, "", big, { expect: got.generation }), 2);
});

test("stores never closed leave no FileHandle to the garbage collector (no DEP0137)", async () => {
  const root = tempDir();
  const run = () =>
    new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
      const child = spawn(process.execPath, ["--expose-gc", path.join(PKG, "test", "fixtures", "unclosed.mjs"), root], { stdio: ["pipe", "pipe", "pipe"] });
      let out = "";
      let err = "";
      child.stdout.on("data", (d: Buffer) => (out += d));
      child.stderr.on("data", (d: Buffer) => (err += d));
      child.on("exit", (code) => resolve({ code, out, err }));
    });
  const first = await run();
  assert.equal(first.code, 0, first.err);
  assert.doesNotMatch(first.err, /DEP0137|FileHandle/);
  // The lock was really held and released at exit: the relaunch under the same host resumes.
  const second = await run();
  assert.equal(second.code, 0, second.err);
  assert.doesNotMatch(second.err, /DEP0137|FileHandle/);
  if (first.out === "resumed none\n") assert.equal(second.out, "resumed tok-unclosed\n", "under a terminal (bin/withtty) the relaunch resumes");
});

test("without the optional dependency redis, a Redis store answers StoreUnavailableError saying npm install redis", () => {
  // The built package alone, with @extism/extism and no redis beside it, as a user who never installed redis has it.
  const pkg = path.join(tempDir(), "node_modules", "mcp-resume");
  mkdirSync(path.join(pkg, "node_modules"), { recursive: true });
  for (const f of ["dist", "plugin.wasm", "package.json"]) cpSync(path.join(PKG, f), path.join(pkg, f), { recursive: true });
  symlinkSync(path.join(PKG, "node_modules", "@extism"), path.join(pkg, "node_modules", "@extism"));
  const code = `
    const { HandleStore, StoreUnavailableError } = await import(${JSON.stringify(path.join(pkg, "dist", "index.js"))});
    const quiet = { debug() {}, info() {}, warn() {}, error() {} };
    try {
      await HandleStore.open("app4", { stateUrl: "redis://127.0.0.1:1", logger: quiet });
      console.error("opened");
    } catch (e) {
      console.error(e instanceof StoreUnavailableError ? "unavailable: " + e.message : "other: " + e);
    }`;
  const r = spawnSync(process.execPath, ["--input-type=module", "-e", code], { encoding: "utf8", cwd: path.dirname(pkg) });
  assert.equal(r.stdout, "");
  assert.match(r.stderr, /^unavailable: .*npm install redis/m, r.stderr);
});

// The public API on the real plugin in the real Extism runtime: app names,
// state directories, tokens, serialisation, close, the shipped bytes, and the
// Extism 1.0.3 traps (get_log_level, memory growth, the WASI warning, stdout).
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { after, before, describe, test } from "node:test";

import { compiledModule, extismEnvExtras, loadExtism } from "../src/extism.js";
import {
  createStderrLogger,
  defaultStateDir,
  InvalidAppError,
  InvalidTokenError,
  PluginError,
  ResumeTokenStore,
  type Logger,
} from "../src/index.js";
import { ABI_VERSION, FUNCTIONS, NAMESPACE } from "../src/hostfuncs.js";
import { HostFunctions } from "../src/hostfuncs.js";
import { LinuxProcSource } from "../src/procid/linux.js";
import { callExport, ENV_INSTANCE, NO_INSTANCE, openStore, PLUGIN_WASM_URL, resolveInstance } from "../src/store.js";
import { cleanupTemps, goBuild, PKG, ROOT, startHolder, tempDir } from "./helpers.js";

after(cleanupTemps);

type Line = { level: string; message: string; fields?: Record<string, unknown> };
function capture(): { logger: Logger; lines: Line[] } {
  const lines: Line[] = [];
  const add = (level: string) => (message: string, fields?: Record<string, unknown>) => lines.push({ level, message, ...(fields ? { fields } : {}) });
  return { logger: { debug: add("debug"), info: add("info"), warn: add("warn"), error: add("error") }, lines };
}

const ID = { pid: 4242, startTime: "98765.0f1e2d3c4b5a69788796a5b4c3d2e1f0" };
const FILE = `token-${ID.pid}-${ID.startTime}`;
const LOCK = `lock-${ID.pid}-${ID.startTime}`;

/** The pinned host ID is "alive" (as a real host would be while its servers run), so prune keeps its files. */
const idAlive = (pid: number, startTime: string): boolean => pid === ID.pid && startTime === ID.startTime;

function open(extra: Partial<Parameters<typeof ResumeTokenStore.open>[0]> = {}) {
  const dir = path.join(tempDir(), "state");
  const { logger, lines } = capture();
  return ResumeTokenStore.open({ app: "test-app", stateDir: dir, logger, identity: () => ID, instance: "", alive: idAlive, ...extra }).then((store) => ({
    store,
    dir,
    lines,
  }));
}

/** Opens another store on `dir` (another server instance), with its own log. */
async function openOn(dir: string, extra: Partial<Parameters<typeof ResumeTokenStore.open>[0]> = {}) {
  const { logger, lines } = capture();
  const store = await ResumeTokenStore.open({ app: "test-app", stateDir: dir, logger, identity: () => ID, instance: "", alive: idAlive, ...extra });
  return { store, lines };
}

const MSG_BUSY = "Another server instance under this host holds the token file, session resume disabled for this instance";

/** Runs `node --input-type=module -e <code>` and returns stdout, stderr and the exit code. */
function nodeEval(code: string, env: NodeJS.ProcessEnv = process.env, args: string[] = []): Promise<{ stdout: string; stderr: string; code: number | null }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [...args, "--input-type=module", "-e", code], { env, cwd: PKG, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    p.stdout.on("data", (d: Buffer) => (stdout += d));
    p.stderr.on("data", (d: Buffer) => (stderr += d));
    p.on("exit", (code) => resolve({ stdout, stderr, code }));
  });
}

const DIST = new URL("../dist/index.js", import.meta.url).href;

describe("open", () => {
  test("app names: the Go rule", async () => {
    for (const app of ["", ".x", "-x", "_x", "a/b", "a b", "x".repeat(65), "é", "../x"]) {
      await assert.rejects(ResumeTokenStore.open({ app }), InvalidAppError, JSON.stringify(app));
    }
    await assert.rejects(ResumeTokenStore.open(undefined as never), InvalidAppError);
    for (const app of ["a", "A9", "github-server", "x.y_z-1", "x".repeat(64)]) {
      const { store } = await open({ app });
      await store.close();
    }
  });
  test("state directory: option, then MCP_RESUME_STATE_DIR, then the XDG default; made absolute", async () => {
    const saved = process.env["MCP_RESUME_STATE_DIR"];
    try {
      const envDir = path.join(tempDir(), "from-env");
      process.env["MCP_RESUME_STATE_DIR"] = envDir;
      const a = await ResumeTokenStore.open({ app: "x", identity: () => ID, logger: capture().logger });
      assert.equal(a.stateDir, envDir);
      await a.close();
      const b = await ResumeTokenStore.open({ app: "x", stateDir: "rel/dir", identity: () => ID, logger: capture().logger });
      assert.equal(b.stateDir, path.resolve("rel/dir"));
      await b.close();
      delete process.env["MCP_RESUME_STATE_DIR"];
      const c = await ResumeTokenStore.open({ app: "my-app", identity: () => ID, logger: capture().logger });
      assert.equal(c.stateDir, defaultStateDir("my-app"));
      await c.close();
    } finally {
      if (saved === undefined) delete process.env["MCP_RESUME_STATE_DIR"];
      else process.env["MCP_RESUME_STATE_DIR"] = saved;
    }
  });
  test("defaultStateDir: as Go's adrg/xdg", () => {
    assert.equal(defaultStateDir("app", {}, "linux", "/home/u"), "/home/u/.local/state/mcp-resume/app");
    assert.equal(defaultStateDir("app", { XDG_STATE_HOME: "/x/state" }, "linux", "/home/u"), "/x/state/mcp-resume/app");
    assert.equal(defaultStateDir("app", { XDG_STATE_HOME: "relative" }, "linux", "/home/u"), "/home/u/.local/state/mcp-resume/app");
    assert.equal(defaultStateDir("app", { XDG_STATE_HOME: "~/st" }, "linux", "/home/u"), "/home/u/st/mcp-resume/app");
    assert.equal(defaultStateDir("app", {}, "darwin", "/Users/u"), "/Users/u/Library/Application Support/mcp-resume/app");
    // macOS ignores XDG_STATE_HOME: an MCP host started from the Dock passes no XDG variables.
    assert.equal(defaultStateDir("app", { XDG_STATE_HOME: "/x/state" }, "darwin", "/Users/u"), "/Users/u/Library/Application Support/mcp-resume/app");
  });
  test("open touches no file: the state directory is created at the first load, after the identity", async () => {
    const { store, dir } = await open();
    assert.throws(() => statSync(dir));
    await store.load();
    assert.equal(statSync(dir).mode & 0o777, 0o700);
    await store.close();
  });
  test("the identity source is called once, before the first load/store/reject, never for list", async () => {
    let calls = 0;
    const { store } = await open({
      identity: async () => {
        calls++;
        return ID;
      },
    });
    await store.list();
    assert.equal(calls, 0);
    await store.load();
    await store.store("tok-A");
    await store.reject();
    assert.equal(calls, 1);
    await store.close();
  });
});

describe("load / store / reject", () => {
  test("first run, store, relaunch resumes; reject deletes", async () => {
    const { store, dir, lines } = await open();
    assert.equal(await store.load(), undefined);
    await store.store("tok-A");
    assert.equal(readFileSync(path.join(dir, FILE), "utf8"), "tok-A");
    assert.equal(statSync(path.join(dir, FILE)).mode & 0o777, 0o600);
    await store.close();
    const { logger, lines: lines2 } = capture();
    const again = await ResumeTokenStore.open({ app: "test-app", stateDir: dir, logger, identity: () => ID, instance: "" });
    assert.equal(await again.load(), "tok-A");
    await again.reject();
    assert.deepEqual(readdirSync(dir), [LOCK], "the lock file stays (never deleted)");
    await again.close();
    assert.deepEqual(lines.map((l) => l.message), ["Token file not found (first run or clean slate)"]);
    assert.deepEqual(lines2.map((l) => l.message), ["Broker rejected resume token, starting fresh session"]);
  });
  test("store rejects malformed tokens with InvalidTokenError('invalid token...')", async () => {
    const { store, dir } = await open();
    for (const bad of ["", "a b", "tok\n", "té", "x".repeat(4097), "\u0000"]) {
      await assert.rejects(store.store(bad), (e: unknown) => e instanceof InvalidTokenError && e.message.startsWith("invalid token"), JSON.stringify(bad));
    }
    await assert.rejects(store.store(42 as never), InvalidTokenError);
    await store.store("~".repeat(4096));
    assert.equal(readFileSync(path.join(dir, FILE), "utf8").length, 4096);
    await store.close();
  });
  test("store rejects malformed tokens even when resume is off", async () => {
    const { store, dir } = await open({
      identity: () => {
        throw new Error("nope");
      },
    });
    await assert.rejects(store.store("bad token"), InvalidTokenError);
    await store.store("good");
    assert.throws(() => statSync(dir));
    await store.close();
  });
  test("Extism 1.0.3 wraps a view's whole buffer: inputs from pooled Buffers are copied", async () => {
    const { store, dir } = await open();
    const pooled = Buffer.from("tok-pooled"); // a view into Node's 8 KiB pool
    assert.ok(pooled.buffer.byteLength > pooled.length);
    const r = await callExport(store, "store", pooled);
    assert.ok(r.ok);
    assert.equal(readFileSync(path.join(dir, FILE), "utf8"), "tok-pooled");
    await store.close();
  });
  test("concurrent calls are serialised", async () => {
    const { store, dir } = await open();
    const tokens = Array.from({ length: 50 }, (_, i) => `tok-${i}`);
    const results = await Promise.all(tokens.flatMap((t) => [store.store(t), store.load()]));
    // Every load saw exactly the token stored just before it.
    for (let i = 0; i < tokens.length; i++) assert.equal(results[2 * i + 1], tokens[i]);
    assert.equal(readFileSync(path.join(dir, FILE), "utf8"), "tok-49");
    await store.close();
  });
  test("calls made before close() still complete", async () => {
    const { store, dir } = await open();
    const pending = store.store("tok-before-close");
    const closed = store.close();
    await Promise.all([pending, closed]);
    assert.equal(readFileSync(path.join(dir, FILE), "utf8"), "tok-before-close");
  });
  test("close is idempotent; afterwards load is undefined, store/reject no-ops, list rejects", async () => {
    const { store, dir } = await open();
    await store.store("tok-A");
    await Promise.all([store.close(), store.close()]);
    assert.equal(await store.load(), undefined);
    await store.store("tok-B");
    await store.reject();
    assert.equal(readFileSync(path.join(dir, FILE), "utf8"), "tok-A");
    await assert.rejects(store.list(), PluginError);
  });
  test("list reports file names, never tokens", async () => {
    const { store } = await open();
    await store.store("tok-secret");
    const files = await store.list();
    assert.deepEqual(files, [{ name: FILE, pid: ID.pid, startTime: ID.startTime }]);
    assert.ok(!JSON.stringify(files).includes("tok-secret"));
    await store.close();
  });
  test("no log line ever holds a token", async () => {
    const { store, dir, lines } = await open();
    await store.load();
    await store.store("tok-SECRET-1");
    mkdirSync(path.join(dir, "x"));
    await store.reject();
    await store.store("tok-SECRET-2");
    await assert.rejects(store.store("tok SECRET-3"));
    await store.close();
    const text = JSON.stringify(lines);
    for (const t of ["SECRET-1", "SECRET-2", "SECRET-3"]) assert.ok(!text.includes(t), t);
  });
});

describe("instances", () => {
  test("resolveInstance: option, else $MCP_RESUME_INSTANCE, else the arguments after the script; '' and '-' are none", () => {
    const argv = ["/usr/bin/node", "/srv/server.js", "--profile", "work"];
    assert.equal(ENV_INSTANCE, "MCP_RESUME_INSTANCE");
    assert.equal(NO_INSTANCE, "-");
    assert.equal(resolveInstance("cfg-1", { MCP_RESUME_INSTANCE: "env" }, argv), "cfg-1");
    assert.equal(resolveInstance("", { MCP_RESUME_INSTANCE: "env" }, argv), "");
    assert.equal(resolveInstance("-", { MCP_RESUME_INSTANCE: "env" }, argv), "");
    assert.equal(resolveInstance(undefined, { MCP_RESUME_INSTANCE: "env" }, argv), "env");
    assert.equal(resolveInstance(undefined, { MCP_RESUME_INSTANCE: "-" }, argv), "");
    assert.equal(resolveInstance(undefined, { MCP_RESUME_INSTANCE: "" }, argv), "--profile\0work");
    assert.equal(resolveInstance(undefined, {}, argv), "--profile\0work");
    assert.equal(resolveInstance(undefined, {}, ["/usr/bin/node", "/srv/server.js"]), "");
  });
  test("an instance suffixes the file names with 16 hex digits of its SHA-256; list reports it", async () => {
    const { store, dir } = await open({ instance: "--profile\0work" });
    await store.store("tok-A");
    const suffix = "b24b083fc1a60d91"; // hostfuncs/conformance/cases/instance_suffix.json
    assert.deepEqual(readdirSync(dir).sort(), [`${LOCK}-${suffix}`, `${FILE}-${suffix}`]);
    assert.deepEqual(await store.list(), [{ name: `${FILE}-${suffix}`, pid: ID.pid, startTime: ID.startTime, instance: suffix }]);
    await store.close();
  });
  test("the default instance comes from MCP_RESUME_INSTANCE", async () => {
    const saved = process.env[ENV_INSTANCE];
    process.env[ENV_INSTANCE] = "profile-work"; // (an environment variable cannot hold NUL)
    try {
      const { store, dir } = await open({ instance: undefined });
      await store.store("tok-A");
      const suffix = createHash("sha256").update("profile-work").digest("hex").slice(0, 16);
      assert.deepEqual(readdirSync(dir).sort(), [`${LOCK}-${suffix}`, `${FILE}-${suffix}`]);
      await store.close();
    } finally {
      if (saved === undefined) delete process.env[ENV_INSTANCE];
      else process.env[ENV_INSTANCE] = saved;
    }
  });
  test("two instances with different keys under one host hold separate files and resume independently", async () => {
    const { store: a, dir } = await open({ instance: "a" });
    const { store: b } = await openOn(dir, { instance: "b" });
    await Promise.all([a.load(), b.load()]);
    await a.store("tok-A");
    await b.store("tok-B");
    await Promise.all([a.close(), b.close()]);
    const { store: a2 } = await openOn(dir, { instance: "a" });
    const { store: b2 } = await openOn(dir, { instance: "b" });
    assert.deepEqual(await Promise.all([a2.load(), b2.load()]), ["tok-A", "tok-B"]);
    await Promise.all([a2.close(), b2.close()]);
  });
});

describe("lock", () => {
  test("a second store with the same host and instance runs without resume (instance_busy) until the first closes", async () => {
    const { store: first, dir, lines } = await open();
    await first.load();
    await first.store("tok-A");
    const { store: second, lines: busyLines } = await openOn(dir);
    assert.equal(await second.load(), undefined, "the busy instance offers nothing");
    await second.store("tok-B");
    await second.reject();
    assert.equal(readFileSync(path.join(dir, FILE), "utf8"), "tok-A", "the busy instance writes nothing");
    assert.deepEqual(busyLines, [
      {
        level: "warn",
        message: MSG_BUSY,
        fields: { event: "instance_busy", detail: "set a distinct instance (host option or MCP_RESUME_INSTANCE) to resume each instance separately" },
      },
    ]);
    assert.deepEqual(lines.map((l) => l.fields?.["event"]), ["token_not_found"]);
    // Released by close: the next instance takes over and resumes.
    await first.close();
    const { store: third, lines: thirdLines } = await openOn(dir);
    assert.equal(await third.load(), "tok-A");
    assert.ok(!thirdLines.some((l) => l.fields?.["event"] === "instance_busy"));
    // A running busy instance does not retry.
    assert.equal(await second.load(), undefined);
    await Promise.all([second.close(), third.close()]);
  });
  test("released when the process holding it is killed with SIGKILL (a real child process)", async () => {
    const dir = path.join(tempDir(), "state");
    const { child, exited } = await startHolder("store", dir, String(ID.pid), ID.startTime);
    try {
      writeFileSync(path.join(dir, FILE), "tok-child");
      const { store: busy, lines } = await openOn(dir);
      assert.equal(await busy.load(), undefined);
      assert.equal(lines[0]?.fields?.["event"], "instance_busy");
      await busy.close();
      child.kill("SIGKILL");
      assert.equal(await exited, "SIGKILL");
      const { store: after, lines: afterLines } = await openOn(dir);
      assert.equal(await after.load(), "tok-child", "the kernel released the lock with the killed process");
      assert.deepEqual(afterLines, []);
      await after.close();
    } finally {
      child.kill("SIGKILL");
    }
  });
  test("the lock never keeps the process alive (a store left open still lets node exit)", async () => {
    const code = `
      import { ResumeTokenStore } from ${JSON.stringify(DIST)};
      const s = await ResumeTokenStore.open({ app: "w", stateDir: process.env.SD, instance: "", identity: () => ({ pid: 7, startTime: "1.a" }) });
      await s.load(); await s.store("tok-A");
      process.stderr.write("loaded\\n");`;
    const sd = path.join(tempDir(), "s");
    const r = await nodeEval(code, { ...process.env, SD: sd });
    assert.equal(r.code, 0, r.stderr);
    assert.ok(r.stderr.includes("loaded"), r.stderr);
    assert.deepEqual(readdirSync(sd).sort(), ["lock-7-1.a", "token-7-1.a"]);
  });
  test("a lock that cannot be taken (a directory at its name): lock_failed, resume off", async () => {
    const dir = path.join(tempDir(), "state");
    mkdirSync(path.join(dir, LOCK), { recursive: true, mode: 0o700 });
    const { store, lines } = await openOn(dir);
    assert.equal(await store.load(), undefined);
    await store.store("tok-A");
    assert.deepEqual(readdirSync(dir), [LOCK]);
    assert.equal(lines.length, 1, JSON.stringify(lines));
    assert.equal(lines[0]!.level, "warn");
    assert.equal(lines[0]!.message, "Could not lock the token file, session resume disabled for this instance");
    assert.equal(lines[0]!.fields?.["event"], "lock_failed");
    assert.match(String(lines[0]!.fields?.["detail"]), /^io: open lock /);
    await store.close();
  });
  test("a malformed store takes no lock and creates nothing", async () => {
    const { store, dir } = await open();
    await assert.rejects(store.store("bad token"), InvalidTokenError);
    assert.throws(() => statSync(dir));
    await store.close();
  });
});

describe("prune", () => {
  test("removes the files of gone hosts (stale_removed), keeps live ones and its own; needs no identity", async () => {
    const dir = path.join(tempDir(), "state");
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const me = process.platform === "linux" ? new LinuxProcSource("/proc").lookupSync(process.pid).startTime : "1.a";
    const live = `token-${process.pid}-${me}`;
    for (const n of ["token-2147483646-1.ab", "lock-2147483646-1.ab", live]) writeFileSync(path.join(dir, n), n.startsWith("lock") ? "" : "t");
    const alive = process.platform === "linux" ? undefined : (pid: number) => pid === process.pid;
    const { store, lines } = await openOn(dir, {
      identity: () => {
        throw new Error("not needed");
      },
      alive, // undefined on Linux: the real process table
    });
    assert.deepEqual(await store.prune(), ["token-2147483646-1.ab", "lock-2147483646-1.ab"]);
    assert.deepEqual(readdirSync(dir), [live]);
    assert.deepEqual(
      lines.map((l) => [l.level, l.message, l.fields?.["event"], l.fields?.["detail"]]),
      [
        ["info", "Removed stale token file", "stale_removed", "token-2147483646-1.ab: host gone"],
        ["info", "Removed stale token file", "stale_removed", "lock-2147483646-1.ab: host gone"],
      ],
    );
    assert.deepEqual(await store.prune(), []);
    await store.close();
    await assert.rejects(store.prune(), PluginError);
  });
  test("the first load prunes once; the alive seam decides", async () => {
    const seen: number[] = [];
    const { store, dir } = await open({
      alive: (pid) => {
        seen.push(pid);
        return pid === 7777;
      },
    });
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    writeFileSync(path.join(dir, "token-7777-2.cd"), "live");
    writeFileSync(path.join(dir, "token-8888-3.ef"), "gone");
    await store.load();
    await store.load();
    assert.deepEqual(readdirSync(dir).sort(), [LOCK, "token-7777-2.cd"]);
    assert.deepEqual(seen.sort(), [7777, 8888]);
    await store.close();
  });
});

describe("shipped plugin", () => {
  test("plugin.wasm shipped with the package is byte-identical to plugin/plugin.wasm", () => {
    const shipped = readFileSync(PLUGIN_WASM_URL);
    const committed = readFileSync(path.join(ROOT, "plugin", "plugin.wasm"));
    assert.ok(shipped.equals(committed), "run the build (copies plugin/plugin.wasm)");
    assert.equal(path.resolve(PKG, "plugin.wasm"), path.resolve(new URL(PLUGIN_WASM_URL).pathname));
  });
  test("the module is compiled once per process", async () => {
    assert.equal(compiledModule(PLUGIN_WASM_URL), compiledModule(PLUGIN_WASM_URL));
    const a = await open();
    const b = await open();
    assert.equal(await compiledModule(PLUGIN_WASM_URL), await compiledModule(PLUGIN_WASM_URL));
    await a.store.close();
    await b.store.close();
  });
  test("plugin.wasm does not import extism:host/env get_log_level, and imports exactly our nine host functions", async () => {
    const mod = (await compiledModule(PLUGIN_WASM_URL)) as unknown;
    const imports = (globalThis as any).WebAssembly.Module.imports(mod) as Array<{ module: string; name: string }>;
    assert.ok(!imports.some((i) => i.name === "get_log_level"));
    assert.deepEqual(imports.filter((i) => i.module === NAMESPACE).map((i) => i.name).sort(), [...FUNCTIONS].sort());
    assert.equal(FUNCTIONS.length, 9);
  });
});

describe("Extism 1.0.3 traps", () => {
  /** The test plugin speaking an older ABI version than this host. */
  let tpOld = "";
  /** The test plugin speaking this host's ABI version. */
  let tpCur = "";
  const OLD_ABI = String(Number(ABI_VERSION) - 1);
  before(async () => {
    const d = tempDir("testplugin-");
    const env = { GOOS: "wasip1", GOARCH: "wasm" };
    [tpOld, tpCur] = await Promise.all([
      goBuild("./sdk-bindings/typescript/test/testdata/testplugin", path.join(d, "old.wasm"), env, ["-buildmode=c-shared", `-ldflags=-X main.abiVersion=${OLD_ABI}`]),
      goBuild("./sdk-bindings/typescript/test/testdata/testplugin", path.join(d, "cur.wasm"), env, ["-buildmode=c-shared", `-ldflags=-X main.abiVersion=${ABI_VERSION}`]),
    ]);
  });

  test("get_log_level: a go-pdk plugin using pdk.Log fails to load in bare 1.0.3", async () => {
    const extism = await loadExtism();
    const fns = Object.fromEntries(FUNCTIONS.map((n) => [n, () => 0n]));
    await assert.rejects(
      extism.createPlugin({ wasm: [{ module: await compiledModule(tpOld) }] }, { useWasi: true, enableWasiOutput: false, functions: { [NAMESPACE]: fns } }),
      (e: unknown) => /get_log_level/.test(String(e)),
    );
    // With the extra extism:host/env function it links.
    const p = await extism.createPlugin(
      { wasm: [{ module: await compiledModule(tpOld) }] },
      { useWasi: true, enableWasiOutput: false, functions: { [NAMESPACE]: fns, "extism:host/env": extismEnvExtras() }, logger: capture().logger as unknown as Console },
    );
    await p.close();
  });

  test("ABI mismatch: PluginError naming both versions; pdk.Log reaches our logger, not stdout", async () => {
    const { logger, lines } = capture();
    await assert.rejects(
      openStore({ app: "x", stateDir: tempDir(), logger, identity: () => ID }, tpOld),
      (e: unknown) => e instanceof PluginError && e.message.includes(`plugin ABI version "${OLD_ABI}", this host implements "${ABI_VERSION}"`),
    );
    assert.deepEqual(lines, [{ level: "warn", message: "testplugin: ABI version asked", fields: { event: "extism_log" } }]);
  });

  test("a plugin that traps or fails: load/store/reject log and never throw", async () => {
    const { logger, lines } = capture();
    const store = await openStore({ app: "x", stateDir: tempDir(), logger, identity: () => ID }, tpCur);
    assert.equal(await store.load(), undefined); // traps
    await store.store("tok-A"); // fails with another error: logged, swallowed
    await store.reject();
    await assert.rejects(store.list(), PluginError); // not JSON
    await assert.rejects(store.prune(), PluginError); // no such export
    await store.close();
    const failed = lines.filter((l) => l.fields?.["event"] === "plugin_failed");
    assert.deepEqual(failed.map((l) => l.fields?.["export"]), ["load", "store"]);
    assert.ok(!JSON.stringify(lines).includes("tok-A"));
  });

  test("the WASI warning is suppressed, other warnings are not; nothing reaches stdout", async () => {
    const code = `
      import { ResumeTokenStore } from ${JSON.stringify(DIST)};
      const s = await ResumeTokenStore.open({ app: "w", stateDir: process.env.SD, identity: () => ({ pid: 7, startTime: "1.a" }) });
      await s.load(); await s.store("tok-A"); await s.load(); await s.close();
      process.emitWarning("other warning stays", "ExperimentalWarning");`;
    const r = await nodeEval(code, { ...process.env, SD: path.join(tempDir(), "s"), EXTISM_ENABLE_WASI_OUTPUT: "1" });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, "");
    assert.ok(!r.stderr.includes("WASI is an experimental feature"), r.stderr);
    assert.ok(r.stderr.includes("other warning stays"), r.stderr);
    assert.ok(r.stderr.includes("Token file not found (first run or clean slate)"));
    assert.ok(!r.stderr.includes("tok-A"));
    // The trap is real: importing the SDK directly prints it.
    const bare = await nodeEval(`await import("@extism/extism");`);
    assert.ok(bare.stderr.includes("WASI is an experimental feature"), bare.stderr);
  });

  test("createStderrLogger writes logfmt to stderr, honours the level", async () => {
    const chunks: string[] = [];
    const log = createStderrLogger({ stream: { write: (c: string) => chunks.push(c) } });
    log.debug("hidden", { event: "x" });
    log.warn("Token file corrupted, treating as stale", { event: "token_corrupted", detail: 'a "b" c' });
    assert.equal(chunks.length, 1);
    assert.match(chunks[0]!, /^time=\S+ level=WARN msg="Token file corrupted, treating as stale" event=token_corrupted detail="a \\"b\\" c"\n$/);
  });

  test("memory is flat across 10,000 store calls (plugin.reset after every call)", async (t) => {
    const run = async (mode: string) => {
      const dir = path.join(tempDir(), "s");
      mkdirSync(dir, { mode: 0o700 });
      const r = await new Promise<string>((resolve, reject) => {
        const p = spawn(process.execPath, ["--expose-gc", path.join(PKG, "test", "fixtures", "memory.mjs"), "dist", dir, "10000", mode], { stdio: ["ignore", "pipe", "inherit"] });
        let out = "";
        p.stdout.on("data", (d: Buffer) => (out += d));
        p.on("exit", (code) => (code === 0 ? resolve(out) : reject(new Error(`memory.mjs exited ${code}`))));
      });
      return JSON.parse(r) as Record<string, { rss: number; heapUsed: number; external: number }>;
    };
    const MB = 1 << 20;
    const withReset = await run("store");
    const heapGrowth = withReset["10000"]!.heapUsed - withReset["1000"]!.heapUsed;
    const rssGrowth = withReset["10000"]!.rss - withReset["1000"]!.rss;
    const mb = (n: number) => (n / MB).toFixed(2);
    t.diagnostic(`with reset: rss ${mb(withReset["0"]!.rss)} -> ${mb(withReset["1000"]!.rss)} -> ${mb(withReset["10000"]!.rss)} MiB; heapUsed growth 1k->10k ${mb(heapGrowth)} MiB`);
    assert.ok(heapGrowth < 1 * MB, `JS heap grew ${mb(heapGrowth)} MiB between 1k and 10k calls`);
    assert.ok(rssGrowth < 32 * MB, `RSS grew ${mb(rssGrowth)} MiB between 1k and 10k calls`);
    const noReset = await run("noreset");
    const leak = noReset["10000"]!.heapUsed - noReset["1000"]!.heapUsed;
    t.diagnostic(`without reset (bare SDK): heapUsed growth 1k->10k ${mb(leak)} MiB`);
    assert.ok(leak > heapGrowth + 1 * MB, "the 1.0.3 block table grows without reset (the trap this store avoids)");
  });
});

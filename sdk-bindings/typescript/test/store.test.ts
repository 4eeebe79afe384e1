// The public API on the real plugin in the real Extism runtime, with the real
// host identity: this test file's process is the "server" and its parent,
// node's test runner, the MCP host the plugin resolves through the real
// /proc. App names, state directories, tokens, instances, the lock (real
// child processes), prune, whoami, close, the shipped bytes, the Extism
// 1.0.3 traps (get_log_level, memory growth, the WASI warning, stdout), and
// mcp_resume_inspect asked from inside Extism (the test plugin) in both modes.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, readlinkSync, realpathSync, rmSync, statSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { after, before, describe, test } from "node:test";

import { compiledModule, extismEnvExtras, loadExtism } from "../src/extism.js";
import { FUNCTIONS, HostFunctions, NAMESPACE } from "../src/hostfuncs.js";
import { ABI_VERSION, createStderrLogger, InvalidAppError, InvalidTokenError, PluginError, ResumeTokenStore, type Logger, type OpenOptions } from "../src/index.js";
import { callExport, loadStore, PLUGIN_WASM_URL } from "../src/store.js";
import { cleanupTemps, goBuild, instanceSuffix, PKG, ROOT, startHolder, startTimeOf, tempDir } from "./helpers.js";

after(cleanupTemps);

const LINUX = process.platform === "linux";
type Line = { level: string; message: string; fields?: Record<string, unknown> };
function capture(): { logger: Logger; lines: Line[] } {
  const lines: Line[] = [];
  const add = (level: string) => (message: string, fields?: Record<string, unknown>) => lines.push({ level, message, ...(fields ? { fields } : {}) });
  return { logger: { debug: add("debug"), info: add("info"), warn: add("warn"), error: add("error") }, lines };
}
/** Lines a user sees at the default level (no debug). */
const shown = (lines: Line[]): Line[] => lines.filter((l) => l.level !== "debug");

/** The MCP host of this process: its parent (node's test runner), as the plugin should resolve it. */
const HOST = { pid: process.ppid, startTime: LINUX ? startTimeOf(process.ppid) : "" };
const FILE = `token-${HOST.pid}-${HOST.startTime}`;
const LOCK = `lock-${HOST.pid}-${HOST.startTime}`;

/** Opens a store whose state directory is `dir` (default: a fresh one; the state root is its parent, the app
 * "test-app") with no instance, logging into `lines`. */
async function open(extra: Partial<OpenOptions> & { app?: string } = {}, dir = path.join(tempDir(), "state", "test-app")) {
  const { logger, lines } = capture();
  const { app = "test-app", ...options } = extra;
  const store = await ResumeTokenStore.open(app, { stateRoot: path.dirname(dir), logger, instance: "", ...options });
  return { store, dir, lines };
}

/** Runs `node --input-type=module -e <code>` in `cwd` and returns stdout, stderr and the exit code. */
function nodeEval(code: string, env: NodeJS.ProcessEnv = process.env, cwd = PKG): Promise<{ stdout: string; stderr: string; code: number | null }> {
  return new Promise((resolve) => {
    // stdin a socket pair like stdout, as a Node MCP host gives them: /dev/null proves nothing (resume off).
    const p = spawn(process.execPath, ["--input-type=module", "-e", code], { env, cwd, stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    p.stdout.on("data", (d: Buffer) => (stdout += d));
    p.stderr.on("data", (d: Buffer) => (stderr += d));
    p.on("exit", (code) => resolve({ stdout, stderr, code }));
  });
}

const DIST = new URL("../dist/index.js", import.meta.url).href;
const MSG_BUSY = "Another server instance under this host holds the token file, session resume disabled for this instance";
const MSG_AMBIGUOUS_DECLARED = "Two server instances under this host declared the same instance key, so neither resumes a session: give each server entry its own MCP_RESUME_INSTANCE";

describe("open", () => {
  test("app names: the plugin's rule, as InvalidAppError (code invalid_app)", async () => {
    for (const app of ["", ".x", "-x", "a/b", "a b", "x".repeat(65), "é", "../x", undefined]) {
      await assert.rejects(ResumeTokenStore.open(app as string, { logger: capture().logger }), (e: unknown) => e instanceof InvalidAppError && e.code === "invalid_app", JSON.stringify(app));
    }
    await assert.rejects(ResumeTokenStore.open(undefined as never), InvalidAppError);
    for (const app of ["a", "A9", "github-server", "x.y_z-1", "x".repeat(64)]) await (await open({ app })).store.close();
  });
  test("state directory: the option as given (the plugin makes a relative one absolute against facts.cwd), else MCP_RESUME_STATE_DIR, else the plugin's default", async () => {
    const saved = process.env["MCP_RESUME_STATE_DIR"];
    try {
      const envDir = path.join(tempDir(), "from-env");
      process.env["MCP_RESUME_STATE_DIR"] = envDir;
      const a = await ResumeTokenStore.open("x", { logger: capture().logger });
      assert.equal(a.stateDir, path.join(envDir, "x"), "MCP_RESUME_STATE_DIR is the root of one directory per app");
      await a.close();
      const b = await ResumeTokenStore.open("x", { stateRoot: "rel/dir", logger: capture().logger });
      assert.equal(b.stateDir, path.resolve("rel/dir/x"));
      assert.equal(b.stateRoot, path.resolve("rel/dir"), "stateRoot is the option, made absolute; stateDir the app's directory in it");
      await b.close();
      const up = await ResumeTokenStore.open("X", { stateRoot: "rel/dir", logger: capture().logger });
      assert.equal(up.stateDir, path.resolve("rel/dir/+x"), "case-folding file systems must not merge apps");
      await up.close();
      delete process.env["MCP_RESUME_STATE_DIR"];
      const c = await ResumeTokenStore.open("my-app", { logger: capture().logger });
      assert.match(c.stateDir, /\/mcp-resume\/my-app$/);
      assert.ok(path.isAbsolute(c.stateDir));
      await c.close();
    } finally {
      if (saved === undefined) delete process.env["MCP_RESUME_STATE_DIR"];
      else process.env["MCP_RESUME_STATE_DIR"] = saved;
    }
  });
  test("open touches no file: the state directory is created at the first load", async () => {
    const { store, dir } = await open();
    assert.throws(() => statSync(dir));
    await store.load();
    assert.equal(statSync(dir).mode & 0o777, 0o700);
    await store.close();
  });
});

describe("load / store / reject", { skip: !LINUX && "file names are checked against /proc" }, () => {
  test("first run, store, relaunch resumes; reject deletes; files named after the real MCP host", async () => {
    const { store, dir, lines } = await open();
    assert.equal(await store.load(), undefined);
    await store.store("tok-A");
    assert.equal(readFileSync(path.join(dir, FILE), "utf8"), "tok-A");
    assert.equal(statSync(path.join(dir, FILE)).mode & 0o777, 0o600);
    await store.close();
    const { store: again, lines: lines2 } = await open({}, dir);
    assert.equal(await again.load(), "tok-A");
    await again.store("tok-B");
    await again.reject();
    assert.deepEqual(readdirSync(dir), [LOCK], "the lock file stays (never deleted)");
    await again.close();
    assert.deepEqual(shown(lines).map((l) => l.message), ["Token file not found (first run or clean slate)"]);
    assert.deepEqual(shown(lines2).map((l) => l.fields?.["event"]), ["session_resumed", "token_rejected"]);
  });
  test("whoami: the MCP host, the chain and the file names", async () => {
    const { store, dir } = await open();
    const me = await store.whoami();
    assert.equal(me.pid, HOST.pid);
    assert.equal(me.startTime, HOST.startTime);
    assert.equal(me.tokenFile, FILE);
    assert.equal(me.lockFile, LOCK);
    assert.equal(me.stateDir, dir);
    assert.equal(me.chain.at(-1)?.pid, HOST.pid);
    assert.equal(me.chain.at(-1)?.role, "host");
    assert.equal(me.error, undefined);
    await store.close();
  });
  test("store rejects malformed tokens with InvalidTokenError (code invalid_token), even when resume is off", async () => {
    const { store, dir } = await open();
    for (const bad of ["", "a b", "tok\n", "té", "x".repeat(4097), "\u0000"]) {
      await assert.rejects(store.store(bad), (e: unknown) => e instanceof InvalidTokenError && e.code === "invalid_token", JSON.stringify(bad));
    }
    await assert.rejects(store.store(42 as never), InvalidTokenError);
    assert.throws(() => statSync(dir), "a malformed store takes no lock and creates nothing");
    await store.store("~".repeat(4096));
    assert.equal(readFileSync(path.join(dir, FILE), "utf8").length, 4096);
    await store.close();
    process.env["MCP_RESUME"] = "off";
    try {
      const { store: off, dir: offDir, lines } = await open();
      await assert.rejects(off.store("bad token"), InvalidTokenError);
      await off.store("good");
      assert.equal(await off.load(), undefined);
      assert.throws(() => statSync(offDir));
      assert.deepEqual(shown(lines).map((l) => l.fields?.["event"]), ["resume_off"]);
      await off.close();
    } finally {
      delete process.env["MCP_RESUME"];
    }
  });
  test("Extism 1.0.3 wraps a view's whole buffer: inputs from pooled Buffers are copied", async () => {
    const { store, dir } = await open();
    const pooled = Buffer.from("tok-pooled");
    assert.ok(pooled.buffer.byteLength > pooled.length);
    assert.ok((await callExport(store, "store", pooled)).ok);
    assert.equal(readFileSync(path.join(dir, FILE), "utf8"), "tok-pooled");
    await store.close();
  });
  test("concurrent calls are serialised; calls made before close() still complete", async () => {
    const { store, dir } = await open();
    const tokens = Array.from({ length: 50 }, (_, i) => `tok-${i}`);
    const results = await Promise.all(tokens.flatMap((t) => [store.store(t), store.load()]));
    for (let i = 0; i < tokens.length; i++) assert.equal(results[2 * i + 1], tokens[i]);
    const pending = store.store("tok-before-close");
    await Promise.all([pending, store.close()]);
    assert.equal(readFileSync(path.join(dir, FILE), "utf8"), "tok-before-close");
  });
  test("close is idempotent; afterwards load is undefined, store/reject no-ops, list/prune/whoami reject", async () => {
    const { store, dir } = await open();
    await store.store("tok-A");
    await Promise.all([store.close(), store.close()]);
    assert.equal(await store.load(), undefined);
    await store.store("tok-B");
    await store.reject();
    assert.equal(readFileSync(path.join(dir, FILE), "utf8"), "tok-A");
    for (const p of [store.list(), store.prune(), store.whoami()]) await assert.rejects(p, PluginError);
  });
  test("list reports files with their host's liveness, never tokens", async () => {
    const { store } = await open();
    await store.store("tok-secret");
    const files = await store.list();
    assert.ok(files[0]!.ageSeconds >= 0 && files[0]!.ageSeconds <= 2, `age ${files[0]!.ageSeconds}`);
    assert.deepEqual(files, [{ name: FILE, pid: HOST.pid, startTime: HOST.startTime, host: "alive", ageSeconds: files[0]!.ageSeconds }]);
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

describe("instances", { skip: !LINUX && "file names are checked against /proc" }, () => {
  const suffix = instanceSuffix;
  test("an instance suffixes the file names with 16 hex digits of the SHA-256 of its key material (namespaces and key); list reports it", async () => {
    const { store, dir } = await open({ instance: "--profile\0work" });
    await store.store("tok-A");
    const s = suffix("--profile\0work");
    assert.deepEqual(readdirSync(dir).sort(), [`${LOCK}-${s}`, `${FILE}-${s}`]);
    assert.equal((await store.list())[0]?.instance, s);
    await store.close();
  });
  test("the default instance comes from MCP_RESUME_INSTANCE; '-' names none", async () => {
    process.env["MCP_RESUME_INSTANCE"] = "profile-work";
    try {
      const { store, dir } = await open({ instance: undefined });
      await store.store("tok-A");
      assert.deepEqual(readdirSync(dir).sort(), [`${LOCK}-${suffix("profile-work")}`, `${FILE}-${suffix("profile-work")}`]);
      await store.close();
      const { store: none, dir: dir2 } = await open({ instance: "-" });
      await none.store("tok-A");
      assert.deepEqual(readdirSync(dir2).sort(), [LOCK, FILE]);
      await none.close();
    } finally {
      delete process.env["MCP_RESUME_INSTANCE"];
    }
  });
  test("the default key's working directory is the launch directory: a process.chdir before open changes neither the key nor the base of a relative stateRoot", async () => {
    // Real child servers (their host: this process), each importing the package, then changing directory to
    // `elsewhere` (the same environment for both, which is part of the key too), then opening.
    const [launch, elsewhere] = [realpathSync(tempDir("launch-")), realpathSync(tempDir("elsewhere-"))];
    const env: NodeJS.ProcessEnv = { ...process.env, GO_TO: elsewhere };
    delete env["MCP_RESUME_INSTANCE"];
    delete env["MCP_RESUME_STATE_DIR"];
    const run = async (cwd: string): Promise<{ stateDir: string; names: { token?: string } }> => {
      const code = `import { ResumeTokenStore } from ${JSON.stringify(DIST)}; import { callExport } from ${JSON.stringify(new URL("../dist/store.js", import.meta.url).href)};
        process.chdir(process.env.GO_TO);
        const s = await ResumeTokenStore.open("x", { stateRoot: "rel", logger: { debug() {}, info() {}, warn() {}, error() {} } });
        const names = await callExport(s, "names");
        process.stderr.write(JSON.stringify({ stateDir: s.stateDir, names: JSON.parse(Buffer.from(names.output ?? []).toString() || "{}") }));
        await s.close();`;
      const r = await nodeEval(code, env, cwd);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, "");
      return JSON.parse(r.stderr) as { stateDir: string; names: { token?: string } };
    };
    const [moved, stayed] = [await run(launch), await run(elsewhere)];
    assert.match(moved.names.token ?? "", /^token-\S+-[0-9a-f]{16}$/, "resume on, the file suffixed by the default key");
    assert.notEqual(moved.names.token, stayed.names.token, "launched elsewhere, another key, though both opened in the same directory");
    assert.equal(moved.stateDir, path.join(launch, "rel", "x"), "a relative stateRoot is resolved against the launch directory");
    assert.equal(stayed.stateDir, path.join(elsewhere, "rel", "x"));
  });
  test("two instances with different keys under one host hold separate files and resume independently", async () => {
    const { store: a, dir } = await open({ instance: "a" });
    const { store: b } = await open({ instance: "b" }, dir);
    await Promise.all([a.load(), b.load()]);
    await a.store("tok-A");
    await b.store("tok-B");
    await Promise.all([a.close(), b.close()]);
    const { store: a2 } = await open({ instance: "a" }, dir);
    const { store: b2 } = await open({ instance: "b" }, dir);
    assert.deepEqual(await Promise.all([a2.load(), b2.load()]), ["tok-A", "tok-B"]);
    await Promise.all([a2.close(), b2.close()]);
  });
});

describe("lock", { skip: !LINUX && "the abstract-socket lock is Linux's" }, () => {
  test("a second store with the same host and no instance key runs without resume (instance_busy, no marker) until the first closes", async () => {
    const { store: first, dir, lines } = await open();
    await first.load();
    await first.store("tok-A");
    const { store: second, lines: busyLines } = await open({}, dir);
    assert.equal(await second.load(), undefined, "the busy instance offers nothing");
    await second.store("tok-B");
    await second.reject();
    assert.equal(readFileSync(path.join(dir, FILE), "utf8"), "tok-A", "the busy instance writes nothing");
    assert.deepEqual(readdirSync(dir).sort(), [LOCK, FILE], "no instance key: plain names, no ambiguity marker");
    assert.deepEqual(shown(busyLines).map((l) => [l.level, l.message, l.fields?.["event"]]), [["warn", MSG_BUSY, "instance_busy"]]);
    assert.deepEqual(shown(lines).map((l) => l.fields?.["event"]), ["token_not_found"]);
    await first.close();
    const { store: third, lines: thirdLines } = await open({}, dir);
    assert.equal(await third.load(), "tok-A", "released by close: the next instance takes over");
    assert.ok(!thirdLines.some((l) => l.fields?.["event"] === "instance_busy"));
    assert.equal(await second.load(), undefined, "a running busy instance does not retry");
    await Promise.all([second.close(), third.close()]);
  });
  test("a second live store with the same declared instance marks the key ambiguous: neither loads nor stores, until the marker goes", async () => {
    const { store: first, dir, lines } = await open({ instance: "same" });
    assert.equal(await first.load(), undefined);
    await first.store("tok-A");
    const s = instanceSuffix("same");
    assert.ok(readdirSync(dir).includes(`${FILE}-${s}`), "the holder stored before the second instance came");
    const { store: second, lines: secondLines } = await open({ instance: "same" }, dir);
    assert.equal(await second.load(), undefined, "the second instance offers nothing");
    await second.store("tok-B");
    const marker = `ambiguous-${s}`;
    assert.ok(statSync(path.join(dir, marker)).isFile(), readdirSync(dir).join(" "));
    assert.equal(statSync(path.join(dir, marker)).mode & 0o777, 0o600);
    const warned = shown(secondLines).filter((l) => l.fields?.["event"] === "instance_ambiguous");
    assert.deepEqual(warned.map((l) => [l.level, l.message]), [["warn", MSG_AMBIGUOUS_DECLARED]], JSON.stringify(secondLines));
    assert.ok(!secondLines.some((l) => l.fields?.["event"] === "instance_busy"), "a declared key is ambiguous, not busy");
    // The holder sees the marker at its next call: it stores nothing and deletes its token file.
    await first.store("tok-C");
    assert.equal(await first.load(), undefined, "the holder no longer resumes either");
    assert.ok(!readdirSync(dir).some((f) => f.startsWith("token-")), readdirSync(dir).join(" "));
    assert.equal(shown(lines).filter((l) => l.fields?.["event"] === "instance_ambiguous").length, 1, "the holder says so once");
    await Promise.all([first.close(), second.close()]);
    // Both gone: the marker stays, so the next store of the key resumes nothing and stores nothing.
    const { store: third, lines: thirdLines } = await open({ instance: "same" }, dir);
    assert.equal(await third.load(), undefined);
    await third.store("tok-D");
    assert.ok(!readdirSync(dir).some((f) => f.startsWith("token-")), readdirSync(dir).join(" "));
    assert.ok(thirdLines.some((l) => l.fields?.["event"] === "instance_ambiguous"), JSON.stringify(thirdLines));
    await third.close();
    // Another key is not marked; with the marker removed the key resumes again.
    const { store: other } = await open({ instance: "other" }, dir);
    await other.store("tok-E");
    await other.close();
    const { store: other2 } = await open({ instance: "other" }, dir);
    assert.equal(await other2.load(), "tok-E");
    await other2.close();
    rmSync(path.join(dir, marker));
    const { store: fourth } = await open({ instance: "same" }, dir);
    await fourth.store("tok-F");
    await fourth.close();
    const { store: fifth } = await open({ instance: "same" }, dir);
    assert.equal(await fifth.load(), "tok-F");
    await fifth.close();
  });
  test("released when the process holding it is killed with SIGKILL (real child processes under this host)", async () => {
    const dir = path.join(tempDir(), "state");
    // The holder and each probe are children of this process: the same MCP host, so the same lock.
    const probe = () =>
      nodeEval(`import { ResumeTokenStore } from ${JSON.stringify(DIST)};
        const events = [];
        const log = (m, f) => events.push(f?.event);
        const s = await ResumeTokenStore.open("holder", { stateRoot: ${JSON.stringify(dir)}, instance: "", logger: { debug() {}, info: log, warn: log, error: log } });
        process.stdout.write(JSON.stringify({ token: (await s.load()) ?? null, events }));`);
    const { child, exited } = await startHolder("store", dir);
    try {
      const appDir = path.join(dir, "holder"); // the app's directory under the state root
      const name = readdirSync(appDir).find((n) => n.startsWith("lock-"))!;
      writeFileSync(path.join(appDir, name.replace(/^lock-/, "token-")), "tok-child");
      assert.deepEqual(JSON.parse((await probe()).stdout), { token: null, events: ["instance_busy"] });
      child.kill("SIGKILL");
      assert.equal(await exited, "SIGKILL");
      assert.deepEqual(JSON.parse((await probe()).stdout), { token: "tok-child", events: [] }, "the kernel released the lock with the killed process");
    } finally {
      child.kill("SIGKILL");
    }
  });
  test("the lock never keeps the process alive (a store left open still lets node exit)", async () => {
    const sd = path.join(tempDir(), "s");
    const r = await nodeEval(`import { ResumeTokenStore } from ${JSON.stringify(DIST)};
      const s = await ResumeTokenStore.open("w", { stateRoot: process.env.SD, instance: "" });
      await s.load(); await s.store("tok-A");
      process.stderr.write("loaded\\n");`, { ...process.env, SD: sd });
    assert.equal(r.code, 0, r.stderr);
    assert.ok(r.stderr.includes("loaded"), r.stderr);
    assert.deepEqual(readdirSync(path.join(sd, "w")).map((n) => n.split("-")[0]).sort(), ["lock", "token"]);
  });
  test("a lock that cannot be taken (a directory at its name): lock_failed, resume off", async () => {
    const dir = path.join(tempDir(), "state", "test-app");
    mkdirSync(path.join(dir, LOCK), { recursive: true, mode: 0o700 });
    const { store, lines } = await open({}, dir);
    assert.equal(await store.load(), undefined);
    await store.store("tok-A");
    assert.deepEqual(readdirSync(dir), [LOCK]);
    assert.deepEqual(shown(lines).map((l) => [l.level, l.message, l.fields?.["event"]]), [["warn", "Could not lock the token file, session resume disabled for this instance", "lock_failed"]]);
    await store.close();
  });
});

describe("prune", { skip: !LINUX && "liveness from /proc" }, () => {
  test("removes the files of gone hosts (stale_removed), keeps live ones", async () => {
    const dir = path.join(tempDir(), "state", "test-app");
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const live = `token-${process.pid}-${startTimeOf(process.pid)}`;
    const boot = HOST.startTime.slice(HOST.startTime.indexOf("."));
    for (const n of [`token-2147483646-1${boot}`, `lock-2147483646-1${boot}`, live]) writeFileSync(path.join(dir, n), n.startsWith("lock") ? "" : "t");
    const { store, lines } = await open({}, dir);
    const removed = (await store.prune()).sort((a, b) => (a.name < b.name ? -1 : 1));
    assert.deepEqual(removed, [
      { name: `lock-2147483646-1${boot}`, reason: "host_gone", host: "gone" },
      { name: `token-2147483646-1${boot}`, reason: "host_gone", host: "gone" },
    ]);
    assert.deepEqual(readdirSync(dir), [live]);
    assert.deepEqual(shown(lines).map((l) => l.fields?.["event"]), ["stale_removed", "stale_removed"]);
    assert.deepEqual(await store.prune(), []);
    await store.close();
  });
  test("the first load prunes once", async () => {
    const dir = path.join(tempDir(), "state", "test-app");
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const boot = HOST.startTime.slice(HOST.startTime.indexOf("."));
    writeFileSync(path.join(dir, `token-2147483646-3${boot}`), "gone");
    const { store } = await open({}, dir);
    await store.load();
    assert.deepEqual(readdirSync(dir), [LOCK]);
    await store.close();
  });
});

describe("shipped plugin", () => {
  test("plugin.wasm shipped with the package is byte-identical to plugin/plugin.wasm", () => {
    assert.ok(readFileSync(PLUGIN_WASM_URL).equals(readFileSync(path.join(ROOT, "plugin", "plugin.wasm"))), "run the build (copies plugin/plugin.wasm)");
  });
  test("the module is compiled once per process", async () => {
    assert.equal(compiledModule(PLUGIN_WASM_URL), compiledModule(PLUGIN_WASM_URL));
  });
  test(`plugin.wasm speaks ABI ${ABI_VERSION}, does not import get_log_level, and imports exactly our twelve host functions`, async () => {
    const imports = (globalThis as any).WebAssembly.Module.imports(await compiledModule(PLUGIN_WASM_URL)) as Array<{ module: string; name: string }>;
    assert.ok(!imports.some((i) => i.name === "get_log_level"));
    assert.deepEqual(imports.filter((i) => i.module === NAMESPACE).map((i) => i.name).sort(), [...FUNCTIONS].sort());
    assert.equal(FUNCTIONS.length, 12);
    assert.equal(ABI_VERSION, "11");
  });
});

let testPluginBuild: Promise<[string, string]> | undefined;
/** The test plugin (test/testdata/testplugin), built once for this file: with ABI version 4 and with this host's. */
function testPlugins(): Promise<[string, string]> {
  testPluginBuild ??= (async () => {
    const d = tempDir("testplugin-");
    const env = { GOOS: "wasip1", GOARCH: "wasm" };
    const build = (abi: string, out: string) => goBuild("./sdk-bindings/typescript/test/testdata/testplugin", path.join(d, out), env, ["-buildmode=c-shared", `-ldflags=-X main.abiVersion=${abi}`]);
    return Promise.all([build("4", "old.wasm"), build(ABI_VERSION, "cur.wasm")]);
  })();
  return testPluginBuild;
}

describe("Extism 1.0.3 traps", () => {
  let tpOld = "";
  let tpCur = "";
  before(async () => {
    [tpOld, tpCur] = await testPlugins();
  });
  test("get_log_level: a go-pdk plugin using pdk.Log fails to load in bare 1.0.3, and links with extismEnvExtras", async () => {
    const extism = await loadExtism();
    const fns = Object.fromEntries(FUNCTIONS.map((n) => [n, () => 0n]));
    const module = await compiledModule(tpOld);
    await assert.rejects(extism.createPlugin({ wasm: [{ module }] }, { useWasi: true, enableWasiOutput: false, functions: { [NAMESPACE]: fns } }), /get_log_level/);
    const p = await extism.createPlugin({ wasm: [{ module }] }, { useWasi: true, enableWasiOutput: false, functions: { [NAMESPACE]: fns, "extism:host/env": extismEnvExtras() }, logger: capture().logger as unknown as Console });
    await p.close();
  });
  test("ABI mismatch: PluginError naming both versions; pdk.Log reaches our logger, not stdout", async () => {
    const { logger, lines } = capture();
    await assert.rejects(loadStore(logger, tpOld), (e: unknown) => e instanceof PluginError && e.code === "plugin_unusable" && e.message.includes(`plugin ABI version "4", this host implements "${ABI_VERSION}"`));
    assert.deepEqual(lines, [{ level: "warn", message: "testplugin: ABI version asked", fields: { event: "extism_log" } }]);
  });
  test("the guest's stdout never reaches the process's stdout, even with EXTISM_ENABLE_WASI_OUTPUT set, which the bare SDK honours", async () => {
    // The test plugin writes a line to its WASI stdout in mcp_resume_abi_version, which loadStore calls.
    const dist = (f: string) => JSON.stringify(new URL(`../dist/${f}`, import.meta.url).href);
    const env = { ...process.env, EXTISM_ENABLE_WASI_OUTPUT: "1", TP: tpCur };
    const ours = await nodeEval(`import { loadStore } from ${dist("store.js")};
      const s = await loadStore({ debug() {}, info() {}, warn() {}, error() {} }, process.env.TP); await s.close();`, env);
    assert.equal(ours.code, 0, ours.stderr);
    assert.equal(ours.stdout, "");
    const bare = await nodeEval(`import { createPlugin } from "@extism/extism"; import { compiledModule, extismEnvExtras } from ${dist("extism.js")};
      import { FUNCTIONS, NAMESPACE } from ${dist("hostfuncs.js")};
      const quiet = { debug() {}, trace() {}, log() {}, info() {}, warn() {}, error() {} };
      const user = Object.fromEntries(FUNCTIONS.map((n) => [n, () => 0n])); // the test plugin imports mcp_resume_inspect
      const p = await createPlugin({ wasm: [{ module: await compiledModule(process.env.TP) }] }, { useWasi: true, functions: { [NAMESPACE]: user, "extism:host/env": extismEnvExtras() }, logger: quiet });
      await p.call("mcp_resume_abi_version"); await p.close();`, env);
    assert.equal(bare.code, 0, bare.stderr);
    assert.equal(bare.stdout, "testplugin: guest stdout\n", "the trap is real: without enableWasiOutput: false the variable connects the guest's stdout");
  });
  test("a plugin that traps or fails: load/store/reject log and never throw; list/prune/whoami reject", async () => {
    const { logger, lines } = capture();
    const store = await loadStore(logger, tpCur, new HostFunctions({ logger }));
    assert.ok((await callExport(store, "open", Buffer.from('{"app":"x"}'))).ok);
    assert.equal(await store.load(), undefined); // traps
    await store.store("tok-A"); // fails with an error that is not the contract's JSON
    await store.reject();
    for (const p of [store.list(), store.prune(), store.whoami()]) await assert.rejects(p, PluginError);
    await store.close();
    assert.deepEqual(lines.filter((l) => l.fields?.["event"] === "plugin_failed").map((l) => l.fields?.["export"]), ["load", "store"]);
    assert.ok(!JSON.stringify(lines).includes("tok-A"));
  });
  test("the WASI warning is suppressed, other warnings are not; nothing reaches stdout", async () => {
    const code = `import { ResumeTokenStore } from ${JSON.stringify(DIST)};
      const s = await ResumeTokenStore.open("w", { stateRoot: process.env.SD });
      await s.load(); await s.store("tok-A"); await s.load(); await s.close();
      process.emitWarning("other warning stays", "ExperimentalWarning");`;
    const r = await nodeEval(code, { ...process.env, SD: path.join(tempDir(), "s"), EXTISM_ENABLE_WASI_OUTPUT: "1" });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, "");
    assert.ok(!r.stderr.includes("WASI is an experimental feature"), r.stderr);
    assert.ok(r.stderr.includes("other warning stays"), r.stderr);
    assert.ok(r.stderr.includes("Token file not found (first run or clean slate)"), r.stderr);
    assert.ok(!r.stderr.includes("tok-A"));
    const bare = await nodeEval(`await import("@extism/extism");`);
    assert.ok(bare.stderr.includes("WASI is an experimental feature"), "the trap is real: importing the SDK directly prints it");
  });
  test("createStderrLogger writes logfmt to stderr, honours the level", () => {
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
      const out = await new Promise<string>((resolve, reject) => {
        const p = spawn(process.execPath, ["--expose-gc", path.join(PKG, "test", "fixtures", "memory.mjs"), "dist", dir, "10000", mode], { stdio: ["pipe", "pipe", "inherit"] }); // stdin and stdout from the host, as an MCP host gives them
        let s = "";
        p.stdout.on("data", (d: Buffer) => (s += d));
        p.on("exit", (code) => (code === 0 ? resolve(s) : reject(new Error(`memory.mjs exited ${code}`))));
      });
      return JSON.parse(out) as Record<string, { rss: number; heapUsed: number }>;
    };
    const MB = 1 << 20;
    const mb = (n: number) => (n / MB).toFixed(2);
    const withReset = await run("store");
    const heapGrowth = withReset["10000"]!.heapUsed - withReset["1000"]!.heapUsed;
    const rssGrowth = withReset["10000"]!.rss - withReset["1000"]!.rss;
    t.diagnostic(`with reset: rss ${mb(withReset["0"]!.rss)} -> ${mb(withReset["1000"]!.rss)} -> ${mb(withReset["10000"]!.rss)} MiB; heapUsed growth 1k->10k ${mb(heapGrowth)} MiB`);
    assert.ok(heapGrowth < 1 * MB, `JS heap grew ${mb(heapGrowth)} MiB between 1k and 10k calls`);
    assert.ok(rssGrowth < 32 * MB, `RSS grew ${mb(rssGrowth)} MiB between 1k and 10k calls`);
    const noReset = await run("noreset");
    const leak = noReset["10000"]!.heapUsed - noReset["1000"]!.heapUsed;
    t.diagnostic(`without reset (bare SDK): heapUsed growth 1k->10k ${mb(leak)} MiB`);
    assert.ok(leak > heapGrowth + 1 * MB, "the 1.0.3 block table grows without reset (the trap this store avoids)");
  });
});

describe("inspect asked by the plugin, answered for the server process", { skip: !LINUX && "Linux /proc" }, () => {
  test("a socket on stdio is found by inode in /proc/self/net/unix, never in tcp or tcp6; synchronous and worker mode answer alike", async () => {
    // A real child server whose stdin is a socket pair, as a Node MCP host gives it: the test plugin forwards
    // these operations to mcp_resume_inspect from inside Extism, as plugin.wasm's stdio rule asks them.
    const [, tpCur] = await testPlugins();
    const ops = [{ op: "fd_link", pid: "self", fd: 0 }, { op: "ns", pid: "self", ns: "net" }, { op: "environ", pid: "self" },
      { op: "net", pid: "self", table: "unix" }, { op: "net", pid: "self", table: "tcp" }, { op: "net", pid: "self", table: "tcp6" }];
    const code = `import { callExport, loadStore } from ${JSON.stringify(new URL("../dist/store.js", import.meta.url).href)};
      const out = {};
      for (const worker of [false, true]) {
        const s = await loadStore({ debug() {}, info() {}, warn() {}, error() {} }, process.env.TP, undefined, worker);
        const r = await callExport(s, "inspect", Buffer.from(process.env.OPS));
        out[worker ? "worker" : "sync"] = r.ok ? JSON.parse(Buffer.from(r.output).toString()).results : r.message;
        await s.close();
      }
      process.stderr.write(JSON.stringify(out));`;
    const r = await nodeEval(code, { ...process.env, TP: tpCur, OPS: JSON.stringify({ ops }) });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, "");
    type Result = { target?: string; data?: string; error?: { code: string } };
    const got = JSON.parse(r.stderr) as { sync: Result[]; worker: Result[] };
    /** Column `col` (0-based, after the header line) of a /proc/net table answer; none for a table not there (IPv6 off). */
    const column = (res: Result | undefined, col: number): string[] =>
      res?.error?.code === "not_found" ? [] : Buffer.from(res!.data!, "base64").toString("latin1").split("\n").slice(1).map((l) => l.trim().split(/\s+/)[col] ?? "");
    for (const mode of ["sync", "worker"] as const) {
      assert.ok(Array.isArray(got[mode]), `${mode}: ${JSON.stringify(got[mode])}`);
      const [fd0, ns, environ, unix, tcp, tcp6] = got[mode];
      const inode = /^socket:\[([0-9]+)\]$/.exec(fd0!.target ?? "")?.[1];
      assert.ok(inode, `${mode}: fd 0 is a socket: ${JSON.stringify(fd0)}`);
      assert.equal(ns!.target, readlinkSync("/proc/self/ns/net"), `${mode}: ns self is the server's (which it shares with this process)`);
      assert.ok(Buffer.from(environ!.data!, "base64").toString().split("\0").includes(`TP=${tpCur}`), `${mode}: environ self is the server's`);
      assert.ok(column(unix, 6).includes(inode), `${mode}: the stdin socket ${inode} in /proc/self/net/unix`);
      for (const t of [tcp, tcp6]) assert.ok(!column(t, 9).includes(inode), `${mode}: not a TCP socket`);
    }
    assert.deepEqual(got.worker.slice(0, 3), got.sync.slice(0, 3), "the same host code in both modes");
  });
});

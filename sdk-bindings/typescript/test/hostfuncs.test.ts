// Host-function safety on real files: the contract of hostfuncs/README.md,
// called natively (the conformance suite runs the same code under the plugin).
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import {
  chmodSync,
  chownSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  statSync,
  symlinkSync,
  utimesSync,
  watch,
  writeFileSync,
} from "node:fs";
import * as path from "node:path";
import { after, describe, test } from "node:test";

import { ABI_VERSION, FUNCTIONS, HostFunctions, pad8, TEMP_MAX_AGE_MS, validName } from "../src/hostfuncs.js";
import { lockSocketName } from "../src/lock.js";
import type { LogFields, Logger } from "../src/logger.js";
import { LinuxProcSource } from "../src/procid/linux.js";
import { cleanupTemps, startHolder, tempDir } from "./helpers.js";

after(cleanupTemps);

const enc = (v: unknown): Uint8Array => new TextEncoder().encode(typeof v === "string" ? v : JSON.stringify(v));

const LINUX = process.platform === "linux";
const quiet: Logger = { debug() {}, info() {}, warn() {}, error() {} };
const dec = (b: Uint8Array): Record<string, any> => JSON.parse(new TextDecoder().decode(b));

function setup(
  opts: { identity?: () => { pid: number; startTime: string }; instance?: string; alive?: (pid: number, startTime: string) => boolean } = {},
) {
  const root = tempDir("hostfuncs-");
  const dir = path.join(root, "state");
  mkdirSync(dir, { mode: 0o700 });
  chmodSync(dir, 0o700);
  const logs: Array<{ level: string; message: string; fields?: LogFields }> = [];
  const add = (level: string) => (message: string, fields?: LogFields) => logs.push({ level, message, fields });
  const logger: Logger = { debug: add("debug"), info: add("info"), warn: add("warn"), error: add("error") };
  const f = new HostFunctions({ dir, logger, ...opts });
  const call = (fn: string, req: unknown): Record<string, any> => {
    const raw = f.call(fn, enc(req));
    assert.equal(raw.length % 8, 0, "responses are padded to a multiple of 8 bytes");
    return JSON.parse(new TextDecoder().decode(raw));
  };
  return { root, dir, f, call, logs };
}

const BAD_NAMES = [
  "/etc/passwd",
  "/tmp/x",
  "..",
  "../outside",
  "a/../b",
  "a/b",
  "a\0b",
  "\0",
  "",
  ".hidden",
  ".token-1-2.abcdef.tmp",
  "tok en",
  "tök",
  "x".repeat(256),
];

describe("name rule", () => {
  test("valid names", () => {
    for (const n of ["token-1-2.a", "a", "A_b-c.d", "x".repeat(255), "-x", "_x"]) assert.ok(validName(n), n);
  });
  for (const fn of ["mcp_resume_read", "mcp_resume_write", "mcp_resume_remove"]) {
    test(`${fn} refuses absolute paths, '..', separators, NUL, hidden and overlong names`, () => {
      const { call, root } = setup();
      writeFileSync(path.join(root, "outside"), "victim");
      for (const name of BAD_NAMES) {
        const r = call(fn, { name, limit: 10, data: Buffer.from("x").toString("base64") });
        assert.equal(r.error?.code, "invalid_request", `${fn} ${JSON.stringify(name)}: ${JSON.stringify(r)}`);
      }
      assert.equal(readFileSync(path.join(root, "outside"), "utf8"), "victim");
      assert.ok(existsSync("/etc/passwd"));
    });
  }
});

describe("mcp_resume_read", () => {
  test("reads at most limit bytes, base64", () => {
    const { call, dir } = setup();
    writeFileSync(path.join(dir, "t"), "a".repeat(5000));
    const r = call("mcp_resume_read", { name: "t", limit: 4097 });
    assert.equal(Buffer.from(r.data, "base64").length, 4097);
    writeFileSync(path.join(dir, "small"), "tok-A");
    assert.equal(Buffer.from(call("mcp_resume_read", { name: "small", limit: 4097 }).data, "base64").toString(), "tok-A");
  });
  test("empty file answers no data", () => {
    const { call, dir } = setup();
    writeFileSync(path.join(dir, "e"), "");
    const r = call("mcp_resume_read", { name: "e", limit: 10 });
    assert.equal(r.error, undefined);
    assert.equal(Buffer.from(r.data ?? "", "base64").length, 0);
  });
  test("missing file is not_found", () => {
    const { call } = setup();
    assert.equal(call("mcp_resume_read", { name: "nope", limit: 10 }).error.code, "not_found");
  });
  test("a symlink is never followed: unsafe, target untouched", () => {
    const { call, dir, root } = setup();
    writeFileSync(path.join(root, "victim"), "secret");
    symlinkSync("../victim", path.join(dir, "t"));
    const r = call("mcp_resume_read", { name: "t", limit: 100 });
    assert.equal(r.error.code, "unsafe");
    assert.equal(r.data, undefined);
    assert.ok(!JSON.stringify(r).includes("secret"));
  });
  test("a FIFO does not block and is unsafe", () => {
    const { call, dir } = setup();
    execFileSync("mkfifo", [path.join(dir, "f")]);
    const t0 = Date.now();
    const r = call("mcp_resume_read", { name: "f", limit: 100 });
    assert.ok(Date.now() - t0 < 1000, "returned at once");
    assert.equal(r.error.code, "unsafe");
  });
  test("a directory is unsafe", () => {
    const { call, dir } = setup();
    mkdirSync(path.join(dir, "d"));
    assert.equal(call("mcp_resume_read", { name: "d", limit: 100 }).error.code, "unsafe");
  });
  test("a request lacking a required field is invalid_request, not guessed at", () => {
    const { call, dir } = setup();
    for (const [fn, req] of [
      ["mcp_resume_write", { name: "token-5-1.a" }],
      ["mcp_resume_write", { name: "token-5-1.a", data: null }],
      ["mcp_resume_list", {}],
      ["mcp_resume_log", { event: "x" }],
    ] as const) {
      assert.equal(call(fn, req).error?.code, "invalid_request", `${fn} ${JSON.stringify(req)}`);
    }
    assert.deepEqual(readdirSync(dir), [], "nothing was written");
  });
  test("limit outside 1..1048576 is invalid_request", () => {
    const { call, dir } = setup();
    writeFileSync(path.join(dir, "t"), "x");
    for (const limit of [0, -1, 1048577, 1.5, "10"]) {
      assert.equal(call("mcp_resume_read", { name: "t", limit }).error.code, "invalid_request", String(limit));
    }
    assert.equal(call("mcp_resume_read", { name: "t", limit: 1048576 }).error, undefined);
  });
});

describe("mcp_resume_write", () => {
  test("atomic replace, mode 0600, no temporary file left", () => {
    const { call, dir } = setup();
    writeFileSync(path.join(dir, "t"), "old", { mode: 0o644 });
    const r = call("mcp_resume_write", { name: "t", data: Buffer.from("new-token").toString("base64") });
    assert.deepEqual(r, {});
    assert.equal(readFileSync(path.join(dir, "t"), "utf8"), "new-token");
    assert.equal(statSync(path.join(dir, "t")).mode & 0o777, 0o600);
    assert.deepEqual(readdirSync(dir), ["t"]);
  });
  test("a symlink at the name is replaced, not followed", () => {
    const { call, dir, root } = setup();
    writeFileSync(path.join(root, "victim"), "secret");
    symlinkSync("../victim", path.join(dir, "t"));
    assert.deepEqual(call("mcp_resume_write", { name: "t", data: Buffer.from("tok").toString("base64") }), {});
    assert.ok(lstatSync(path.join(dir, "t")).isFile());
    assert.equal(readFileSync(path.join(root, "victim"), "utf8"), "secret");
  });
  test("a directory at the name fails with io and the temporary file is removed", () => {
    const { call, dir } = setup();
    mkdirSync(path.join(dir, "t"));
    const r = call("mcp_resume_write", { name: "t", data: Buffer.from("tok").toString("base64") });
    assert.equal(r.error.code, "io");
    assert.deepEqual(readdirSync(dir), ["t"]);
  });
  test("a read-only state directory fails with io (unless root)", { skip: process.geteuid?.() === 0 }, () => {
    const { call, dir } = setup();
    chmodSync(dir, 0o500);
    try {
      assert.equal(call("mcp_resume_write", { name: "t", data: "" }).error.code, "io");
    } finally {
      chmodSync(dir, 0o700);
    }
  });
  test("data must be standard base64", () => {
    const { call } = setup();
    for (const data of ["***", "YQ", 5, "YQ==YQ=="]) {
      assert.equal(call("mcp_resume_write", { name: "t", data }).error.code, "invalid_request", String(data));
    }
  });
  test("temporary file is .<name>.<16 hex>.tmp next to the name (seen with inotify)", async () => {
    const { f, dir } = setup();
    const seen = new Set<string>();
    const w = watch(dir, (_event, name) => name && seen.add(String(name)));
    try {
      f.call("mcp_resume_write", enc({ name: "token-1-2.a", data: "dG9r" }));
      f.call("mcp_resume_write", enc({ name: "token-1-2.a", data: "dG9r" }));
      await new Promise((r) => setTimeout(r, 200));
    } finally {
      w.close();
    }
    const temps = [...seen].filter((n) => n !== "token-1-2.a");
    assert.equal(temps.length, 2, `temporary files seen: ${[...seen].join(", ")}`);
    for (const t of temps) assert.match(t, /^\.token-1-2\.a\.[0-9a-f]{16}\.tmp$/);
    assert.deepEqual(readdirSync(dir), ["token-1-2.a"]);
  });
});

describe("mcp_resume_remove", () => {
  test("unlinks files and symlinks (never their target)", () => {
    const { call, dir, root } = setup();
    writeFileSync(path.join(root, "victim"), "secret");
    symlinkSync("../victim", path.join(dir, "l"));
    writeFileSync(path.join(dir, "t"), "x");
    assert.deepEqual(call("mcp_resume_remove", { name: "l" }), {});
    assert.deepEqual(call("mcp_resume_remove", { name: "t" }), {});
    assert.deepEqual(readdirSync(dir), []);
    assert.equal(readFileSync(path.join(root, "victim"), "utf8"), "secret");
  });
  test("never rmdir: an (empty) directory stays and answers io", () => {
    const { call, dir } = setup();
    mkdirSync(path.join(dir, "d"));
    assert.equal(call("mcp_resume_remove", { name: "d" }).error.code, "io");
    assert.ok(statSync(path.join(dir, "d")).isDirectory());
  });
  test("missing is not_found", () => {
    const { call } = setup();
    assert.equal(call("mcp_resume_remove", { name: "nope" }).error.code, "not_found");
  });
});

describe("mcp_resume_list", () => {
  test("regular files with valid names and the prefix, sorted by byte value", () => {
    const { call, dir } = setup();
    for (const n of ["token-b", "token-a", "token-C", "other", ".token-hidden"]) writeFileSync(path.join(dir, n), "x");
    symlinkSync("token-a", path.join(dir, "token-link"));
    mkdirSync(path.join(dir, "token-dir"));
    execFileSync("mkfifo", [path.join(dir, "token-fifo")]);
    assert.deepEqual(call("mcp_resume_list", { prefix: "token-" }), { names: ["token-C", "token-a", "token-b"] });
    assert.deepEqual(call("mcp_resume_list", { prefix: "" }).names, ["other", "token-C", "token-a", "token-b"]);
  });
  test("missing state directory is not_found with empty names", () => {
    const root = tempDir();
    const f = new HostFunctions({ dir: path.join(root, "absent"), logger: { debug() {}, info() {}, warn() {}, error() {} } });
    const r = JSON.parse(new TextDecoder().decode(f.call("mcp_resume_list", enc({ prefix: "" }))));
    assert.deepEqual(r.names, []);
    assert.equal(r.error.code, "not_found");
    assert.ok(!existsSync(path.join(root, "absent")));
  });
});

describe("mcp_resume_prepare_dir", () => {
  test("creates missing parents with mode 0700", () => {
    const root = tempDir();
    const dir = path.join(root, "a", "b", "state");
    const f = new HostFunctions({ dir, logger: { debug() {}, info() {}, warn() {}, error() {} } });
    assert.deepEqual(JSON.parse(new TextDecoder().decode(f.call("mcp_resume_prepare_dir", enc({})))), {});
    for (const d of [path.join(root, "a"), path.join(root, "a", "b"), dir]) assert.equal(statSync(d).mode & 0o777, 0o700, d);
  });
  test("group/other bits: unsafe with a chmod fix-it", () => {
    const { call, dir } = setup();
    chmodSync(dir, 0o770);
    const r = call("mcp_resume_prepare_dir", {});
    assert.equal(r.error.code, "unsafe");
    assert.ok(r.error.message.includes(`chmod 700 ${dir}`), r.error.message);
  });
  test("a symlink to a directory is unsafe", () => {
    const root = tempDir();
    mkdirSync(path.join(root, "real"), { mode: 0o700 });
    symlinkSync("real", path.join(root, "state"));
    const f = new HostFunctions({ dir: path.join(root, "state"), logger: { debug() {}, info() {}, warn() {}, error() {} } });
    const r = JSON.parse(new TextDecoder().decode(f.call("mcp_resume_prepare_dir", enc({}))));
    assert.equal(r.error.code, "unsafe");
    assert.match(r.error.message, /MCP_RESUME_STATE_DIR/);
  });
  test("a relative path is unsafe", () => {
    const f = new HostFunctions({ dir: "relative/state", logger: { debug() {}, info() {}, warn() {}, error() {} } });
    assert.equal(JSON.parse(new TextDecoder().decode(f.call("mcp_resume_prepare_dir", enc({})))).error.code, "unsafe");
    assert.ok(!existsSync("relative"));
  });
  test("a file in the way is io", () => {
    const root = tempDir();
    writeFileSync(path.join(root, "state"), "x");
    const f = new HostFunctions({ dir: path.join(root, "state"), logger: { debug() {}, info() {}, warn() {}, error() {} } });
    assert.equal(JSON.parse(new TextDecoder().decode(f.call("mcp_resume_prepare_dir", enc({})))).error.code, "io");
  });
  test("owned by another user: unsafe (needs root to set up)", { skip: process.geteuid?.() !== 0 }, () => {
    const { call, dir } = setup();
    chownSync(dir, 65534, 65534);
    const r = call("mcp_resume_prepare_dir", {});
    assert.equal(r.error.code, "unsafe");
    assert.match(r.error.message, /owned by uid 65534/);
  });
});

describe("mcp_resume_prepare_dir: leftover temporary files", () => {
  test("deletes regular .*.tmp files older than 60 s, keeps fresh ones and everything else", () => {
    const { call, dir } = setup();
    assert.equal(TEMP_MAX_AGE_MS, 60_000);
    const old = new Date(Date.now() - 61_000);
    const make = (name: string, isDir = false): string => {
      const p = path.join(dir, name);
      if (isDir) mkdirSync(p);
      else writeFileSync(p, "tok-");
      utimesSync(p, old, old);
      return p;
    };
    make(".token-1-2.a.00112233aabbccdd.tmp");
    writeFileSync(path.join(dir, ".token-1-2.a.ffeeddccbbaa9988.tmp"), "tok-"); // a live writer's
    make(".dir.tmp", true); // not a regular file
    make("token-1-2.a.tmp"); // not hidden: not ours to sweep
    make(".token-1-2.a.tmpx"); // not .tmp
    symlinkSync("/etc/passwd", path.join(dir, ".link.tmp")); // a symlink is not a regular file
    assert.deepEqual(call("mcp_resume_prepare_dir", {}), {});
    assert.deepEqual(readdirSync(dir).sort(), [".dir.tmp", ".link.tmp", ".token-1-2.a.ffeeddccbbaa9988.tmp", ".token-1-2.a.tmpx", "token-1-2.a.tmp"]);
    assert.ok(existsSync("/etc/passwd"));
  });
  test("an unusable directory is not swept", () => {
    const { call, dir } = setup();
    const p = path.join(dir, ".x.tmp");
    writeFileSync(p, "x");
    const old = new Date(Date.now() - 3600_000);
    utimesSync(p, old, old);
    chmodSync(dir, 0o755);
    assert.equal(call("mcp_resume_prepare_dir", {}).error.code, "unsafe");
    assert.ok(existsSync(p));
  });
});

describe("mcp_resume_lock", () => {
  const LOCK = "lock-4242-1.ab";
  test("taken ahead by acquireLock: the host function answers {} and is idempotent; the file is created 0600, never deleted", async () => {
    const { call, dir, f } = setup();
    assert.equal(await f.acquireLock(LOCK), undefined);
    assert.equal(await f.acquireLock(LOCK), undefined, "idempotent");
    assert.deepEqual(call("mcp_resume_lock", { name: LOCK }), {});
    assert.deepEqual(call("mcp_resume_lock", { name: LOCK }), {});
    const st = lstatSync(path.join(dir, LOCK));
    assert.ok(st.isFile());
    assert.equal(st.mode & 0o777, 0o600);
    assert.equal(st.size, 0);
    await f.close();
    assert.ok(existsSync(path.join(dir, LOCK)), "release never deletes the lock file");
  });
  test("a second, independent holder in this process is busy until the first closes", async () => {
    const { dir, f } = setup();
    const other = new HostFunctions({ dir, logger: quiet });
    assert.equal(await f.acquireLock(LOCK), undefined);
    const busy = await other.acquireLock(LOCK);
    assert.equal(busy?.code, "busy");
    assert.match(busy!.message, /held by another server instance/);
    // The synchronous host function answers the pre-acquired result.
    assert.equal(dec(other.call("mcp_resume_lock", enc({ name: LOCK }))).error.code, "busy");
    assert.deepEqual(dec(f.call("mcp_resume_lock", enc({ name: LOCK }))), {});
    // Another name is another lock.
    assert.equal(await other.acquireLock("lock-4242-1.ab-0123456789abcdef"), undefined);
    await f.close();
    assert.equal(await other.acquireLock(LOCK), undefined, "a failed attempt is retried and succeeds once released");
    assert.deepEqual(dec(other.call("mcp_resume_lock", enc({ name: LOCK }))), {});
    await other.close();
    await f.close(); // idempotent
  });
  test("concurrent acquireLock calls on one instance share one attempt", async () => {
    const { f } = setup();
    const rs = await Promise.all([f.acquireLock(LOCK), f.acquireLock(LOCK), f.acquireLock(LOCK)]);
    assert.deepEqual(rs, [undefined, undefined, undefined]);
    await f.close();
  });
  test("after close, acquireLock fails with io", async () => {
    const { f } = setup();
    await f.close();
    assert.equal((await f.acquireLock(LOCK))?.code, "io");
  });
  test("Linux: the lock is an abstract socket named after the lock file's real path (seen in /proc/net/unix)", { skip: !LINUX }, async () => {
    const { dir, f, root } = setup();
    const name = lockSocketName(dir, LOCK);
    assert.match(name, /^mcp-resume-lock-[0-9a-f]{40}$/);
    // Another spelling of the same directory (through a symlinked parent) names the same lock.
    const alias = path.join(tempDir(), "alias");
    symlinkSync(root, alias);
    assert.equal(lockSocketName(path.join(alias, "state"), LOCK), name);
    const listed = (): boolean => readFileSync("/proc/net/unix", "latin1").includes(`@${name}`);
    assert.ok(!listed());
    assert.equal(await f.acquireLock(LOCK), undefined);
    assert.ok(listed(), "bound while held");
    const viaAlias = new HostFunctions({ dir: path.join(alias, "state"), logger: quiet });
    assert.equal((await viaAlias.acquireLock(LOCK))?.code, "busy", "the same directory through a symlinked parent is the same lock");
    await f.close();
    assert.ok(!listed(), "unbound once closed");
    await viaAlias.close();
  });
  test("Linux: a name not taken ahead answers io explaining why (no synchronous bind in Node)", { skip: !LINUX }, () => {
    const { call, dir } = setup();
    const r = call("mcp_resume_lock", { name: LOCK });
    assert.equal(r.error.code, "io");
    assert.match(r.error.message, /not taken ahead/);
    assert.match(r.error.message, /names export/);
    assert.ok(!existsSync(path.join(dir, LOCK)));
  });
  test("a symlink at the lock name is unsafe and its target untouched; a directory is io; a bad name is invalid_request", async () => {
    const { dir, root, f, call } = setup();
    writeFileSync(path.join(root, "victim"), "secret");
    symlinkSync(path.join(root, "victim"), path.join(dir, LOCK));
    const e = await f.acquireLock(LOCK);
    assert.equal(e?.code, "unsafe");
    assert.equal(call("mcp_resume_lock", { name: LOCK }).error.code, "unsafe", "answered as it happened");
    assert.equal(readFileSync(path.join(root, "victim"), "utf8"), "secret");
    mkdirSync(path.join(dir, "lock-1-2.a"));
    assert.equal((await f.acquireLock("lock-1-2.a"))?.code, "io");
    for (const bad of ["../lock", "/tmp/lock", ".lock", ""]) {
      assert.equal((await f.acquireLock(bad))?.code, "invalid_request", bad);
      assert.equal(call("mcp_resume_lock", { name: bad }).error.code, "invalid_request", bad);
    }
    await f.close();
  });
  test("a missing state directory is not_found", async () => {
    const f = new HostFunctions({ dir: path.join(tempDir(), "absent"), logger: quiet });
    assert.equal((await f.acquireLock(LOCK))?.code, "not_found");
  });
  test("released when the holding process is killed with SIGKILL (a real child process)", async () => {
    const { dir } = setup();
    const { child, exited } = await startHolder("lock", dir, LOCK);
    try {
      const mine = new HostFunctions({ dir, logger: quiet });
      assert.equal((await mine.acquireLock(LOCK))?.code, "busy", "the child holds it");
      child.kill("SIGKILL");
      assert.equal(await exited, "SIGKILL");
      assert.equal(await mine.acquireLock(LOCK), undefined, "the kernel released it with the process");
      await mine.close();
    } finally {
      child.kill("SIGKILL");
    }
  });
});

describe("mcp_resume_probe", () => {
  test("alive for this process, gone for an exited child, and the file's age", { skip: !LINUX }, async () => {
    const { call, dir } = setup();
    writeFileSync(path.join(dir, "token-x"), "t");
    const me = new LinuxProcSource("/proc").lookupSync(process.pid);
    assert.deepEqual(call("mcp_resume_probe", { name: "token-x", pid: process.pid, start_time: me.startTime }), { host: "alive", age_seconds: 0 });
    assert.equal(call("mcp_resume_probe", { name: "token-x", pid: process.pid, start_time: "1" + me.startTime }).host, "gone", "pid reused");
    const child = spawn(process.execPath, ["-e", "process.stdin.resume()"], { stdio: ["pipe", "ignore", "ignore"] });
    await new Promise((r) => child.once("spawn", r));
    const c = new LinuxProcSource("/proc").lookupSync(child.pid!);
    assert.equal(call("mcp_resume_probe", { name: "token-x", pid: child.pid, start_time: c.startTime }).host, "alive");
    const exited = new Promise((r) => child.once("exit", r));
    child.stdin!.end();
    await exited;
    assert.equal(call("mcp_resume_probe", { name: "token-x", pid: child.pid, start_time: c.startTime }).host, "gone", "exited child");
    assert.equal(call("mcp_resume_probe", { name: "token-x", pid: 2147483646, start_time: "1.ab" }).host, "gone", "absent pid");
    const [t, b, ns] = me.startTime.split(".");
    const other = `${t}.${b}.${BigInt(ns!) + 1n}`;
    assert.equal(call("mcp_resume_probe", { name: "token-x", pid: process.pid, start_time: other }).host, "unknown", "another PID namespace");
    assert.equal(call("mcp_resume_probe", { name: "token-x", pid: 2147483646, start_time: other }).host, "unknown", "another PID namespace, absent pid");
    const old = new Date(Date.now() - 100_000);
    utimesSync(path.join(dir, "token-x"), old, old);
    const aged = call("mcp_resume_probe", { name: "token-x", pid: process.pid, start_time: me.startTime });
    assert.equal(aged.host, "alive");
    assert.ok(aged.age_seconds >= 100 && aged.age_seconds <= 102, String(aged.age_seconds));
  });
  test("the alive seam: its answer, unknown when it throws; lstat, not the symlink target", () => {
    const seen: Array<[number, string]> = [];
    const { call, dir, root } = setup({
      alive: (pid, start) => {
        seen.push([pid, start]);
        if (pid === 13) throw new Error("cannot tell");
        return pid === 7;
      },
    });
    writeFileSync(path.join(dir, "token-7-1.a"), "t");
    assert.deepEqual(call("mcp_resume_probe", { name: "token-7-1.a", pid: 7, start_time: "1.a" }), { host: "alive", age_seconds: 0 });
    assert.equal(call("mcp_resume_probe", { name: "token-7-1.a", pid: 8, start_time: "1.a" }).host, "gone");
    assert.equal(call("mcp_resume_probe", { name: "token-7-1.a", pid: 13, start_time: "1.a" }).host, "unknown");
    assert.deepEqual(seen, [[7, "1.a"], [8, "1.a"], [13, "1.a"]]);
    // A symlink is inspected itself (lstat): its own age, target untouched.
    writeFileSync(path.join(root, "victim"), "v");
    const old = new Date(Date.now() - 1000_000);
    utimesSync(path.join(root, "victim"), old, old);
    symlinkSync(path.join(root, "victim"), path.join(dir, "token-link"));
    assert.equal(call("mcp_resume_probe", { name: "token-link", pid: 7, start_time: "1.a" }).age_seconds, 0);
  });
  test("a missing file is not_found; a bad name is invalid_request", () => {
    const { call } = setup({ alive: () => true });
    assert.equal(call("mcp_resume_probe", { name: "token-nope", pid: 7, start_time: "1.a" }).error.code, "not_found");
    assert.equal(call("mcp_resume_probe", { name: "../x", pid: 7, start_time: "1.a" }).error.code, "invalid_request");
    assert.equal(call("mcp_resume_probe", { name: "token-nope", pid: "7", start_time: "1.a" }).error.code, "invalid_request");
  });
});

describe("mcp_resume_identity", () => {
  test("answers the identity source", () => {
    const { call } = setup({ identity: () => ({ pid: 42, startTime: "1.ab" }) });
    assert.deepEqual(call("mcp_resume_identity", {}), { pid: 42, start_time: "1.ab" });
  });
  test("adds the instance when there is one", () => {
    const { call } = setup({ identity: () => ({ pid: 42, startTime: "1.ab" }), instance: "--profile\0work" });
    assert.deepEqual(call("mcp_resume_identity", {}), { pid: 42, start_time: "1.ab", instance: "--profile\0work" });
  });
  test("a throwing source answers unavailable with its message", () => {
    const { call } = setup({
      identity: () => {
        throw new Error("parent exited");
      },
    });
    assert.deepEqual(call("mcp_resume_identity", {}), { error: { code: "unavailable", message: "parent exited" } });
  });
  test("no source or garbage answers unavailable", () => {
    assert.equal(setup().call("mcp_resume_identity", {}).error.code, "unavailable");
    const { call } = setup({ identity: () => ({ pid: 0, startTime: "x" }) });
    assert.equal(call("mcp_resume_identity", {}).error.code, "unavailable");
  });
});

describe("mcp_resume_log", () => {
  test("routes to the logger with event and detail; unknown level is info", () => {
    const { call, logs } = setup();
    assert.deepEqual(call("mcp_resume_log", { level: "warn", event: "token_corrupted", message: "Token file corrupted, treating as stale", detail: "empty" }), {});
    assert.deepEqual(call("mcp_resume_log", { level: "loud", event: "e", message: "m" }), {});
    assert.deepEqual(logs, [
      { level: "warn", message: "Token file corrupted, treating as stale", fields: { event: "token_corrupted", detail: "empty" } },
      { level: "info", message: "m", fields: { event: "e" } },
    ]);
  });
  test("a throwing logger never escapes", () => {
    const f = new HostFunctions({
      dir: "/nonexistent",
      logger: {
        debug() {
          throw new Error("x");
        },
        info() {
          throw new Error("x");
        },
        warn() {
          throw new Error("x");
        },
        error() {
          throw new Error("x");
        },
      },
    });
    assert.deepEqual(JSON.parse(new TextDecoder().decode(f.call("mcp_resume_log", enc({ level: "error", event: "e", message: "m" })))), {});
  });
});

describe("the nine functions", () => {
  test(`FUNCTIONS lists the contract's functions in its order; ABI ${ABI_VERSION}`, () => {
    assert.equal(ABI_VERSION, "2");
    assert.deepEqual(
      [...FUNCTIONS],
      [
        "mcp_resume_identity",
        "mcp_resume_prepare_dir",
        "mcp_resume_read",
        "mcp_resume_write",
        "mcp_resume_remove",
        "mcp_resume_list",
        "mcp_resume_log",
        "mcp_resume_lock",
        "mcp_resume_probe",
      ],
    );
  });
});

describe("malformed requests never throw", () => {
  test("not JSON, wrong types, unknown function", () => {
    const { f } = setup();
    const answers = (fn: string, bytes: Uint8Array) => JSON.parse(new TextDecoder().decode(f.call(fn, bytes))).error?.code;
    assert.equal(answers("mcp_resume_read", enc("{not json")), "invalid_request");
    assert.equal(answers("mcp_resume_read", enc("[]")), "invalid_request");
    assert.equal(answers("mcp_resume_read", enc('"x"')), "invalid_request");
    assert.equal(answers("mcp_resume_read", enc({ name: 5, limit: 1 })), "invalid_request");
    assert.equal(answers("mcp_resume_nope", enc({})), "invalid_request");
    assert.equal(answers("mcp_resume_read", enc("{}")), "invalid_request"); // missing name breaks the name rule
    assert.equal(answers("mcp_resume_prepare_dir", enc('{}       ')), undefined); // padded requests are fine
  });
  test("random bytes to every function", () => {
    const { f } = setup();
    let seed = 1;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) % 256);
    for (let i = 0; i < 500; i++) {
      const bytes = Uint8Array.from({ length: rnd() }, rnd);
      for (const fn of FUNCTIONS) {
        const out = JSON.parse(new TextDecoder().decode(f.call(fn, bytes)));
        assert.equal(typeof out, "object");
      }
    }
  });
  test("pad8 pads to a multiple of 8 bytes of UTF-8", () => {
    for (const s of ["", "{}", '{"a":"é"}', "12345678"]) assert.equal(Buffer.byteLength(pad8(s)) % 8, 0);
    assert.equal(pad8("12345678"), "12345678");
  });
});

describe("symlink targets survive every function", () => {
  test("read, write, remove and list on a symlink never touch the target", () => {
    const { call, dir, root } = setup();
    writeFileSync(path.join(root, "victim"), "secret");
    symlinkSync(path.join(root, "victim"), path.join(dir, "t"));
    call("mcp_resume_read", { name: "t", limit: 10 });
    call("mcp_resume_list", { prefix: "" });
    call("mcp_resume_remove", { name: "t" });
    assert.equal(readFileSync(path.join(root, "victim"), "utf8"), "secret");
    symlinkSync(path.join(root, "victim"), path.join(dir, "t"));
    call("mcp_resume_write", { name: "t", data: "bmV3" });
    assert.equal(readFileSync(path.join(root, "victim"), "utf8"), "secret");
    assert.throws(() => readlinkSync(path.join(dir, "t")));
  });
});

// The synchronous lock of ABI 6 (hostfuncs/README.md, `mcp_resume_lock` with
// `wait_ms`, and `mcp_resume_unlock`), taken inside the host function by the
// process's lock worker, against real holders: another store of this
// process, a Python process and a Node child binding the same abstract
// socket; and the cost of one lock + unlock, which the handle store pays on
// every operation. Also the 8 MiB read limit.
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { after, describe, test } from "node:test";

import { HostFunctions, MAX_READ_LIMIT } from "../src/hostfuncs.js";
import type { Logger } from "../src/logger.js";
import { cleanupTemps, startHolder, tempDir } from "./helpers.js";

after(cleanupTemps);

const LINUX = process.platform === "linux";
const quiet: Logger = { debug() {}, info() {}, warn() {}, error() {} };
const LOCK = "lock-07";
const SOCK = () => `mcp-resume-lock-ts-${process.pid}-${Math.random().toString(16).slice(2, 12)}`;
type Answer = Record<string, any>;

/** Host functions confined to a fresh state directory, and a JSON caller. */
function setup(dir = path.join(tempDir("lock-"), "state")) {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const f = new HostFunctions({ logger: quiet });
  f.confine(dir);
  const call = (fn: string, req: unknown): Answer => JSON.parse(Buffer.from(f.call(fn, Buffer.from(JSON.stringify(req)))).toString()) as Answer;
  return { f, dir, call };
}

/** The padded abstract name as /proc/net/unix shows it: `@`, the name, `@` up to 108 bytes. */
const listed = (socket: string): boolean => fs.readFileSync("/proc/net/unix", "latin1").includes(`@${socket}${"@".repeat(107 - socket.length)}\n`);

/** Python binds `socket` in Node's padded form and answers `held`, or `busy` (EADDRINUSE) and exits; `hold`: keeps it until stdin closes. */
const PY = `
import socket, sys
name = sys.argv[1].encode()
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.bind(b"\\0" + name + b"\\0" * (107 - len(name)))
except OSError as e:
    print("busy" if e.errno == 98 else "error %s" % e, flush=True)
    sys.exit(0)
print("held", flush=True)
if sys.argv[2] == "hold":
    sys.stdin.read()
`;

/** Runs the Python binder; resolves with its first line and the child (still running when it holds). */
function python(socket: string, mode: "hold" | "try"): Promise<{ line: string; child: ChildProcess }> {
  const child = spawn("python3", ["-c", PY, socket, mode], { stdio: ["pipe", "pipe", "inherit"] });
  return new Promise((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (d: Buffer) => {
      out += d;
      if (out.includes("\n")) resolve({ line: out.trim(), child });
    });
    child.once("error", reject);
    child.once("exit", (code) => out.includes("\n") || reject(new Error(`python exited ${code}`)));
  });
}

describe("mcp_resume_lock, synchronous (ABI 6)", { skip: !LINUX && "the abstract-socket lock is Linux's" }, () => {
  test("binds the padded socket inside the call, creates the file 0600; unlock frees the name and keeps the file; both idempotent", () => {
    const { call, dir, f } = setup();
    const socket = SOCK();
    assert.deepEqual(call("mcp_resume_lock", { name: LOCK, socket }), {});
    assert.ok(listed(socket), "bound when the host function returns");
    assert.deepEqual(call("mcp_resume_lock", { name: LOCK, socket, wait_ms: 0 }), {}, "taken again by its holder");
    assert.equal(fs.statSync(path.join(dir, LOCK)).mode & 0o777, 0o600);
    assert.deepEqual(call("mcp_resume_unlock", { name: LOCK, socket }), {});
    assert.ok(!listed(socket), "unbound when unlock returns");
    assert.deepEqual(call("mcp_resume_unlock", { name: LOCK, socket }), {}, "not held: {}");
    assert.ok(fs.existsSync(path.join(dir, LOCK)), "unlock never deletes the lock file");
    return f.close();
  });

  test("wait_ms and unlock's socket are validated like lock's, before any system call", () => {
    const { call, dir, f } = setup();
    for (const wait_ms of [-1, 10001, "5", 1.5, true]) {
      assert.equal(call("mcp_resume_lock", { name: LOCK, socket: SOCK(), wait_ms }).error?.code, "invalid_request", JSON.stringify(wait_ms));
    }
    for (const req of [{ name: "../x", socket: SOCK() }, { name: LOCK, socket: "x".repeat(108) }, { name: LOCK, socket: 5 }, { socket: SOCK() }]) {
      assert.equal(call("mcp_resume_unlock", req).error?.code, "invalid_request", JSON.stringify(req));
    }
    assert.deepEqual(fs.readdirSync(dir), []);
    assert.deepEqual(call("mcp_resume_lock", { name: LOCK, socket: SOCK(), wait_ms: null }), {}, "null: the default 0");
    return f.close();
  });

  test("a Python process holding the socket: busy at once with wait_ms 0, busy after about wait_ms, taken once it lets go", async () => {
    const { call, f } = setup();
    const socket = SOCK();
    const { line, child } = await python(socket, "hold");
    try {
      assert.equal(line, "held");
      let t0 = performance.now();
      assert.equal(call("mcp_resume_lock", { name: LOCK, socket }).error?.code, "busy");
      assert.ok(performance.now() - t0 < 100, "no wait without wait_ms");
      t0 = performance.now();
      const r = call("mcp_resume_lock", { name: LOCK, socket, wait_ms: 300 });
      const took = performance.now() - t0;
      assert.equal(r.error?.code, "busy");
      assert.match(r.error.message, /held by another server instance \(waited 300 ms\)/);
      assert.ok(took >= 300 && took < 1000, `answered busy after ${took.toFixed(1)} ms, want about 300`);
      const exited = new Promise((res) => child.once("exit", res));
      child.stdin!.end(); // it lets go and exits
      await exited;
      assert.deepEqual(call("mcp_resume_lock", { name: LOCK, socket }), {});
    } finally {
      child.kill("SIGKILL");
    }
    return f.close();
  });

  test("the retry takes the lock the moment another holder releases it during the wait", async () => {
    const { call, f } = setup();
    const socket = SOCK();
    const { line, child } = await python(socket, "hold");
    assert.equal(line, "held");
    // The child lets go ~150 ms from now, while this thread is blocked in the host function.
    const killer = spawn("sh", ["-c", `sleep 0.15; kill -9 ${child.pid}`], { stdio: "ignore" });
    const t0 = performance.now();
    const r = call("mcp_resume_lock", { name: LOCK, socket, wait_ms: 5000 });
    const took = performance.now() - t0;
    killer.kill();
    child.kill("SIGKILL");
    assert.deepEqual(r, {}, JSON.stringify(r));
    assert.ok(took >= 100 && took < 2000, `took ${took.toFixed(1)} ms`);
    return f.close();
  });

  test("unlock lets another process bind the name; before it, the other process is busy", async () => {
    const { call, f } = setup();
    const socket = SOCK();
    assert.deepEqual(call("mcp_resume_lock", { name: LOCK, socket }), {});
    assert.equal((await python(socket, "try")).line, "busy");
    assert.deepEqual(call("mcp_resume_unlock", { name: LOCK, socket }), {});
    assert.equal((await python(socket, "try")).line, "held");
    return f.close();
  });

  test("two stores of one process exclude each other; unlock or close of one frees it for the other", async () => {
    const { call, dir, f } = setup();
    const b = setup(dir);
    const socket = SOCK();
    assert.deepEqual(call("mcp_resume_lock", { name: LOCK, socket }), {});
    assert.equal(b.call("mcp_resume_lock", { name: LOCK, socket, wait_ms: 20 }).error?.code, "busy");
    assert.deepEqual(b.call("mcp_resume_unlock", { name: LOCK, socket }), {}, "b does not hold it: nothing released");
    assert.equal(b.call("mcp_resume_lock", { name: LOCK, socket }).error?.code, "busy", "still a's");
    assert.deepEqual(call("mcp_resume_unlock", { name: LOCK, socket }), {});
    assert.deepEqual(b.call("mcp_resume_lock", { name: LOCK, socket }), {});
    await b.f.close();
    assert.ok(!listed(socket), "close releases what the worker bound");
    assert.deepEqual(call("mcp_resume_lock", { name: LOCK, socket }), {});
    await f.close();
    assert.ok(!listed(socket));
  });

  test("a Node child holding the lock through its worker is busy for us, and the kernel frees it at SIGKILL", async () => {
    const { call, dir, f } = setup();
    const socket = SOCK();
    const { child, exited } = await startHolder("synclock", dir, LOCK, socket);
    try {
      assert.equal(call("mcp_resume_lock", { name: LOCK, socket, wait_ms: 50 }).error?.code, "busy");
      child.kill("SIGKILL");
      assert.equal(await exited, "SIGKILL");
      assert.deepEqual(call("mcp_resume_lock", { name: LOCK, socket, wait_ms: 2000 }), {});
    } finally {
      child.kill("SIGKILL");
    }
    return f.close();
  });

  test("one lock + unlock costs well under a millisecond (median of 1,000)", (t) => {
    const { call, f } = setup();
    const socket = SOCK();
    const times: number[] = [];
    for (let i = 0; i < 1000; i++) {
      const t0 = performance.now();
      const a = call("mcp_resume_lock", { name: LOCK, socket, wait_ms: 2000 });
      const b = call("mcp_resume_unlock", { name: LOCK, socket });
      times.push(performance.now() - t0);
      assert.ok(!a.error && !b.error, JSON.stringify([a, b]));
    }
    times.sort((x, y) => x - y);
    const [p50, p99] = [times[500]!, times[990]!];
    t.diagnostic(`lock+unlock: median ${(p50 * 1000).toFixed(0)} us, p99 ${(p99 * 1000).toFixed(0)} us`);
    process.stderr.write(`lock+unlock: median ${(p50 * 1000).toFixed(0)} us, p99 ${(p99 * 1000).toFixed(0)} us\n`);
    assert.ok(p50 < 2, `median ${p50} ms`);
    return f.close();
  });
});

describe("mcp_resume_read limit (ABI 6)", () => {
  test("up to 8388608 bytes in one read; 8388609 is invalid_request", () => {
    const { call, dir, f } = setup();
    const big = Buffer.alloc(5 << 20, 7);
    big[big.length - 1] = 9;
    fs.writeFileSync(path.join(dir, "big"), big);
    const r = call("mcp_resume_read", { name: "big", limit: MAX_READ_LIMIT });
    assert.ok(Buffer.from(r.data, "base64").equals(big), "the whole file");
    assert.equal(Buffer.from(call("mcp_resume_read", { name: "big", limit: 3 }).data, "base64").length, 3);
    assert.equal(call("mcp_resume_read", { name: "big", limit: MAX_READ_LIMIT + 1 }).error?.code, "invalid_request");
    fs.writeFileSync(path.join(dir, "big"), Buffer.alloc(MAX_READ_LIMIT + 10, 1));
    assert.equal(Buffer.from(call("mcp_resume_read", { name: "big", limit: MAX_READ_LIMIT }).data, "base64").length, MAX_READ_LIMIT);
    return f.close();
  });
});

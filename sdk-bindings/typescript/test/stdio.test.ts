// The stdio check (docs/RELIABILITY.md fault 11c; rules in procid/doc.go, "Stdio"):
// the verdict rules on fixture /proc trees, then real child processes whose
// stdin/stdout are real anonymous pipes, socket pairs, /dev/null and a named
// FIFO, including a relay whose resolved host does not hold the pipe.
import assert from "node:assert/strict";
import { spawn, type StdioOptions } from "node:child_process";
import { chmodSync, closeSync, constants, mkdirSync, openSync, readdirSync, readFileSync, readlinkSync, symlinkSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { after, describe, test } from "node:test";

import { DarwinPsSource, type CommandRunner } from "../src/procid/darwin.js";
import { checkFd, checkStdio, NO_SUBREAPERS, ProcIdError, resolve, resolveHost, type DirLister, type FdKind } from "../src/procid/index.js";
import { launcherSet } from "../src/procid/launcher.js";
import { LinuxProcSource } from "../src/procid/linux.js";
import { isAnonPipe, otherEnd, parseAccessMode } from "../src/procid/stdio.js";
import type { ProcessInfo } from "../src/procid/types.js";
import { cleanupTemps, PKG, tempDir } from "./helpers.js";

after(cleanupTemps);

const isCode = (code: string, re?: RegExp) => (e: unknown) => e instanceof ProcIdError && e.code === code && (!re || re.test(e.message));

// ---------------------------------------------------------------------------
// Fixture trees

/** fdinfo text with the octal flags of `mode` (0 read, 1 write, 2 read-write), as the kernel writes it. */
const fdinfo = (mode: number): string => `pos:\t0\nflags:\t0210400${mode}\nmnt_id:\t15\nino:\t123\n`;

const HOST = 4242;
const HOST_INFO: ProcessInfo = { pid: HOST, ppid: 1, name: "subreaperd", args: ["subreaperd"], startTime: "1.b.c" };

interface Fd {
  /** The fd's /proc link, e.g. `pipe:[123]`. */
  link: string;
  /** Access mode for fdinfo; none means no fdinfo file. */
  mode?: number;
}

/** Writes `<root>/<who>/fd/<n> -> link` and `<root>/<who>/fdinfo/<n>`. */
function writeFds(root: string, who: string, fds: Record<string, Fd>): void {
  mkdirSync(path.join(root, who, "fd"), { recursive: true });
  mkdirSync(path.join(root, who, "fdinfo"), { recursive: true });
  for (const [n, fd] of Object.entries(fds)) {
    symlinkSync(fd.link, path.join(root, who, "fd", n));
    if (fd.mode !== undefined) writeFileSync(path.join(root, who, "fdinfo", n), fdinfo(fd.mode));
  }
}

/** A fixture tree: our fds 0/1 in `self`, the host's in `<HOST>` (no host dir when `host` is null). */
function tree(self: Record<string, Fd>, host: Record<string, Fd> | null): string {
  const root = tempDir("stdiofix-");
  writeFds(root, "self", self);
  if (host) writeFds(root, String(HOST), host);
  return root;
}

const probe =
  (k0: FdKind, k1: FdKind = "other") =>
  (fd: number): FdKind =>
    fd === 0 ? k0 : k1;

const STDIN_R: Record<string, Fd> = { "0": { link: "pipe:[123]", mode: 0 } };
const errno = (code: string): DirLister => () => {
  throw Object.assign(new Error(`${code}: fake`), { code });
};

describe("stdio check verdicts on fixture /proc trees", () => {
  test("pipe held by the host with the opposite access mode: verified", () => {
    const root = tree(STDIN_R, { "3": { link: "pipe:[999]", mode: 1 }, "7": { link: "pipe:[123]", mode: 1 } });
    assert.equal(checkStdio(300, HOST_INFO, { root, probe: probe("pipe") }), "verified: stdin pipe:[123] is held by the host as fd 7");
  });
  test("stdout pipe: the host's read end verifies a write end", () => {
    const root = tree({ "1": { link: "pipe:[55]", mode: 1 } }, { "12": { link: "pipe:[55]", mode: 0 } });
    assert.equal(checkStdio(300, HOST_INFO, { root, probe: probe("other", "pipe") }), "verified: stdout pipe:[55] is held by the host as fd 12");
  });
  test("O_RDWR on either side is the other end", () => {
    let root = tree(STDIN_R, { "5": { link: "pipe:[123]", mode: 2 } });
    assert.match(checkStdio(300, HOST_INFO, { root, probe: probe("pipe") }), /^verified: stdin pipe:\[123\] is held by the host as fd 5$/);
    root = tree({ "0": { link: "pipe:[123]", mode: 2 } }, { "5": { link: "pipe:[123]", mode: 0 } });
    assert.match(checkStdio(300, HOST_INFO, { root, probe: probe("pipe") }), /^verified: /);
  });
  test("the host holds only the same end (a forking shell's copy): disproved, adopted", () => {
    const root = tree(STDIN_R, { "0": { link: "pipe:[123]", mode: 0 }, "9": { link: "pipe:[124]", mode: 1 } });
    assert.throws(
      () => checkStdio(300, HOST_INFO, { root, probe: probe("pipe") }),
      (e: unknown) => {
        assert.ok(e instanceof ProcIdError);
        assert.equal(e.code, "adopted");
        assert.equal(
          e.message,
          'procid: resolve MCP host of pid 300: the host pid 4242 ("subreaperd") does not hold the other end of the server\'s stdio ' +
            "(stdin pipe:[123] is not held by the host): the server was probably orphaned and adopted by a subreaper, " +
            'or "subreaperd" passes its own stdio through (if it only launches servers, add it to MCP_RESUME_LAUNCHERS); session resume is off',
        );
        return true;
      },
    );
  });
  test("the host does not have the pipe at all: disproved", () => {
    const root = tree(STDIN_R, {});
    assert.throws(() => checkStdio(300, HOST_INFO, { root, probe: probe("pipe") }), isCode("adopted", /\(stdin pipe:\[123\] is not held by the host\)/));
  });
  test("host entries that vanish or lack fdinfo are skipped", () => {
    const root = tree(STDIN_R, { "4": { link: "pipe:[123]" } });
    writeFileSync(path.join(root, String(HOST), "fd", "8"), "not a link"); // readlink fails: EINVAL
    assert.throws(() => checkStdio(300, HOST_INFO, { root, probe: probe("pipe") }), isCode("adopted"));
  });
  test("unreadable host fd directory (EACCES/EPERM, injected: tests run as root): not checked", () => {
    const root = tree(STDIN_R, {});
    for (const code of ["EACCES", "EPERM"]) {
      assert.equal(
        checkStdio(300, HOST_INFO, { root, probe: probe("pipe"), readdir: errno(code) }),
        `not checked: stdin pipe:[123]: cannot list the host's fds: permission denied; stdout is not a pipe or socket`,
      );
    }
  });
  test("unreadable host fd directory (chmod 000, real EACCES when not root)", { skip: process.getuid?.() === 0 ? "root reads any directory" : false }, () => {
    const root = tree(STDIN_R, { "7": { link: "pipe:[123]", mode: 1 } });
    const dir = path.join(root, String(HOST), "fd");
    chmodSync(dir, 0);
    try {
      assert.match(checkStdio(300, HOST_INFO, { root, probe: probe("pipe") }), /^not checked: stdin pipe:\[123\]: cannot list the host's fds: permission denied;/);
    } finally {
      chmodSync(dir, 0o755);
    }
  });
  test("other listing errors: not checked with the error code", () => {
    const root = tree(STDIN_R, {});
    assert.match(checkStdio(300, HOST_INFO, { root, probe: probe("pipe"), readdir: errno("EIO") }), /^not checked: stdin pipe:\[123\]: cannot list the host's fds: EIO;/);
  });
  test("host fd directory gone (ENOENT, ESRCH): race", () => {
    const root = tree(STDIN_R, null);
    assert.throws(
      () => checkStdio(300, HOST_INFO, { root, probe: probe("pipe") }),
      isCode("race", /^procid: resolve MCP host of pid 300: the host pid 4242 \("subreaperd"\) exited during the stdio check; retry$/),
    );
    assert.throws(() => checkStdio(300, HOST_INFO, { root, probe: probe("pipe"), readdir: errno("ESRCH") }), isCode("race"));
  });
  test("named FIFO (the link is a path): not checked", () => {
    const root = tree({ "0": { link: "/run/user/0/server.fifo", mode: 0 } }, { "7": { link: "/run/user/0/server.fifo", mode: 1 } });
    assert.equal(checkStdio(300, HOST_INFO, { root, probe: probe("pipe") }), "not checked: stdin is a named FIFO; stdout is not a pipe or socket");
  });
  test("our own fdinfo unreadable: not checked", () => {
    const root = tree({ "0": { link: "pipe:[123]" } }, { "7": { link: "pipe:[123]", mode: 1 } });
    assert.match(checkStdio(300, HOST_INFO, { root, probe: probe("pipe") }), /^not checked: stdin pipe:\[123\]: cannot read its access mode: ENOENT;/);
  });
  test("closed, socket and other fds: not checked, with Node's socket limitation", () => {
    const root = tree({}, {});
    assert.equal(checkStdio(300, HOST_INFO, { root, probe: probe("closed", "socket") }), "not checked: stdin is closed; stdout is a socket; Node cannot read its peer");
    assert.equal(checkFd(0, HOST_INFO, { root, probe: probe("other") }).reason, "stdin is not a pipe or socket");
  });
  test("combination: one verified fd wins over a disproved one", () => {
    const root = tree({ "0": { link: "pipe:[1]", mode: 0 }, "1": { link: "pipe:[2]", mode: 1 } }, { "6": { link: "pipe:[2]", mode: 0 } });
    assert.equal(checkStdio(300, HOST_INFO, { root, probe: probe("pipe", "pipe") }), "verified: stdout pipe:[2] is held by the host as fd 6");
  });
  test("combination: disproved beats not checked; only disproved fds are listed", () => {
    const root = tree({ "1": { link: "pipe:[2]", mode: 1 } }, { "6": { link: "pipe:[2]", mode: 1 } });
    assert.throws(() => checkStdio(300, HOST_INFO, { root, probe: probe("socket", "pipe") }), isCode("adopted", /\(stdout pipe:\[2\] is not held by the host\): /));
  });
  test("combination: both verified, the first (stdin) is reported", () => {
    const root = tree({ "0": { link: "pipe:[1]", mode: 0 }, "1": { link: "pipe:[2]", mode: 1 } }, { "5": { link: "pipe:[1]", mode: 1 }, "6": { link: "pipe:[2]", mode: 0 } });
    assert.equal(checkStdio(300, HOST_INFO, { root, probe: probe("pipe", "pipe") }), "verified: stdin pipe:[1] is held by the host as fd 5");
  });
  test("helpers: parseAccessMode, otherEnd, isAnonPipe", () => {
    assert.equal(parseAccessMode(fdinfo(0)), 0);
    assert.equal(parseAccessMode("pos:\t0\nflags:\t01\n"), 1);
    assert.equal(parseAccessMode("flags:\t0100002\nmnt_id: 3\n"), 2);
    assert.throws(() => parseAccessMode("pos:\t0\n"), isCode("malformed"));
    assert.throws(() => parseAccessMode("flags:\t0x12\n"), isCode("malformed"));
    assert.deepEqual(
      [otherEnd(0, 1), otherEnd(1, 0), otherEnd(0, 0), otherEnd(1, 1), otherEnd(0, 2), otherEnd(2, 1), otherEnd(2, 2)],
      [true, true, false, false, true, true, true],
    );
    assert.deepEqual(["pipe:[1]", "pipe:[18446744073709551615]", "pipe:[]", "pipe:[1] ", "/tmp/fifo", "socket:[3]"].map(isAnonPipe), [true, true, false, false, false, false]);
  });
});

// ---------------------------------------------------------------------------
// resolveHost wiring, on a fixture tree holding this very process

const BOOT_UUID = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0\n";
const NS = "4026531836";

function statLine(pid: number, ppid: number, comm: string): string {
  return `${pid} (${comm}) S ${ppid} ${Array(17).fill("0").join(" ")} ${1000 + pid} ${Array(30).fill("7").join(" ")}\n`;
}

/** A /proc tree where this process (pid `process.pid`) runs under `sh -c` under host 4242 ("claude"). */
function walkTree(hostFds: Record<string, Fd> | null): string {
  const root = tree({ "0": { link: "pipe:[123]", mode: 0 } }, hostFds);
  const procs: Array<[number, number, string, string[]]> = [
    [1, 0, "systemd", ["/sbin/init"]],
    [HOST, 1, "claude", ["claude"]],
    [4300, HOST, "sh", ["sh", "-c", "server"]],
    [process.pid, 4300, "node", ["node", "server.js"]],
  ];
  for (const [pid, ppid, comm, args] of procs) {
    const dir = path.join(root, String(pid));
    mkdirSync(path.join(dir, "ns"), { recursive: true });
    writeFileSync(path.join(dir, "stat"), statLine(pid, ppid, comm));
    writeFileSync(path.join(dir, "cmdline"), args.join("\0") + "\0");
    symlinkSync(`pid:[${NS}]`, path.join(dir, "ns", "pid"));
  }
  mkdirSync(path.join(root, "self", "ns"), { recursive: true });
  symlinkSync(`pid:[${NS}]`, path.join(root, "self", "ns", "pid"));
  mkdirSync(path.join(root, "sys", "kernel", "random"), { recursive: true });
  writeFileSync(path.join(root, "sys", "kernel", "random", "boot_id"), BOOT_UUID);
  return root;
}

describe("resolveHost runs the stdio check for the current process only", () => {
  test("verified: the description is on the result, the host is the last of the chain", async () => {
    const root = walkTree({ "7": { link: "pipe:[123]", mode: 1 } });
    const h = await resolveHost({ source: new LinuxProcSource(root), platform: "linux", env: {}, stdioCheck: { root, probe: probe("pipe") } });
    assert.equal(h.pid, HOST);
    assert.deepEqual(h.chain.map((p) => p.name), ["sh", "claude"]);
    assert.equal(h.stdio, "verified: stdin pipe:[123] is held by the host as fd 7");
    assert.equal(
      (await resolveHost({ pid: process.pid, source: new LinuxProcSource(root), platform: "linux", env: {}, stdioCheck: { root, probe: probe("pipe") } })).stdio,
      h.stdio,
    );
  });
  test("adopted and race are thrown after the walk", async () => {
    const root = walkTree({ "7": { link: "pipe:[123]", mode: 0 } });
    await assert.rejects(
      resolveHost({ source: new LinuxProcSource(root), platform: "linux", env: {}, stdioCheck: { root, probe: probe("pipe") } }),
      isCode("adopted", new RegExp(`^procid: resolve MCP host of pid ${process.pid}: the host pid 4242 \\("claude"\\) does not hold`)),
    );
    // The walk still finds host 4242, but its fd directory is gone by the check.
    const gone = walkTree(null);
    await assert.rejects(resolveHost({ source: new LinuxProcSource(gone), platform: "linux", env: {}, stdioCheck: { root: gone, probe: probe("pipe") } }), isCode("race"));
  });
  test("another pid, and resolve, are the walk alone (no stdio)", async () => {
    const root = walkTree(null);
    const other = await resolveHost({ pid: 4300, source: new LinuxProcSource(root), platform: "linux", env: {}, stdioCheck: { root, probe: probe("pipe") } });
    assert.equal(other.pid, HOST);
    assert.equal(other.stdio, undefined);
    const walked = await resolve(new LinuxProcSource(root), process.pid, launcherSet());
    assert.equal(walked.pid, HOST);
    assert.equal(walked.stdio, undefined);
  });
  test("macOS: no check, 'not checked: no subreapers on this system'", async () => {
    const stat: Record<number, string> = {
      [process.pid]: `${String(process.pid).padStart(5)}   612 Wed Nov  1 00:00:10 2023     node\n`,
      612: "  612     1 Mon Nov 20 09:15:42 2023     Claude\n",
    };
    const run: CommandRunner = async (_file, args) => {
      const pid = Number(args[args.length - 1]);
      if (args.includes("args=")) return "node server.js\n";
      if (stat[pid] === undefined) throw Object.assign(new Error("exit 1"), { code: 1 });
      return stat[pid]!;
    };
    const h = await resolveHost({ source: new DarwinPsSource(run), platform: "darwin", env: {} });
    assert.equal(h.pid, 612);
    assert.equal(h.stdio, NO_SUBREAPERS);
    assert.equal(NO_SUBREAPERS, "not checked: no subreapers on this system");
  });
});

// ---------------------------------------------------------------------------
// Real processes

/** Ends of one real anonymous pipe held by this process: read end `r`, write end `w`. */
interface Pipe {
  r?: number;
  w?: number;
  /** `pipe:[<inode>]`. */
  link: string;
}

const opened: number[] = [];
after(() => {
  for (const fd of opened.splice(0)) {
    try {
      closeSync(fd);
    } catch {
      // already closed
    }
  }
});

/** Parent pid of `pid` from /proc/<pid>/stat, or undefined when gone. */
function ppidOf(pid: string): number | undefined {
  try {
    const st = readFileSync(`/proc/${pid}/stat`, "latin1");
    return Number(st.slice(st.lastIndexOf(")") + 2).split(" ")[1]);
  } catch {
    return undefined;
  }
}

/**
 * A real anonymous pipe whose ends this process holds. Node cannot call
 * pipe(2) (child_process gives socket pairs), so `sh -c 'sleep | sleep'`
 * makes one, this process opens the first sleep's `/proc/<pid>/fd/1` (which
 * re-opens the very same pipe, as `pipe:[N]`) for reading and/or writing,
 * and the shell and its sleeps are killed.
 */
async function anonPipe(ends: { r?: boolean; w?: boolean } = { r: true, w: true }): Promise<Pipe> {
  const sh = spawn("sh", ["-c", "sleep 600 | sleep 600"], { stdio: "ignore", detached: true });
  await new Promise((res, rej) => sh.once("spawn", res).once("error", rej));
  try {
    for (let i = 0; i < 200; i++) {
      for (const e of readdirSync("/proc")) {
        if (!/^\d+$/.test(e) || ppidOf(e) !== sh.pid) continue;
        let link: string;
        try {
          link = readlinkSync(`/proc/${e}/fd/1`);
        } catch {
          continue;
        }
        if (!/^pipe:\[\d+\]$/.test(link)) continue;
        const p: Pipe = { link };
        // O_NONBLOCK: never wait for the other side (it is there: the sleeps).
        if (ends.r) opened.push((p.r = openSync(`/proc/${e}/fd/1`, constants.O_RDONLY | constants.O_NONBLOCK)));
        if (ends.w) opened.push((p.w = openSync(`/proc/${e}/fd/1`, constants.O_WRONLY | constants.O_NONBLOCK)));
        assert.equal(readlinkSync(`/proc/self/fd/${p.r ?? p.w}`), link);
        return p;
      }
      await new Promise((r) => setTimeout(r, 10));
    }
    throw new Error("no pipe found below sh -c 'sleep 600 | sleep 600'");
  } finally {
    process.kill(-sh.pid!, "SIGKILL");
  }
}

/** What the child reports: the resolved host, or the error. */
interface ChildResult {
  pid?: number;
  stdio?: string;
  code?: string;
  message?: string;
}

const PROCID = new URL("../src/procid/index.ts", import.meta.url).href;
/** The child: resolveHost() of itself, the outcome as JSON into the file $STDIO_TEST_RESULT (never stdout). */
const CHILD =
  `import { writeFileSync } from "node:fs";` +
  `const m = await import(${JSON.stringify(PROCID)});` +
  `let out;` +
  `try { const h = await m.resolveHost(); out = { pid: h.pid, stdio: h.stdio }; } catch (e) { out = { code: e.code, message: e.message }; }` +
  `writeFileSync(process.env.STDIO_TEST_RESULT, JSON.stringify(out));`;
const NODE_CHILD = [process.execPath, "--import", "tsx", "--input-type=module", "-e", CHILD];

/** Runs `cmd args` with `stdio` and waits for the child's result file. */
async function run(cmd: string, args: string[], stdio: StdioOptions, extra: { uid?: number; gid?: number } = {}): Promise<ChildResult & { childPid: number }> {
  const dir = tempDir("stdiochild-");
  chmodSync(dir, 0o777); // the unprivileged-child test writes here too
  const result = path.join(dir, "result.json");
  const p = spawn(cmd, args, { stdio, cwd: PKG, env: { ...process.env, STDIO_TEST_RESULT: result }, ...extra });
  let err = "";
  p.stderr?.on("data", (d: Buffer) => (err += d));
  const status = await new Promise<number | null>((res) => p.on("exit", (c) => res(c)));
  let text: string;
  try {
    text = readFileSync(result, "utf8");
  } catch {
    throw new Error(`the child wrote no result (exit ${status}): ${err}`);
  }
  return { ...(JSON.parse(text) as ChildResult), childPid: p.pid! };
}

const ADOPTED_TAIL =
  /: the server was probably orphaned and adopted by a subreaper, or ".*" passes its own stdio through \(if it only launches servers, add it to MCP_RESUME_LAUNCHERS\); session resume is off$/;

describe("stdio check with real processes (this Linux machine)", { skip: process.platform !== "linux" }, () => {
  test("stdin is an anonymous pipe whose write end this process (the host) holds: verified", async () => {
    const pipe = await anonPipe();
    const got = await run(NODE_CHILD[0]!, NODE_CHILD.slice(1), [pipe.r!, "ignore", "pipe"]);
    assert.equal(got.code, undefined, got.message);
    assert.equal(got.pid, process.pid);
    assert.equal(got.stdio, `verified: stdin ${pipe.link} is held by the host as fd ${pipe.w}`);
  });
  test("stdout is an anonymous pipe whose read end this process holds: verified, next to a socket stdin", async () => {
    const pipe = await anonPipe();
    const got = await run(NODE_CHILD[0]!, NODE_CHILD.slice(1), ["pipe", pipe.w!, "pipe"]);
    assert.equal(got.pid, process.pid, got.message);
    assert.equal(got.stdio, `verified: stdout ${pipe.link} is held by the host as fd ${pipe.r}`);
  });
  test("through sh -c (a forking launcher holding the server's own end): still verified against the host", async () => {
    const pipe = await anonPipe();
    const q = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;
    const got = await run("sh", ["-c", `${NODE_CHILD.map(q).join(" ")}; exit $?`], [pipe.r!, "ignore", "pipe"]);
    assert.equal(got.pid, process.pid, got.message);
    assert.equal(got.stdio, `verified: stdin ${pipe.link} is held by the host as fd ${pipe.w}`);
  });
  test("the host holds only the same (read) end of the server's stdin pipe: adopted", async () => {
    const pipe = await anonPipe({ r: true });
    const got = await run(NODE_CHILD[0]!, NODE_CHILD.slice(1), [pipe.r!, "ignore", "pipe"]);
    assert.equal(got.code, "adopted", JSON.stringify(got));
    assert.ok(
      got.message!.startsWith(
        `procid: resolve MCP host of pid ${got.childPid}: the host pid ${process.pid} (${JSON.stringify(readFileSync("/proc/self/comm", "latin1").trim())}) ` +
          `does not hold the other end of the server's stdio (stdin ${pipe.link} is not held by the host)`,
      ),
      got.message,
    );
    assert.match(got.message!, ADOPTED_TAIL);
  });
  test("socket pairs from Node's spawn (stdio 'pipe'): not checked, Node cannot read the peer", async () => {
    const got = await run(NODE_CHILD[0]!, NODE_CHILD.slice(1), ["pipe", "pipe", "pipe"]);
    assert.equal(got.pid, process.pid, got.message);
    assert.equal(got.stdio, "not checked: stdin is a socket; Node cannot read its peer; stdout is a socket; Node cannot read its peer");
  });
  test("/dev/null (stdio 'ignore'): not checked", async () => {
    const got = await run(NODE_CHILD[0]!, NODE_CHILD.slice(1), ["ignore", "ignore", "pipe"]);
    assert.equal(got.pid, process.pid, got.message);
    assert.equal(got.stdio, "not checked: stdin is not a pipe or socket; stdout is not a pipe or socket");
  });
  test("a named FIFO: not checked", async () => {
    const fifo = path.join(tempDir("stdiofifo-"), "server.fifo");
    const mk = spawn("mkfifo", [fifo], { stdio: "ignore" });
    assert.equal(await new Promise((r) => mk.on("exit", r)), 0);
    const fd = openSync(fifo, constants.O_RDWR); // O_RDWR: Linux opens a FIFO without waiting
    opened.push(fd);
    const got = await run(NODE_CHILD[0]!, NODE_CHILD.slice(1), [fd, "ignore", "pipe"]);
    assert.equal(got.pid, process.pid, got.message);
    assert.equal(got.stdio, "not checked: stdin is a named FIFO; stdout is not a pipe or socket");
  });
  test("another user's host (server runs as nobody, /proc/<host>/fd is EACCES): not checked", { skip: process.getuid?.() !== 0 ? "needs root to start a child as another user" : false }, async () => {
    const pipe = await anonPipe();
    const got = await run(NODE_CHILD[0]!, NODE_CHILD.slice(1), [pipe.r!, "ignore", "pipe"], { uid: 65534, gid: 65534 });
    assert.equal(got.pid, process.pid, got.message);
    assert.equal(got.stdio, `not checked: stdin ${pipe.link}: cannot list the host's fds: permission denied; stdout is not a pipe or socket`);
  });
  for (const keep of [false, true]) {
    test(`relay: the host (a node -e process) passes on a pipe it did not create and ${keep ? "keeps its copy of the same end" : "closes its copy"}: adopted`, async () => {
      // This process holds the read end; P gets the write end as fd 3 and
      // hands it to the server as stdout. P is not a launcher, so it is the
      // server's host, and it does not hold the read end.
      const pipe = await anonPipe();
      const relay =
        `const { spawn } = await import("node:child_process");` +
        `const { closeSync } = await import("node:fs");` +
        `const c = spawn(process.argv[1], process.argv.slice(2), { stdio: ["ignore", 3, "inherit"] });` +
        (keep ? "" : `closeSync(3);`) +
        `c.on("exit", (code) => process.exit(code ?? 1));`;
      const got = await run(process.execPath, ["--input-type=module", "-e", relay, "--", ...NODE_CHILD], ["ignore", "ignore", "pipe", pipe.w!]);
      assert.equal(got.code, "adopted", JSON.stringify(got));
      assert.ok(
        got.message!.includes(`: the host pid ${got.childPid} ("node") does not hold the other end of the server's stdio (stdout ${pipe.link} is not held by the host): `),
        got.message,
      );
      assert.match(got.message!, ADOPTED_TAIL);
    });
  }
  test("a shell pipeline relays the server's stdout through a pipe of its own (sh -c 'server | cat'): adopted", async () => {
    const q = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;
    const got = await run("sh", ["-c", `${NODE_CHILD.map(q).join(" ")} | cat`], ["ignore", "ignore", "pipe"]);
    assert.equal(got.code, "adopted", JSON.stringify(got));
    assert.match(got.message!, new RegExp(`the host pid ${process.pid} \\(.*\\) does not hold the other end of the server's stdio \\(stdout pipe:\\[\\d+\\] is not held by the host\\)`));
  });
});

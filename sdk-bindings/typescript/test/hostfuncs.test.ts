// The host functions as OS primitives (hostfuncs/README.md, ABI 10), called
// natively on real files, the real /proc and real processes; the conformance
// suite runs the same code under the plugin. PinnedHost (test code) maps
// /proc into a temporary tree or pins another system where the real one
// cannot show a case. Over 500 lines: one test per contract rule that the
// conformance cases cannot reach (the real /proc, processes, planted files).
import assert from "node:assert/strict";
import { execFileSync, spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import { createServer, type AddressInfo, type Server } from "node:net";
import { userInfo } from "node:os";
import * as path from "node:path";
import { after, describe, test } from "node:test";

import { FUNCTIONS, HostFunctions, MAX_PROC_READ, MAX_PROC_TABLE_READ, NAMESPACES, NET_TABLES } from "../src/hostfuncs.js";
import type { LogFields, Logger } from "../src/logger.js";
import { cleanupTemps, PinnedHost, PKG, startHolder, tempDir } from "./helpers.js";

after(cleanupTemps);

const LINUX = process.platform === "linux";
/** The working directory when this file's imports (the binding among them) were evaluated: facts.cwd. */
const LAUNCH_CWD = process.cwd();
const ROOT_USER = process.geteuid?.() === 0;
const quiet: Logger = { debug() {}, info() {}, warn() {}, error() {} };
type Answer = Record<string, any>;

/** Calls one host function with a JSON request (or raw bytes) and parses the answer, checking the padding. */
function caller(f: HostFunctions) {
  return (fn: string, req: unknown): Answer => {
    const raw = f.call(fn, typeof req === "string" ? Buffer.from(req) : Buffer.from(JSON.stringify(req)));
    assert.equal(raw.length % 8, 0, "responses are padded to a multiple of 8 bytes");
    return JSON.parse(Buffer.from(raw).toString("utf8")) as Answer;
  };
}

/** Host functions confined to a fresh state directory (as after open), which they made (mkdir, 0700). */
function setup() {
  const root = tempDir("hostfuncs-");
  const dir = path.join(root, "state");
  const logs: Array<{ level: string; message: string; fields?: LogFields }> = [];
  const add = (level: string) => (message: string, fields?: LogFields) => logs.push({ level, message, fields });
  const f = new HostFunctions({ logger: { debug: add("debug"), info: add("info"), warn: add("warn"), error: add("error") } });
  const call = caller(f);
  f.confine(dir);
  assert.deepEqual(call("mcp_resume_prepare_dir", { op: "mkdir", path: dir }), {});
  return { root, dir, f, call, logs };
}

/** Runs inspect operations and returns their results. */
const inspect = (f: HostFunctions, ...ops: unknown[]): Answer[] => caller(f)("mcp_resume_inspect", { ops }).results as Answer[];

describe("mcp_resume_facts", () => {
  test("this process: os, pid, euid, home, XDG_STATE_HOME as set, cwd, args after the script, every variable", () => {
    process.env["MCP_RESUME_TEST_X"] = "1";
    process.env["MCP_RESUMEX"] = "reported too";
    try {
      const facts = caller(new HostFunctions({ logger: quiet }))("mcp_resume_facts", {});
      assert.deepEqual(facts, {
        os: process.platform,
        pid: process.pid,
        euid: process.geteuid!(),
        home: process.env["HOME"],
        xdg_state_home: process.env["XDG_STATE_HOME"] ?? "",
        cwd: LAUNCH_CWD,
        args: process.argv.slice(2),
        env: { ...process.env },
        runtime: "node",
      });
      assert.equal(facts["env"]["MCP_RESUME_TEST_X"], "1");
      assert.equal(facts["env"]["MCP_RESUMEX"], "reported too");
    } finally {
      delete process.env["MCP_RESUME_TEST_X"];
      delete process.env["MCP_RESUMEX"];
    }
  });
  test("cwd is the working directory when the module was loaded: a process.chdir after the import changes nothing", () => {
    const elsewhere = fs.realpathSync(tempDir("chdir-"));
    assert.notEqual(elsewhere, LAUNCH_CWD);
    try {
      process.chdir(elsewhere);
      const facts = caller(new HostFunctions({ logger: quiet }))("mcp_resume_facts", {});
      assert.equal(facts["cwd"], LAUNCH_CWD, "where the server was launched, not where it went");
      assert.equal(process.cwd(), elsewhere);
    } finally {
      process.chdir(LAUNCH_CWD);
    }
  });
  test("HOME unset, empty or relative: the password database's home of the effective uid, as in Go and Python", () => {
    const saved = process.env["HOME"];
    const want = userInfo().homedir;
    try {
      for (const h of [undefined, "", "rel/dir", "~"]) {
        if (h === undefined) delete process.env["HOME"];
        else process.env["HOME"] = h;
        assert.equal(caller(new HostFunctions({ logger: quiet }))("mcp_resume_facts", {})["home"], want, `HOME=${String(h)}`);
      }
      process.env["HOME"] = "/some/where";
      assert.equal(caller(new HostFunctions({ logger: quiet }))("mcp_resume_facts", {})["home"], "/some/where");
    } finally {
      if (saved === undefined) delete process.env["HOME"];
      else process.env["HOME"] = saved;
    }
  });
  test("arguments that differ only in bytes that are not UTF-8 reach the plugin alike, as U+FFFD", { skip: !LINUX && "Linux" }, () => {
    // A real child node process started with the raw bytes --x=\xff and --x=\xfe reports its facts.
    const script = path.join(tempDir(), "facts.mts");
    fs.writeFileSync(script, `import { HostFunctions } from ${JSON.stringify(new URL("../src/hostfuncs.ts", import.meta.url).href)};
      const f = new HostFunctions({ logger: { debug() {}, info() {}, warn() {}, error() {} } });
      process.stderr.write(Buffer.from(f.call("mcp_resume_facts", Buffer.from("{}"))));`);
    const out = spawnSync("/bin/sh", ["-c", `exec "$0" --import tsx "$1" "$(printf -- '--x=\\377')" "$(printf -- '--x=\\376')"`, process.execPath, script], { encoding: "buffer", cwd: PKG });
    const facts = JSON.parse(out.stderr.toString("utf8").trim()) as { args: string[] };
    assert.deepEqual(facts.args, ["--x=\ufffd", "--x=\ufffd"], out.stderr.toString());
  });
});

describe("mcp_resume_inspect", { skip: !LINUX && "Linux /proc" }, () => {
  const f = new HostFunctions({ logger: quiet });
  test("exe: device and inode of the program file; an exec changes them, the pid stays; a reaped child is not_found", () => {
    const ident = (p: string) => {
      const st = fs.statSync(p, { bigint: true });
      return { dev: st.dev.toString(), ino: st.ino.toString() };
    };
    const [self] = inspect(f, { op: "exe", pid: String(process.pid) });
    assert.deepEqual(self, ident(process.execPath));
    const sleep = execFileSync("/bin/sh", ["-c", "command -v sleep"], { encoding: "utf8" }).trim();
    const child = spawnSync("/bin/sh", ["-c", `${sleep} 0.2 & pid=$!; cat /proc/$pid/stat >/dev/null; echo $pid; wait`], { encoding: "utf8" });
    assert.equal(child.status, 0);
    const [gone] = inspect(f, { op: "exe", pid: child.stdout.trim() });
    assert.equal((gone as { error?: { code: string } }).error?.code, "not_found");
    for (const bad of ["0", "01", "self", ""]) assert.equal((inspect(f, { op: "exe", pid: bad })[0] as { error?: { code: string } }).error?.code, "invalid_request");
  });
  test("the typed /proc ops answer the real files: boot_id, self, timens, stat, cmdline, pid_ns, fd_link", () => {
    const [boot, self, stat, cmdline, ns, fd0, selfStat] = inspect(
      f,
      { op: "boot_id" },
      { op: "self" },
      { op: "stat", pid: String(process.pid) },
      { op: "cmdline", pid: "self" },
      { op: "pid_ns", pid: "self" },
      { op: "fd_link", pid: String(process.pid), fd: 0 },
      { op: "stat", pid: "self" },
    );
    assert.match(Buffer.from(boot!["data"], "base64").toString(), /^[0-9a-f-]{36}\n$/);
    assert.equal(self!["target"], String(process.pid));
    const startOf = (stat: string): string => stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19]!; // field 22, starttime
    const got = Buffer.from(stat!["data"], "base64").toString();
    assert.ok(got.startsWith(`${process.pid} (node) `), got);
    assert.equal(startOf(got), startOf(fs.readFileSync(`/proc/${process.pid}/stat`, "latin1")));
    assert.equal(startOf(Buffer.from(selfStat!["data"], "base64").toString()), startOf(got));
    assert.equal(Buffer.from(cmdline!["data"], "base64").toString().split("\0")[0], process.execPath);
    assert.equal(ns!["target"], fs.readlinkSync("/proc/self/ns/pid"));
    assert.equal(fd0!["target"], fs.readlinkSync("/proc/self/fd/0"));
    const [timens] = inspect(f, { op: "timens" });
    if (fs.existsSync("/proc/self/timens_offsets")) assert.deepEqual(Buffer.from(timens!["data"], "base64"), fs.readFileSync("/proc/self/timens_offsets"));
    else assert.equal(timens!["error"]?.code, "not_found");
  });
  test("no paths: an unknown op, a bad pid or fd is invalid_request, before any system call", () => {
    const refused = [
      { op: "read", path: "/proc/self/stat" },
      { op: "readlink", path: "/proc/self" },
      { op: "stat", path: "/etc/passwd" },
      { op: "stat" },
      { op: "stat", pid: "01" },
      { op: "stat", pid: "../1" },
      { op: "stat", pid: 100 },
      { op: "cmdline", pid: "2147483648" },
      { op: "pid_ns", pid: "1/../self" },
      { op: "fd_link", pid: "self", fd: -1 },
      { op: "fd_link", pid: "self", fd: "0" },
      { op: "fd_link", pid: "self", fd: 1.5 },
      { op: "fd_link", pid: "self", fd: 2147483648 },
      { op: "kill0", pid: "self" },
      { op: "sysctl", pid: "self" },
      { op: "fds", pid: "0" },
      { op: "STAT", pid: "1" },
      { op: "constructor" },
      { op: "__proto__" },
      { op: "toString", pid: "1" },
      { op: "environ" },
      { op: "environ", pid: "0100" },
      { op: "environ", pid: 1 },
      { op: "ns", pid: "self" },
      { op: "ns", ns: "net" },
      { op: "ns", pid: "self", ns: "time" },
      { op: "ns", pid: "self", ns: "NET" },
      { op: "ns", pid: "self", ns: 1 },
      { op: "ns", pid: "self", ns: "../fd/0" },
      { op: "ns", pid: "self", ns: "toString" },
      { op: "net", pid: "self" },
      { op: "net", table: "tcp" },
      { op: "net", pid: "self", table: "raw" },
      { op: "net", pid: "self", table: "../stat" },
      { op: "net", pid: "self", table: "" },
      { op: "net", pid: "self", table: ["tcp"] },
      { op: "net", pid: "self", table: null },
    ];
    for (const op of refused) assert.equal(inspect(f, op)[0]!["error"]?.code, "invalid_request", JSON.stringify(op));
  });
  test("a missing process is not_found; data is capped at 65536 bytes; a symlink is never followed (unsafe); link targets as UTF-8", () => {
    assert.equal(inspect(f, { op: "stat", pid: "2147483646" })[0]!["error"].code, "not_found");
    // A mapped /proc shows what the real one cannot: a 70000-byte cmdline, a symlink at stat.
    const root = tempDir();
    fs.mkdirSync(path.join(root, "7"), { recursive: true });
    fs.writeFileSync(path.join(root, "7", "cmdline"), "x".repeat(70000));
    fs.symlinkSync("/etc/hostname", path.join(root, "7", "stat"));
    fs.mkdirSync(path.join(root, "7", "fd"));
    fs.symlinkSync(Buffer.from([0x2f, 0x66, 0xf0, 0x9f, 0x98, 0x21]), Buffer.from(path.join(root, "7", "fd", "3")));
    const mapped = new PinnedHost({ logger: quiet }, root, "linux");
    const [big, link, target] = inspect(mapped, { op: "cmdline", pid: "7" }, { op: "stat", pid: "7" }, { op: "fd_link", pid: "7", fd: 3 });
    assert.equal(Buffer.from(big!["data"], "base64").length, 65536);
    assert.equal(link!["error"].code, "unsafe", "O_NOFOLLOW: ELOOP is unsafe");
    assert.equal(target!["target"], "/f\ufffd\ufffd\ufffd!", "a link target that is not UTF-8: each invalid byte as U+FFFD");
  });
  test("environ: the environment as it was at exec, of this process (self or its pid) and of a child, byte for byte", () => {
    process.env["MCP_RESUME_LATE"] = "set after exec";
    try {
      const atExec = fs.readFileSync("/proc/self/environ");
      const [self, mine] = inspect(f, { op: "environ", pid: "self" }, { op: "environ", pid: String(process.pid) });
      assert.deepEqual(Buffer.from(self!["data"], "base64"), atExec);
      assert.deepEqual(Buffer.from(mine!["data"], "base64"), atExec);
      assert.ok(!atExec.includes("MCP_RESUME_LATE"), "a variable set after exec is not in it");
    } finally {
      delete process.env["MCP_RESUME_LATE"];
    }
    // libuv's spawn returns once the child has exec'd, so its environ is the one given.
    const sleep = execFileSync("/bin/sh", ["-c", "command -v sleep"], { encoding: "utf8" }).trim();
    const child = spawn(sleep, ["30"], { env: { MCP_RESUME_INSTANCE: "a b", EMPTY: "" }, stdio: "ignore" });
    try {
      const [env] = inspect(f, { op: "environ", pid: String(child.pid) });
      assert.equal(Buffer.from(env!["data"], "base64").toString(), "MCP_RESUME_INSTANCE=a b\0EMPTY=\0");
    } finally {
      child.kill("SIGKILL");
    }
    assert.equal(inspect(f, { op: "environ", pid: "2147483646" })[0]!["error"].code, "not_found");
  });
  test("ns: readlink of /proc/<P>/ns/<ns> for each namespace of the list, self or the pid; ns pid is pid_ns", () => {
    const self = inspect(f, ...NAMESPACES.map((ns) => ({ op: "ns", pid: "self", ns })));
    const byPid = inspect(f, ...NAMESPACES.map((ns) => ({ op: "ns", pid: String(process.pid), ns })));
    const want = NAMESPACES.map((ns) => fs.readlinkSync(`/proc/self/ns/${ns}`));
    assert.deepEqual(self.map((r) => r["target"]), want);
    assert.deepEqual(byPid.map((r) => r["target"]), want);
    for (const [i, ns] of NAMESPACES.entries()) assert.match(self[i]!["target"], new RegExp(`^${ns}:\\[[0-9]+\\]$`));
    assert.equal(self[NAMESPACES.indexOf("pid")]!["target"], inspect(f, { op: "pid_ns", pid: "self" })[0]!["target"]);
    assert.equal(inspect(f, { op: "ns", pid: "2147483646", ns: "net" })[0]!["error"].code, "not_found");
  });
  test("net: the socket tables of this process's network namespace, self or the pid; its own listeners are in them, by inode", async () => {
    const listen = (server: Server, where: object | string): Promise<Server> =>
      new Promise((resolve, reject) => server.once("error", reject).listen(where, () => resolve(server.off("error", reject))));
    const sock = path.join(tempDir(), "s");
    const [tcp, unix] = await Promise.all([listen(createServer(), { host: "127.0.0.1", port: 0 }), listen(createServer(), sock)]);
    try {
      const text = (r: Answer | undefined): string => Buffer.from(r!["data"], "base64").toString("latin1");
      const rs = inspect(f, ...NET_TABLES.map((table) => ({ op: "net", pid: "self", table })));
      for (const [i, table] of NET_TABLES.entries()) {
        const file = `/proc/self/net/${table}`;
        if (!fs.existsSync(file)) {
          assert.equal(rs[i]!["error"]?.code, "not_found", `${table}: no such table here (IPv6 off)`);
          continue;
        }
        assert.equal(text(rs[i]).split("\n")[0], fs.readFileSync(file, "latin1").split("\n")[0], `${table}: the real table's header`);
      }
      // The listener on 127.0.0.1:<port> in state 0A (LISTEN), and its inode one of this process's socket fds.
      const port = (tcp.address() as AddressInfo).port.toString(16).toUpperCase().padStart(4, "0");
      const [byPid] = inspect(f, { op: "net", pid: String(process.pid), table: "tcp" });
      const line = text(byPid).split("\n").find((l) => l.includes(` 0100007F:${port} 00000000:0000 0A `));
      assert.ok(line, `the listener 127.0.0.1:${port} in ${text(byPid)}`);
      const inode = line.trim().split(/\s+/)[9]!;
      const [fds] = inspect(f, { op: "fds", pid: "self", targets: [`socket:[${inode}]`] });
      assert.equal(fds!["fds"].length, 1, `the listener's inode ${inode} is one of this process's fds`);
      const unixLine = text(rs[NET_TABLES.indexOf("unix")]).split("\n").find((l) => l.endsWith(` ${sock}`));
      assert.ok(unixLine, `the Unix listener ${sock}`);
    } finally {
      tcp.close();
      unix.close();
    }
    assert.equal(inspect(f, { op: "net", pid: "2147483646", table: "unix" })[0]!["error"].code, "not_found");
  });
  test("environ and net read up to 1 MiB, stat and cmdline 65536 bytes; a symlink at any of them is unsafe; a namespace or table that is not there is not_found", () => {
    const root = tempDir();
    for (const d of ["7/net", "7/ns", "8/net"]) fs.mkdirSync(path.join(root, d), { recursive: true });
    fs.writeFileSync(path.join(root, "7", "environ"), "x".repeat(MAX_PROC_TABLE_READ + 5));
    fs.writeFileSync(path.join(root, "7", "net", "unix"), "y".repeat(MAX_PROC_TABLE_READ + 1));
    fs.writeFileSync(path.join(root, "7", "net", "tcp"), "z".repeat(MAX_PROC_TABLE_READ - 1));
    fs.writeFileSync(path.join(root, "7", "stat"), "s".repeat(MAX_PROC_TABLE_READ));
    fs.symlinkSync("net:[4026531840]", path.join(root, "7", "ns", "net"));
    fs.symlinkSync("/etc/hostname", path.join(root, "8", "environ"));
    fs.symlinkSync("/etc/hostname", path.join(root, "8", "net", "tcp"));
    const mapped = new PinnedHost({ logger: quiet }, root, "linux");
    const rs = inspect(
      mapped,
      { op: "environ", pid: "7" },
      { op: "net", pid: "7", table: "unix" },
      { op: "net", pid: "7", table: "tcp" },
      { op: "stat", pid: "7" },
      { op: "ns", pid: "7", ns: "net" },
      { op: "environ", pid: "8" },
      { op: "net", pid: "8", table: "tcp" },
      { op: "ns", pid: "7", ns: "mnt" },
      { op: "net", pid: "7", table: "udp" },
    );
    const len = (r: Answer | undefined): number => Buffer.from(r!["data"], "base64").length;
    assert.deepEqual(rs.slice(0, 4).map(len), [MAX_PROC_TABLE_READ, MAX_PROC_TABLE_READ, MAX_PROC_TABLE_READ - 1, MAX_PROC_READ]);
    assert.deepEqual(rs[4], { target: "net:[4026531840]" });
    assert.deepEqual(rs.slice(5).map((r) => r["error"]?.code), ["unsafe", "unsafe", "not_found", "not_found"], "O_NOFOLLOW: ELOOP is unsafe");
  });
  test("environ of another user's process is permission", { skip: ROOT_USER && "root reads every process" }, () => {
    assert.equal(inspect(f, { op: "environ", pid: "1" })[0]!["error"].code, "permission");
  });
  test("the worker mode's entry (callAsync) answers inspect with the same code", async () => {
    const req = Buffer.from(JSON.stringify({ ops: [{ op: "ns", pid: "self", ns: "net" }, { op: "net", pid: "self", table: "bad" }, { op: "environ", pid: "self" }] }));
    assert.deepEqual(Buffer.from(await f.callAsync("mcp_resume_inspect", req)), Buffer.from(f.call("mcp_resume_inspect", req)));
  });
  test("fds: this process's fds sorted, with targets and fdinfo flags; targets filters", () => {
    const [all] = inspect(f, { op: "fds", pid: "self" });
    const fds = all!["fds"] as Array<{ fd: number; target: string; flags: number }>;
    assert.deepEqual(fds.map((x) => x.fd), [...fds.map((x) => x.fd)].sort((a, b) => a - b));
    const fd0 = fds.find((x) => x.fd === 0)!;
    assert.equal(fd0.target, fs.readlinkSync("/proc/self/fd/0"));
    const flags = /^flags:\s*([0-7]+)$/m.exec(fs.readFileSync("/proc/self/fdinfo/0", "latin1"))![1]!;
    assert.equal(fd0.flags, parseInt(flags, 8));
    const [only] = inspect(f, { op: "fds", pid: String(process.pid), targets: [fd0.target] });
    for (const x of only!["fds"]) assert.equal(x.target, fd0.target);
    assert.ok(only!["fds"].some((x: { fd: number }) => x.fd === 0));
    assert.equal(inspect(f, { op: "fds", pid: "2147483646" })[0]!["error"].code, "not_found");
    assert.equal(inspect(f, { op: "fds", pid: "self", targets: "x" })[0]!["error"].code, "invalid_request");
    assert.deepEqual(inspect(f, { op: "fds", pid: "self", targets: null })[0]!["fds"].length, fds.length, "targets null: no filter");
  });
  test("fds of another user's process is permission", { skip: ROOT_USER && "root reads every process" }, () => {
    assert.equal(inspect(f, { op: "fds", pid: "1" })[0]!["error"].code, "permission");
  });
  test("kill0: alive {}, an exited child not_found; pid 0 and leading zeros are refused", async () => {
    const child = spawn(process.execPath, ["-e", ""]);
    const pid = String(child.pid);
    await new Promise((r) => child.once("exit", r));
    const [me, gone, zero, lead, huge] = inspect(
      f,
      { op: "kill0", pid: String(process.pid) },
      { op: "kill0", pid },
      { op: "kill0", pid: "0" },
      { op: "kill0", pid: "01" },
      { op: "kill0", pid: "4294967296" },
    );
    assert.deepEqual(me, {});
    assert.equal(gone!["error"].code, "not_found");
    for (const r of [zero, lead, huge]) assert.equal(r!["error"].code, "invalid_request");
  });
  test("kill0 of another user's process is permission (EPERM)", { skip: ROOT_USER && "root may signal every process" }, () => {
    assert.equal(inspect(f, { op: "kill0", pid: "1" })[0]!["error"].code, "permission");
  });
  test("fstat of any fd: the real file types (/dev/null is char, a shell pipe fifo); a negative or missing fd is refused", () => {
    const code = `import("${new URL("../src/hostfuncs.ts", import.meta.url).href}").then(({ HostFunctions }) => {
      const f = new HostFunctions({ logger: console });
      const req = { ops: [{ op: "fstat", fd: 0 }, { op: "fstat", fd: 1 }, { op: "fstat", fd: -1 }, { op: "fstat" }, { op: "fstat", fd: 2 }] };
      process.stderr.write(Buffer.from(f.call("mcp_resume_inspect", Buffer.from(JSON.stringify(req)))).toString());
    })`;
    const res = spawnSync("sh", ["-c", 'exec "$0" --import tsx -e "$1" </dev/null | cat >/dev/null', process.execPath, code], { cwd: PKG, encoding: "utf8" });
    const r = JSON.parse(res.stderr) as { results: Answer[] };
    assert.deepEqual(r.results.slice(0, 2), [{ type: "char" }, { type: "fifo" }]);
    assert.equal(r.results[2]!["error"].code, "invalid_request", "a negative fd");
    assert.equal(r.results[3]!["error"].code, "invalid_request", "fd is required");
    assert.deepEqual(r.results[4], { type: "socket" }, "fd 2, as facts.stdio_fds may name one, is answered (spawnSync's stderr: libuv gives children socket pairs)");
  });
  test("peer, sysctl and procargs are unsupported in Node; ps is unsupported off macOS", () => {
    const rs = inspect(f, { op: "peer", fd: 0 }, { op: "sysctl", pid: "1" }, { op: "procargs", pid: "1" }, { op: "ps", pid: "1" });
    for (const r of rs) assert.equal(r["error"].code, "unsupported", JSON.stringify(r));
  });
  test("the batch: 1 to 64 operations, one result each; a bad operation fails alone", () => {
    const call = caller(f);
    for (const ops of [[], Array(65).fill({ op: "kill0", pid: "1" }), "x", undefined]) {
      assert.equal(call("mcp_resume_inspect", { ops }).error?.code, "invalid_request", JSON.stringify(ops)?.slice(0, 20));
    }
    const rs = inspect(f, { op: "nope" }, null, [], { op: "kill0", pid: String(process.pid) });
    assert.deepEqual(rs.map((r) => r["error"]?.code), ["invalid_request", "invalid_request", "invalid_request", undefined]);
    assert.equal(inspect(f, ...Array(64).fill({ op: "kill0", pid: String(process.pid) })).length, 64);
  });
  test("ps (asked on macOS): the raw output of LC_ALL=C TZ=UTC0 /bin/ps, not_found when it prints nothing (run here with Linux's ps)", { skip: !fs.existsSync("/bin/ps") && "no /bin/ps" }, () => {
    const mac = new PinnedHost({ logger: quiet }, "/proc", "darwin");
    const [me, gone] = inspect(mac, { op: "ps", pid: String(process.pid) }, { op: "ps", pid: "2147483646" });
    assert.match(Buffer.from(me!["data"], "base64").toString(), new RegExp(`^\\s*${process.pid}\\s+${process.ppid}\\s+\\S+\\s+\\w{3} \\w{3} +\\d+ \\d\\d:\\d\\d:\\d\\d \\d{4} node\\n$`));
    assert.equal(Buffer.from(me!["args"], "base64").toString().split(" ")[0], process.execPath);
    assert.equal(gone!["error"].code, "not_found");
  });
  test("off Linux the /proc operations are unsupported; a bad op is still invalid_request", () => {
    const mac = new PinnedHost({ logger: quiet }, "/proc", "darwin");
    const ops = [{ op: "boot_id" }, { op: "self" }, { op: "timens" }, { op: "stat", pid: "self" }, { op: "cmdline", pid: "1" }, { op: "pid_ns", pid: "1" },
      { op: "fd_link", pid: "self", fd: 0 }, { op: "fds", pid: "self" }, { op: "exe", pid: "1" }, { op: "environ", pid: "self" }, { op: "ns", pid: "self", ns: "net" },
      { op: "net", pid: "1", table: "tcp" }, { op: "stat", pid: "x" }, { op: "ns", pid: "self" }, { op: "net", pid: "self", table: "raw" }];
    assert.deepEqual(inspect(mac, ...ops).map((r) => r["error"]?.code), [...Array(12).fill("unsupported"), ...Array(3).fill("invalid_request")]);
  });
});

describe("names and confinement", () => {
  const ONE_ELEMENT = ["token-1-2.a", "a", ".hidden", ".x.0123456789abcdef.tmp", "...", "tök", "a b", "x".repeat(255), "é".repeat(127)];
  const NOT_ONE = ["", ".", "..", "a/b", "/etc/passwd", "../outside", "a\0b", "x".repeat(256), "é".repeat(128), "\ud800", 7, null];
  test("a name is one path element: 1-255 bytes, not . or .., no / or NUL; anything else is invalid_request before any system call", () => {
    const { call, dir, root } = setup();
    fs.writeFileSync(path.join(root, "outside"), "victim");
    for (const name of NOT_ONE) {
      for (const fn of ["mcp_resume_read", "mcp_resume_write", "mcp_resume_remove", "mcp_resume_lock"]) {
        assert.equal(call(fn, { name, temp: ".t.tmp", limit: 10, data: "eA==", socket: "s" }).error?.code, "invalid_request", `${fn} ${JSON.stringify(name)}`);
      }
      assert.equal(call("mcp_resume_write", { name: "t", temp: name, data: "eA==" }).error?.code, "invalid_request", `write temp ${JSON.stringify(name)}`);
    }
    assert.equal(fs.readFileSync(path.join(root, "outside"), "utf8"), "victim");
    assert.deepEqual(fs.readdirSync(dir), []);
    for (const name of ONE_ELEMENT) {
      assert.deepEqual(call("mcp_resume_write", { name, temp: name === ".w.tmp" ? ".v.tmp" : ".w.tmp", data: "eA==" }), {}, JSON.stringify(name));
      assert.deepEqual(call("mcp_resume_read", { name, limit: 10 }), { data: "eA==" }, JSON.stringify(name));
      assert.deepEqual(call("mcp_resume_remove", { name }), {}, JSON.stringify(name));
    }
    assert.deepEqual(fs.readdirSync(dir), []);
  });
  test("before open set the state directory the file functions and mkdir answer invalid_request; confine fixes it for good", () => {
    const root = tempDir();
    const f = new HostFunctions({ logger: quiet });
    const call = caller(f);
    const all = () => ["mcp_resume_read", "mcp_resume_write", "mcp_resume_remove", "mcp_resume_lock", "mcp_resume_list"].map((fn) => call(fn, { name: "t", temp: ".t.tmp", limit: 10, data: "" }).error?.code);
    f.confine("");
    assert.deepEqual(all(), Array(5).fill("invalid_request"));
    assert.equal(call("mcp_resume_prepare_dir", { op: "mkdir", path: path.join(root, "s") }).error?.code, "invalid_request");
    assert.equal(call("mcp_resume_prepare_dir", { op: "stat", path: root }).type, "dir", "stat needs no state directory");
    fs.mkdirSync(path.join(root, "s"));
    f.confine(path.join(root, "s"));
    f.confine(root); // changes nothing
    assert.deepEqual(call("mcp_resume_write", { name: "t", temp: ".t.tmp", data: "" }), {});
    assert.deepEqual(fs.readdirSync(path.join(root, "s")), ["t"]);
    assert.deepEqual(call("mcp_resume_list", {}).files.map((x: Answer) => x["name"]), ["t"]);
  });
  test("prepare_dir: the path must be absolute and clean; the op stat or mkdir (fix is gone)", () => {
    const root = tempDir();
    const f = new HostFunctions({ logger: quiet });
    f.confine(`${root}/state`);
    const call = caller(f);
    for (const p of ["rel/state", `${root}/a/../state`, `${root}/./state`, `${root}/state/`, `${root}//state`, ""]) {
      for (const op of ["stat", "mkdir"]) assert.equal(call("mcp_resume_prepare_dir", { op, path: p }).error?.code, "invalid_request", `${op} ${p}`);
    }
    for (const op of ["fix", "create", undefined]) assert.equal(call("mcp_resume_prepare_dir", { op, path: `${root}/state`, sweep_seconds: 60 }).error?.code, "invalid_request", String(op));
    assert.deepEqual(fs.readdirSync(root), []);
  });
});

describe("mcp_resume_prepare_dir", () => {
  const prim = caller(new HostFunctions({ logger: quiet }));
  test("stat reports type, uid and mode & 0o7777, following a symlink only when asked; precise error codes", () => {
    const root = tempDir();
    const uid = process.geteuid!();
    fs.mkdirSync(path.join(root, "open"));
    fs.chmodSync(path.join(root, "open"), 0o755);
    fs.mkdirSync(path.join(root, "sticky"));
    fs.chmodSync(path.join(root, "sticky"), 0o1777);
    fs.writeFileSync(path.join(root, "file"), "x", { mode: 0o600 });
    fs.symlinkSync("open", path.join(root, "link"));
    fs.symlinkSync("nowhere", path.join(root, "dangling"));
    const stat = (p: string, follow = false): Answer => prim("mcp_resume_prepare_dir", { op: "stat", path: path.join(root, p), follow });
    assert.deepEqual(stat("open"), { type: "dir", uid, mode: 0o755 });
    assert.deepEqual(stat("sticky"), { type: "dir", uid, mode: 0o1777 });
    assert.deepEqual(stat("file"), { type: "file", uid, mode: 0o600 });
    assert.deepEqual(stat("link"), { type: "symlink", uid, mode: 0o777 });
    assert.deepEqual(stat("link", true), { type: "dir", uid, mode: 0o755 });
    assert.deepEqual(stat("dangling"), { type: "symlink", uid, mode: 0o777 });
    assert.equal(stat("dangling", true).error.code, "not_found");
    assert.equal(stat("missing").error.code, "not_found");
    assert.equal(stat("file/x").error.code, "not_dir");
  });
  test("mkdir makes one directory 0700, only the state directory or an ancestor, never parents, never through a symlink; precise error codes", () => {
    const root = tempDir();
    fs.writeFileSync(path.join(root, "file"), "x");
    fs.symlinkSync("nowhere", path.join(root, "dangling"));
    /** mkdir `p` by host functions confined to the state directory `state` (both under root). */
    const mkdir = (state: string, p = state): Answer => {
      const f = new HostFunctions({ logger: quiet });
      f.confine(path.join(root, state));
      return caller(f)("mcp_resume_prepare_dir", { op: "mkdir", path: path.join(root, p) });
    };
    assert.deepEqual(mkdir("made/state", "made"), {}, "an ancestor");
    assert.deepEqual(mkdir("made/state"), {}, "the state directory");
    assert.equal(fs.statSync(path.join(root, "made/state")).mode & 0o777, 0o700);
    assert.equal(mkdir("made/state").error.code, "exists");
    assert.equal(mkdir("made/state", "other").error.code, "invalid_request", "outside the state directory's path");
    assert.equal(mkdir("made/state", "made/state/sub").error.code, "invalid_request", "below the state directory");
    assert.equal(mkdir("made/statex/s", "made/state").error.code, "invalid_request", "a sibling sharing a prefix is no ancestor");
    assert.equal(mkdir("file/state", "file").error.code, "exists");
    assert.equal(mkdir("dangling/state", "dangling").error.code, "exists");
    assert.ok(!fs.existsSync(path.join(root, "nowhere")), "not created through the dangling symlink");
    assert.equal(mkdir("file/x").error.code, "not_dir");
    assert.equal(mkdir("no/such").error.code, "not_found");
    assert.ok(!fs.existsSync(path.join(root, "other")));
  });
  test("sweeps nothing: old temporary files stay (the plugin sweeps them through remove)", () => {
    const { call, dir } = setup();
    const tmp = path.join(dir, ".token-1-2.a.00112233aabbccdd.tmp");
    fs.writeFileSync(tmp, "tok-");
    const old = new Date(Date.now() - 3600_000);
    fs.utimesSync(tmp, old, old);
    assert.equal(call("mcp_resume_prepare_dir", { op: "stat", path: dir }).type, "dir");
    assert.equal(call("mcp_resume_prepare_dir", { op: "mkdir", path: dir }).error.code, "exists");
    assert.deepEqual(call("mcp_resume_list", {}).files, [{ name: path.basename(tmp), type: "file", age_seconds: 3600 }]);
  });
});

describe("mcp_resume_read", () => {
  test("at most limit bytes, base64; empty file; missing file not_found", () => {
    const { call, dir } = setup();
    fs.writeFileSync(path.join(dir, "t"), "a".repeat(5000));
    assert.equal(Buffer.from(call("mcp_resume_read", { name: "t", limit: 4097 }).data, "base64").length, 4097);
    fs.writeFileSync(path.join(dir, "e"), "");
    assert.deepEqual(call("mcp_resume_read", { name: "e", limit: 10 }), { data: "" });
    assert.equal(call("mcp_resume_read", { name: "nope", limit: 10 }).error.code, "not_found");
  });
  test("a symlink is never followed; a FIFO does not block; a directory: all unsafe", () => {
    const { call, dir, root } = setup();
    fs.writeFileSync(path.join(root, "victim"), "secret");
    fs.symlinkSync("../victim", path.join(dir, "l"));
    execFileSync("mkfifo", [path.join(dir, "f")]);
    fs.mkdirSync(path.join(dir, "d"));
    const t0 = Date.now();
    for (const name of ["l", "f", "d"]) {
      const r = call("mcp_resume_read", { name, limit: 100 });
      assert.equal(r.error.code, "unsafe", name);
      assert.ok(!JSON.stringify(r).includes("secret"));
    }
    assert.ok(Date.now() - t0 < 1000, "returned at once");
  });
  test("limit outside 1..8388608 is invalid_request", () => {
    const { call, dir } = setup();
    fs.writeFileSync(path.join(dir, "t"), "x");
    for (const limit of [0, -1, 8388609, 1.5, "10", undefined]) assert.equal(call("mcp_resume_read", { name: "t", limit }).error.code, "invalid_request", String(limit));
    assert.equal(call("mcp_resume_read", { name: "t", limit: 8388608 }).error, undefined);
  });
});

describe("mcp_resume_write", () => {
  const TEMP = ".t.0123456789abcdef.tmp";
  test("temp renamed over the name: mode 0600, nothing else left; a symlink at the name is replaced, not followed", () => {
    const { call, dir, root } = setup();
    fs.writeFileSync(path.join(dir, "t"), "old", { mode: 0o644 });
    assert.deepEqual(call("mcp_resume_write", { name: "t", temp: TEMP, data: Buffer.from("new-token").toString("base64") }), {});
    assert.equal(fs.readFileSync(path.join(dir, "t"), "utf8"), "new-token");
    assert.equal(fs.statSync(path.join(dir, "t")).mode & 0o777, 0o600);
    fs.writeFileSync(path.join(root, "victim"), "secret");
    fs.symlinkSync("../victim", path.join(dir, "l"));
    assert.deepEqual(call("mcp_resume_write", { name: "l", temp: ".l.tmp", data: "dG9r" }), {});
    assert.ok(fs.lstatSync(path.join(dir, "l")).isFile());
    assert.equal(fs.readFileSync(path.join(root, "victim"), "utf8"), "secret");
    assert.deepEqual(fs.readdirSync(dir).sort(), ["l", "t"]);
  });
  test("the temporary file is exactly the plugin's temp, created next to the name (seen with inotify): the host draws no random name", async () => {
    const { call, dir } = setup();
    const seen = new Set<string>();
    const w = fs.watch(dir, (_e, name) => name && seen.add(String(name)));
    try {
      assert.deepEqual(call("mcp_resume_write", { name: "token-1-2.a", temp: ".token-1-2.a.00000000000000aa.tmp", data: "dG9r" }), {});
      assert.deepEqual(call("mcp_resume_write", { name: "token-1-2.a", temp: ".token-1-2.a.00000000000000bb.tmp", data: "dG9r" }), {});
      await new Promise((r) => setTimeout(r, 200));
    } finally {
      w.close();
    }
    assert.deepEqual([...seen].sort(), [".token-1-2.a.00000000000000aa.tmp", ".token-1-2.a.00000000000000bb.tmp", "token-1-2.a"]);
  });
  test("temp already there (a file or a symlink): exists; it stays as it was, the name is untouched, nothing else is made", () => {
    const { call, dir, root } = setup();
    fs.writeFileSync(path.join(dir, TEMP), "another writer's");
    fs.writeFileSync(path.join(dir, "t"), "old");
    fs.writeFileSync(path.join(root, "victim"), "secret");
    fs.symlinkSync("../victim", path.join(dir, ".l.tmp"));
    assert.equal(call("mcp_resume_write", { name: "t", temp: TEMP, data: "dG9r" }).error.code, "exists");
    assert.equal(call("mcp_resume_write", { name: "t", temp: ".l.tmp", data: "dG9r" }).error.code, "exists");
    assert.deepEqual(fs.readdirSync(dir).sort(), [".l.tmp", TEMP, "t"]);
    assert.equal(fs.readFileSync(path.join(dir, TEMP), "utf8"), "another writer's");
    assert.equal(fs.readFileSync(path.join(dir, "t"), "utf8"), "old");
    assert.equal(fs.readFileSync(path.join(root, "victim"), "utf8"), "secret");
  });
  test("a directory at the name: unsafe (EISDIR) and the temporary file is removed", () => {
    const { call, dir } = setup();
    fs.mkdirSync(path.join(dir, "t"));
    assert.equal(call("mcp_resume_write", { name: "t", temp: TEMP, data: "dG9r" }).error.code, "unsafe");
    assert.deepEqual(fs.readdirSync(dir), ["t"]);
  });
  test("data and temp are required; data must be standard base64", () => {
    const { call, dir } = setup();
    for (const data of ["***", "YQ", 5, "YQ==YQ==", null, undefined]) assert.equal(call("mcp_resume_write", { name: "t", temp: TEMP, data }).error.code, "invalid_request", String(data));
    assert.equal(call("mcp_resume_write", { name: "t", data: "dG9r" }).error.code, "invalid_request", "no temp");
    assert.deepEqual(fs.readdirSync(dir), []);
  });
});

describe("mcp_resume_remove and mcp_resume_list", () => {
  test("remove unlinks files and symlinks (never their target); a directory is unsafe; missing is not_found", () => {
    const { call, dir, root } = setup();
    fs.writeFileSync(path.join(root, "victim"), "secret");
    fs.symlinkSync("../victim", path.join(dir, "l"));
    fs.writeFileSync(path.join(dir, "t"), "x");
    fs.mkdirSync(path.join(dir, "d"));
    assert.deepEqual(call("mcp_resume_remove", { name: "l" }), {});
    assert.deepEqual(call("mcp_resume_remove", { name: "t" }), {});
    assert.equal(call("mcp_resume_remove", { name: "d" }).error?.code, "unsafe");
    assert.equal(call("mcp_resume_remove", { name: "nope" }).error.code, "not_found");
    assert.deepEqual(fs.readdirSync(dir), ["d"]);
    assert.equal(fs.readFileSync(path.join(root, "victim"), "utf8"), "secret");
  });
  test("list: every entry with its lstat type and age (floor, may be negative); request fields ignored; never the contents", () => {
    const { call, dir } = setup();
    for (const n of ["token-b", "other", ".token-hidden", "a b"]) fs.writeFileSync(path.join(dir, n), "secret-token");
    const at = (n: string, ms: number) => fs.utimesSync(path.join(dir, n), new Date(Date.now() + ms), new Date(Date.now() + ms));
    at("token-b", -3_600_200);
    at("other", 10_500); // the clock moved back: negative age
    fs.symlinkSync("nowhere", path.join(dir, "link"));
    fs.mkdirSync(path.join(dir, "sub"));
    execFileSync("mkfifo", [path.join(dir, "fifo")]);
    const r = call("mcp_resume_list", { prefix: "token-", ignored: true });
    const byName = Object.fromEntries((r.files as Answer[]).map((x) => [x["name"], x]));
    assert.deepEqual(Object.keys(byName).sort(), [".token-hidden", "a b", "fifo", "link", "other", "sub", "token-b"]);
    assert.deepEqual(Object.fromEntries(Object.entries(byName).map(([n, x]) => [n, (x as Answer)["type"]])), {
      ".token-hidden": "file", "a b": "file", fifo: "other", link: "symlink", other: "file", sub: "dir", "token-b": "file",
    });
    assert.ok([3600, 3601].includes(byName["token-b"]!["age_seconds"]), `age ${byName["token-b"]!["age_seconds"]}: whole seconds, rounded down`);
    assert.ok([-11, -10].includes(byName["other"]!["age_seconds"]), `age ${byName["other"]!["age_seconds"]}: floor of a negative age`);
    assert.ok(!JSON.stringify(r).includes("secret"));
    assert.deepEqual(call("mcp_resume_list", {}), r, "no field needed");
    fs.rmSync(dir, { recursive: true });
    assert.equal(call("mcp_resume_list", {}).error.code, "not_found");
  });
  test("list: a name that is not UTF-8 has each invalid byte as U+FFFD (a cut sequence too), its type from lstat of the real name", { skip: !LINUX && "Linux file names are bytes" }, () => {
    const { call, dir } = setup();
    fs.writeFileSync(Buffer.concat([Buffer.from(dir + "/"), Buffer.from([0x74, 0xe2, 0x82, 0x78, 0xff, 0xc3, 0xa9, 0xef, 0xbf, 0xbd])]), "x");
    assert.deepEqual(call("mcp_resume_list", {}).files.map((x: Answer) => [x["name"], x["type"]]), [["t\ufffd\ufffdx\ufffd\u00e9\ufffd", "file"]]);
  });
});

describe("mcp_resume_lock", { skip: !LINUX && "the abstract-socket lock is Linux's" }, () => {
  const LOCK = "lock-4242-1.ab";
  const SOCK = (tag = "") => `mcp-resume-lock-test-${process.pid}-${tag}${Math.random().toString(16).slice(2, 10)}`;
  test("taken ahead: the host function creates the file 0600 (never deleted) and answers {}; idempotent", async () => {
    const { call, dir, f } = setup();
    const socket = SOCK();
    await f.lockAhead(socket);
    await f.lockAhead(socket);
    assert.deepEqual(call("mcp_resume_lock", { name: LOCK, socket }), {});
    assert.deepEqual(call("mcp_resume_lock", { name: LOCK, socket }), {});
    const st = fs.lstatSync(path.join(dir, LOCK));
    assert.equal(st.mode & 0o777, 0o600);
    assert.equal(st.size, 0);
    await f.close();
    assert.ok(fs.existsSync(path.join(dir, LOCK)), "release never deletes the lock file");
  });
  test("a second, independent holder is busy until the first closes; another socket is another lock", async () => {
    const { call, dir, f } = setup();
    const other = new HostFunctions({ logger: quiet });
    const call2 = caller(other);
    other.confine(dir);
    const [socket, socket2] = [SOCK(), SOCK()];
    await f.lockAhead(socket);
    await other.lockAhead(socket);
    assert.deepEqual(call("mcp_resume_lock", { name: LOCK, socket }), {});
    const busy = call2("mcp_resume_lock", { name: LOCK, socket });
    assert.equal(busy.error.code, "busy");
    assert.match(busy.error.message, /held by another server instance/);
    await other.lockAhead(socket2);
    assert.deepEqual(call2("mcp_resume_lock", { name: `${LOCK}-0123456789abcdef`, socket: socket2 }), {});
    await f.close();
    await other.lockAhead(socket);
    assert.deepEqual(call2("mcp_resume_lock", { name: LOCK, socket }), {}, "retried once released");
    await other.close();
    await f.close();
  });
  test("binds exactly the socket it is given, padded with NULs to the whole sun_path (seen in /proc/net/unix), touching no file", async () => {
    const { f, root } = setup();
    const socket = SOCK();
    // The padded form the Go and Python hosts bind first (hostfuncs/README.md, mcp_resume_lock).
    const listed = (): boolean => fs.readFileSync("/proc/net/unix", "latin1").includes(`@${socket}${"@".repeat(107 - socket.length)}\n`);
    assert.ok(!listed());
    const before = fs.readdirSync(root).sort();
    await f.lockAhead(socket);
    assert.ok(listed(), "bound while held");
    assert.deepEqual(fs.readdirSync(root).sort(), before, "lockAhead touches no file");
    await f.close();
    assert.ok(!listed(), "unbound once closed");
  });
  test("a malformed socket or no socket answers an error explaining why; one not taken ahead is bound now", () => {
    const { call, dir } = setup();
    for (const socket of ["x".repeat(108), "a\0b", 5]) assert.equal(call("mcp_resume_lock", { name: LOCK, socket }).error.code, "invalid_request", String(socket));
    assert.deepEqual(fs.readdirSync(dir), [], "refused before any system call");
    // Absent, null or "" is a valid request (no socket): the file step runs, then Node, with no flock, cannot lock.
    for (const socket of [undefined, null, ""]) {
      const r = call("mcp_resume_lock", { name: LOCK, socket });
      assert.equal(r.error.code, "unsupported", String(socket));
      assert.match(r.error.message, /only through the abstract socket/);
    }
    assert.ok(fs.lstatSync(path.join(dir, LOCK)).isFile(), "the lock file is created, as every host's first step");
    const socket = SOCK();
    assert.deepEqual(call("mcp_resume_lock", { name: LOCK, socket }), {}, "bound synchronously by the lock worker");
    assert.deepEqual(call("mcp_resume_unlock", { name: LOCK, socket }), {});
  });
  test("a symlink, a directory or a FIFO at the lock name is unsafe at once (a FIFO never hangs), the target untouched", async () => {
    const { call, dir, root, f } = setup();
    fs.writeFileSync(path.join(root, "victim"), "secret");
    fs.symlinkSync(path.join(root, "victim"), path.join(dir, LOCK));
    fs.mkdirSync(path.join(dir, "lock-1-2.a"));
    execFileSync("mkfifo", [path.join(dir, "lock-1-2.f")]);
    const socket = SOCK();
    await f.lockAhead(socket);
    const t0 = Date.now();
    for (const name of [LOCK, "lock-1-2.a", "lock-1-2.f"]) {
      assert.equal(call("mcp_resume_lock", { name, socket }).error?.code, "unsafe", name);
      // Without a socket too: the file is checked first, as in every host (the Go host takes only flock then).
      assert.equal(call("mcp_resume_lock", { name }).error?.code, "unsafe", `${name} without a socket`);
    }
    assert.ok(Date.now() - t0 < 1000, "returned at once");
    assert.equal(fs.readFileSync(path.join(root, "victim"), "utf8"), "secret");
    assert.ok(fs.lstatSync(path.join(dir, "lock-1-2.f")).isFIFO());
    await f.close();
  });
  test("after close, every function answers invalid_request and binds nothing", async () => {
    const { call, f, dir } = setup();
    const socket = SOCK();
    await f.close();
    await f.lockAhead(socket);
    assert.equal(call("mcp_resume_lock", { name: LOCK, socket }).error.code, "invalid_request");
    for (const fn of FUNCTIONS) assert.equal(call(fn, { name: "t", temp: ".t.tmp", limit: 1, data: "", ops: [{ op: "self" }], op: "stat", path: dir }).error?.code, "invalid_request", fn);
    assert.deepEqual(fs.readdirSync(dir), []);
  });
  test("released when the holding process is killed with SIGKILL (a real child process)", async () => {
    const { dir, call, f } = setup();
    const socket = SOCK();
    const { child, exited } = await startHolder("lock", dir, LOCK, socket);
    try {
      await f.lockAhead(socket);
      assert.equal(call("mcp_resume_lock", { name: LOCK, socket }).error.code, "busy", "the child holds it");
      child.kill("SIGKILL");
      assert.equal(await exited, "SIGKILL");
      await f.lockAhead(socket);
      assert.deepEqual(call("mcp_resume_lock", { name: LOCK, socket }), {}, "the kernel released it with the process");
      await f.close();
    } finally {
      child.kill("SIGKILL");
    }
  });
});

describe("mcp_resume_log", () => {
  test("routes to the logger with event and detail; an unknown level and non-string fields are invalid_request", () => {
    const { call, logs } = setup();
    assert.deepEqual(call("mcp_resume_log", { level: "warn", event: "token_corrupted", message: "Token file corrupted, treating as stale", detail: "why" }), {});
    assert.deepEqual(call("mcp_resume_log", { level: "info", event: "e", message: "m" }), {});
    const refused = [{ event: "e", message: "m" }, { level: "info", message: "m" }, { level: "info", event: "e" }, { level: "loud", event: "e", message: "m" },
      { level: "INFO", event: "e", message: "m" }, { level: "info", event: 1, message: "m" }, { level: "info", event: "e", message: "m", detail: 5 }];
    for (const req of refused) {
      assert.equal(call("mcp_resume_log", req).error?.code, "invalid_request", JSON.stringify(req));
    }
    assert.deepEqual(logs, [
      { level: "warn", message: "Token file corrupted, treating as stale", fields: { event: "token_corrupted", detail: "why" } },
      { level: "info", message: "m", fields: { event: "e" } },
    ]);
  });
  test("a throwing logger never escapes", () => {
    const boom = () => {
      throw new Error("x");
    };
    const call = caller(new HostFunctions({ logger: { debug: boom, info: boom, warn: boom, error: boom } }));
    assert.deepEqual(call("mcp_resume_log", { level: "error", event: "e", message: "m" }), {});
  });
});

describe("malformed requests never throw", () => {
  test("not JSON, not an object, unknown function", () => {
    const { call } = setup();
    for (const raw of ["{not json", "[]", '"x"', "null", ""]) assert.equal(call("mcp_resume_read", raw).error?.code, "invalid_request", raw);
    assert.equal(call("mcp_resume_nope", {}).error?.code, "invalid_request");
    assert.deepEqual(call("mcp_resume_facts", "{}       ")["runtime"], "node", "padded requests are fine");
  });
  test("random bytes to every function answer a JSON object (mcp_resume_crypto: a binary answer or its JSON error)", () => {
    const { f } = setup();
    let seed = 1;
    const rnd = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) % 256;
    for (let i = 0; i < 300; i++) {
      const bytes = Uint8Array.from({ length: rnd() }, rnd);
      for (const fn of FUNCTIONS) {
        const out = Buffer.from(f.call(fn, bytes));
        // mcp_resume_crypto is binary: random bytes may be a request it serves (0x00 or 0x01 first), else its JSON error.
        if (fn === "mcp_resume_crypto" && (out[0] === 0 || out[0] === 1)) continue;
        assert.equal(typeof JSON.parse(out.toString()), "object", fn);
      }
    }
  });
});

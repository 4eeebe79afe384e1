// Host identity: the /proc parser and walk on fixture trees (the vectors of
// Go's procid tests), the macOS ps parser on fixture output, and a real walk
// on this machine.
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { after, describe, test } from "node:test";

import {
  darwinAlive,
  darwinStartMatches,
  DarwinPsSource,
  parsePsArgs,
  parsePsStat,
  parsePsState,
  type CommandRunner,
  type SyncCommandRunner,
} from "../src/procid/darwin.js";
import { alive, DEFAULT_LAUNCHERS, MAX_DEPTH, ProcIdError, resolve, resolveHost } from "../src/procid/index.js";
import { isLauncher, isReaper, launcherSet } from "../src/procid/launcher.js";
import { hiddenPid, LinuxProcSource, parseBootId, parseStat } from "../src/procid/linux.js";
import type { ProcessInfo } from "../src/procid/types.js";
import { cleanupTemps, tempDir } from "./helpers.js";

after(cleanupTemps);

const BOOT_UUID = "0f1e2d3c-4b5a-6978-8796-A5B4C3D2E1F0\n";
const BOOT = "0f1e2d3c4b5a69788796a5b4c3d2e1f0";
/** The PID namespace inode of every fixture process (and of "self"). */
const NS = "4026531836";

interface FakeProc {
  pid: number;
  ppid: number;
  comm: string;
  state?: string;
  start?: bigint;
  cmdline?: string;
}

const argv = (...a: string[]): string => (a.length === 0 ? "" : a.join("\0") + "\0");
const ticks = (p: FakeProc): bigint => p.start ?? 1000n + BigInt(p.pid);

/** /proc/<pid>/stat: 52 fields, starttime at 22. */
function statLine(p: FakeProc): string {
  const mid = Array(17).fill("0").join(" ");
  const tail = Array(30).fill("7").join(" ");
  return `${p.pid} (${p.comm}) ${p.state ?? "S"} ${p.ppid} ${mid} ${ticks(p)} ${tail}\n`;
}

function writeProc(root: string, p: FakeProc): void {
  const dir = path.join(root, String(p.pid));
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, "stat"), Buffer.from(statLine(p), "latin1"));
  writeFileSync(path.join(dir, "cmdline"), Buffer.from(p.cmdline ?? "", "latin1"));
  writeNs(dir);
}

/** Links <dir>/ns/pid to the fixture PID namespace (or to `link`). */
function writeNs(dir: string, link = `pid:[${NS}]`): void {
  mkdirSync(path.join(dir, "ns"), { recursive: true });
  rmSync(path.join(dir, "ns", "pid"), { force: true });
  symlinkSync(link, path.join(dir, "ns", "pid"));
}

function writeTree(procs: FakeProc[], noBoot = false): string {
  const root = tempDir("procfix-");
  for (const p of procs) writeProc(root, p);
  writeNs(path.join(root, "self"));
  if (!noBoot) {
    mkdirSync(path.join(root, "sys", "kernel", "random"), { recursive: true });
    writeFileSync(path.join(root, "sys", "kernel", "random", "boot_id"), BOOT_UUID);
  }
  return root;
}

const with_ = (p: FakeProc, ppid: number): FakeProc => ({ ...p, ppid });

// Processes shared by the fixtures (Go: procid/resolve_test.go). The server is pid 300.
const initProc: FakeProc = { pid: 1, ppid: 0, comm: "systemd", cmdline: argv("/sbin/init") };
const terminal: FakeProc = { pid: 50, ppid: 1, comm: "tmux: server", cmdline: argv("tmux") };
const claude: FakeProc = { pid: 100, ppid: 50, comm: "claude", cmdline: argv("claude") };
const vscode: FakeProc = { pid: 110, ppid: 50, comm: "code", cmdline: argv("/usr/share/code/code", "--type=utility") };
const npmExec: FakeProc = {
  pid: 150,
  ppid: 100,
  comm: "npm exec @model",
  cmdline: "npm exec @modelcontextprotocol/server-everything" + "\0".repeat(30),
};
const shC: FakeProc = { pid: 200, ppid: 150, comm: "sh", cmdline: argv("sh", "-c", "mcp-server-everything") };
const serverNode: FakeProc = {
  pid: 300,
  ppid: 200,
  comm: "node",
  cmdline: argv("node", "/home/u/.npm/_npx/1/node_modules/.bin/mcp-server-everything"),
};

function launcherRun(parent: number, from: number, n: number): FakeProc[] {
  const out: FakeProc[] = [];
  for (let i = 1; i <= n; i++) {
    out.push({ pid: from + i, ppid: parent, comm: "sh", cmdline: argv("sh", "-c", "next") });
    parent = from + i;
  }
  return out;
}

const ODD_COMMS = ["a b", "x) (y", ")", "(", "", "((", "))", "a) S 1 2 3", "tab\there", "new\nline", "npm exec ./tiny"];

describe("parseStat", () => {
  test("plain and max values", () => {
    assert.deepEqual(parseStat(statLine({ pid: 42, ppid: 7, comm: "bash", start: 98765n })), {
      pid: 42,
      comm: "bash",
      state: "S",
      ppid: 7,
      start: "98765",
    });
    const max = parseStat(statLine({ pid: 4194304, ppid: 4194303, comm: "x", state: "R", start: 18446744073709551615n }));
    assert.equal(max.start, "18446744073709551615");
    assert.equal(max.state, "R");
  });
  test("zombie without trailing newline", () => {
    assert.deepEqual(parseStat("9 (z) Z 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 55"), { pid: 9, comm: "z", state: "Z", ppid: 1, start: "55" });
  });
  for (const comm of ODD_COMMS) {
    test(`odd name ${JSON.stringify(comm)} is parsed after the last ')'`, () => {
      const st = parseStat(statLine({ pid: 1234, ppid: 1, comm, start: 5n }));
      assert.deepEqual(st, { pid: 1234, comm, state: "S", ppid: 1, start: "5" });
    });
  }
  const bad: Array<[string, string]> = [
    ["empty", ""],
    ["no parens", "1 init S 0"],
    ["close before open", "1 )init( S 0"],
    ["no pid", "(init) S 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 5"],
    ["pid zero", "0 (init) S 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 5"],
    ["too few fields", "1 (init) S 0 0 0"],
    ["long state", "1 (init) SS 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 5"],
    ["bad ppid", "1 (init) S -4 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 5"],
    ["bad starttime", "1 (init) S 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 -5"],
    ["starttime overflow", "1 (init) S 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 18446744073709551616"],
  ];
  for (const [name, data] of bad) {
    test(`malformed: ${name}`, () => {
      assert.throws(() => parseStat(data), (e: unknown) => e instanceof ProcIdError && e.code === "malformed");
    });
  }
});

describe("parseBootId", () => {
  test("UUID to 32 lowercase hex digits", () => {
    assert.equal(parseBootId(BOOT_UUID), BOOT);
  });
  for (const bad of ["", "xyz", "0f1e2d3c-4b5a-6978-8796", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1fg"]) {
    test(`not a UUID: ${JSON.stringify(bad)}`, () => {
      assert.throws(() => parseBootId(bad), (e: unknown) => e instanceof ProcIdError && e.code === "no_boot_id");
    });
  }
});

describe("LinuxProcSource on fixture /proc trees", () => {
  test("lookup: odd names, retitled npm exec, start time", async () => {
    const root = writeTree([
      { pid: 10, ppid: 1, comm: "a b", cmdline: argv("a b", "--x") },
      { pid: 11, ppid: 10, comm: "x) (y", start: 777n, cmdline: argv("/opt/x) (y") },
      npmExec,
      { pid: 12, ppid: 1, comm: "kworker" },
    ]);
    const src = new LinuxProcSource(root);
    assert.deepEqual(await src.lookup(10), { pid: 10, ppid: 1, name: "a b", args: ["a b", "--x"], startTime: `1010.${BOOT}.${NS}` });
    assert.deepEqual(await src.lookup(11), { pid: 11, ppid: 10, name: "x) (y", args: ["/opt/x) (y"], startTime: `777.${BOOT}.${NS}` });
    assert.deepEqual((await src.lookup(150)).args, ["npm exec @modelcontextprotocol/server-everything"]);
    assert.equal((await src.lookup(12)).args, null);
    await assert.rejects(src.lookup(999), (e: unknown) => e instanceof ProcIdError && e.code === "not_found");
  });
  test("lookup: an unreadable or malformed own ns/pid link (/proc/self/ns/pid) is namespace", async () => {
    for (const link of ["net:[4026531840]", "pid:[]", "pid:[12a]", "pid:4026531836", "pid:[18446744073709551616]"]) {
      const root = writeTree([{ pid: 10, ppid: 1, comm: "x" }]);
      writeNs(path.join(root, "self"), link);
      await assert.rejects(new LinuxProcSource(root).lookup(10), (e: unknown) => e instanceof ProcIdError && e.code === "namespace", link);
    }
    const root = writeTree([{ pid: 10, ppid: 1, comm: "x" }]);
    rmSync(path.join(root, "self", "ns"), { recursive: true });
    mkdirSync(path.join(root, "self", "ns", "pid"), { recursive: true }); // a directory: EINVAL
    await assert.rejects(new LinuxProcSource(root).lookup(10), (e: unknown) => e instanceof ProcIdError && e.code === "namespace");
  });
  test("lookup: a visible process is in our namespace, so our own link names it (its own ns/pid is not read)", async () => {
    const root = writeTree([{ pid: 10, ppid: 1, comm: "x", start: 98765n }]);
    rmSync(path.join(root, "10", "ns"), { recursive: true }); // another user's: unreadable
    assert.equal((await new LinuxProcSource(root).lookup(10)).startTime, `98765.${BOOT}.${NS}`);
  });
  test("checkOwnProc: <root>/self must name this process", () => {
    const root = writeTree([{ pid: 4242, ppid: 1, comm: "x" }]);
    rmSync(path.join(root, "self"), { recursive: true });
    symlinkSync("4242", path.join(root, "self"));
    new LinuxProcSource(root).checkOwnProc(4242);
    assert.throws(
      () => new LinuxProcSource(root).checkOwnProc(4243),
      (e: unknown) => e instanceof ProcIdError && e.code === "namespace" && /another PID namespace/.test(e.message) && /mount a \/proc of this namespace/.test(e.message),
    );
    rmSync(path.join(root, "self"));
    assert.throws(() => new LinuxProcSource(root).checkOwnProc(4242), (e: unknown) => e instanceof ProcIdError && e.code === "namespace");
  });
  test("stat describing another pid is malformed", async () => {
    const root = writeTree([]);
    mkdirSync(path.join(root, "5"));
    writeFileSync(path.join(root, "5", "stat"), statLine({ pid: 6, ppid: 1, comm: "x" }));
    await assert.rejects(new LinuxProcSource(root).lookup(5), (e: unknown) => e instanceof ProcIdError && e.code === "malformed");
  });
});

describe("LinuxProcSource.alive (Go: TestLinuxReader_Alive vectors)", () => {
  const live: FakeProc = { pid: 100, ppid: 1, comm: "claude", start: 98765n };
  const zombie: FakeProc = { pid: 101, ppid: 100, comm: "gone", state: "Z", start: 5n };
  const dead: FakeProc = { pid: 102, ppid: 100, comm: "gone", state: "X", start: 6n };
  const cases: Array<[string, number, string, boolean]> = [
    ["same instance", 100, `98765.${BOOT}.${NS}`, true],
    ["pid reused", 100, `98764.${BOOT}.${NS}`, false],
    ["previous boot", 100, "98765.00000000000000000000000000000000", false],
    ["malformed", 100, "98765", false],
    ["empty", 100, "", false],
    ["macOS format", 100, "1700000000.000042", false],
    ["two-part start time (before PID namespaces were recorded)", 100, `98765.${BOOT}`, false],
    ["zombie", 101, `5.${BOOT}.${NS}`, false],
    ["dead", 102, `6.${BOOT}.${NS}`, false],
    ["absent", 999, `98765.${BOOT}.${NS}`, false],
    ["pid zero", 0, `98765.${BOOT}.${NS}`, false],
  ];
  for (const [name, pid, start, want] of cases) {
    test(name, () => {
      const root = writeTree([live, zombie, dead]);
      assert.equal(new LinuxProcSource(root).alive(pid, start), want);
    });
  }
  test("no boot id: unknown (throws no_boot_id)", () => {
    const root = writeTree([live], true);
    assert.throws(() => new LinuxProcSource(root).alive(100, `98765.${BOOT}.${NS}`), (e: unknown) => e instanceof ProcIdError && e.code === "no_boot_id");
  });
  // A pid recorded in another PID namespace names nothing here: unknown, never "gone".
  for (const [name, pid] of [["another PID namespace", 100], ["another PID namespace, absent pid", 999]] as const) {
    test(`${name}: unknown (throws namespace)`, () => {
      const root = writeTree([live, zombie, dead]);
      assert.throws(() => new LinuxProcSource(root).alive(pid, `98765.${BOOT}.4026532000`), (e: unknown) => e instanceof ProcIdError && e.code === "namespace");
    });
  }
  test("own namespace unreadable: unknown (throws namespace)", () => {
    const root = writeTree([live]);
    rmSync(path.join(root, "self"), { recursive: true });
    assert.throws(() => new LinuxProcSource(root).alive(100, `98765.${BOOT}.${NS}`), (e: unknown) => e instanceof ProcIdError && e.code === "namespace");
  });
  test("a process's own ns/pid is not needed: our namespace names it", () => {
    const root = writeTree([live]);
    rmSync(path.join(root, "100", "ns"), { recursive: true });
    assert.equal(new LinuxProcSource(root).alive(100, `98765.${BOOT}.${NS}`), true);
  });
  // /proc mounted hidepid hides pid 998, which exists: unknown, never "gone" (docs/RELIABILITY.md fault 12).
  test("hidden by hidepid: unknown (throws malformed), never gone", () => {
    const root = writeTree([live, zombie, dead]);
    const src = new LinuxProcSource(root, undefined, (pid) => pid === 998);
    assert.throws(
      () => src.alive(998, `98765.${BOOT}.${NS}`),
      (e: unknown) => e instanceof ProcIdError && e.code === "malformed" && e.message.includes(`pid 998 exists but ${root} hides it (mounted hidepid=1 or 2)`),
    );
    assert.equal(src.alive(999, `98765.${BOOT}.${NS}`), false); // absent and not hidden: gone
    assert.equal(src.alive(100, `98765.${BOOT}.${NS}`), true); // visible: hidden is not asked
  });
  test("unreadable stat: unknown (throws malformed)", () => {
    const root = writeTree([]);
    mkdirSync(path.join(root, "5", "stat"), { recursive: true }); // a directory: EISDIR
    assert.throws(() => new LinuxProcSource(root).alive(5, `1.${BOOT}.${NS}`), (e: unknown) => e instanceof ProcIdError && e.code === "malformed");
  });
});

describe("alive on this machine (Go: TestAlive)", { skip: process.platform !== "linux" }, () => {
  test("self, other start time, empty, exited child, pid 0", async () => {
    const me = new LinuxProcSource("/proc").lookupSync(process.pid);
    assert.equal(alive(process.pid, me.startTime), true);
    assert.equal(alive(process.pid, "1" + me.startTime), false);
    assert.equal(alive(process.pid, ""), false);
    assert.equal(alive(0, me.startTime), false);
    const child = spawn(process.execPath, ["-e", "process.stdin.resume()"], { stdio: ["pipe", "ignore", "ignore"] });
    await new Promise((r) => child.once("spawn", r));
    const c = new LinuxProcSource("/proc").lookupSync(child.pid!);
    assert.equal(alive(child.pid!, c.startTime), true);
    const exited = new Promise((r) => child.once("exit", r));
    child.stdin!.end();
    await exited;
    assert.equal(alive(child.pid!, c.startTime), false);
  });
  test("start time format <ticks>.<boot id>.<pid namespace inode>", () => {
    const me = new LinuxProcSource("/proc").lookupSync(process.pid);
    assert.match(me.startTime, /^[0-9]+\.[0-9a-f]{32}\.[0-9]+$/);
    const ns = /^pid:\[(\d+)\]$/.exec(readlinkSync("/proc/self/ns/pid"))![1]!;
    assert.ok(me.startTime.endsWith(`.${ns}`), me.startTime);
  });
  test("a start time from another PID namespace: unknown (throws namespace), never gone", () => {
    const me = new LinuxProcSource("/proc").lookupSync(process.pid);
    const [t, b, ns] = me.startTime.split(".");
    const other = `${t}.${b}.${BigInt(ns!) + 1n}`;
    assert.throws(() => alive(process.pid, other), (e: unknown) => e instanceof ProcIdError && e.code === "namespace");
    assert.throws(() => alive(2147483646, other), (e: unknown) => e instanceof ProcIdError && e.code === "namespace");
  });
  test("other platforms: unknown (throws unsupported)", () => {
    assert.throws(() => alive(process.pid, "1", "win32"), (e: unknown) => e instanceof ProcIdError && e.code === "unsupported");
  });
});

describe("launcher and reaper rules (Go procid vectors)", () => {
  const P = (name: string, args: string[] | null = null, pid = 500): ProcessInfo => ({ pid, ppid: 1, name, args, startTime: "1" });
  const cases: Array<[string, ProcessInfo, boolean]> = [
    ["sh -c", P("sh", ["sh", "-c", "server"]), true],
    ["bash -lc", P("bash", ["/bin/bash", "-lc", "server"]), true],
    ["fish --command=", P("fish", ["fish", "--command=server"]), true],
    ["bash script after --", P("run.sh", ["/bin/bash", "--", "run.sh"]), true],
    ["dash script", P("run.sh", ["/bin/dash", "/opt/run.sh"]), true],
    ["login shell", P("bash", ["-bash"]), false],
    ["interactive shell", P("zsh", ["zsh", "-i"]), false],
    ["shell reading stdin", P("sh", ["sh", "-s", "-"]), false],
    ["shell without args", P("sh"), false],
    ["env without args", P("env"), true],
    ["uv run", P("uv", ["uv", "run", "server"]), true],
    ["uvx by args only", P("python3", ["/usr/bin/uvx", "server"]), true],
    ["npm exec title in comm", P("npm exec ./tiny"), true],
    ["npm x title in args", P("node", ["npm x ./tinypkg"]), true],
    ["npm exec without package", P("npm exec"), true],
    ["npm run title is not npm exec", P("npm run dev"), false],
    ["node npm-cli.js exec", P("node", ["node", "/usr/lib/node_modules/npm/bin/npm-cli.js", "exec", "x"]), true],
    ["nodejs npx", P("nodejs", ["/usr/bin/nodejs", "/usr/bin/npx", "x"]), true],
    ["node yarn.mjs", P("node", ["node", "/opt/yarn/yarn.mjs", "dlx", "x"]), true],
    ["node script", P("node", ["node", "/opt/host/cli.js"]), false],
    ["node alone", P("node", ["node"]), false],
    ["bun x", P("bun", ["bun", "x", "server"]), true],
    ["bun run", P("bun", ["bun", "run", "host.ts"]), false],
    ["sudo is not a launcher", P("sudo", ["sudo", "server"]), false],
    ["host", P("claude", ["claude"]), false],
    ["short name is not a prefix match", P("s", ["s"]), false],
  ];
  const set = launcherSet([], "");
  for (const [name, p, want] of cases) {
    test(`isLauncher: ${name}`, () => assert.equal(isLauncher(p, set), want));
  }
  test("launcherSet merges option and env names", () => {
    const s = launcherSet(["baz", " ", " qux "], " foo, ,bar,");
    for (const n of [...DEFAULT_LAUNCHERS, "foo", "bar", "baz", "qux"]) assert.ok(s.has(n), n);
    assert.equal(s.size, DEFAULT_LAUNCHERS.length + 4);
    for (const n of ["", "sudo", "doas", "su"]) assert.ok(!s.has(n), n);
  });
  const reapers: Array<[string, ProcessInfo, boolean]> = [
    ["pid 1", P("process_api", null, 1), true],
    ["pid 0", P("kernel_task", null, 0), true],
    ["systemd --user", P("systemd", ["/lib/systemd/systemd", "--user"], 900), true],
    ["launchd", P("launchd", null, 900), true],
    ["tini by args", P("x", ["/sbin/tini", "--"], 7), true],
    ["shim truncated", P("containerd-shim", null, 7), true],
    ["dumb-init copy of sh", P("dumb-init", ["/tmp/x/dumb-init", "-c", "server"], 7), true],
    ["host", P("claude", null, 100), false],
    ["init-like prefix", P("initrd-helper", null, 100), false],
  ];
  for (const [name, p, want] of reapers) {
    test(`isReaper: ${name}`, () => assert.equal(isReaper(p), want));
  }
});

describe("resolve on fixture trees (Go procid vectors)", () => {
  interface RCase {
    name: string;
    procs: FakeProc[];
    noBoot?: boolean;
    extra?: string[];
    env?: string;
    chain?: number[];
    err?: string;
  }
  const cases: RCase[] = [
    { name: "direct child", procs: [initProc, terminal, claude, with_(serverNode, 100)], chain: [100] },
    { name: "npx: npm exec title then sh -c", procs: [initProc, terminal, claude, npmExec, shC, serverNode], chain: [200, 150, 100] },
    {
      name: "npx: title truncated in comm, args unreadable",
      procs: [initProc, terminal, claude, { pid: 150, ppid: 100, comm: "npm exec @model" }, shC, serverNode],
      chain: [200, 150, 100],
    },
    {
      name: "old npx: node running npx-cli.js",
      procs: [
        initProc, terminal, vscode,
        { pid: 150, ppid: 110, comm: "node", cmdline: argv("/usr/bin/node", "/usr/lib/node_modules/npm/bin/npx-cli.js", "-y", "server") },
        with_(serverNode, 150),
      ],
      chain: [150, 110],
    },
    {
      name: "uvx, env and timeout",
      procs: [
        initProc, terminal, claude,
        { pid: 120, ppid: 100, comm: "timeout", cmdline: argv("timeout", "600", "env", "FOO=1", "uvx", "mcp-server-fetch") },
        { pid: 150, ppid: 120, comm: "uv", cmdline: argv("/home/u/.local/bin/uv", "tool", "uvx", "mcp-server-fetch") },
        { pid: 300, ppid: 150, comm: "python3", cmdline: argv("python3", "-m", "mcp_server_fetch") },
      ],
      chain: [150, 120, 100],
    },
    {
      name: "node is not a launcher by itself",
      procs: [initProc, terminal, { pid: 100, ppid: 50, comm: "node", cmdline: argv("node", "/usr/lib/node_modules/@anthropic-ai/claude-code/cli.js") }, with_(serverNode, 100)],
      chain: [100],
    },
    {
      name: "host with an odd name 'x) (y'",
      procs: [initProc, terminal, { pid: 100, ppid: 50, comm: "x) (y", cmdline: argv("x) (y") }, with_(shC, 100), serverNode],
      chain: [200, 100],
    },
    {
      name: "launcher with a space in its name is still matched by args",
      procs: [initProc, terminal, claude, { pid: 200, ppid: 100, comm: "a b", cmdline: argv("/bin/sh", "-c", "server") }, serverNode],
      chain: [200, 100],
    },
    {
      name: "wrapper script: comm is the script, Args[0] the shell",
      procs: [initProc, terminal, claude, { pid: 200, ppid: 100, comm: "run-server.sh", cmdline: argv("/bin/bash", "/opt/run-server.sh") }, serverNode],
      chain: [200, 100],
    },
    {
      name: "interactive login shell is the host",
      procs: [initProc, terminal, { pid: 100, ppid: 50, comm: "bash", cmdline: argv("-bash") }, with_(serverNode, 100)],
      chain: [100],
    },
    {
      name: "shell with unknown args is the host",
      procs: [initProc, terminal, claude, { pid: 200, ppid: 100, comm: "sh" }, serverNode],
      chain: [200],
    },
    {
      name: "extra launcher from options",
      procs: [initProc, terminal, claude, { pid: 200, ppid: 100, comm: "my-wrapper", cmdline: argv("./my-wrapper", "server") }, serverNode],
      extra: ["my-wrapper"],
      chain: [200, 100],
    },
    {
      name: "extra launcher from MCP_RESUME_LAUNCHERS",
      procs: [initProc, terminal, claude, { pid: 200, ppid: 100, comm: "direnv", cmdline: argv("direnv", "exec", ".", "server") }, serverNode],
      env: " foo , direnv,,",
      chain: [200, 100],
    },
    {
      name: "extra launcher matched by truncated comm",
      procs: [initProc, terminal, claude, { pid: 200, ppid: 100, comm: "very-long-launc" }, serverNode],
      extra: ["very-long-launcher"],
      chain: [200, 100],
    },
    {
      name: "unknown wrapper is the host",
      procs: [initProc, terminal, claude, { pid: 200, ppid: 100, comm: "my-wrapper", cmdline: argv("./my-wrapper", "server") }, serverNode],
      chain: [200],
    },
    {
      name: "fifteen launchers",
      procs: [initProc, terminal, claude, with_(serverNode, 415), ...launcherRun(100, 400, 15)],
      chain: [415, 414, 413, 412, 411, 410, 409, 408, 407, 406, 405, 404, 403, 402, 401, 100],
    },
    { name: "sixteen launchers", procs: [initProc, terminal, claude, with_(serverNode, 416), ...launcherRun(100, 400, 16)], err: "too_deep" },
    { name: "launcher cycle", procs: [initProc, claude, { pid: 200, ppid: 200, comm: "sh", cmdline: argv("sh", "-c", "x") }, serverNode], err: "too_deep" },
    { name: "server orphaned to pid 1", procs: [initProc, with_(serverNode, 1)], err: "reaper" },
    { name: "host outside the pid namespace", procs: [with_(serverNode, 0)], err: "reaper" },
    { name: "launcher orphaned to pid 1", procs: [initProc, with_(shC, 1), serverNode], err: "reaper" },
    {
      name: "launcher orphaned to a user systemd",
      procs: [initProc, { pid: 900, ppid: 1, comm: "systemd", cmdline: argv("/lib/systemd/systemd", "--user") }, with_(shC, 900), serverNode],
      err: "reaper",
    },
    { name: "tini in a container", procs: [{ pid: 7, ppid: 0, comm: "tini", cmdline: argv("/sbin/tini", "--", "server") }, with_(serverNode, 7)], err: "reaper" },
    {
      name: "reaper listed as launcher is still a reaper",
      procs: [{ pid: 7, ppid: 0, comm: "dumb-init", cmdline: argv("dumb-init", "server") }, with_(serverNode, 7)],
      extra: ["dumb-init"],
      err: "reaper",
    },
    {
      name: "shell copy named dumb-init above the server",
      procs: [initProc, terminal, claude, { pid: 200, ppid: 100, comm: "dumb-init", cmdline: argv("/tmp/x/dumb-init", "-c", "node server.js; exit $?") }, serverNode],
      err: "reaper",
    },
    { name: "parent exited", procs: [initProc, with_(serverNode, 250)], err: "race" },
    { name: "server absent", procs: [initProc, claude], err: "not_found" },
    { name: "no boot id", procs: [initProc, terminal, claude, with_(serverNode, 100)], noBoot: true, err: "no_boot_id" },
  ];
  for (const c of cases) {
    test(c.name, async () => {
      const root = writeTree(c.procs, c.noBoot);
      const run = resolve(new LinuxProcSource(root), 300, launcherSet(c.extra ?? [], c.env ?? ""));
      if (c.err) {
        await assert.rejects(run, (e: unknown) => e instanceof ProcIdError && e.code === c.err);
        return;
      }
      const got = await run;
      const byPid = new Map(c.procs.map((p) => [p.pid, p]));
      const host = byPid.get(c.chain![c.chain!.length - 1]!)!;
      assert.equal(got.pid, host.pid);
      assert.equal(got.startTime, `${ticks(host)}.${BOOT}.${NS}`);
      assert.match(got.startTime, /^[0-9a-z.]{1,96}$/);
      assert.deepEqual(got.chain.map((p) => p.pid), c.chain);
      for (const p of got.chain) {
        assert.equal(p.name, byPid.get(p.pid)!.comm);
        assert.equal(p.ppid, byPid.get(p.pid)!.ppid);
      }
    });
  }
  test(`MAX_DEPTH is ${MAX_DEPTH}, as Go`, () => assert.equal(MAX_DEPTH, 16));
});

describe("resolve: the tree changes mid-walk (child re-read)", () => {
  const changes: Array<[string, number, (root: string) => void]> = [
    ["server re-parented after its parent was read", 200, (r) => writeProc(r, with_(serverNode, 1))],
    ["server pid reused after its parent was read", 200, (r) => writeProc(r, { ...serverNode, start: 99999n })],
    ["launcher re-parented after its parent was read", 150, (r) => writeProc(r, with_(shC, 1))],
    ["launcher exited after its parent was read", 150, (r) => rmSync(path.join(r, "200"), { recursive: true })],
  ];
  for (const [name, atPid, change] of changes) {
    test(name, async () => {
      const root = writeTree([initProc, terminal, claude, npmExec, shC, serverNode]);
      let done = false;
      const src = new LinuxProcSource(root, (pid) => {
        if (pid === atPid && !done) {
          done = true;
          change(root);
        }
      });
      await assert.rejects(resolve(src, 300, launcherSet()), (e: unknown) => e instanceof ProcIdError && e.code === "race");
      assert.ok(done, "the tree was changed");
    });
  }
});

// Go: TestLinuxReader_Hidden (docs/RELIABILITY.md fault 12).
describe("resolve: a host /proc hides (hidepid) is not taken for one that exited", () => {
  test("hidden host: permission-style error naming hidepid, not race", async () => {
    const root = writeTree([serverNode]); // the host, pid 200, is not in the tree
    await assert.rejects(
      resolve(new LinuxProcSource(root, undefined, (pid) => pid === 200), 300, launcherSet()),
      (e: unknown) =>
        e instanceof ProcIdError &&
        e.code === "malformed" &&
        e.message.includes(`pid 200 exists but ${root} hides it (mounted hidepid=1 or 2)`) &&
        e.message.endsWith("and it belongs to another user: permission denied"),
    );
  });
  test("host gone (hidden says no): race as before", async () => {
    const root = writeTree([serverNode]);
    await assert.rejects(
      resolve(new LinuxProcSource(root, undefined, () => false), 300, launcherSet()),
      (e: unknown) => e instanceof ProcIdError && e.code === "race" && /exited during the walk/.test(e.message),
    );
  });
});

describe("hiddenPid on this machine (Go: hiddenPID)", { skip: process.platform === "win32" }, () => {
  test("an exited and reaped child, this process, pid 0 and out-of-range pids are not hidden", async () => {
    const child = spawn(process.execPath, ["-e", ""], { stdio: "ignore" });
    await new Promise((r) => child.once("exit", r)); // Node has reaped it
    assert.equal(hiddenPid(child.pid!), false);
    assert.equal(hiddenPid(process.pid), false);
    assert.equal(hiddenPid(0), false);
    assert.equal(hiddenPid(-1), false);
    assert.equal(hiddenPid(2 ** 22 + 12345), false); // above Linux's pid_max: absent
    assert.equal(hiddenPid(2 ** 40), false); // not a valid pid
  });
  test("as non-root without CAP_KILL, another user's pid 1 is hidden (kill answers EPERM)", (t) => {
    if (process.platform !== "linux") return t.skip("reads /proc");
    if (process.geteuid?.() === 0) return t.skip("root may signal anything: kill(1, 0) succeeds");
    let capEff: bigint;
    let uids: number[];
    try {
      capEff = BigInt("0x" + /^CapEff:\s*([0-9a-f]+)$/m.exec(readFileSync("/proc/self/status", "latin1"))![1]!);
      uids = /^Uid:\s*(.*)$/m.exec(readFileSync("/proc/1/status", "latin1"))![1]!.trim().split(/\s+/).map(Number);
    } catch {
      return t.skip("cannot tell who owns pid 1 or whether this process has CAP_KILL");
    }
    const mine = [process.getuid!(), process.geteuid!()];
    if ((capEff & (1n << 5n)) !== 0n || mine.includes(uids[0]!) || mine.includes(uids[2]!)) {
      return t.skip("this process may signal pid 1");
    }
    assert.equal(hiddenPid(1), true);
  });
});

describe("macOS: ps output parser and walk on fixtures", () => {
  // Output of: LC_ALL=C TZ=UTC0 ps -o pid=,ppid=,lstart=,ucomm= -p <pid>
  // (strftime %c pads the day with a space; ucomm may contain spaces).
  const STAT: Record<number, string> = {
    1: "    1     0 Mon Nov 20 08:00:01 2023     launchd\n",
    480: "  480     1 Mon Nov 20 09:15:42 2023     Claude\n",
    612: "  612   480 Tue Nov 21 10:22:33 2023     a b\n",
    700: "  700   612 Wed Nov  1 00:00:09 2023     node\n",
    701: "  701   700 Wed Nov  1 00:00:09 2023     sh\n",
    702: "  702   701 Wed Nov  1 00:00:10 2023     node\n",
    800: "  800   480 Wed Nov  1 00:00:10 2023     x) (y\n",
  };
  // Output of: ps -ww -o args= -p <pid>
  const ARGS: Record<number, string> = {
    1: "/sbin/launchd\n",
    480: "/Applications/Claude.app/Contents/MacOS/Claude\n",
    612: "/usr/local/bin/a b --serve\n",
    700: "npm exec @modelcontextprotocol/server-everything\n",
    701: "sh -c mcp-server-everything\n",
    702: "node /Users/u/.npm/_npx/1/node_modules/.bin/mcp-server-everything\n",
    800: "/opt/x) (y\n",
  };
  const runner =
    (stat: Record<number, string>, args: Record<number, string>): CommandRunner =>
    async (_file, a) => {
      const pid = Number(a[a.length - 1]);
      const table = a.includes("args=") ? args : stat;
      if (!(pid in table)) throw Object.assign(new Error("ps exited 1"), { code: 1 });
      return table[pid]!;
    };

  test("parsePsStat: lstart to epoch seconds in UTC, names with spaces", () => {
    const m = parsePsStat(STAT[612]! + STAT[700]! + STAT[800]!);
    assert.deepEqual(m.get(612), { pid: 612, ppid: 480, startSec: Date.UTC(2023, 10, 21, 10, 22, 33) / 1000, name: "a b" });
    assert.equal(m.get(612)!.startSec, 1700562153);
    assert.deepEqual(m.get(700), { pid: 700, ppid: 612, startSec: 1698796809, name: "node" });
    assert.equal(m.get(800)!.name, "x) (y");
  });
  for (const bad of [
    "  612   480 Tue Nov 21 10:22:33 2023\n", // no name
    "  612   480 Tue Foo 21 10:22:33 2023     a\n", // bad month
    "  612   480 Mon Nov 21 10:22:33 2023     a\n", // weekday does not match the date
    "  612   480 Tue Nov 31 10:22:33 2023     a\n", // no such day
    "  612   480 2023-11-21T10:22:33     a\n", // another locale or format
    "ps: illegal option -- o\n",
  ]) {
    test(`parsePsStat refuses ${JSON.stringify(bad.trim())}`, () => {
      assert.throws(() => parsePsStat(bad), (e: unknown) => e instanceof ProcIdError && e.code === "malformed");
    });
  }
  // Output of: LC_ALL=C TZ=UTC0 ps -o pid=,stat=,lstart= -p <pid>
  const STATE: Record<number, string> = {
    612: "  612 Ss   Tue Nov 21 10:22:33 2023\n",
    613: "  613 Z    Tue Nov 21 10:22:33 2023\n",
  };
  const syncRunner =
    (table: Record<number, string>): SyncCommandRunner =>
    (_file, a) => {
      const pid = Number(a[a.length - 1]);
      if (!(pid in table)) throw Object.assign(new Error("Command failed: ps"), { status: 1 });
      return table[pid]!;
    };
  test("parsePsState: state letters and lstart", () => {
    assert.deepEqual(parsePsState(STATE[612]!).get(612), { pid: 612, state: "Ss", startSec: 1700562153 });
    assert.throws(() => parsePsState("  612 Ss   Tue Nov 21 10:22:33\n"), (e: unknown) => e instanceof ProcIdError && e.code === "malformed");
  });
  test("darwinStartMatches: whole seconds, and Go's <sec>.<usec> on its seconds", () => {
    assert.ok(darwinStartMatches("1700562153", "1700562153"));
    assert.ok(darwinStartMatches("1700562153", "1700562153.000042"));
    assert.ok(!darwinStartMatches("1700562153", "1700562154.000042"));
    assert.ok(!darwinStartMatches("1700562153", "1700562152"));
    assert.ok(!darwinStartMatches("1700562153", ""));
    assert.ok(!darwinStartMatches("1700562153", "1700562153.abc"));
  });
  test("darwinAlive: same start, zombie, absent (ps exits 1), other start, ps failure is unknown", () => {
    const run = syncRunner(STATE);
    assert.equal(darwinAlive(612, "1700562153", run), true);
    assert.equal(darwinAlive(612, "1700562153.123456", run), true);
    assert.equal(darwinAlive(612, "1700562150", run), false);
    assert.equal(darwinAlive(613, "1700562153", run), false);
    assert.equal(darwinAlive(999, "1700562153", run), false);
    assert.equal(darwinAlive(0, "1700562153", run), false);
    const broken: SyncCommandRunner = () => {
      throw Object.assign(new Error("spawn /bin/ps EACCES"), { code: "EACCES" });
    };
    assert.throws(() => darwinAlive(612, "1700562153", broken), (e: unknown) => e instanceof ProcIdError && e.code === "malformed");
  });
  test("parsePsArgs: split on spaces, npm exec title kept whole, empty is null", () => {
    assert.deepEqual(parsePsArgs(ARGS[701]!), ["sh", "-c", "mcp-server-everything"]);
    assert.deepEqual(parsePsArgs(ARGS[700]!), ["npm exec @modelcontextprotocol/server-everything"]);
    assert.equal(parsePsArgs("\n"), null);
  });
  test("walk: server -> sh -c -> npm exec -> host with a space in its name", async () => {
    const got = await resolve(new DarwinPsSource(runner(STAT, ARGS)), 702, launcherSet());
    assert.deepEqual(got.chain.map((p) => p.pid), [701, 700, 612]);
    assert.equal(got.pid, 612);
    assert.equal(got.startTime, "1700562153");
    assert.match(got.startTime, /^[0-9a-z.]{1,96}$/);
  });
  test("walk: host named 'x) (y' directly above the server", async () => {
    const stat = { ...STAT, 702: "  702   800 Wed Nov  1 00:00:10 2023     node\n" };
    const got = await resolve(new DarwinPsSource(runner(stat, ARGS)), 702, launcherSet());
    assert.equal(got.pid, 800);
  });
  test("walk: launchd parent is a reaper", async () => {
    const stat = { ...STAT, 702: "  702   480 Wed Nov  1 00:00:10 2023     node\n", 480: "  480     1 Mon Nov 20 09:15:42 2023     launchd\n" };
    await assert.rejects(resolve(new DarwinPsSource(runner(stat, ARGS)), 702, launcherSet()), (e: unknown) => e instanceof ProcIdError && e.code === "reaper");
  });
  test("walk: parent gone is a race, server gone is not_found", async () => {
    const stat = { ...STAT };
    delete (stat as Record<number, string>)[701];
    await assert.rejects(resolve(new DarwinPsSource(runner(stat, ARGS)), 702, launcherSet()), (e: unknown) => e instanceof ProcIdError && e.code === "race");
    await assert.rejects(resolve(new DarwinPsSource(runner(STAT, ARGS)), 999, launcherSet()), (e: unknown) => e instanceof ProcIdError && e.code === "not_found");
  });
});

describe("real process tree (this Linux machine)", { skip: process.platform !== "linux" }, () => {
  test("a child node process resolves to this test process, directly and through sh -c", async () => {
    const me = readFileSync(`/proc/${process.pid}/stat`, "latin1");
    const myStart = parseStat(me).start;
    const boot = parseBootId(readFileSync("/proc/sys/kernel/random/boot_id", "latin1"));
    const ns = /^pid:\[(\d+)\]$/.exec(readlinkSync("/proc/self/ns/pid"))![1]!;
    const script =
      `import(${JSON.stringify(new URL("../src/procid/index.ts", import.meta.url).href)})` +
      `.then(m => m.resolveHost()).then(h => console.log(JSON.stringify(h)), e => console.log(JSON.stringify({error: e.code})))`;
    const run = (cmd: string, args: string[]): Promise<{ pid: number; startTime: string; chain: ProcessInfo[] }> =>
      new Promise((res, rej) => {
        const p = spawn(cmd, args, { stdio: ["ignore", "pipe", "inherit"] });
        let out = "";
        p.stdout.on("data", (d: Buffer) => (out += d));
        p.on("exit", () => {
          try {
            res(JSON.parse(out));
          } catch (e) {
            rej(new Error(`bad output ${out}: ${String(e)}`));
          }
        });
      });
    const node = [process.execPath, "--import", "tsx", "--input-type=module", "-e", script];
    const direct = await run(node[0]!, node.slice(1));
    assert.equal(direct.pid, process.pid);
    assert.equal(direct.startTime, `${myStart}.${boot}.${ns}`);
    const q = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;
    const viaSh = await run("sh", ["-c", `${node.map(q).join(" ")}; exit $?`]);
    assert.equal(viaSh.pid, process.pid);
    assert.deepEqual(viaSh.chain.map((p) => p.name), ["sh", parseStat(me).comm]);
  });
  test("/proc of another PID namespace (unshare -p -f without --mount-proc): resolveHost and alive refuse (namespace)", async (t) => {
    const probe = spawnSync("unshare", ["-Urpf", "true"], { stdio: "ignore" });
    if (probe.error || probe.status !== 0) {
      t.skip("unshare -Urpf is not available here");
      return;
    }
    const script =
      `const m = await import(${JSON.stringify(new URL("../src/procid/index.ts", import.meta.url).href)});` +
      `const code = (f) => { try { f(); return "ok"; } catch (e) { return e.code + ": " + e.message; } };` +
      `const host = await m.resolveHost().then(() => "ok", (e) => e.code + ": " + e.message);` +
      `console.log(JSON.stringify({ pid: process.pid, host, alive: code(() => m.alive(process.pid, "1.${"0".repeat(32)}.1")) }));`;
    const r = spawnSync("unshare", ["-Urpf", process.execPath, "--import", "tsx", "--input-type=module", "-e", script], { encoding: "utf8" });
    const got = JSON.parse(r.stdout) as { pid: number; host: string; alive: string };
    assert.equal(got.pid, 1, "the child is pid 1 of a new PID namespace");
    assert.match(got.host, /^namespace: .*another PID namespace.*mount a \/proc of this namespace/);
    assert.match(got.alive, /^namespace: /);
  });
  test("resolveHost never answers pid 0 or 1", async () => {
    try {
      const h = await resolveHost();
      assert.ok(h.pid > 1);
    } catch (e) {
      assert.ok(e instanceof ProcIdError);
    }
  });
});

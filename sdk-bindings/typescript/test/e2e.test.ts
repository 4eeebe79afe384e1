// End to end: the example server (examples/typescript-server, built) under
// the official TypeScript MCP client as the MCP host, against the real Go
// broker, launched directly, through `sh -c`, through a real `npx` of the
// packed packages, and by the MCP Inspector CLI; several server instances
// under one host at once (told apart by their arguments or
// MCP_RESUME_INSTANCE; identical, which marks their key ambiguous; or with
// no instance key, sharing one lock); plus the spec's
// failure cases. Nothing but JSON-RPC may reach the server's stdout and no token may
// reach its stderr.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { copyFileSync, existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { connect, createServer, type Socket } from "node:net";
import * as path from "node:path";
import { after, before, describe, test } from "node:test";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

import { cleanupTemps, execFileP, goBuild, instanceSuffix, PKG, ROOT, SERVER_JS, startBroker, startTimeOf, tempDir, type Broker } from "./helpers.js";

const LINUX = process.platform === "linux";
let brokerBin = "";
let broker: Broker;
const extraBrokers: Broker[] = [];
/** Every token seen in a token file; none may appear on any stderr. */
const tokens = new Set<string>();
/** Every stderr captured from a server. */
const stderrs: string[] = [];

before(async () => {
  assert.ok(existsSync(SERVER_JS), `${SERVER_JS} is missing: run make typescript-setup`);
  brokerBin = await goBuild("./examples/broker", path.join(tempDir("broker-"), "broker"));
  broker = await startBroker(brokerBin);
});

after(async () => {
  await broker?.stop();
  for (const b of extraBrokers) await b.stop();
  for (const s of stderrs) for (const t of tokens) assert.ok(!s.includes(t), "a token reached a server's stderr");
  cleanupTemps();
});

const MESSAGES = {
  notFound: "Token file not found (first run or clean slate)",
  corrupted: "Token file corrupted, treating as stale",
  noIdentity: "Could not verify parent process start time, session resume disabled for this instance",
  rejected: "Broker rejected resume token, starting fresh session",
  resumed: "Session resumed successfully",
  busy: "Another server instance under this host holds the token file, session resume disabled for this instance",
  ambiguous:
    "Two server instances under this host were launched identically (same program, arguments, working directory and environment), so neither resumes a session: give each server entry its own MCP_RESUME_INSTANCE",
};

/** The example server's app name: its state directory is <MCP_RESUME_STATE_DIR>/<APP>. */
const APP = "example-typescript";
/** A file name without its instance suffix (the default key's 16 hex digits, which this test does not compute). */
const withoutKey = (name: string): string => name.replace(/-[0-9a-f]{16}$/, "");
/** The token files (not lock files) of a state directory, sorted. */
const tokenFiles = (stateDir: string): string[] => readdirSync(stateDir).filter((f) => f.startsWith("token-")).sort();

/** This process's own identity: the host every direct child should resolve to. */
function myIdentity(): { pid: number; startTime: string } {
  return { pid: process.pid, startTime: startTimeOf(process.pid) };
}

function remember(stateDir: string): void {
  if (!existsSync(stateDir)) return;
  for (const f of readdirSync(stateDir)) {
    try {
      const t = readFileSync(path.join(stateDir, f), "utf8");
      if (t) tokens.add(t);
    } catch {
      // not a regular file
    }
  }
}

interface Launched {
  client: Client;
  transport: StdioClientTransport;
  errors: Error[];
  stderr: () => string;
  call: (tool: string, args?: Record<string, unknown>) => Promise<string>;
  close: () => Promise<void>;
}

/** Launches `command args` as an MCP server under this process (the host). */
async function launch(command: string, args: string[], env: Record<string, string>): Promise<Launched> {
  const transport = new StdioClientTransport({
    command,
    args,
    cwd: ROOT,
    env: { ...(process.env as Record<string, string>), MCP_EXAMPLE_BROKER_URL: broker.url, ...env },
    stderr: "pipe",
  });
  let err = "";
  transport.stderr!.on("data", (d: Buffer) => (err += d.toString()));
  const client = new Client({ name: "mcp-resume-e2e-host", version: "0.1.0" });
  const errors: Error[] = [];
  client.onerror = (e) => errors.push(e);
  await client.connect(transport);
  const call = async (tool: string, a: Record<string, unknown> = {}): Promise<string> => {
    const r = (await client.callTool({ name: tool, arguments: a })) as { content: Array<{ text: string }>; isError?: boolean };
    if (r.isError) throw new Error(`${tool} failed: ${r.content[0]?.text}`);
    return r.content[0]!.text;
  };
  return {
    client,
    transport,
    errors,
    stderr: () => err,
    call,
    close: async () => {
      await client.close();
      await new Promise((r) => setTimeout(r, 50));
      stderrs.push(err);
      if (env["MCP_RESUME_STATE_DIR"]) remember(path.join(env["MCP_RESUME_STATE_DIR"], APP));
      assert.deepEqual(errors.map(String), [], "the client saw only JSON-RPC on the server's stdout");
    },
  };
}

type Info = { session_id: string; resumed: boolean };
async function sessionInfo(l: Launched): Promise<Info> {
  return JSON.parse(await l.call("session_info")) as Info;
}

const q = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;
const NODE_SERVER = [process.execPath, SERVER_JS];

/** Runs one launcher configuration twice under this host: the second must resume. */
async function twiceFromOneHost(command: string, args: string[], label: string): Promise<{ stateDir: string; first: Info }> {
  const stateDir = path.join(tempDir(), "state", APP); // the app's directory; the server gets its root
  const env = { MCP_RESUME_STATE_DIR: path.dirname(stateDir) };
  const a = await launch(command, args, env);
  const first = await sessionInfo(a);
  assert.equal(first.resumed, false, `${label}: first launch starts a session`);
  assert.equal(await a.call("remember", { note: `note via ${label}` }), "remembered");
  await a.close();
  assert.ok(a.stderr().includes(MESSAGES.notFound), a.stderr());
  if (LINUX) {
    const id = myIdentity();
    // The instance suffix is the default key's (arguments, working directory, environment): one per launch
    // configuration, the same for both files.
    const names = readdirSync(stateDir).sort();
    const suffix = /-[0-9a-f]{16}$/.exec(names[0] ?? "")?.[0] ?? "";
    assert.deepEqual(
      names,
      [`lock-${id.pid}-${id.startTime}${suffix}`, `token-${id.pid}-${id.startTime}${suffix}`],
      `${label}: the token file (and its lock file) are named after this host process`,
    );
  }
  const b = await launch(command, args, env);
  const second = await sessionInfo(b);
  assert.deepEqual(second, { session_id: first.session_id, resumed: true }, `${label}: second launch resumes`);
  assert.deepEqual(JSON.parse(await b.call("recall")), { notes: [`note via ${label}`] });
  await b.close();
  assert.ok(b.stderr().includes(MESSAGES.resumed), b.stderr());
  return { stateDir, first };
}

describe("end to end with the official MCP client and the real broker", { concurrency: false }, () => {
  test("launched directly: same host resumes; a different host process gets a fresh session", async () => {
    const { stateDir, first } = await twiceFromOneHost(NODE_SERVER[0]!, NODE_SERVER.slice(1), "direct");
    // A second, different MCP host: a separate node process.
    const { stdout } = await execFileP(process.execPath, [path.join(PKG, "test", "fixtures", "host.mjs"), ...NODE_SERVER], {
      cwd: ROOT,
      env: { ...process.env, MCP_EXAMPLE_BROKER_URL: broker.url, MCP_RESUME_STATE_DIR: path.dirname(stateDir) },
    });
    const other = JSON.parse(stdout) as Info;
    assert.equal(other.resumed, false);
    assert.notEqual(other.session_id, first.session_id);
    remember(stateDir);
    assert.equal(tokenFiles(stateDir).length, 2, "one token file per host");
    assert.equal(readdirSync(stateDir).length, 4, "and one lock file per host");
    // Our own session is untouched by the other host; the other host has
    // exited, so this launch prunes its files.
    const c = await launch(NODE_SERVER[0]!, NODE_SERVER.slice(1), { MCP_RESUME_STATE_DIR: path.dirname(stateDir) });
    assert.deepEqual(await sessionInfo(c), { session_id: first.session_id, resumed: true });
    await c.close();
    if (LINUX) {
      const id = myIdentity();
      assert.deepEqual(readdirSync(stateDir).map(withoutKey).sort(), [`lock-${id.pid}-${id.startTime}`, `token-${id.pid}-${id.startTime}`], "the exited host's files were pruned");
    }
    assert.ok(c.stderr().includes("Removed stale token file"), c.stderr());
  });

  test("launched through sh -c '<server>; exit $?': sh is skipped, this host resumes", async () => {
    await twiceFromOneHost("sh", ["-c", `${NODE_SERVER.map(q).join(" ")}; exit $?`], "sh -c");
  });

  test("launched through a real npx of the packed packages (npm exec -> sh -c -> server)", { skip: !LINUX }, async (t) => {
    const packDir = tempDir("npx-pack-");
    const pack = async (dir: string): Promise<string> => {
      const { stdout } = await execFileP("npm", ["pack", "--ignore-scripts", "--pack-destination", packDir, "--silent"], { cwd: dir, maxBuffer: 1 << 24 });
      return path.join(packDir, stdout.trim().split("\n").pop()!);
    };
    const binding = await pack(PKG);
    const example = await pack(path.join(ROOT, "examples", "typescript-server"));
    const args = ["--yes", `--package=${binding}`, `--package=${example}`, "mcp-resume-example-typescript"];
    const stateDir = path.join(tempDir(), "state", APP); // the app's directory; the server gets its root
    const env = { MCP_RESUME_STATE_DIR: path.dirname(stateDir) };

    const a = await launch("npx", args, env);
    const first = await sessionInfo(a);
    assert.equal(first.resumed, false);
    // Look at the chain in /proc: find the server below the npx process.
    const npxPid = a.transport.pid!;
    const server = descendants(npxPid).find((p) => p.args.some((x) => x.includes("_npx") && x.endsWith("mcp-resume-example-typescript")));
    if (!server) throw new Error("the server process is not found under npx");
    t.diagnostic(`npx chain in /proc: server ${server.pid} ${JSON.stringify(server.args.join(" "))}, below npx ${npxPid}`);
    assert.equal(await a.call("remember", { note: "via npx" }), "remembered");
    await a.close();
    const npxDir = server.args.find((x) => x.includes("_npx"))!.replace(/\/node_modules\/.*$/, "");

    const b = await launch("npx", args, env);
    assert.deepEqual(await sessionInfo(b), { session_id: first.session_id, resumed: true });
    assert.deepEqual(JSON.parse(await b.call("recall")), { notes: ["via npx"] });
    await b.close();
    const id = myIdentity();
    assert.deepEqual(readdirSync(stateDir).map(withoutKey).sort(), [`lock-${id.pid}-${id.startTime}`, `token-${id.pid}-${id.startTime}`]);
    if (/\/_npx\/[0-9a-f]+$/.test(npxDir)) rmSync(npxDir, { recursive: true, force: true });
  });

  test("npm install ./sdk-bindings/typescript in a fresh project gives a working mcp-resume", async () => {
    const proj = tempDir("fresh-project-");
    writeFileSync(path.join(proj, "package.json"), JSON.stringify({ name: "fresh", version: "1.0.0", private: true, type: "module" }));
    await execFileP("npm", ["install", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error", PKG], { cwd: proj, maxBuffer: 1 << 24 });
    writeFileSync(
      path.join(proj, "main.js"),
      `import { ResumeTokenStore } from "mcp-resume";
const s = await ResumeTokenStore.open("fresh", { stateRoot: process.argv[2] });
const first = await s.load();
await s.store("tok-fresh");
console.log(JSON.stringify({ first: first ?? null, second: await s.load(), dir: s.stateDir }));
await s.close();`,
    );
    const stateDir = path.join(proj, "state", "fresh"); // app "fresh" under the root main.js is given
    const { stdout, stderr } = await execFileP(process.execPath, ["main.js", path.dirname(stateDir)], { cwd: proj });
    assert.deepEqual(JSON.parse(stdout), { first: null, second: "tok-fresh", dir: stateDir });
    assert.ok(stderr.includes(MESSAGES.notFound), stderr);
    assert.ok(!stderr.includes("tok-fresh"));
  });

  test("two runs of the MCP Inspector CLI are two hosts: each gets its own fresh session; the second prunes the first's files", async () => {
    const stateDir = path.join(tempDir(), "state", APP); // the app's directory; the server gets its root
    const run = async (): Promise<Info> => {
      const { stdout } = await execFileP(
        "npx",
        ["@modelcontextprotocol/inspector", "--cli", process.execPath, SERVER_JS, "--method", "tools/call", "--tool-name", "session_info"],
        { cwd: PKG, env: { ...process.env, MCP_EXAMPLE_BROKER_URL: broker.url, MCP_RESUME_STATE_DIR: path.dirname(stateDir) }, maxBuffer: 1 << 24 },
      );
      const result = JSON.parse(stdout) as { content: Array<{ text: string }> };
      return JSON.parse(result.content[0]!.text) as Info;
    };
    const one = await run();
    remember(stateDir);
    const [firstFile] = tokenFiles(stateDir);
    const two = await run();
    remember(stateDir);
    assert.equal(one.resumed, false);
    assert.equal(two.resumed, false);
    assert.notEqual(one.session_id, two.session_id);
    const files = tokenFiles(stateDir);
    assert.equal(files.length, 1, "one token file per inspector process, and the exited one's was pruned");
    assert.notEqual(files[0], firstFile);
    assert.equal(readdirSync(stateDir).length, 2, "with its lock file");
  });

  test("corrupt token file between launches: fresh session, 'Token file corrupted, treating as stale'", async () => {
    const stateDir = path.join(tempDir(), "state", APP); // the app's directory; the server gets its root
    const env = { MCP_RESUME_STATE_DIR: path.dirname(stateDir) };
    const a = await launch(NODE_SERVER[0]!, NODE_SERVER.slice(1), env);
    const first = await sessionInfo(a);
    await a.close();
    const [file] = tokenFiles(stateDir);
    writeFileSync(path.join(stateDir, file!), "half a tok\n");
    const b = await launch(NODE_SERVER[0]!, NODE_SERVER.slice(1), env);
    const second = await sessionInfo(b);
    await b.close();
    assert.equal(second.resumed, false);
    assert.notEqual(second.session_id, first.session_id);
    assert.ok(b.stderr().includes(MESSAGES.corrupted), b.stderr());
    assert.match(readFileSync(path.join(stateDir, file!), "utf8"), /^[!-~]+$/, "a fresh valid token replaced the corrupt file");
  });

  test("broker restarted (tokens forgotten): 'Broker rejected resume token, starting fresh session'", async () => {
    let b1 = await startBroker(brokerBin);
    extraBrokers.push(b1);
    const stateDir = path.join(tempDir(), "state", APP); // the app's directory; the server gets its root
    // The restarted broker listens on another URL, which would change the default instance key (the environment is
    // part of it) and so the file: declare the instance to keep one file.
    const env = { MCP_RESUME_STATE_DIR: path.dirname(stateDir), MCP_EXAMPLE_BROKER_URL: b1.url, MCP_RESUME_INSTANCE: "broker-test" };
    const launchHere = async (): Promise<Launched> => {
      const l = await launch(NODE_SERVER[0]!, NODE_SERVER.slice(1), env);
      return l;
    };
    const a = await launchHere();
    const first = await sessionInfo(a);
    await a.close();
    const [file] = tokenFiles(stateDir);
    const oldToken = readFileSync(path.join(stateDir, file!), "utf8");
    // Broker down: the token is kept, not deleted (it was not refused).
    await b1.stop();
    const down = await launchHere();
    await assert.rejects(down.call("session_info"), /no broker session/);
    await down.close();
    assert.ok(down.stderr().includes("could not offer the stored token to the broker"), down.stderr());
    assert.ok(!down.stderr().includes(MESSAGES.rejected));
    assert.equal(readFileSync(path.join(stateDir, file!), "utf8"), oldToken);
    // Restart on the same port: the new broker never issued the old token.
    b1 = await startBroker(brokerBin, `127.0.0.1:${b1.port}`);
    extraBrokers.push(b1);
    const b = await launchHere();
    const second = await sessionInfo(b);
    await b.close();
    assert.equal(second.resumed, false);
    assert.notEqual(second.session_id, first.session_id);
    assert.ok(b.stderr().includes(MESSAGES.rejected), b.stderr());
    assert.notEqual(readFileSync(path.join(stateDir, file!), "utf8"), oldToken);
  });

  test("identity unavailable (launched by a shell copy named dumb-init): resume off, no token file", { skip: !LINUX }, async () => {
    const dir = tempDir("reaper-");
    const dumbInit = path.join(dir, "dumb-init");
    copyFileSync("/bin/sh", dumbInit);
    const stateDir = path.join(tempDir(), "state", APP); // the app's directory; the server gets its root
    const env = { MCP_RESUME_STATE_DIR: path.dirname(stateDir) };
    const args = ["-c", `${NODE_SERVER.map(q).join(" ")}; exit $?`];
    const a = await launch(dumbInit, args, env);
    const first = await sessionInfo(a);
    await a.close();
    const b = await launch(dumbInit, args, env);
    const second = await sessionInfo(b);
    await b.close();
    for (const l of [a, b]) assert.ok(l.stderr().includes(MESSAGES.noIdentity), l.stderr());
    assert.equal(first.resumed, false);
    assert.equal(second.resumed, false);
    assert.notEqual(first.session_id, second.session_id);
    assert.ok(!existsSync(stateDir), "no state directory, no token file");
  });

  test("one host, two instances launched with different arguments at the same time: each resumes its own session", async () => {
    const stateDir = path.join(tempDir(), "state", APP); // the app's directory; the server gets its root
    const env = { MCP_RESUME_STATE_DIR: path.dirname(stateDir) };
    const argsOf = (profile: string): string[] => [...NODE_SERVER.slice(1), "--profile", profile];
    const [home, work] = await Promise.all([launch(NODE_SERVER[0]!, argsOf("home"), env), launch(NODE_SERVER[0]!, argsOf("work"), env)]);
    const [h1, w1] = await Promise.all([sessionInfo(home), sessionInfo(work)]);
    assert.equal(h1.resumed, false);
    assert.equal(w1.resumed, false);
    assert.notEqual(h1.session_id, w1.session_id);
    await Promise.all([home.call("remember", { note: "home" }), work.call("remember", { note: "work" })]);
    await Promise.all([home.close(), work.close()]);
    for (const l of [home, work]) assert.ok(!l.stderr().includes(MESSAGES.busy), l.stderr());
    if (LINUX) {
      const id = myIdentity();
      const base = `${id.pid}-${id.startTime}`;
      // The default key (arguments, working directory, environment) differs in the arguments: two suffixes.
      const names = readdirSync(stateDir).sort();
      assert.deepEqual(names.map(withoutKey), [`lock-${base}`, `lock-${base}`, `token-${base}`, `token-${base}`], names.join(" "));
      assert.equal(new Set(names.map((n) => n.slice(-16))).size, 2, names.join(" "));
    }
    // Relaunched at the same time again, in the other order.
    const [work2, home2] = await Promise.all([launch(NODE_SERVER[0]!, argsOf("work"), env), launch(NODE_SERVER[0]!, argsOf("home"), env)]);
    assert.deepEqual(await sessionInfo(home2), { session_id: h1.session_id, resumed: true });
    assert.deepEqual(await sessionInfo(work2), { session_id: w1.session_id, resumed: true });
    assert.deepEqual(JSON.parse(await home2.call("recall")), { notes: ["home"] });
    assert.deepEqual(JSON.parse(await work2.call("recall")), { notes: ["work"] });
    await Promise.all([home2.close(), work2.close()]);
  });

  test("one host, two instances told apart by MCP_RESUME_INSTANCE (same arguments): each resumes its own session", async () => {
    const stateDir = path.join(tempDir(), "state", APP); // the app's directory; the server gets its root
    const envOf = (instance: string): Record<string, string> => ({ MCP_RESUME_STATE_DIR: path.dirname(stateDir), MCP_RESUME_INSTANCE: instance });
    const [a, b] = await Promise.all([launch(NODE_SERVER[0]!, NODE_SERVER.slice(1), envOf("alpha")), launch(NODE_SERVER[0]!, NODE_SERVER.slice(1), envOf("beta"))]);
    const [a1, b1] = await Promise.all([sessionInfo(a), sessionInfo(b)]);
    assert.notEqual(a1.session_id, b1.session_id);
    await Promise.all([a.close(), b.close()]);
    assert.deepEqual(tokenFiles(stateDir).map((f) => f.slice(-16)).sort(), [instanceSuffix("alpha"), instanceSuffix("beta")].sort());
    const [a2, b2] = await Promise.all([launch(NODE_SERVER[0]!, NODE_SERVER.slice(1), envOf("alpha")), launch(NODE_SERVER[0]!, NODE_SERVER.slice(1), envOf("beta"))]);
    assert.deepEqual(await sessionInfo(a2), { session_id: a1.session_id, resumed: true });
    assert.deepEqual(await sessionInfo(b2), { session_id: b1.session_id, resumed: true });
    await Promise.all([a2.close(), b2.close()]);
  });

  test("one host, two identical instances at the same time: the second marks their key ambiguous and says so; neither resumes, then or later", async () => {
    const stateDir = path.join(tempDir(), "state", APP); // the app's directory; the server gets its root
    const env = { MCP_RESUME_STATE_DIR: path.dirname(stateDir) };
    const both = await Promise.all([launch(NODE_SERVER[0]!, NODE_SERVER.slice(1), env), launch(NODE_SERVER[0]!, NODE_SERVER.slice(1), env)]);
    let infos: Info[] = [];
    try {
      infos = await Promise.all(both.map(sessionInfo));
      // Which one won the lock is a race; the other found it busy and wrote the marker.
      const marked = both.map((l) => l.stderr().includes("event=instance_ambiguous") && l.stderr().includes("; wrote ambiguous-"));
      assert.deepEqual(marked.slice().sort(), [false, true], both.map((l) => l.stderr()).join("\n----\n"));
      const other = marked.indexOf(true);
      assert.ok(both[other]!.stderr().includes(MESSAGES.ambiguous), both[other]!.stderr());
      assert.ok(!both[other]!.stderr().includes(MESSAGES.notFound), "the second instance never read the token file");
      for (const l of both) assert.ok(!l.stderr().includes(MESSAGES.busy), "a default key is ambiguous, not busy");
      assert.deepEqual(infos.map((i) => i.resumed), [false, false]);
      assert.notEqual(infos[0]!.session_id, infos[1]!.session_id);
      await Promise.all(both.map((l, i) => l.call("remember", { note: `instance ${i}` })));
    } finally {
      await Promise.all(both.map((l) => l.close()));
    }
    const marker = readdirSync(stateDir).filter((f) => f.startsWith("ambiguous-"));
    assert.equal(marker.length, 1, readdirSync(stateDir).join(" "));
    assert.match(marker[0]!, /^ambiguous-[0-9a-f]{16}$/, "the marker names the key, not the host");
    if (LINUX) assert.ok(readdirSync(stateDir).some((f) => f.startsWith("lock-") && f.endsWith(marker[0]!.slice(-17))), "the marker's suffix is the instance's");
    // After both exited, the marker still stands: the next identical launch resumes neither's session,
    // deletes any token file of the key and stores none.
    const again = await launch(NODE_SERVER[0]!, NODE_SERVER.slice(1), env);
    try {
      const info = await sessionInfo(again);
      assert.equal(info.resumed, false, again.stderr());
      assert.ok(!infos.some((i) => i.session_id === info.session_id), "a fresh session, neither instance's");
      assert.deepEqual(JSON.parse(await again.call("recall")), { notes: [] });
      assert.ok(again.stderr().includes(MESSAGES.ambiguous) && again.stderr().includes(`found ${marker[0]}`), again.stderr());
    } finally {
      await again.close();
    }
    assert.deepEqual(tokenFiles(stateDir), [], readdirSync(stateDir).join(" "));
    assert.ok(existsSync(path.join(stateDir, marker[0]!)));
  });

  test("one host, two identical instances with no instance key (MCP_RESUME_INSTANCE=-) at the same time: the second runs without resume and says so; the first still resumes", async () => {
    const stateDir = path.join(tempDir(), "state", APP); // the app's directory; the server gets its root
    const env = { MCP_RESUME_STATE_DIR: path.dirname(stateDir), MCP_RESUME_INSTANCE: "-" };
    const both = await Promise.all([launch(NODE_SERVER[0]!, NODE_SERVER.slice(1), env), launch(NODE_SERVER[0]!, NODE_SERVER.slice(1), env)]);
    let holder = -1;
    let infos: Info[] = [];
    try {
      infos = await Promise.all(both.map(sessionInfo));
      // Which one won the lock is a race; exactly one did.
      const busy = both.map((l) => l.stderr().includes(MESSAGES.busy));
      assert.deepEqual(busy.slice().sort(), [false, true], both.map((l) => l.stderr()).join("\n----\n"));
      holder = busy.indexOf(false);
      const other = 1 - holder;
      assert.equal(infos[holder]!.resumed, false);
      assert.equal(infos[other]!.resumed, false, "the busy instance gets a fresh session");
      assert.notEqual(infos[other]!.session_id, infos[holder]!.session_id);
      assert.ok(both[holder]!.stderr().includes(MESSAGES.notFound));
      assert.ok(!both[other]!.stderr().includes(MESSAGES.notFound), "the busy instance never read the token file");
      for (const l of both) assert.ok(!l.stderr().includes("instance_ambiguous"), "no instance key, no ambiguity marker");
      await both[holder]!.call("remember", { note: "holder" });
    } finally {
      await Promise.all(both.map((l) => l.close()));
    }
    if (LINUX) {
      // No instance key and the host's namespaces: the plain spec names, one shared token file, no marker.
      const id = myIdentity();
      assert.deepEqual(readdirSync(stateDir).sort(), [`lock-${id.pid}-${id.startTime}`, `token-${id.pid}-${id.startTime}`], "one shared token file");
    }
    const again = await launch(NODE_SERVER[0]!, NODE_SERVER.slice(1), env);
    try {
      assert.deepEqual(await sessionInfo(again), { session_id: infos[holder]!.session_id, resumed: true });
      assert.deepEqual(JSON.parse(await again.call("recall")), { notes: ["holder"] });
    } finally {
      await again.close();
    }
    assert.ok(!again.stderr().includes(MESSAGES.busy), again.stderr());
  });

  test("MCP_RESUME=off: the server answers its tools, logs the resume_off line, writes no state directory", async () => {
    const stateDir = path.join(tempDir(), "state", APP); // the app's directory; the server gets its root
    const env = { MCP_RESUME_STATE_DIR: path.dirname(stateDir), MCP_RESUME: "off" };
    const ids: string[] = [];
    for (let i = 0; i < 2; i++) {
      const l = await launch(NODE_SERVER[0]!, NODE_SERVER.slice(1), env);
      const got = await sessionInfo(l);
      assert.equal(got.resumed, false);
      assert.equal(await l.call("remember", { note: "kept at the broker only" }), "remembered");
      await l.close();
      ids.push(got.session_id);
      assert.equal(l.stderr().split("Session resume turned off by MCP_RESUME=off").length - 1, 1, l.stderr());
      assert.ok(!l.stderr().includes(MESSAGES.notFound), l.stderr());
      assert.ok(!existsSync(stateDir), "MCP_RESUME=off created the state directory");
    }
    assert.notEqual(ids[0], ids[1]);
  });

  test("broker unreachable: initialize is answered, tools fail with a clear error, the server keeps serving", async () => {
    const stateDir = path.join(tempDir(), "state", APP); // the app's directory; the server gets its root
    const dead = await startBroker(brokerBin);
    const url = dead.url;
    await dead.stop();
    const l = await launch(NODE_SERVER[0]!, NODE_SERVER.slice(1), { MCP_RESUME_STATE_DIR: path.dirname(stateDir), MCP_EXAMPLE_BROKER_URL: url });
    for (let i = 0; i < 2; i++) {
      await assert.rejects(l.call("session_info"), /no broker session/);
    }
    await l.close();
  });

  test("a TCP socket on the server's stdio turns resume off (a Unix socket, set up alike, resumes)", { skip: !LINUX && "/proc/self/net is Linux's" }, async () => {
    // This process is the host of both: a terminal (the suite runs under one), no listening socket once the
    // connection is accepted, so only the kind of socket on the server's stdio differs between the two.
    for (const kind of ["unix", "tcp"] as const) {
      const stateDir = path.join(tempDir(), "state", APP); // the app's directory; the server gets its root
      const env = { MCP_RESUME_STATE_DIR: path.dirname(stateDir), MCP_EXAMPLE_BROKER_URL: broker.url };
      const first = await overSocket(kind, env);
      const second = await overSocket(kind, env);
      const stderr = `${kind}:\n${first.stderr}\n----\n${second.stderr}`;
      assert.equal(first.info.resumed, false, stderr);
      if (kind === "unix") {
        assert.deepEqual(second.info, { session_id: first.info.session_id, resumed: true }, stderr);
        assert.equal(tokenFiles(stateDir).length, 1, stderr);
      } else {
        assert.equal(second.info.resumed, false, stderr);
        assert.notEqual(second.info.session_id, first.info.session_id, stderr);
        for (const r of [first, second]) {
          assert.ok(r.stderr.includes(MESSAGES.noIdentity), r.stderr);
          assert.match(r.stderr, /stdin socket:\[\d+\] is a TCP socket \(local address 127\.0\.0\.1:\d+/, r.stderr);
        }
        assert.ok(!existsSync(stateDir), "resume off: no state directory, no token file");
      }
    }
  });

  test("raw stdio: only JSON-RPC on stdout; bench hooks and a missing broker URL print nothing there", async () => {
    const stateDir = path.join(tempDir(), "state", APP); // the app's directory; the server gets its root
    const run = (env: Record<string, string>, input: string): Promise<{ stdout: string; stderr: string; code: number | null }> =>
      new Promise((resolve) => {
        const p = spawn(process.execPath, [SERVER_JS], { cwd: ROOT, env: { ...(process.env as Record<string, string>), MCP_RESUME_STATE_DIR: path.dirname(stateDir), ...env } });
        let stdout = "";
        let stderr = "";
        p.stdout.on("data", (d: Buffer) => {
          stdout += d;
          if (stdout.includes('"id":2')) p.stdin.end();
        });
        p.stderr.on("data", (d: Buffer) => (stderr += d));
        p.on("exit", (code) => {
          stderrs.push(stderr);
          resolve({ stdout, stderr, code });
        });
        p.stdin.write(input);
        if (input === "") p.stdin.end();
      });
    const msgs =
      [
        { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } } },
        { jsonrpc: "2.0", method: "notifications/initialized" },
        { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "session_info", arguments: {} } },
      ]
        .map((m) => JSON.stringify(m))
        .join("\n") + "\n";
    const r = await run({ MCP_EXAMPLE_BROKER_URL: broker.url }, msgs);
    remember(stateDir);
    const lines = r.stdout.split("\n").filter((l) => l !== "");
    assert.ok(lines.length >= 2, r.stdout);
    for (const l of lines) assert.equal((JSON.parse(l) as { jsonrpc: string }).jsonrpc, "2.0", l);
    const noUrl = await run({ MCP_EXAMPLE_BROKER_URL: "" }, "");
    assert.equal(noUrl.code, 1);
    assert.equal(noUrl.stdout, "");
    assert.ok(noUrl.stderr.includes("MCP_EXAMPLE_BROKER_URL is not set"), noUrl.stderr);
    assert.ok(!noUrl.stderr.includes("WASI"), noUrl.stderr);
  });
});

/**
 * Runs the example server under this process with one connected socket as its stdin and stdout, as
 * `socat TCP-LISTEN:... EXEC:server` (tcp, on 127.0.0.1) or a Unix-socket launcher (unix) would: this
 * process listens, connects, accepts, and closes the listener before the launch, so it does not listen
 * while the server runs. It speaks JSON-RPC over its end (initialize, then the session_info tool),
 * then closes it, and the server exits on end of input.
 *
 * @param kind - the socket's family.
 * @param env - added to this process's environment for the server.
 * @returns the session_info answer and the server's stderr.
 * @throws when the server exits without answering session_info.
 */
async function overSocket(kind: "tcp" | "unix", env: Record<string, string>): Promise<{ info: Info; stderr: string }> {
  // pauseOnConnect: this process never reads from the accepted end, which is the server's once it runs.
  const listener = createServer({ pauseOnConnect: true });
  const address = kind === "tcp" ? { host: "127.0.0.1", port: 0 } : { path: path.join(tempDir("sock-"), "stdio.sock") };
  await new Promise<void>((resolve) => listener.listen(address, resolve));
  const accepted = new Promise<Socket>((resolve) => listener.once("connection", resolve));
  const bound = listener.address();
  const client = typeof bound === "string" ? connect(bound) : connect(bound!.port, "127.0.0.1");
  await new Promise<void>((resolve) => client.once("connect", resolve));
  const serverEnd = await accepted;
  // close() shuts the listening socket at once; its callback would wait for the accepted connection to end.
  listener.close();
  await new Promise((resolve) => setImmediate(resolve));
  const p = spawn(process.execPath, [SERVER_JS], { cwd: ROOT, env: { ...(process.env as Record<string, string>), ...env }, stdio: [serverEnd, serverEnd, "pipe"] });
  serverEnd.destroy(); // the server holds its own copy
  let stderr = "";
  p.stderr!.on("data", (d: Buffer) => (stderr += d));
  const exited = new Promise<void>((resolve) => p.on("exit", () => resolve()));
  let out = "";
  let info: Info | undefined;
  client.on("data", (d: Buffer) => {
    out += d;
    for (const line of out.split("\n").slice(0, -1)) {
      const m = JSON.parse(line) as { id?: number; result?: { content: Array<{ text: string }> } };
      if (m.id === 2 && info === undefined) {
        info = JSON.parse(m.result!.content[0]!.text) as Info;
        client.end();
      }
    }
    out = out.slice(out.lastIndexOf("\n") + 1);
  });
  client.on("error", () => {}); // the server may reset the connection on exit
  client.write(
    [
      { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "socket-host", version: "1" } } },
      { jsonrpc: "2.0", method: "notifications/initialized" },
      { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "session_info", arguments: {} } },
    ]
      .map((m) => JSON.stringify(m) + "\n")
      .join(""),
  );
  const timer = setTimeout(() => p.kill("SIGKILL"), 20000);
  await exited;
  clearTimeout(timer);
  client.destroy();
  stderrs.push(stderr);
  if (env["MCP_RESUME_STATE_DIR"]) remember(path.join(env["MCP_RESUME_STATE_DIR"], APP));
  if (info === undefined) throw new Error(`the server over a ${kind} socket did not answer session_info:\n${stderr}`);
  return { info, stderr };
}

/** Processes below `pid` in /proc, breadth first, with their arguments. */
function descendants(pid: number): Array<{ pid: number; args: string[] }> {
  const all: Array<{ pid: number; ppid: number; args: string[] }> = [];
  for (const e of readdirSync("/proc").filter((x) => /^\d+$/.test(x))) {
    try {
      const stat = readFileSync(`/proc/${e}/stat`, "latin1");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      all.push({ pid: Number(e), ppid, args: readFileSync(`/proc/${e}/cmdline`, "latin1").split("\0").filter((x) => x !== "") });
    } catch {
      // gone
    }
  }
  const out: Array<{ pid: number; args: string[] }> = [];
  for (let queue = [pid]; queue.length > 0; ) {
    const cur = queue.shift()!;
    for (const p of all.filter((x) => x.ppid === cur)) {
      out.push(p);
      queue.push(p.pid);
    }
  }
  return out;
}

// `mcp-resume state list|gc` of the TypeScript command line (dist/cli.js)
// on real handle stores, checked against the Go command's output for the
// same directory (both print the plugin's render export), with its usage
// errors and exit statuses, the errors for an unknown app, a root without
// apps and a gone pid, and flags after arguments; and on a Redis server named by
// MCP_RESUME_STATE_URL, against the Go command for the same server.
import assert from "node:assert/strict";
import { execFile, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";

import { HandleStore } from "../src/index.js";
import { cleanupTemps, goBuild, PKG, startRedis, tempDir } from "./helpers.js";

after(() => {
  if (root) fs.rmSync(`${root}.saved`, { recursive: true, force: true });
  cleanupTemps();
});

const run = promisify(execFile);
const quiet = { debug() {}, info() {}, warn() {}, error() {} };
const CLI = path.join(PKG, "dist", "cli.js");

/** Runs a command line; its stdout, stderr and exit status (never throws for a non-zero exit). */
async function cli(argv: string[]): Promise<{ stdout: string; stderr: string; code: number }> {
  try {
    const { stdout, stderr } = await run(argv[0]!, argv.slice(1), { env: { ...process.env, MCP_RESUME_STATE_DIR: "" } });
    return { stdout, stderr, code: 0 };
  } catch (e) {
    const x = e as { stdout: string; stderr: string; code: number };
    return { stdout: x.stdout, stderr: x.stderr, code: x.code };
  }
}

let goCli = "";
let root = "";
before(async () => {
  goCli = await goBuild("./host/cmd/mcp-resume", path.join(tempDir("go-cli-"), "mcp-resume"));
  root = tempDir("cli-state-");
  for (const app of ["alpha", "beta"]) {
    // One principal ("") with the whole cap as its quota, so the fourth create evicts by the cap.
    const s = await HandleStore.open(app, { stateRoot: root, logger: quiet, maxHandles: 3, maxHandlesPerPrincipal: 3 });
    const a = await s.create("", new Uint8Array(5));
    await s.put(a.handle, "", new Uint8Array(7));
    await s.create("", new Uint8Array(1), { idleTtlMs: 500 }); // idle-expired by the time the commands run
    await s.create("", new Uint8Array(2));
    await s.create("", new Uint8Array(3)); // evicts the least recently used: a tombstone
    await s.close();
  }
  fs.mkdirSync(path.join(root, "gamma"), { mode: 0o700 }); // an app without a handle store: skipped, nothing created
  await new Promise((r) => setTimeout(r, 1000));
});

/** Runs `argv` on a copy of the stores made before, so that two commands that change them (gc) see the same. */
async function onCopy(argv: string[]): Promise<{ stdout: string; stderr: string; code: number }> {
  const saved = `${root}.saved`;
  if (!fs.existsSync(saved)) fs.cpSync(root, saved, { recursive: true, preserveTimestamps: true });
  fs.rmSync(root, { recursive: true });
  fs.cpSync(saved, root, { recursive: true, preserveTimestamps: true });
  return cli(argv);
}

describe("mcp-resume state", () => {
  test("state list --json: every app's handle_list, as the Go command prints it (ages aside)", async () => {
    const ts = await cli([process.execPath, CLI, "state", "list", "--json", "--state-dir", root]);
    const go = await cli([goCli, "state", "list", "--json", "--state-dir", root]);
    assert.equal(ts.code, 0, ts.stderr);
    const strip = (s: string) => JSON.parse(s, (k, v) => (k === "age_ms" || k === "idle_ms" ? undefined : v)) as unknown;
    const got = strip(ts.stdout) as Array<{ app: string; handles: Array<{ state: string }> }>;
    assert.deepEqual(got.map((a) => [a.app, a.handles.length]), [["alpha", 4], ["beta", 4]]);
    assert.ok(got[0]!.handles.some((h) => h.state === "evicted"), JSON.stringify(got));
    assert.deepEqual(got, strip(go.stdout));
    assert.ok(!fs.existsSync(path.join(root, "gamma", "handles")), "looking creates nothing");
  });

  test("state gc, text and JSON, and state list APP: byte for byte the Go command's", async () => {
    for (const args of [["state", "gc", "--state-dir", root, "beta"], ["state", "gc", "--json", "--state-dir", root]]) {
      const ts = await onCopy([process.execPath, CLI, ...args]);
      const go = await onCopy([goCli, ...args]);
      assert.deepEqual(ts, go, args.join(" "));
      assert.equal(ts.code, 0);
    }
    assert.match((await onCopy([process.execPath, CLI, "state", "gc", "--json", "--state-dir", root])).stdout, /"expired_idle": 1/);
    const one = await cli([process.execPath, CLI, "state", "list", "--state-dir", root, "alpha"]);
    assert.match(one.stdout, /^alpha: \d+ live, \d+ tombstones, 1 shards, \d+ bytes in /m);
    assert.ok(!one.stdout.includes("beta"));
  });

  test("on Redis (MCP_RESUME_STATE_URL): state list and gc APP as the Go command prints them, the password as ***; without an app, both say to name one", async (t) => {
    const server = await startRedis(undefined, ["--requirepass", "pw-cli-1"], "pw-cli-1");
    if (!server) return t.skip("no redis-server on PATH");
    const url = `redis://default:pw-cli-1@127.0.0.1:${server.port}/0`;
    const saved = process.env["MCP_RESUME_STATE_URL"];
    process.env["MCP_RESUME_STATE_URL"] = url;
    try {
      const s = await HandleStore.open("app-r", { logger: quiet });
      await s.create("", new Uint8Array(4));
      await s.create("", new Uint8Array(2), { idleTtlMs: 1 });
      await s.close();
      await new Promise((r) => setTimeout(r, 20));
      const strip = (x: string) => JSON.parse(x, (k, v) => (k === "age_ms" || k === "idle_ms" ? undefined : v)) as unknown;
      const ts = await cli([process.execPath, CLI, "state", "list", "--json", "app-r"]);
      const go = await cli([goCli, "state", "list", "--json", "app-r"]);
      assert.equal(ts.code, 0, ts.stderr);
      const rows = strip(ts.stdout) as Array<{ app: string; state_dir: string; live: number; tombstones: number }>;
      // The render names a Redis store by its URL where a file store shows its directory.
      assert.deepEqual(rows.map((r) => [r.app, r.state_dir, r.live, r.tombstones]), [["app-r", `redis://default:***@127.0.0.1:${server.port}/0`, 1, 1]]);
      assert.deepEqual(rows, strip(go.stdout));
      const text = await cli([process.execPath, CLI, "state", "list", "app-r"]);
      assert.match(text.stdout, /app-r: 1 live, 1 tombstones/);
      assert.ok(text.stdout.includes(`redis://default:***@127.0.0.1:${server.port}/0`), text.stdout);
      const gc = [await cli([process.execPath, CLI, "state", "gc", "--json", "app-r"]), await cli([goCli, "state", "gc", "--json", "app-r"])];
      assert.equal(gc[0]!.code, 0, gc[0]!.stderr);
      assert.match(gc[0]!.stdout, /"expired_idle": 1/);
      assert.equal(gc[1]!.code, 0, gc[1]!.stderr); // the Go command found nothing left to sweep
      const bare = [await cli([process.execPath, CLI, "state", "list"]), await cli([goCli, "state", "list"])];
      assert.deepEqual(bare[0], bare[1]);
      assert.equal(bare[0]!.code, 1);
      assert.match(bare[0]!.stderr, /name the app/);
      for (const r of [ts, text, ...gc, ...bare]) assert.ok(!`${r.stdout}${r.stderr}`.includes("pw-cli-1"), "the password in the output");
    } finally {
      if (saved === undefined) delete process.env["MCP_RESUME_STATE_URL"];
      else process.env["MCP_RESUME_STATE_URL"] = saved;
      await server.stop();
    }
  });

  test("usage errors exit 2 with the Go command's words; an unknown app is an error naming the root", async () => {
    for (const args of [["state"], ["state", "purge"], ["state", "list", "a", "b"]]) {
      const ts = await cli([process.execPath, CLI, ...args]);
      const go = await cli([goCli, ...args]);
      assert.equal(ts.code, 2, args.join(" "));
      assert.equal(ts.stderr, go.stderr, args.join(" "));
    }
    const args = ["state", "list", "--state-dir", root, "nosuch"];
    const none = await cli([process.execPath, CLI, ...args]);
    assert.deepEqual([none.code, none.stdout], [1, ""]);
    assert.ok(none.stderr.startsWith(`mcp-resume state list: no app "nosuch" under ${root}`), none.stderr);
    assert.deepEqual(none, await cli([goCli, ...args]));
  });

  test("looking in the wrong place exits 1 with the Go command's line; flags may follow the arguments", async () => {
    const missing = path.join(root, "..", `${path.basename(root)}-missing`);
    const gonePid = String(spawnSync("true").pid); // reaped: no process has it (until it is reused)
    for (const args of [
      ["list", "--state-dir", root, "--app", "nosuch"],
      ["prune", "--state-dir", missing],
      ["state", "gc", "--state-dir", missing, "alpha"],
      ["state", "list", "gamma", "--state-dir", root],
      ["state", "list", "gamma", "--json", "--state-dir", root],
      ["list", "--app", "alpha", "--state-dir", root, "--json"],
      ["list", "x", "--json"],
      ["whoami", "--pid", gonePid],
    ]) {
      const ts = await cli([process.execPath, CLI, ...args]);
      const go = await cli([goCli, ...args]);
      assert.deepEqual(ts, go, args.join(" "));
    }
    const gone = await cli([process.execPath, CLI, "state", "gc", "--state-dir", missing]);
    assert.deepEqual([gone.code, gone.stdout], [1, ""]);
    assert.ok(gone.stderr.startsWith(`mcp-resume state gc: no app directories under ${missing}: `), gone.stderr);
    assert.equal((await cli([process.execPath, CLI, "state", "list", "gamma", "--state-dir", root])).stdout, "no handle stores\n");
    assert.ok(!fs.existsSync(missing));
    const who = await cli([process.execPath, CLI, "whoami", "--pid", gonePid]);
    assert.deepEqual(who, { code: 1, stdout: "", stderr: `mcp-resume whoami: no process has pid ${gonePid}: give the pid of a running MCP server\n` });
  });
});

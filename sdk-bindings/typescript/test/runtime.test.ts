// The runtime around the plugin, in fresh Node processes: no file of ours on
// fds 0-2, and nothing compiled is cached on disk.
//
// Node opens /dev/null onto a closed fd 0-2 before any JavaScript runs (its
// PlatformInit), so a server started with `2>&-` cannot have the binding's
// files land there; these tests pin it for a real store on the real plugin.
// The binding compiles the plugin in memory (WebAssembly.compile) once per
// process and writes no compile cache: the second test runs a store with
// HOME and XDG_CACHE_HOME pointing at empty directories and finds them
// still empty.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync } from "node:fs";
import * as path from "node:path";
import { after, describe, test } from "node:test";

import { cleanupTemps, PKG, tempDir } from "./helpers.js";

after(cleanupTemps);

const LINUX = process.platform === "linux";
const DIST = new URL("../dist/index.js", import.meta.url).href;

/** Opens a store, stores and loads, then writes the targets of fds 0-2 (and any memfd) to argv[1] as JSON. */
const CHILD = `
import { readlinkSync, readdirSync, writeFileSync } from "node:fs";
const { ResumeTokenStore } = await import(${JSON.stringify(DIST)});
const [report, state] = process.argv.slice(1);
const quiet = { debug() {}, info() {}, warn() {}, error() {} };
const store = await ResumeTokenStore.open("fds-app", { stateRoot: state, instance: "", logger: quiet });
await store.store("tok-fds");
await store.load();
const target = (fd) => { try { return readlinkSync("/proc/self/fd/" + fd); } catch { return "closed"; } };
const std = { 0: target(0), 1: target(1), 2: target(2) };
writeFileSync(report, JSON.stringify({ std }));
await store.close();
`;

/** Runs CHILD under `sh -c 'exec node … N>&-'` (no fd closed for N < 0) with env; resolves with its exit code and stderr. */
function runChild(closeFd: number, report: string, state: string, env: NodeJS.ProcessEnv = process.env): Promise<{ code: number | null; stderr: string }> {
  const redirect = closeFd >= 0 ? `${closeFd}>&-` : "";
  const script = `exec "$0" --input-type=module -e "$1" "$2" "$3" ${redirect}`;
  return new Promise((resolve) => {
    const p = spawn("sh", ["-c", script, process.execPath, CHILD, report, state], { cwd: PKG, env, stdio: ["pipe", "pipe", "pipe"] });
    let stderr = "";
    p.stderr.on("data", (d: Buffer) => (stderr += d));
    p.stdout.resume();
    p.on("exit", (code) => resolve({ code, stderr }));
  });
}

describe("fds 0-2", { skip: !LINUX && "reads /proc/self/fd" }, () => {
  for (const fd of [0, 1, 2]) {
    test(`started with fd ${fd} closed: it is /dev/null, the others untouched`, async () => {
      const dir = tempDir();
      const report = path.join(dir, "report.json");
      const { code, stderr } = await runChild(fd, report, path.join(dir, "state"));
      assert.equal(code, 0, stderr);
      const { std } = JSON.parse(readFileSync(report, "utf8")) as { std: Record<string, string> };
      for (const i of [0, 1, 2]) {
        if (i === fd) assert.equal(std[i], "/dev/null", JSON.stringify(std));
        else assert.match(std[i] ?? "", /^(pipe|socket):/, JSON.stringify(std)); // what spawn gave it
      }
    });
  }
});

test("nothing compiled is cached on disk", { skip: !LINUX && "XDG_CACHE_HOME is Linux's" }, async () => {
  const dir = tempDir();
  const home = path.join(dir, "home");
  const cache = path.join(dir, "cache");
  for (const d of [home, cache]) mkdirSync(d);
  const env = { ...process.env, HOME: home, XDG_CACHE_HOME: cache, NODE_COMPILE_CACHE: "" };
  const { code, stderr } = await runChild(-1, path.join(dir, "report.json"), path.join(dir, "state"), env);
  assert.equal(code, 0, stderr);
  assert.deepEqual(readdirSync(home), []);
  assert.deepEqual(readdirSync(cache), []);
  assert.deepEqual(readdirSync(dir).sort(), ["cache", "home", "report.json", "state"]);
});

// The shared cases of hostfuncs/conformance, run exactly as
// hostfuncs/conformance/README.md says: the real plugin.wasm in Extism's JS
// SDK with this package's real host functions on real files. Only what the
// case pins is pinned, by FixtureHost (a subclass here, not a production
// option): mcp_resume_facts answers the system's facts, the /proc ops
// (environ, ns and net included: "<P>/environ", "<P>/ns/<ns>",
// "<P>/net/<table>") read the case's fixture tree through the real inspect
// code, which checks pid, ns and table as the real host does, when the pinned
// system is Linux; the operations without a file (kill0, exe, fstat, peer,
// sysctl, procargs, ps) answer the system's answers or the README's defaults,
// and a no_answer function is not run at all. hold_lock takes the lock
// through a second, independent HostFunctions (another server instance)
// confined directly to the state directory. A host_call calls the store's own
// FixtureHost directly (for mcp_resume_lock after lockAhead, as the store
// does); hold_socket binds the padded abstract address with a plain node:net
// server (helpers.ts). A call of any other form fails the case. CONF_DEBUG=1
// prints every host call and its answer on stderr. A case with
// "store": "handles" opens a handle store (handles_open) in
// <root>/state/conformance/handles; its calls may save members of an
// output ("save") for later inputs ("$var"), expect a JSON error
// (error_json_subset), corrupt every record (corrupt_files), and its files
// are checked by count and for the sealed value (files_after_count,
// files_exclude). Redis (the README's "Redis: ..."): one redis-server per
// run (helpers.ts, startRedis), `$REDIS_URL` substituted, FLUSHALL and
// SCRIPT FLUSH before each Redis run; a handle case without `backends` runs
// twice (the second titled "[redis]", with `state_url` added to its open
// and no file checks). A Redis run loads its store in Extism's worker mode,
// as HandleStore.open does for a state URL, so the plugin's
// mcp_resume_eval reaches the real server; its host_calls go through
// HostFunctions.callAsync, the worker mode's entry. The `redis` action
// sends its command with the runner's own node-redis client. The binary
// forms: a host_call of mcp_resume_crypto, or of mcp_resume_eval in its binary
// form, gives request_hex (for eval ending in `$REDIS_URL`, replaced by the
// hex of the URL's UTF-8 bytes) and wants response_hex, response_prefix_hex
// or error_code; a handle export may give
// input_hex (saved variables as the hex of their text) and want output_hex
// or output_prefix_hex.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import type { Server } from "node:net";
import { after, describe, test } from "node:test";
import { fileURLToPath } from "node:url";

import { fdOf, HostError, HostFunctions, pidOf, type ErrorCode, type Json } from "../src/hostfuncs.js";
import type { LogFields, Logger } from "../src/logger.js";
import { callExport, loadStore, type ExportResult } from "../src/store.js";
import { holdAbstractSocket, PinnedHost, REQUIRE_REDIS, startRedis, type RedisServer } from "./helpers.js";

const CONF = fileURLToPath(new URL("../../../hostfuncs/conformance/", import.meta.url));

type Content = string | { text?: string; base64?: string; repeat?: string; count?: number; dir?: boolean; symlink?: string; fifo?: boolean; mode?: string; age_days?: number };
type Files = Record<string, Content>;
interface Want {
  output?: Content | null;
  output_json?: unknown;
  output_json_subset?: unknown;
  error_code?: string;
  error_json_subset?: Json;
  /** Success, and the (binary) output is exactly these bytes, in hex. */
  output_hex?: string;
  /** Success, and the (binary) output starts with these bytes, in hex. */
  output_prefix_hex?: string;
  /** The error's message (and the whole error string) does not hold this text. */
  message_excludes?: string;
}
interface System {
  facts: Json;
  proc?: Files;
  answers?: Record<string, Json>;
  no_answer?: string[];
}
interface Case {
  name: string;
  spec: string;
  store?: "resume" | "handles";
  backends?: Array<"file" | "redis">;
  logs_exclude?: string;
  files_after_count?: Record<string, number>;
  files_exclude?: string;
  system?: string | System;
  state_dir?: { create?: boolean; mode?: string };
  state_dir_after?: { exists?: boolean; mode?: string };
  files_before?: Files;
  files_after?: Files;
  outside_before?: Files;
  outside_after?: Files;
  open?: Json;
  open_want?: Want;
  calls?: Call[];
  logs?: Array<{ level: string; event: string; message?: string; message_prefix?: string; detail?: string }>;
}

/** The answer a host_call expects (hostfuncs/conformance/README.md, step 6): exactly one member. */
interface HostWant {
  ok?: true;
  error_code?: string;
  response_subset?: Json;
  result_codes?: Array<string | null>;
  /** A binary host function (mcp_resume_crypto, mcp_resume_eval's binary form): the response is exactly these bytes, in hex. */
  response_hex?: string;
  /** A binary host function: the response starts with these bytes, in hex. */
  response_prefix_hex?: string;
  /** With one of the above: the error message does not hold this text. */
  message_excludes?: string;
  /** With one of the above: the call took at least / at most this many milliseconds (wall clock). */
  min_ms?: number;
  max_ms?: number;
}
/** One of `calls`: an export, an action or a host_call (hostfuncs/conformance/README.md, step 6). */
interface Call {
  export?: string;
  action?: string;
  host_call?: string;
  name?: string;
  socket?: string;
  content?: Content;
  input?: Content | Json;
  /** A handle export's binary input in hex, instead of `input`; `$<var>` stands for the hex of the saved value's text. */
  input_hex?: string;
  save?: Record<string, string>;
  prefix?: string;
  mode?: "truncate" | "flip" | "symlink" | "save" | "restore";
  request?: unknown;
  /** A binary host function's request in hex, instead of `request`; no substitutions but a trailing `$REDIS_URL`, the hex of the URL's UTF-8. */
  request_hex?: string;
  want?: Want & HostWant;
  /** The `redis` action: the command, sent once, or once per key matching `each_key` with `$KEY` replaced. */
  command?: string[];
  each_key?: string;
}

const norm = (c: Content): Exclude<Content, string> => (typeof c === "string" ? { text: c } : c);

function bytesOf(c: Content): Buffer {
  const n = norm(c);
  if (n.text !== undefined) return Buffer.from(n.text, "utf8");
  if (n.base64 !== undefined) return Buffer.from(n.base64, "base64");
  return Buffer.from((n.repeat ?? "").repeat(n.count ?? 0), "utf8");
}

function makeFiles(dir: string, files: Files | undefined): void {
  for (const [name, c0] of Object.entries(files ?? {})) {
    const c = norm(c0);
    const p = path.join(dir, name);
    fs.mkdirSync(path.dirname(p), { recursive: true, mode: 0o700 });
    if (c.dir) fs.mkdirSync(p, { mode: 0o700 });
    else if (c.symlink !== undefined) fs.symlinkSync(c.symlink, p);
    else if (c.fifo) execFileSync("mkfifo", ["-m", "600", p]);
    else fs.writeFileSync(p, bytesOf(c), { mode: 0o600 });
    if (c.mode) fs.chmodSync(p, parseInt(c.mode, 8));
    if (c.age_days) {
      const old = new Date(Date.now() - c.age_days * 86400_000);
      fs.lutimesSync(p, old, old);
    }
  }
}

/** `dir` holds exactly `want` (when `exact`; else at least the listed names), with their content and mode. */
function checkFiles(dir: string, want: Files | undefined, exact: boolean): void {
  const w = want ?? {};
  const names = fs.existsSync(dir) ? fs.readdirSync(dir) : []; // a handle store's handles/ may never have been made
  if (exact) assert.deepEqual(names.sort(), Object.keys(w).sort(), `files in ${path.basename(dir)} (temporary files count)`);
  for (const [name, c0] of Object.entries(w)) {
    const c = norm(c0);
    const p = path.join(dir, name);
    const st = fs.lstatSync(p);
    if (c.dir) assert.ok(st.isDirectory(), `${name} is a directory`);
    else if (c.symlink !== undefined) assert.equal(fs.readlinkSync(p), c.symlink, `${name} symlink target`);
    else if (c.fifo) assert.ok(st.isFIFO(), `${name} is a FIFO`);
    else {
      assert.ok(st.isFile(), `${name} is a regular file`);
      assert.ok(fs.readFileSync(p).equals(bytesOf(c)), `${name} content: ${fs.readFileSync(p).subarray(0, 60).toString()}`);
    }
    if (c.mode) assert.equal((st.mode & 0o777).toString(8), parseInt(c.mode, 8).toString(8), `${name} mode`);
  }
}

/** Every key of `want` is in `got` with an equal value, recursively for objects; arrays exactly. */
function assertSubset(got: unknown, want: unknown, where: string): void {
  if (want === null || typeof want !== "object" || Array.isArray(want)) return assert.deepEqual(got, want, where);
  assert.ok(got !== null && typeof got === "object" && !Array.isArray(got), `${where}: want an object, got ${JSON.stringify(got)}`);
  for (const [k, v] of Object.entries(want)) assertSubset((got as Json)[k], v, `${where}.${k}`);
}

function checkWant(r: ExportResult, w: Want, what: string, exportName: string): void {
  if (w.message_excludes !== undefined) {
    const text = r.ok ? "" : `${r.message} ${JSON.stringify(r.error ?? {})}`;
    assert.ok(!text.includes(w.message_excludes), `${what}: the error holds ${JSON.stringify(w.message_excludes)}: ${text}`);
  }
  if (w.error_json_subset !== undefined) {
    assert.ok(!r.ok, `${what}: want error ${JSON.stringify(w.error_json_subset)}, got success`);
    assert.ok(r.error !== undefined, `${what}: the error string is not JSON: ${r.message}`);
    return assertSubset(r.error, w.error_json_subset, `${what}: error`);
  }
  if (w.error_code !== undefined) {
    assert.ok(!r.ok, `${what}: want error ${w.error_code}, got success`);
    assert.equal(r.code, w.error_code, `${what}: error ${r.message}`);
    return;
  }
  assert.ok(r.ok, `${what}: unexpected error ${r.ok ? "" : `${r.code}: ${r.message}`}`);
  const text = Buffer.from(r.output).toString("utf8");
  if (w.output_hex !== undefined || w.output_prefix_hex !== undefined) {
    const got = Buffer.from(r.output).toString("hex");
    if (w.output_hex !== undefined) assert.equal(got, w.output_hex.toLowerCase(), `${what}: output_hex`);
    else assert.ok(got.startsWith(w.output_prefix_hex!.toLowerCase()), `${what}: output ${got} does not start with ${w.output_prefix_hex}`);
    return;
  }
  if (w.output_json !== undefined || w.output_json_subset !== undefined) {
    const got = JSON.parse(text) as Json;
    if (exportName === "list" && Array.isArray(got["files"])) for (const f of got["files"] as Json[]) delete f["age_seconds"];
    if (w.output_json !== undefined) assert.deepEqual(got, w.output_json, `${what}: output_json`);
    else assertSubset(got, w.output_json_subset, `${what}: output`);
  } else if (w.output === null || w.output === undefined) {
    assert.equal(r.output.length, 0, `${what}: want empty output, got ${JSON.stringify(text.slice(0, 80))}`);
  } else {
    assert.ok(Buffer.from(r.output).equals(bytesOf(w.output)), `${what}: output ${JSON.stringify(text.slice(0, 80))}`);
  }
}

/**
 * Checks a host function's response (UTF-8 JSON, padding allowed; or the binary response of mcp_resume_crypto,
 * against response_hex or response_prefix_hex) against a host_call's `want`; an unknown want fails.
 */
function checkHostWant(out: Uint8Array, w: HostWant, what: string): void {
  if (w.response_hex !== undefined || w.response_prefix_hex !== undefined) {
    assert.equal(Object.keys(w).length, 1, `${what}: a host want has exactly one member: ${JSON.stringify(w)}`);
    const got = Buffer.from(out).toString("hex");
    if (w.response_hex !== undefined) assert.equal(got, w.response_hex.toLowerCase(), `${what}: response_hex (${Buffer.from(out).subarray(0, 200).toString()})`);
    else assert.ok(got.startsWith(w.response_prefix_hex!.toLowerCase()), `${what}: response ${got.slice(0, 400)} does not start with ${w.response_prefix_hex}`);
    return;
  }
  const text = Buffer.from(out).toString("utf8");
  const r = JSON.parse(text) as Json;
  const err = (x: unknown): string | undefined => ((x as Json | null)?.["error"] as { code?: string } | null | undefined)?.code;
  if (w.message_excludes !== undefined) assert.ok(!text.includes(w.message_excludes), `${what}: the response holds ${JSON.stringify(w.message_excludes)}: ${text}`);
  const keys = Object.keys(w).filter((k) => k !== "message_excludes");
  assert.equal(keys.length, 1, `${what}: a host want has exactly one of ok, error_code, response_subset, result_codes: ${JSON.stringify(w)}`);
  if (w.error_code !== undefined) return assert.equal(err(r), w.error_code, `${what}: want error ${w.error_code}, got ${text}`);
  assert.ok(r["error"] === undefined || r["error"] === null, `${what}: unexpected error ${text}`);
  if (w.ok === true) return;
  if (w.response_subset !== undefined) return assertSubset(r, w.response_subset, `${what}: response`);
  if (w.result_codes !== undefined) {
    const results = r["results"];
    assert.ok(Array.isArray(results), `${what}: want results, got ${text}`);
    assert.deepEqual(results.map((x) => err(x) ?? null), w.result_codes, `${what}: result codes of ${text}`);
    return;
  }
  assert.fail(`${what}: unknown host want ${JSON.stringify(w)}`);
}

/** The host functions with the case's system pinned (the README's step 2): /proc is root/proc, the system is facts.os. */
class FixtureHost extends PinnedHost {
  constructor(
    private readonly sys: System,
    root: string,
    logger: Logger,
  ) {
    super({ logger }, path.join(root, "proc"), String(sys.facts["os"]));
  }
  override call(fn: string, request: Uint8Array): Uint8Array {
    const out = this.sys.no_answer?.includes(fn) ? Buffer.from("not json") : super.call(fn, request);
    if (process.env["CONF_DEBUG"]) process.stderr.write(`${fn} ${Buffer.from(request).toString()} -> ${Buffer.from(out).toString()}\n`);
    return out;
  }
  protected override facts(): Json {
    return this.sys.facts;
  }
  protected override inspect(op: Json): Json {
    const o = String(op["op"]);
    if (!["kill0", "exe", "fstat", "peer", "sysctl", "procargs", "ps"].includes(o)) return super.inspect(op);
    // Validated as the real host validates it, whatever the answers hold.
    const answer = this.sys.answers?.[`${o} ${o === "fstat" || o === "peer" ? fdOf(op) : pidOf(op, false)}`];
    if (answer) {
      const e = answer["error"] as { code: ErrorCode; message: string } | undefined;
      if (e) throw new HostError(e.code, e.message);
      return answer;
    }
    if (o === "kill0") throw new HostError("not_found", "no such process (conformance default)");
    if (o === "fstat") return { type: "char" };
    if (o === "exe") return { dev: "2049", ino: "1234567" };
    throw new HostError("unsupported", `${o} is not answered (conformance default)`);
  }
}

/**
 * `input` with the saved variables put in: a string exactly `$<var>` becomes the saved value with its JSON
 * type, `$<var>` inside a longer string its text (longest names first, so `$h` never eats `$h2`).
 */
function substVars(v: unknown, vars: Map<string, string | number>): unknown {
  if (typeof v === "string") {
    if (v.startsWith("$") && vars.has(v.slice(1))) return vars.get(v.slice(1));
    return [...vars.keys()].sort((a, b) => b.length - a.length).reduce((t, k) => t.replaceAll(`$${k}`, String(vars.get(k))), v);
  }
  if (Array.isArray(v)) return v.map((x) => substVars(x, vars));
  if (v !== null && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, substVars(x, vars)]));
  return v;
}

/** `h` (hex) with each saved `$<var>` replaced by the hex of its text (a string's UTF-8 bytes, a number's digits), longest names first; then decoded. */
function hexInput(h: string, vars: Map<string, string | number>): Buffer {
  const text = [...vars.keys()].sort((a, b) => b.length - a.length).reduce((t, k) => t.replaceAll(`$${k}`, Buffer.from(String(vars.get(k)), "utf8").toString("hex")), h);
  assert.match(text, /^([0-9a-fA-F]{2})*$/, `input_hex is not hex after its variables: ${text}`);
  return Buffer.from(text, "hex");
}

/** The `corrupt_files` action: every regular file of `dir` named `prefix…` truncated to half, its last byte flipped, or replaced by a symlink to a copy outside (in `root`); `save` copies it to `root/saved-<name>` unchanged, `restore` writes that copy back over it (an older record put back; no copy fails). */
function corruptFiles(dir: string, root: string, prefix: string, mode: string): void {
  const names = fs.readdirSync(dir).filter((n) => n.startsWith(prefix) && fs.lstatSync(path.join(dir, n)).isFile());
  assert.ok(names.length > 0, `corrupt_files: no file named ${prefix}… in the state directory`);
  for (const n of names) {
    const p = path.join(dir, n);
    const data = fs.readFileSync(p);
    if (mode === "truncate") fs.truncateSync(p, Math.floor(data.length / 2));
    else if (mode === "flip") {
      data[data.length - 1]! ^= 0xff;
      fs.writeFileSync(p, data);
    } else if (mode === "symlink") {
      const outside = path.join(root, `outside-${n}`);
      fs.writeFileSync(outside, data, { mode: 0o600 });
      fs.rmSync(p);
      fs.symlinkSync(outside, p);
    } else if (mode === "save") fs.writeFileSync(path.join(root, `saved-${n}`), data, { mode: 0o600 });
    else if (mode === "restore") fs.writeFileSync(p, fs.readFileSync(path.join(root, `saved-${n}`)));
    else assert.fail(`corrupt_files: unknown mode ${JSON.stringify(mode)}`);
  }
}

/** The abstract socket of lock `name` in state directory `dir`, as the plugin names it (plugin/internal/resume, LockSocket). */
const lockSocket = (dir: string, name: string): string => "mcp-resume-lock-" + createHash("sha256").update(`${dir}/${name}`).digest("hex").slice(0, 40);

const quiet: Logger = { debug() {}, info() {}, warn() {}, error() {} };
const roots: string[] = [];
after(() => roots.forEach((r) => fs.rmSync(r, { recursive: true, force: true })));

const caseFiles = fs.readdirSync(path.join(CONF, "cases")).filter((f) => f.endsWith(".json")).sort();

/** The run's one redis-server, started by the first Redis run; `undefined` when there is none on PATH. */
let redisServer: Promise<RedisServer | undefined> | undefined;
after(async () => (await redisServer?.catch(() => undefined))?.stop());

/**
 * The `redis` action: `command` on the runner's own client; with `each_key`, once per key matching the glob
 * (SCAN to the end), `$KEY` replaced by it; no matching key fails the case.
 */
async function redisAction(r: RedisServer, cl: Call, i: number): Promise<void> {
  assert.ok(Array.isArray(cl.command) && cl.command.length > 0, `call ${i}: redis action without a command`);
  if (cl.each_key === undefined) return void (await r.client.sendCommand(cl.command));
  const keys: string[] = [];
  let cursor = "0";
  do {
    const [next, batch] = (await r.client.sendCommand(["SCAN", cursor, "MATCH", cl.each_key, "COUNT", "1000"])) as [string, string[]];
    cursor = next;
    keys.push(...batch);
  } while (cursor !== "0");
  assert.ok(keys.length > 0, `call ${i}: no key matches ${cl.each_key}`);
  for (const key of keys) await r.client.sendCommand(cl.command.map((a) => a.replaceAll("$KEY", key)));
}

describe("conformance", () => {
  test("the shared cases are present", () => assert.ok(caseFiles.length >= 33, caseFiles.join(", ")));

  for (const file of caseFiles) {
    const raw = fs.readFileSync(path.join(CONF, "cases", file), "utf8");
    const parsed = JSON.parse(raw) as Case;
    // A handle case without backends runs on both; a resume case runs once, as written, unless it says redis.
    const backends = parsed.backends ?? (parsed.store === "handles" ? ["file", "redis"] : ["file"]);
    for (const backend of backends) {
    const onRedis = backend === "redis";
    const title = onRedis && backends.length > 1 ? `${parsed.name} [redis]` : parsed.name;
    test(title, async (t) => {
      let redis: RedisServer | undefined;
      if (onRedis) {
        redisServer ??= startRedis();
        redis = await redisServer;
        if (!redis) {
          process.stderr.write(`conformance: ${title} SKIPPED: no redis-server on PATH (MCP_RESUME_REQUIRE_REDIS=1 makes this a failure)\n`);
          return t.skip("no redis-server on PATH");
        }
        await redis.flush();
      }
      const root = fs.mkdtempSync(path.join(tmpdir(), "mcp-resume-conf-"));
      roots.push(root);
      const euid = String(process.geteuid?.() ?? -1);
      const url = redis?.url ?? "redis://127.0.0.1:1/0";
      const subst = (text: string): string =>
        text.replace(/("request_hex":\s*"[0-9a-fA-F]*)\$REDIS_URL"/g, (_, hex: string) => `${hex}${Buffer.from(url, "utf8").toString("hex")}"`)
          .replaceAll('"$EUID"', euid).replaceAll("$EUID", euid).replaceAll("$ROOT", root).replaceAll("$REDIS_URL", url).replaceAll("$REDIS_ADDR", `127.0.0.1:${redis?.port ?? 1}`);
      const c = JSON.parse(subst(raw)) as Case;
      // A Redis run of a case written for both backends: no file checks.
      if (onRedis && c.store === "handles" && c.backends === undefined) for (const k of ["files_before", "files_after", "files_after_count", "files_exclude", "state_dir_after"] as const) delete c[k];
      if (process.platform !== "linux" && c.calls?.some((cl) => cl.action === "hold_socket")) return t.skip("hold_socket: abstract sockets are a Linux rule");
      const sys: System =
        typeof c.system === "object" ? c.system : (JSON.parse(subst(fs.readFileSync(path.join(CONF, "systems", `${c.system ?? "default"}.json`), "utf8"))) as System);
      makeFiles(path.join(root, "proc"), sys.proc);
      const handles = c.store === "handles";
      const appDir = path.join(root, "state", "conformance"); // app "conformance" under the state root root/state
      const dir = handles ? path.join(appDir, "handles") : appDir; // "the state directory" of the case's files
      if (c.state_dir?.create !== false) {
        fs.mkdirSync(path.dirname(appDir), { mode: 0o700 });
        fs.mkdirSync(appDir);
        fs.chmodSync(appDir, parseInt(c.state_dir?.mode ?? "0700", 8));
      }
      if (handles && c.files_before !== undefined) fs.mkdirSync(dir, { mode: 0o700 });
      makeFiles(root, c.outside_before);
      makeFiles(dir, c.files_before);

      const logs: Array<{ level: string; event: string; message: string; detail: string }> = [];
      const every: string[] = []; // every line, debug included, for logs_exclude
      const add = (level: string) => (message: string, fields?: LogFields) => {
        every.push(`${message} ${JSON.stringify(fields ?? {})}`);
        if (level !== "debug") logs.push({ level, event: String(fields?.event ?? ""), message, detail: String(fields?.detail ?? "") });
      };
      const logger: Logger = { debug: add("debug"), info: add("info"), warn: add("warn"), error: add("error") };
      const host = new FixtureHost(sys, root, logger);
      const store = await loadStore(logger, undefined, host, onRedis);
      const others: HostFunctions[] = [];
      const sockets: Server[] = [];
      try {
        const vars = new Map<string, string | number>();
        const open: Json = { ...(c.open ?? { app: "conformance", state_root: path.dirname(appDir) }) };
        // On Redis the open names the server, unless its open has a state_url or the case mentions $REDIS_URL
        // elsewhere, as in its environment (hostfuncs/conformance/README.md, "backends").
        if (onRedis && handles && open["state_url"] === undefined && !raw.includes("$REDIS_URL")) open["state_url"] = redis!.url;
        const opened = await callExport(store, handles ? "handles_open" : "open", Buffer.from(JSON.stringify(open)));
        if (c.open_want) checkWant(opened, c.open_want, "open", "open");
        else assert.ok(opened.ok, `open: ${opened.ok ? "" : `${opened.code}: ${opened.message}`}`);
        if (onRedis && handles && opened.ok) {
          const backend = (JSON.parse(Buffer.from(opened.output).toString()) as Json)["backend"];
          assert.equal(backend, "redis", "a Redis run's store must be on Redis (a plugin without the Redis backend ignores state_url)");
        }
        for (const [i, cl] of (c.open_want?.error_code ? [] : (c.calls ?? [])).entries()) {
          const forms = (["export", "action", "host_call"] as const).filter((k) => cl[k] !== undefined);
          assert.equal(forms.length, 1, `call ${i}: unknown call form ${JSON.stringify(cl)} (want one of export, action, host_call)`);
          if (cl.host_call !== undefined) {
            assert.ok((cl.request !== undefined) !== (cl.request_hex !== undefined), `call ${i}: host_call ${cl.host_call} needs exactly one of request and request_hex`);
            const req = cl.request as Json | null;
            // As the store does before the plugin's first load/store/reject: bind the socket ahead (the host's
            // mcp_resume_lock is synchronous and answers from lockAhead's outcome), here the request's own socket.
            if (cl.host_call === "mcp_resume_lock" && typeof req?.["socket"] === "string") await host.lockAhead(req["socket"]);
            const { min_ms, max_ms, ...hw } = cl.want ?? {};
            const t0 = performance.now();
            const bytes = cl.request_hex !== undefined ? Buffer.from(cl.request_hex, "hex") : Buffer.from(JSON.stringify(cl.request));
            if (cl.request_hex !== undefined) assert.equal(bytes.toString("hex"), cl.request_hex.toLowerCase(), `call ${i}: request_hex is not hex`);
            const out = onRedis ? await host.callAsync(cl.host_call, bytes) : host.call(cl.host_call, bytes);
            const took = performance.now() - t0;
            checkHostWant(out, hw, `call ${i} host_call ${cl.host_call}`);
            if (min_ms !== undefined) assert.ok(took >= min_ms, `call ${i} host_call ${cl.host_call}: took ${took.toFixed(1)} ms, want at least ${min_ms}`);
            if (max_ms !== undefined) assert.ok(took <= max_ms, `call ${i} host_call ${cl.host_call}: took ${took.toFixed(1)} ms, want at most ${max_ms}`);
          } else if (cl.action === "redis") {
            assert.ok(redis, `call ${i}: a redis action in a case that does not run on Redis`);
            await redisAction(redis, cl, i);
          } else if (cl.action === "hold_socket") {
            sockets.push(await holdAbstractSocket(cl.socket!));
          } else if (cl.action === "put_file") {
            fs.writeFileSync(path.join(dir, cl.name!), bytesOf(cl.content!), { mode: 0o600 });
          } else if (cl.action === "corrupt_files") {
            corruptFiles(dir, root, cl.prefix ?? "", cl.mode ?? "");
          } else if (cl.action === "hold_lock") {
            const other = new HostFunctions({ logger: quiet });
            others.push(other);
            const call = (fn: string, req: Json): Json => JSON.parse(Buffer.from(other.call(fn, Buffer.from(JSON.stringify(req)))).toString()) as Json;
            other.confine(dir); // as its open would: no prepare_dir, so nothing else is touched
            let socket = lockSocket(dir, cl.name!); // a handle store's shard lock: no names export
            if (!handles) {
              const names = await callExport(store, "names");
              const named = names.ok ? (JSON.parse(Buffer.from(names.output).toString() || "{}") as { lock?: string; lock_socket?: string }) : {};
              socket = named.lock === cl.name ? (named.lock_socket ?? "") : "";
              await other.lockAhead(socket);
            }
            assert.deepEqual(call("mcp_resume_lock", { name: cl.name, socket }), {}, `hold_lock ${cl.name}`);
          } else if (cl.action !== undefined) {
            assert.fail(`call ${i}: unknown action ${JSON.stringify(cl.action)}`);
          } else {
            // Handle exports take one JSON object: encoded as JSON, with the saved variables put in.
            const json = (cl.export === "handles_open" || cl.export!.startsWith("handle_")) && cl.input !== null && typeof cl.input === "object";
            if (cl.input_hex !== undefined) assert.ok(cl.input === undefined && cl.export!.startsWith("handle_"), `call ${i}: input_hex is for a handle export, instead of input`);
            const input = cl.input_hex !== undefined ? hexInput(cl.input_hex, vars) : cl.input === undefined ? undefined : json ? Buffer.from(JSON.stringify(substVars(cl.input, vars))) : bytesOf(cl.input as Content);
            const r = await callExport(store, cl.export!, input);
            checkWant(r, cl.want ?? {}, `call ${i} ${cl.export}`, cl.export!);
            for (const [v, member] of Object.entries(cl.save ?? {})) {
              const got = r.ok ? (JSON.parse(Buffer.from(r.output).toString()) as Json)[member] : undefined;
              assert.ok(typeof got === "string" || typeof got === "number", `call ${i} save ${v}: the output has no string or number ${member}`);
              vars.set(v, got);
            }
          }
        }
      } finally {
        await store.close();
        for (const o of others) await o.close();
        for (const s of sockets) s.close();
      }

      if (c.logs_exclude !== undefined) for (const line of every) assert.ok(!line.includes(c.logs_exclude), `a log line holds ${JSON.stringify(c.logs_exclude)}: ${line}`);
      if (onRedis && handles) {
        // A Redis store has no directory: nothing of the case's files to check.
      } else if (c.state_dir_after?.exists === false) assert.equal(fs.existsSync(dir), false, "the state directory must not exist");
      else checkFiles(dir, c.files_after, c.files_after_count === undefined); // with counts, files_after lists only some names
      for (const [prefix, n] of Object.entries(c.files_after_count ?? {})) {
        const count = fs.readdirSync(dir).filter((f) => f.startsWith(prefix) && fs.lstatSync(path.join(dir, f)).isFile()).length;
        assert.equal(count, n, `files_after_count ${prefix}`);
      }
      if (c.files_exclude !== undefined) {
        const needle = Buffer.from(c.files_exclude, "utf8");
        for (const f of fs.readdirSync(dir)) {
          const p = path.join(dir, f);
          if (fs.lstatSync(p).isFile()) assert.ok(!fs.readFileSync(p).includes(needle), `${f} holds the value in the clear`);
        }
      }
      if (c.state_dir_after?.mode) assert.equal((fs.statSync(dir).mode & 0o777).toString(8), parseInt(c.state_dir_after.mode, 8).toString(8), "state directory mode");
      checkFiles(root, c.outside_after, false);
      const wantLogs = c.logs ?? []; // absent: no line above debug
      const got = logs.map((l, i) => {
        const w = wantLogs[i];
        const { detail, ...line } = w?.message_prefix !== undefined && l.message.startsWith(w.message_prefix) ? { ...l, message: w.message_prefix } : l;
        return w?.detail !== undefined ? { ...line, detail } : line;
      });
      const want = wantLogs.map((w) => ({ level: w.level, event: w.event, message: w.message ?? w.message_prefix, ...(w.detail !== undefined ? { detail: w.detail } : {}) }));
      assert.deepEqual(got, want, "log lines");
    });
    }
  }
});

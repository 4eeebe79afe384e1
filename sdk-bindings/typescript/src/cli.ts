#!/usr/bin/env node
/**
 * `npx mcp-resume`: the mcp-resume command line, without Go.
 *
 * ```
 * npx mcp-resume whoami [--json] [--app NAME] [--instance KEY] [--pid PID]
 * npx mcp-resume list   [--json] [--app NAME] [--state-dir ROOT]
 * npx mcp-resume prune  [--json] [--app NAME] [--state-dir ROOT]
 * npx mcp-resume state list|gc [--json] [--state-dir ROOT] [APP]
 * ```
 *
 * The same commands, flags, output and exit status as the Go command and
 * `python -m mcp_resume`: every answer is the plugin's (its `whoami`, `list`
 * and `prune` exports) and so is every byte printed to stdout (its `render`
 * export), so this file only parses arguments and prints. list and prune
 * cover every app directory under the state root (`--state-dir`, else
 * `$MCP_RESUME_STATE_DIR`, else per user), or the one of `--app`; they never
 * print a token. `state list` and `state gc` list or sweep the handle store
 * of every app under the root that has one (a `handles/` directory; none is
 * created), or of APP: key-hash prefixes, states, generations, sizes, ages
 * and counts (the plugin's `handle_list` and `handle_gc`), never a value,
 * handle or principal. With `$MCP_RESUME_STATE_URL` set the handle stores
 * are on that Redis server (hostfuncs/README.md, "The Redis backend"; opened
 * in worker mode, as HandleStore.open does): `state list` and `state gc`
 * then need APP, since a server holds no directory to list apps from, and
 * name the server by its URL with the password as `***`. Flags may come
 * before or after APP, in any order; `--` ends them.
 *
 * Exit status: 0 on success (an app directory without token files or
 * handles is an empty answer); 1 on a runtime failure, with one line on
 * stderr, `mcp-resume <command>: <what was wrong and what to do>`; 2 on bad
 * usage (an unknown command or flag, a flag without its value, an
 * unexpected argument), with the usage text. The failures, worded by the
 * plugin as in every language, include `whoami --pid PID` of a pid no
 * process has (`no process has pid PID: ...`), and `list`, `prune` and
 * `state list|gc` when the state root holds no app directory (`no app
 * directories under ROOT: ...`) or `--app NAME`/APP names an app without a
 * directory there (`no app "NAME" under ROOT; the apps there: a, b`).
 *
 * @packageDocumentation
 */
import * as fs from "node:fs";

import { needsWorker } from "./handles.js";
import { callExport, loadStore, ResumeTokenStore } from "./store.js";

/** The app name stores are opened with when no --app is given: it only picks a default directory. */
const CLI_APP = "mcp-resume";
const COMMANDS = ["whoami", "list", "prune", "state list", "state gc"];
/** Flags taking a value (as Go's flag package reads them: -x or --x, "--x v" or "--x=v"). */
const VALUE_FLAGS = ["app", "state-dir", "instance", "pid"];

/** Bad usage: the message, printed with the usage text (exit 2); "" for help (exit 0). */
class Usage extends Error {}

/**
 * A failure to print as one line (exit 1): an export's error (`code`, the
 * plugin's; `message`, its words) or one the command finds itself (no state
 * root, an unreadable root, Redis without an app).
 */
class Failure extends Error {
  /** @param code - the plugin's error code, or the command's own (`io`, `invalid_option`). @param message - what failed. */
  constructor(readonly code: string, message: string) {
    super(message);
  }
}

/** Whether `e` is the plugin's `invalid_app` refusal, from either store (every store error carries the plugin's `code`). */
function invalidApp(e: unknown): boolean {
  return (e as { code?: unknown } | null)?.code === "invalid_app";
}

type Opts = { json: boolean; app: string; "state-dir": string; instance: string; pid: number };

const quiet = { debug() {}, info() {}, warn() {}, error() {} };
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * The flags of `args` (after the command), each as Go's flag package reads
 * it, flags and arguments in any order (`--` ends the flags); `state`
 * commands take one APP argument. @throws Usage
 */
function parse(args: string[], takesApp = false): Opts {
  const opts: Opts = { json: false, app: "", "state-dir": "", instance: "", pid: 0 };
  const rest: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "--") {
      rest.push(...args.slice(i + 1));
      break;
    }
    if (!arg.startsWith("-") || arg === "-") {
      rest.push(arg);
      continue;
    }
    const body = arg.replace(/^--?/, "");
    const eq = body.indexOf("=");
    const name = eq < 0 ? body : body.slice(0, eq);
    let value = eq < 0 ? undefined : body.slice(eq + 1);
    if (name === "json") {
      if (value !== undefined && !["true", "false", "1", "0"].includes(value)) throw new Usage(`invalid boolean value "${value}" for -json`);
      opts.json = value === undefined || value === "true" || value === "1";
    } else if (VALUE_FLAGS.includes(name)) {
      if (value === undefined) {
        if (++i === args.length) throw new Usage(`flag needs an argument: -${name}`);
        value = args[i]!;
      }
      if (name === "pid") {
        if (!/^[+-]?\d+$/.test(value)) throw new Usage(`invalid value "${value}" for flag -pid: parse error`);
        opts.pid = Number.parseInt(value, 10);
      } else (opts as Record<string, unknown>)[name] = value;
    } else if (name === "h" || name === "help") {
      throw new Usage("");
    } else throw new Usage(`flag provided but not defined: -${name}`);
  }
  if (takesApp && rest.length === 1 && (opts.app === "" || opts.app === rest[0])) opts.app = rest[0]!;
  else if (rest.length > 0) throw new Usage(`unexpected argument "${rest.at(-1)}"`);
  return opts;
}

/**
 * A quiet store for `app`. The instance key is the declared one, else
 * `$MCP_RESUME_INSTANCE` (read by the plugin), else none: the CLI's own
 * arguments are not a server's.
 */
function open(app: string, stateRoot = "", instance = ""): Promise<ResumeTokenStore> {
  if (instance === "" && !process.env["MCP_RESUME_INSTANCE"]) instance = "-";
  return ResumeTokenStore.open(app, { ...(stateRoot ? { stateRoot } : {}), ...(instance ? { instance } : {}), logger: quiet });
}

/** An export's output: its JSON (parse) or bytes. @throws Failure with the plugin's code and message. */
async function call(store: ResumeTokenStore, name: string, input?: unknown): Promise<Uint8Array> {
  const r = await callExport(store, name, input === undefined ? undefined : encoder.encode(JSON.stringify(input)));
  if (!r.ok) throw new Failure(r.code, r.message);
  return r.output;
}

/** The names of the directories directly in `root` (symlinks not followed); none for a missing root. */
function subdirs(root: string): string[] {
  try {
    return fs.readdirSync(root, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name).sort();
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    if (err.code === "ENOENT") return [];
    throw new Failure("io", `state root ${root}: ${err.message}`);
  }
}

/**
 * One app's handle store for `state list|gc`: `{app, state_dir, list|gc}` with the plugin's `handle_list` or
 * `handle_gc` output as it came, or `undefined` when the app has no `handles/` directory (nothing is created)
 * or, listing every app, the name is no app's (`invalid_app`). A plugin instance of its own, as a HandleStore
 * has, with the raw outputs the render export reads. @throws Failure
 */
async function handleStoreOf(app: string, gc: boolean, opts: Opts): Promise<Record<string, unknown> | undefined> {
  const inst = await loadStore(quiet, undefined, undefined, needsWorker({})); // the environment may name a Redis server
  try {
    const opened = await callExport(inst, "handles_open", encoder.encode(JSON.stringify({ app, ...(opts["state-dir"] ? { state_root: opts["state-dir"] } : {}) })));
    if (!opened.ok && opened.code === "invalid_app" && !opts.app) return undefined;
    if (!opened.ok) throw new Failure(opened.code, opened.message);
    const o = JSON.parse(decoder.decode(opened.output)) as { state_dir?: unknown; backend?: unknown; state_url?: unknown };
    const stateDir = String(o.state_dir ?? "");
    const redis = o.backend === "redis"; // no directory to check: the server has the store or answers empty
    if (!redis && !fs.lstatSync(stateDir, { throwIfNoEntry: false })?.isDirectory()) return undefined;
    const out = JSON.parse(decoder.decode(await call(inst, gc ? "handle_gc" : "handle_list", {}))) as unknown;
    return { app, state_dir: stateDir, ...(redis ? { backend: "redis", state_url: String(o.state_url ?? "") } : {}), [gc ? "gc" : "list"]: out };
  } finally {
    await inst.close();
  }
}

/** The redacted URL of the Redis server the environment puts the handle stores on, or `undefined` (files, or a URL the plugin refuses). */
async function envRedis(opts: Opts): Promise<string | undefined> {
  if (!needsWorker({})) return undefined;
  const inst = await loadStore(quiet, undefined, undefined, true);
  try {
    // handles_open touches nothing: this only reads the backend the environment selects.
    const opened = await callExport(inst, "handles_open", encoder.encode(JSON.stringify({ app: CLI_APP, ...(opts["state-dir"] ? { state_root: opts["state-dir"] } : {}) })));
    const o = opened.ok ? (JSON.parse(decoder.decode(opened.output)) as { backend?: unknown; state_url?: unknown }) : {};
    return o.backend === "redis" ? String(o.state_url ?? "") : undefined;
  } finally {
    await inst.close();
  }
}

/**
 * The bytes `cmd` prints to stdout. For list, prune and the state commands
 * the render input carries the state root, the directories in it and the
 * app named (none on Redis, where there is no root), from which the plugin
 * decides that there is nothing to answer for. @throws Failure, or the
 * store's error when one cannot be opened
 */
async function run(cmd: string, opts: Opts): Promise<Uint8Array> {
  const doc: Record<string, unknown> = { command: cmd, json: opts.json, apps: [] };
  if (cmd === "whoami") {
    const store = await open(opts.app || CLI_APP, "", opts.instance);
    try {
      doc["show_state_dir"] = opts.app !== "";
      doc["whoami"] = JSON.parse(decoder.decode(await call(store, "whoami", opts.pid ? { pid: opts.pid } : undefined)));
      return await call(store, "render", doc);
    } finally {
      await store.close();
    }
  }
  const [exp, member] = cmd === "list" ? ["list", "files"] : ["prune", "removed"];
  const state = cmd.startsWith("state ");
  if (state) doc["command"] = cmd.replace(" ", "_");
  const url = state ? await envRedis(opts) : undefined;
  if (url !== undefined && !opts.app) {
    throw new Failure("invalid_option", `the handle stores are on ${url} (MCP_RESUME_STATE_URL): name the app, as in \`mcp-resume ${cmd} APP\`; a Redis server has no app directories to list`);
  }
  const base = await open(state ? CLI_APP : opts.app || CLI_APP, opts["state-dir"]);
  try {
    let dirs: string[] = [];
    if (url === undefined) {
      if (!base.stateRoot) throw new Failure("io", "no state root: set MCP_RESUME_STATE_DIR or HOME");
      dirs = subdirs(base.stateRoot);
      Object.assign(doc, { state_root: base.stateRoot, root_dirs: dirs, app: opts.app });
    }
    for (const app of opts.app ? [opts.app] : dirs) {
      if (state) {
        const r = await handleStoreOf(app, cmd === "state gc", opts);
        if (r) (doc["apps"] as unknown[]).push(r);
        continue;
      }
      let store: ResumeTokenStore;
      try {
        store = await open(app, opts["state-dir"]);
      } catch (e) {
        if (invalidApp(e) && !opts.app) continue; // not an app's directory: the plugin's app rule decides
        throw e;
      }
      try {
        const out = JSON.parse(decoder.decode(await call(store, exp!))) as Record<string, unknown>;
        (doc["apps"] as unknown[]).push({ app, state_dir: store.stateDir, [member!]: out[member!] ?? [] });
      } finally {
        await store.close();
      }
    }
    return await call(base, "render", doc);
  } finally {
    await base.close();
  }
}

/** The usage text, from the plugin (the same in every language). */
async function usage(): Promise<string> {
  const store = await open(CLI_APP);
  try {
    return decoder.decode(await call(store, "render", { command: "usage" }));
  } finally {
    await store.close();
  }
}

/** Writes `data` to fd `fd` completely, synchronously (stdout may be a pipe the caller reads after exit). */
function writeAll(fd: number, data: string | Uint8Array): void {
  const buf = typeof data === "string" ? encoder.encode(data) : data;
  for (let off = 0; off < buf.length; ) off += fs.writeSync(fd, buf, off);
}

/** Runs the command line on `args`: the exit status. */
export async function main(args: string[]): Promise<number> {
  try {
    if (args.length === 0 || ["-h", "--help", "help"].includes(args[0]!)) {
      writeAll(2, await usage());
      return args.length === 0 ? 2 : 0;
    }
    let cmd = args[0]!;
    if (cmd === "state") {
      if (args[1] !== "list" && args[1] !== "gc") {
        writeAll(2, `mcp-resume state: want "state list" or "state gc"\n\n${await usage()}`);
        return 2;
      }
      cmd = `state ${args[1]}`;
      args = [cmd, ...args.slice(2)];
    }
    if (!COMMANDS.includes(cmd)) {
      writeAll(2, `mcp-resume: unknown command "${cmd}"\n\n${await usage()}`);
      return 2;
    }
    let opts: Opts;
    try {
      opts = parse(args.slice(1), cmd.startsWith("state "));
    } catch (e) {
      if (!(e instanceof Usage)) throw e;
      if (e.message === "") {
        writeAll(2, await usage());
        return 0;
      }
      writeAll(2, `mcp-resume ${cmd}: ${e.message}\n\n${await usage()}`);
      return 2;
    }
    writeAll(1, await run(cmd, opts));
    return 0;
  } catch (e) {
    const prefix = `mcp-resume ${args[0]}: `; // "state list" once recognised
    const msg = String((e as Error)?.message ?? e);
    writeAll(2, (msg.startsWith(prefix) ? msg : prefix + msg) + "\n");
    return 1;
  }
}

process.exitCode = await main(process.argv.slice(2));

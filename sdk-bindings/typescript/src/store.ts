/**
 * {@link ResumeTokenStore}: runs the shared plugin (`plugin.wasm`, every rule
 * of spec 000) in Extism's JavaScript SDK with this package's host functions.
 *
 * @packageDocumentation
 */
import type { Plugin } from "@extism/extism";

import { compiledModule, extismEnvExtras, loadExtism, withSdkWorker } from "./extism.js";
import { InvalidAppError, InvalidOptionError, InvalidTokenError, MCPResumeError, PluginError, errorFromPlugin } from "./errors.js";
import { ABI_VERSION, FUNCTIONS, HostFunctions, NAMESPACE } from "./hostfuncs.js";
import { createStderrLogger, safeLog, type Logger } from "./logger.js";

/** The plugin shipped with this package (copied from `plugin/plugin.wasm` at build time). */
export const PLUGIN_WASM_URL = new URL("../plugin.wasm", import.meta.url);
// Importing starts compiling the plugin, off the main thread, to overlap the server's startup (not the SDK import: main thread).
if (process.env["MCP_RESUME"] !== "off") compiledModule(PLUGIN_WASM_URL).catch(() => undefined);

/**
 * Options of {@link ResumeTokenStore.open}; every one may be left out. Every
 * default is the plugin's (hostfuncs/README.md, "Plugin exports", `open`).
 * A key not listed here is refused with {@link InvalidOptionError}.
 */
export interface OpenOptions {
  /** The state root, the directory holding one state directory per app, as given (the plugin makes a relative one absolute against the working directory): token files live in `<stateRoot>/<app>` (the store's {@link ResumeTokenStore.stateDir}), so apps never share a directory. Default: `$MCP_RESUME_STATE_DIR`, else per user (XDG on Linux, `~/Library/Application Support` on macOS). */
  stateRoot?: string;
  /** Receives the spec's log lines (spec 000, "Logging Strategy"). Default {@link createStderrLogger}(). Never one that writes to stdout. */
  logger?: Logger;
  /** Extra process names to skip when looking for the MCP host, added to the plugin's launchers and `$MCP_RESUME_LAUNCHERS`. */
  launchers?: readonly string[];
  /**
   * Tells this instance apart from others under the same MCP host: different
   * keys keep separate token files; identical instances share one, which only
   * the first holds. Unset: `$MCP_RESUME_INSTANCE`, else the plugin's default
   * key: the arguments after the script, the working directory and the
   * environment, minus the variables that change on every launch. `""` or
   * `"-"`: no instance.
   */
  instance?: string;
}

/**
 * One token file reported by {@link ResumeTokenStore.list}: its `name`
 * (`token-<pid>-<start_time>[-<instance>]`), the MCP host `pid` and
 * `startTime` in it, the 16-hex-digit `instance` suffix if any, whether the
 * `host` still runs (`unknown`: cannot tell) and `ageSeconds` (now minus its
 * modification time, whole seconds).
 */
export interface TokenFile {
  name: string;
  pid: number;
  startTime: string;
  instance?: string;
  host: "alive" | "gone" | "unknown";
  ageSeconds: number;
}

/** One file removed by {@link ResumeTokenStore.prune}, why (`aged`: its host cannot be checked and it is over 30 days old) and its host's state. */
export interface PrunedFile {
  name: string;
  reason: "host_gone" | "aged";
  host: "gone" | "unknown";
}

/**
 * What {@link ResumeTokenStore.whoami} reports: the MCP host this process
 * resolves to (`pid`, `startTime`; absent with `error` saying why when the
 * identity is unavailable), how the `stdio` check went (whether the host
 * holds the server's stdin and stdout), the `instanceSuffix`, the
 * `tokenFile` and `lockFile` names, the `stateDir`, and the `chain` of
 * processes walked from the server's parent to the host.
 */
export interface Whoami {
  pid?: number;
  startTime?: string;
  stdio?: string;
  instanceSuffix?: string;
  tokenFile?: string;
  lockFile?: string;
  stateDir: string;
  chain: Array<{ pid: number; ppid: number; name: string; args: string[]; startTime: string; role: "launcher" | "host" }>;
  error?: string;
}

/** The result of one export call: its output bytes, or its error code and message (and the whole error JSON, `error`, when the plugin answered one). */
export type ExportResult = { ok: true; output: Uint8Array } | { ok: false; code: string; message: string; error?: Record<string, unknown> };

const PLUGIN_ERROR_PREFIX = "Plugin-originated error: ";
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * The export's error as the binding's class. A refusal of the caller's input
 * (`invalid_app`, `invalid_option`, `invalid_token`) carries the plugin's
 * message as it is: it already says what was wrong and what to do, once.
 * Any other failure is prefixed with `mcp-resume <export>: `.
 */
function errorOf(r: { code: string; message: string; error?: Record<string, unknown> }, what: string): MCPResumeError {
  if (r.code === "invalid_app" || r.code === "invalid_option" || r.code === "invalid_token") return errorFromPlugin(r.code, r.message, r.error);
  return errorFromPlugin(r.code, `mcp-resume ${what}: ${r.message}`, r.error, PluginError);
}

/** The keys {@link OpenOptions} knows. */
const OPEN_KEYS = new Set(["stateRoot", "logger", "launchers", "instance"]);

/** What each open option must be, in the plugin's words ("<option> must be <want>, not <got>"). */
const WANT: Record<string, string> = { app: "a string", state_root: "a string", instance: "a string", launchers: "a list of strings" };

/**
 * `v` when JSON carries it as it is, so that the plugin judges its type and
 * says what was wrong the same way in every language; a value JSON cannot
 * carry (a function, a symbol, a bigint) is refused here in the plugin's words.
 */
function jsonSafe(option: string, v: unknown, inList = false): unknown {
  if (v === null || typeof v === "string" || typeof v === "number" || typeof v === "boolean") return v;
  if (option === "launchers" && !inList && Array.isArray(v)) return v.map((x) => jsonSafe(option, x, true));
  if (typeof v === "object" && !inList) return v;
  const got = inList ? `a list holding ${typeof v === "object" ? "an object" : `a ${typeof v}`}` : `a ${typeof v}`;
  const message = `${option} must be ${WANT[option]}, not ${got}`;
  throw option === "app" ? new InvalidAppError("invalid_app", message) : new InvalidOptionError("invalid_option", message);
}

/**
 * The plugin's `open` input for `options`. Values go to the plugin as they
 * are (a string for `launchers` arrives as a string and is refused, never
 * split into letters; a relative `stateRoot` is the plugin's to resolve);
 * only an iterable `launchers` other than a string becomes an array, and an
 * empty `stateRoot` is left out (the default). Throws InvalidOptionError
 * for `stateDir`, the option's former name.
 */
function openInput(app: unknown, options: OpenOptions | undefined): Record<string, unknown> {
  if (options !== undefined && (options === null || typeof options !== "object" || Array.isArray(options))) {
    throw new InvalidOptionError("invalid_option", `options must be an object, not ${options === null ? "null" : Array.isArray(options) ? "an array" : `a ${typeof options}`}`);
  }
  const o = (options ?? {}) as unknown as Record<string, unknown>;
  // caller: the plugin's messages then name options as TypeScript does (stateRoot, not state_root).
  const input: Record<string, unknown> = { caller: "typescript" };
  if (o["stateDir"] !== undefined) {
    // The option was renamed; ignoring it would silently use the default root.
    throw new InvalidOptionError("invalid_option", "stateDir is now stateRoot: the option names the state root, the directory that holds one state directory per app; rename it");
  }
  const unknown = Object.keys(o).filter((k) => !OPEN_KEYS.has(k));
  if (unknown.length > 0) {
    throw new InvalidOptionError("invalid_option", `unknown option ${unknown.map((k) => JSON.stringify(k)).join(", ")}: ResumeTokenStore.open knows ${[...OPEN_KEYS].join(", ")}`);
  }
  if (app !== undefined) input["app"] = jsonSafe("app", app);
  const root = o["stateRoot"];
  if (typeof root === "string") {
    if (root !== "") input["state_root"] = root;
  } else if (root !== undefined) input["state_root"] = jsonSafe("state_root", root);
  if (o["instance"] !== undefined) input["instance"] = jsonSafe("instance", o["instance"]);
  let l = o["launchers"];
  if (l !== undefined) {
    if (l !== null && typeof l === "object" && !Array.isArray(l) && Symbol.iterator in l) l = [...(l as Iterable<unknown>)];
    input["launchers"] = jsonSafe("launchers", l);
  }
  return input;
}

/** snake_case keys to camelCase, recursively (the plugin's JSON to this API's objects). */
function camel(v: unknown): any {
  if (Array.isArray(v)) return v.map(camel);
  if (v === null || typeof v !== "object") return v;
  return Object.fromEntries(Object.entries(v).map(([k, x]) => [k.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase()), camel(x)]));
}

/**
 * Every store not yet closed. Extism's WASI opens `/dev/null` twice per plugin as `fs/promises`
 * FileHandles (its stdin and stdout) and closes them only in the plugin's `close`; if the garbage
 * collector took an unclosed store, Node would close them itself and print DEP0137 on stderr. Holding
 * every open store here keeps them from the collector until `close`, or until the process exits and
 * the OS releases them.
 */
const unclosed = new Set<ResumeTokenStore>();

let exportOf: (s: ResumeTokenStore, name: string, input?: Uint8Array) => Promise<ExportResult>;
let construct: (plugin: Plugin, funcs: HostFunctions, logger: Logger) => ResumeTokenStore;

/**
 * One MCP server instance's resume-token store (spec 000, "Operational
 * Flow"). Open it once at startup, `load()` the token to offer the broker,
 * `store()` the token the broker returns, `reject()` a token it refused.
 *
 * ```ts
 * await using store = await ResumeTokenStore.open("my-server");
 * const token = await store.load();
 * // resume with token, or start fresh; on 401/409/410: await store.reject()
 * await store.store(session.token);
 * ```
 *
 * Calls are serialised into one plugin instance. `load`, `store` and
 * `reject` never reject because of the environment: identity, state
 * directory and file problems turn resume off or are logged (spec 000,
 * "Error Handling & Edge Cases"). Only `store` rejects, with
 * {@link InvalidTokenError}, for a malformed token.
 */
export class ResumeTokenStore {
  #stateDir = "";
  #stateRoot = "";
  /** Set once the lock was taken ahead of the plugin (or found unneeded). */
  #lockTried = false;
  #queue: Promise<unknown> = Promise.resolve();
  #closed = false;
  #released = false;
  #closing: Promise<void> = Promise.resolve();

  static {
    exportOf = (s, name, input) => s.#export(name, input);
    construct = (plugin, funcs, logger) => new ResumeTokenStore(plugin, funcs, logger);
  }

  /** Use {@link ResumeTokenStore.open}. */
  private constructor(private readonly plugin: Plugin, private readonly funcs: HostFunctions, private readonly logger: Logger) {
    unclosed.add(this);
  }

  /**
   * Loads the plugin (compiled once per process), checks its ABI version and
   * calls its `open` export. Identity, state-directory and lock problems turn
   * resume off at the first `load`, `store` or `reject`, and are logged.
   *
   * @param app - the MCP server application name (1–64 of `[A-Za-z0-9._-]`, starting with a letter or digit); it names the state directory.
   * @param options - state root, logger, launchers, instance ({@link OpenOptions}); omitted: every default.
   * @returns a ready store; close it with {@link close} or `await using`.
   * @throws {@link InvalidAppError} for a bad, missing or non-string app
   *   name; {@link InvalidOptionError} for an unknown option or one the
   *   plugin refuses, with its message naming the option, what it must be
   *   and what was given; {@link PluginError} when the plugin cannot be loaded
   *   or has another ABI version. Either way, carry on without resume.
   */
  static async open(app: string, options?: OpenOptions): Promise<ResumeTokenStore> {
    const input = openInput(app, options);
    const store = await loadStore(options?.logger ?? createStderrLogger());
    const r = await store.#export("open", encoder.encode(JSON.stringify(input)));
    if (!r.ok) {
      await store.close();
      throw errorOf(r, "open");
    }
    return store;
  }

  /** The absolute state directory this store uses, the app's own inside {@link stateRoot} (from the plugin's `open`; the host functions are confined to it). */
  get stateDir(): string {
    return this.#stateDir;
  }

  /** The directory holding one state directory per app (the plugin's `open`), `""` when unknown; `mcp-resume list` lists the apps under it. */
  get stateRoot(): string {
    return this.#stateRoot;
  }

  /**
   * Returns the token the previous server instance under the same MCP host
   * saved, to offer the broker (spec 000, "MCP Server Startup"; a corrupt
   * file is deleted: "Token File Corrupted").
   *
   * @returns the token, or `undefined` when there is none to offer (first
   *   run, resume off, corrupt file, plugin failure, store closed). Never rejects.
   */
  async load(): Promise<string | undefined> {
    const r = await this.#call("load");
    return r?.ok && r.output.length > 0 ? decoder.decode(r.output) : undefined;
  }

  /**
   * Persists the token the broker just issued (spec 000, "Token
   * Persistence"; after every resume or new session). A failed write is
   * logged and still resolves. A closed store does nothing.
   *
   * @param token - 1–4096 bytes of visible ASCII (0x21–0x7E).
   * @throws {@link InvalidTokenError} (rejection) for a malformed token, even when resume is off.
   */
  async store(token: string): Promise<void> {
    if (typeof token !== "string") throw new InvalidTokenError("invalid_token", `invalid token: it must be a string, not a ${typeof token}`);
    const r = await this.#call("store", encoder.encode(token));
    if (r && !r.ok && r.code === "invalid_token") throw errorOf(r, "store");
  }

  /**
   * Tells the store the broker refused the token `load` returned (HTTP
   * 401/409/410): deletes the token file unless it already holds a newer
   * token (spec 000, "Broker Rejects Token"). Never rejects.
   */
  async reject(): Promise<void> {
    await this.#call("reject");
  }

  /**
   * Lists the token files of the state directory (never their tokens); for
   * diagnostics. A missing state directory is empty.
   *
   * @returns the files, sorted by name.
   * @throws {@link PluginError} (rejection) when the store is closed or the plugin fails.
   */
  async list(): Promise<TokenFile[]> {
    return camel((await this.#json("list"))["files"] ?? []);
  }

  /**
   * Removes the token and lock files of MCP hosts that are gone, and token
   * files of hosts that cannot be checked once 30 days old; never a live
   * host's or this instance's own. The first `load`/`store`/`reject` already prunes.
   *
   * @returns the files removed and why.
   * @throws {@link PluginError} (rejection) when the store is closed or the plugin fails.
   */
  async prune(): Promise<PrunedFile[]> {
    return camel((await this.#json("prune"))["removed"] ?? []);
  }

  /**
   * Reports the MCP host this process resolves to and how; for diagnostics.
   * With `pid`: what that running MCP server process would resolve, with this
   * store's instance key and state directory (on Linux a socket on its stdio
   * cannot be checked from outside: `stdio` then says "not checked").
   *
   * @param pid - a running server's pid; omitted: this process.
   * @throws {@link InvalidOptionError} for a pid of 1 or below 0, or one no process has.
   * @throws {@link PluginError} (rejection) when the store is closed or the plugin fails.
   */
  async whoami(pid?: number): Promise<Whoami> {
    return camel(await this.#json("whoami", pid === undefined ? undefined : encoder.encode(JSON.stringify({ pid }))));
  }

  /**
   * Waits for pending calls, then releases the plugin and the lock on the
   * token file (another instance may take it over when it starts).
   * Idempotent; afterwards `load` resolves `undefined`, `store` and
   * `reject` do nothing, `list`, `prune` and `whoami` reject.
   */
  async close(): Promise<void> {
    if (this.#closed) return this.#closing;
    this.#closed = true;
    this.#closing = this.#serial(async () => {
      this.#released = true;
      await this.plugin.close().catch(() => undefined);
      await this.funcs.close();
      unclosed.delete(this);
    });
    return this.#closing;
  }

  /** {@link close}, for `await using store = await ResumeTokenStore.open(...)`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /** Runs `fn` after every earlier call has settled. */
  #serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.#queue.then(fn, fn);
    this.#queue = next.catch(() => undefined);
    return next;
  }

  /** A load/store/reject call; failures other than `invalid_token` are logged. */
  async #call(name: "load" | "store" | "reject", input?: Uint8Array): Promise<ExportResult | undefined> {
    if (this.#closed) return undefined;
    const r = await this.#export(name, input);
    if (!r.ok && r.code !== "invalid_token") {
      safeLog(this.logger, "error", "mcp-resume plugin failed; session resume skipped for this call", { event: "plugin_failed", export: name, error: r.message });
    }
    return r;
  }

  /** Calls an export whose output is JSON (list, prune, whoami). */
  async #json(name: string, input?: Uint8Array): Promise<Record<string, unknown>> {
    if (this.#closed) throw new PluginError("not_open", `mcp-resume ${name}: the store is closed`);
    const r = await this.#export(name, input);
    if (!r.ok) throw errorOf(r, name);
    try {
      return JSON.parse(decoder.decode(r.output)) as Record<string, unknown>;
    } catch (e) {
      throw new PluginError("plugin_failed", `mcp-resume ${name}: returned malformed JSON: ${(e as Error).message}`);
    }
  }

  /**
   * Calls one export, serialised with every other call. Before the first
   * `load`, `store` or `reject` it takes the lock ahead of the plugin
   * (hostfuncs/README.md, `mcp_resume_lock`): the `names` export names it
   * from the identity alone, with the abstract socket every Linux host binds
   * for it (`lock_socket`), and {@link HostFunctions.lockAhead} binds that.
   */
  #export(name: string, input?: Uint8Array): Promise<ExportResult> {
    return this.#serial(async () => {
      if ((name === "load" || name === "store" || name === "reject") && !this.#lockTried) {
        this.#lockTried = true;
        const names = await this.#raw("names");
        const socket = names.ok ? (JSON.parse(decoder.decode(names.output) || "{}") as { lock_socket?: unknown }).lock_socket : undefined;
        if (typeof socket === "string" && socket !== "") await this.funcs.lockAhead(socket);
      }
      const r = await this.#raw(name, input);
      if ((name === "open" || name === "handles_open") && r.ok) {
        // Confinement (hostfuncs/README.md, `open`): the file functions act only inside the state_dir open answered.
        const o = JSON.parse(decoder.decode(r.output)) as { state_dir?: unknown; state_root?: unknown };
        this.#stateDir = typeof o.state_dir === "string" ? o.state_dir : "";
        this.#stateRoot = typeof o.state_root === "string" ? o.state_root : "";
        this.funcs.confine(this.#stateDir);
      }
      return r;
    }).catch((e: unknown) => ({ ok: false as const, code: "plugin_failed", message: String((e as Error)?.message ?? e) }));
  }

  /**
   * Calls one export with exactly `input`, then resets the SDK's per-call
   * memory (Extism 1.0.3 never frees its block table otherwise). Never throws.
   */
  async #raw(name: string, input?: Uint8Array): Promise<ExportResult> {
    if (this.#released) return { ok: false, code: "not_open", message: "the store is closed" };
    // Worker mode: 1.0.3 leaves its thread referenced, so an idle store would keep the process alive; it is
    // referenced only while a call runs (the call's promise waits on it). The ABI check at load unrefs it first.
    const worker = (this.plugin as unknown as { worker?: { ref(): void; unref(): void } | null }).worker;
    worker?.ref();
    try {
      // 1.0.3 wraps a view's whole ArrayBuffer: hand it an exactly sized copy.
      const out = await this.plugin.call(name, input && input.length > 0 ? new Uint8Array(input) : undefined);
      return { ok: true, output: out ? new Uint8Array(out.bytes()) : new Uint8Array(0) };
    } catch (e) {
      const msg = String((e as Error)?.message ?? e);
      try {
        const j = JSON.parse(msg.startsWith(PLUGIN_ERROR_PREFIX) ? msg.slice(PLUGIN_ERROR_PREFIX.length) : msg) as { code?: unknown; message?: unknown };
        if (typeof j.code === "string") return { ok: false, code: j.code, message: String(j.message ?? ""), error: j as Record<string, unknown> };
      } catch {} // not the plugin's JSON: a trap or a runtime failure
      return { ok: false, code: "plugin_failed", message: msg };
    } finally {
      await this.plugin.reset().catch(() => undefined);
      worker?.unref();
    }
  }
}

/**
 * Loads the plugin at `wasm` with the host functions `funcs` and checks its
 * ABI version, without calling `open`. Internal: the conformance runner and
 * the tests use it (other plugins, fixture host functions).
 *
 * `worker`: run the plugin in Extism's worker mode (`runInWorker`: the plugin
 * on a worker thread, every host function on this thread, where it may
 * return a promise while the event loop keeps turning); `mcp_resume_eval`
 * then reaches Redis ({@link HostFunctions.callAsync}). Otherwise (the
 * default, a few milliseconds cheaper to start and to call) host functions run
 * synchronously and `mcp_resume_eval` answers `unsupported`. The other host
 * functions behave the same in both modes: they are synchronous and run on
 * this thread (the lock worker's `Atomics.wait` included).
 *
 * @throws {@link PluginError} `plugin_unusable`.
 */
export async function loadStore(logger: Logger, wasm: string | URL = PLUGIN_WASM_URL, funcs = new HostFunctions({ logger }), worker = false): Promise<ResumeTokenStore> {
  let plugin: Plugin;
  try {
    const [extism, module] = await Promise.all([loadExtism(), compiledModule(wasm)]);
    type Ctx = { read(a: bigint): { bytes(): Uint8Array } | null; store(b: Uint8Array): bigint };
    // Never throws: when plugin memory cannot be touched it answers offset 0, which the plugin reads as "cannot tell".
    // An exact copy of the answer: 1.0.3 stores a view's whole buffer.
    const hostFn = (name: string) => (cp: Ctx, offset: bigint) => {
      try {
        const req = cp.read(offset);
        return req ? cp.store(new Uint8Array(funcs.call(name, req.bytes()))) : 0n;
      } catch {
        return 0n;
      }
    };
    // Worker mode: the SDK awaits the promise on this thread while the plugin's thread waits (the context stays this call's).
    const asyncFn = (name: string) => async (cp: Ctx, offset: bigint) => {
      try {
        const req = cp.read(offset);
        return req ? cp.store(owned(await funcs.callAsync(name, req.bytes()))) : 0n;
      } catch {
        return 0n;
      }
    };
    // A bare Module: a manifest would make 1.0.3 touch `Response`, loading undici (~25 ms, ~4 MiB); noFetch: its `fetch`.
    const create = () => extism.createPlugin(module, {
      useWasi: true,
      enableWasiOutput: false, // never the process's stdout (JSON-RPC); unset, 1.0.3 takes it from $EXTISM_ENABLE_WASI_OUTPUT
      runInWorker: worker,
      functions: {
        [NAMESPACE]: Object.fromEntries(FUNCTIONS.map((n) => [n, worker && n === "mcp_resume_eval" ? asyncFn(n) : hostFn(n)])),
        "extism:host/env": extismEnvExtras(),
      },
      ...{ logger: consoleFor(logger), config: {}, allowedPaths: {}, allowedHosts: [], fetch: noFetch },
    });
    plugin = await (worker ? withSdkWorker(create) : create());
  } catch (e) {
    await funcs.close();
    throw new PluginError("plugin_unusable", `mcp-resume plugin unusable: loading ${String(wasm)}: ${(e as Error)?.message ?? String(e)}`);
  }
  const store = construct(plugin, funcs, logger);
  const abi = await exportOf(store, "mcp_resume_abi_version");
  const got = abi.ok ? decoder.decode(abi.output) : "";
  if (got !== ABI_VERSION) {
    await store.close();
    const why = `plugin ABI version ${JSON.stringify(got)}${abi.ok ? "" : ` (${abi.message})`}, this host implements ${JSON.stringify(ABI_VERSION)}`;
    throw new PluginError("plugin_unusable", `mcp-resume plugin unusable: ${why}; rebuild the plugin (make wasm) or upgrade mcp-resume`);
  }
  return store;
}

/**
 * Calls a plugin export directly (taking the lock ahead for
 * load/store/reject, as the public methods do) and returns its exact output
 * bytes or error (hostfuncs/conformance/README.md, step 6). Internal.
 */
export function callExport(store: ResumeTokenStore, name: string, input?: Uint8Array): Promise<ExportResult> {
  return exportOf(store, name, input);
}

/**
 * `b` itself when it is the whole of its own ArrayBuffer (the binary eval reply: a 4 MiB value is not copied
 * once more), else an exact copy: Extism 1.0.3 stores a view's whole buffer.
 */
const owned = (b: Uint8Array): Uint8Array => (b.byteOffset === 0 && b.byteLength === b.buffer.byteLength && b.buffer instanceof ArrayBuffer ? b : new Uint8Array(b));

const noFetch = (() => Promise.reject(new Error("mcp-resume: the plugin makes no HTTP requests"))) as unknown as typeof fetch;

/** A `Console` for Extism's `logger` option: the SDK's messages (and go-pdk `pdk.Log`) go to `logger`, never stdout. */
function consoleFor(logger: Logger): Console {
  const at = (level: "debug" | "info" | "warn" | "error") => (...a: unknown[]) => safeLog(logger, level, a.map(String).join(" "), { event: "extism_log" });
  return { debug: at("debug"), trace: at("debug"), log: at("info"), info: at("info"), warn: at("warn"), error: at("error") } as unknown as Console;
}

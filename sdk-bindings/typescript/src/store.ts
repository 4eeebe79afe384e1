/**
 * {@link ResumeTokenStore}: one MCP server instance's resume-token store,
 * running the shared mcp-resume plugin (`plugin.wasm`) in Extism's
 * JavaScript SDK with this package's host functions.
 *
 * @packageDocumentation
 */
import type { Plugin } from "@extism/extism";

import { compiledModule, extismEnvExtras, loadExtism } from "./extism.js";
import { ABI_VERSION, FUNCTIONS, HostFunctions, NAMESPACE, type HostIdentity } from "./hostfuncs.js";
import { createStderrLogger, safeLog, type Logger } from "./logger.js";
import { alive as procAlive, resolveHost } from "./procid/index.js";
import { APP_RULE, resolveStateDir } from "./statedir.js";

/** The plugin shipped with this package (copied from `plugin/plugin.wasm` at build time). */
export const PLUGIN_WASM_URL = new URL("../plugin.wasm", import.meta.url);

/** Options of {@link ResumeTokenStore.open}. */
export interface OpenOptions {
  /**
   * The MCP server application name, such as `"github-server"`: 1–64 of
   * `[A-Za-z0-9._-]` starting with a letter or digit. It names the default
   * state directory, so two MCP servers under one host never share a token.
   */
  app: string;
  /**
   * Where token files live. Wins over `$MCP_RESUME_STATE_DIR`; the default
   * is `$XDG_STATE_HOME/mcp-resume/<app>`, else
   * `~/.local/state/mcp-resume/<app>` (Linux) or
   * `~/Library/Application Support/mcp-resume/<app>` (macOS). Made absolute
   * against the current directory.
   */
  stateDir?: string;
  /**
   * Receives the spec's log lines (spec 000, "Logging Strategy") and this
   * package's own. Defaults to {@link createStderrLogger}() (stderr, info and
   * up). Never pass something that writes to stdout.
   */
  logger?: Logger;
  /**
   * Extra process names to skip when looking for the MCP host, added to the
   * default launchers and `$MCP_RESUME_LAUNCHERS` (see `procid/doc.go`).
   */
  launchers?: readonly string[];
  /**
   * Overrides how the MCP host is identified: returns (or resolves to)
   * `{pid, startTime}`, or throws (rejects) when the host cannot be verified,
   * which turns resume off. Called at most once, before the first `load`,
   * `store` or `reject`. Tests use it to pin an identity.
   */
  identity?: () => HostIdentity | Promise<HostIdentity>;
  /**
   * Tells this server instance apart from others the same MCP host runs at
   * the same time (hostfuncs/README.md, `mcp_resume_identity`). Instances
   * with different keys keep separate token files and resume independently;
   * instances with the same key share one file, which only the first holds
   * (the others run without resume and log `instance_busy`).
   *
   * - `undefined` (default): `$MCP_RESUME_INSTANCE` if non-empty, else the
   *   process's arguments after the script (`process.argv.slice(2)`) joined
   *   with NUL, `""` when there are none;
   * - `""` or `"-"`: no instance: the plain `token-<pid>-<start_time>`, one
   *   resuming instance per host;
   * - any other string: that key. Declare one from your configuration (a
   *   profile name, a hash of the config file) when copies of the server
   *   differ by more than their arguments.
   *
   * Only the first 16 hex digits of its SHA-256 reach a file name.
   */
  instance?: string;
  /**
   * Overrides how a token or lock file's MCP host is judged alive when the
   * plugin prunes stale files: returns whether process `pid` runs with
   * `startTime`, throws when it cannot tell (such files are kept until 30
   * days old). Defaults to the process table (`/proc`, macOS `ps`). Must be
   * synchronous. A seam for tests and embedders, like `identity`.
   */
  alive?: (pid: number, startTime: string) => boolean;
}

/** Environment variable naming the instance when `OpenOptions.instance` is unset. */
export const ENV_INSTANCE = "MCP_RESUME_INSTANCE";

/** As `OpenOptions.instance`, names no instance (as Go's `host.NoInstance`). */
export const NO_INSTANCE = "-";

/**
 * The instance key `OpenOptions.instance` resolves to (see there): the
 * option, else `$MCP_RESUME_INSTANCE` if non-empty, else the arguments after
 * the script joined with NUL; `"-"` and `""` mean none (`""`).
 *
 * @param option - `OpenOptions.instance`.
 * @param env - environment (default `process.env`).
 * @param argv - the process's argument vector (default `process.argv`).
 */
export function resolveInstance(option: string | undefined, env: NodeJS.ProcessEnv = process.env, argv: readonly string[] = process.argv): string {
  let key = option;
  if (key === undefined) {
    const fromEnv = env[ENV_INSTANCE];
    key = fromEnv !== undefined && fromEnv !== "" ? fromEnv : argv.slice(2).join("\0");
  }
  return key === NO_INSTANCE ? "" : key;
}

/** One token file reported by {@link ResumeTokenStore.list}. */
export interface ListedFile {
  /** File name, `token-<pid>-<start_time>[-<instance>]`. */
  name: string;
  /** The MCP host pid encoded in the name. */
  pid: number;
  /** The MCP host start time encoded in the name. */
  startTime: string;
  /** The 16-hex-digit instance suffix of the name, when it has one. */
  instance?: string;
}

/**
 * Thrown by {@link ResumeTokenStore.open} for an app name that breaks the
 * rule `^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`. The server should carry on
 * without resume.
 */
export class InvalidAppError extends Error {
  /** @param app - the refused name. */
  constructor(app: string) {
    super(`invalid app name ${JSON.stringify(app)}: use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit`);
    this.name = "InvalidAppError";
  }
}

/**
 * Thrown by {@link ResumeTokenStore.open} when the plugin cannot be
 * compiled or instantiated, or speaks another ABI version than this host
 * (message `plugin ABI version "<got>", this host implements "2"; …`); and
 * by {@link ResumeTokenStore.list} and {@link ResumeTokenStore.prune} when the
 * plugin fails. The server should
 * carry on without resume.
 */
export class PluginError extends Error {
  /** @param message - what failed. */
  constructor(message: string) {
    super(message);
    this.name = "PluginError";
  }
}

/**
 * Thrown (as a rejection) by {@link ResumeTokenStore.store} for a token that
 * is not 1–4096 bytes of visible ASCII (0x21–0x7E). Its message starts with
 * `invalid token` and is the plugin's own. Nothing is written.
 */
export class InvalidTokenError extends Error {
  /** @param message - starts with `invalid token`. */
  constructor(message: string) {
    super(message);
    this.name = "InvalidTokenError";
  }
}

/** Result of one raw export call (used by the conformance runner). */
export type ExportResult = { ok: true; output: Uint8Array } | { ok: false; error: string; fromPlugin: boolean };

/** What {@link ResumeTokenStore} exports are called. */
type ExportName = "load" | "store" | "reject" | "list" | "prune" | "names" | "mcp_resume_abi_version";

const PLUGIN_ERROR_PREFIX = "Plugin-originated error: ";
const encoder = new TextEncoder();
const decoder = new TextDecoder();

type IdentityState = { ok: HostIdentity } | { error: string };

let rawAccess: (s: ResumeTokenStore, name: ExportName, input?: Uint8Array) => Promise<ExportResult>;

/**
 * One MCP server instance's resume-token store (spec 000, "Operational
 * Flow"). Open it once at startup, `load()` the token to offer the broker,
 * `store()` the token the broker returns, `reject()` a token the broker
 * refused.
 *
 * ```ts
 * const store = await ResumeTokenStore.open({ app: "my-server" });
 * const token = await store.load();
 * // resume with token, or start fresh; on 401/409/410: await store.reject()
 * await store.store(session.token);
 * ```
 *
 * Several instances of one server under one MCP host: instances launched
 * differently (arguments, `MCP_RESUME_INSTANCE`, or the `instance` option)
 * keep separate token files and resume independently; identical ones share
 * one file, which only the first to `load` holds (a lock that dies with its
 * process, released by `close()`), while the others run without resume.
 *
 * Calls are serialised into one plugin instance. `load`, `store` and
 * `reject` never reject because of the environment: identity, state
 * directory and file problems switch resume off or are logged (spec 000,
 * "Error Handling & Edge Cases"); a plugin failure is logged and swallowed.
 * Only `store` rejects, with {@link InvalidTokenError}, for a malformed token.
 */
export class ResumeTokenStore {
  readonly #plugin: Plugin;
  readonly #funcs: HostFunctions;
  readonly #logger: Logger;
  readonly #identitySource: () => HostIdentity | Promise<HostIdentity>;
  #identity: IdentityState | undefined;
  /** Set once the lock was taken (or found unavailable) ahead of the plugin. */
  #lockPrepared = false;
  #queue: Promise<unknown> = Promise.resolve();
  /** Set by close(): later calls do nothing. */
  #closed = false;
  /** Set once the plugin is released (after every call queued before close). */
  #released = false;
  #closing: Promise<void> = Promise.resolve();

  static {
    rawAccess = (s, name, input) => s.#serial(() => s.#raw(name, input));
  }

  private constructor(
    plugin: Plugin,
    funcs: HostFunctions,
    logger: Logger,
    identity: () => HostIdentity | Promise<HostIdentity>,
  ) {
    this.#plugin = plugin;
    this.#funcs = funcs;
    this.#logger = logger;
    this.#identitySource = identity;
  }

  /**
   * Compiles the plugin (once per process), instantiates it with WASI and
   * the host functions, checks its ABI version and returns the store for
   * `options.app`.
   *
   * Problems with the host identity, the state directory or the lock are
   * not errors here: they switch resume off and are logged at the first
   * `load`, `store` or `reject` (spec 000, "Parent Process Information
   * Unavailable"; `instance_busy` when another instance launched the same
   * way under the same host holds the token file).
   *
   * @param options - app name (required), state directory, logger,
   *   launchers, instance, identity and liveness overrides.
   * @returns a ready store.
   * @throws {@link InvalidAppError} for a bad app name.
   * @throws {@link PluginError} when the plugin cannot be loaded or has
   *   another ABI version. In both cases carry on without resume.
   */
  static open(options: OpenOptions): Promise<ResumeTokenStore> {
    return openStore(options, PLUGIN_WASM_URL);
  }

  /** @internal */
  static async _create(options: OpenOptions, wasm: string | URL): Promise<ResumeTokenStore> {
    const app = options?.app;
    if (typeof app !== "string" || !APP_RULE.test(app)) throw new InvalidAppError(String(app));
    const dir = resolveStateDir(app, options.stateDir);
    const logger = options.logger ?? createStderrLogger();
    const launchers = options.launchers ?? [];
    const identitySource =
      options.identity ??
      (async (): Promise<HostIdentity> => {
        const host = await resolveHost({ launchers });
        // How the stdio check went (docs/RELIABILITY.md fault 11c): for
        // diagnosing resume across hosts; never on stdout.
        safeLog(logger, "debug", "MCP host identified", { event: "host_identified", pid: host.pid, detail: host.stdio });
        return { pid: host.pid, startTime: host.startTime };
      });

    let store: ResumeTokenStore | undefined;
    const funcs = new HostFunctions({
      dir,
      logger,
      instance: resolveInstance(options.instance),
      alive: options.alive ?? ((pid, startTime) => procAlive(pid, startTime)),
      identity: () => {
        const st = store ? store.#identity : undefined;
        if (!st) throw new Error("the host identity was not resolved before the plugin asked for it");
        if ("error" in st) throw new Error(st.error);
        return st.ok;
      },
    });

    let plugin: Plugin;
    try {
      // Import the SDK and compile the plugin at the same time.
      const [extism, module] = await Promise.all([loadExtism(), compiledModule(wasm)]);
      const hostFns: Record<string, (cp: unknown, offset: bigint) => bigint> = {};
      for (const name of FUNCTIONS) {
        hostFns[name] = (cp, offset) => hostCall(funcs, name, cp as CallContextLike, offset);
      }
      plugin = await extism.createPlugin(
        { wasm: [{ module }] },
        {
          useWasi: true,
          // Never the process's stdout: it carries JSON-RPC. 1.0.3 then gives
          // the guest /dev/null for stdin, stdout and stderr.
          enableWasiOutput: false,
          runInWorker: false,
          logger: consoleFor(logger),
          functions: { [NAMESPACE]: hostFns, "extism:host/env": extismEnvExtras() },
          config: {},
          allowedPaths: {},
          allowedHosts: [],
          // The plugin makes no HTTP calls. Passing a fetch keeps 1.0.3 from
          // touching the global one, whose first use loads undici (~10 ms of
          // startup).
          fetch: noFetch,
        },
      );
    } catch (e) {
      await funcs.close();
      throw new PluginError(`mcp-resume plugin unusable: loading ${String(wasm)}: ${(e as Error)?.message ?? String(e)}`);
    }
    store = new ResumeTokenStore(plugin, funcs, logger, identitySource);
    const abi = await store.#raw("mcp_resume_abi_version");
    const got = abi.ok ? decoder.decode(abi.output) : "";
    if (!abi.ok || got !== ABI_VERSION) {
      await store.close();
      throw new PluginError(
        `mcp-resume plugin unusable: plugin ABI version ${JSON.stringify(got)}${abi.ok ? "" : ` (error: ${abi.error})`}, this host implements ${JSON.stringify(ABI_VERSION)}; rebuild the plugin (make wasm) or upgrade mcp-resume`,
      );
    }
    return store;
  }

  /** The absolute state directory this store uses. */
  get stateDir(): string {
    return this.#funcs.dir;
  }

  /**
   * Returns the token saved by the previous server instance under the same
   * MCP host, to offer the broker (spec 000, "MCP Server Startup", steps
   * 3–5). A missing file logs `Token file not found (first run or clean
   * slate)`; a corrupt one (empty, > 4096 bytes, a byte outside 0x21–0x7E, a
   * symlink, FIFO or directory) is deleted and logs `Token file corrupted,
   * treating as stale` (spec 000, "Token File Corrupted").
   *
   * @returns the token, or `undefined` when there is none to offer (first
   *   run, resume off, corrupt file, plugin failure, store closed). Never
   *   rejects.
   */
  async load(): Promise<string | undefined> {
    const r = await this.#call("load");
    if (!r || !r.ok || r.output.length === 0) return undefined;
    return decoder.decode(r.output);
  }

  /**
   * Persists the token the broker just issued, for the next server
   * instance (spec 000, "Token Persistence"; step 6: call it after every
   * resume or new session). If the previous `load` returned a token that was
   * not rejected, logs `Session resumed successfully` once. A failed write
   * logs `Failed to write token file: <error>` and still resolves.
   *
   * @param token - 1–4096 bytes of visible ASCII (0x21–0x7E).
   * @returns resolves once written (or once the failure is logged). A
   *   closed store resolves without doing anything.
   * @throws {@link InvalidTokenError} (rejection) for a malformed token,
   *   checked even when resume is off so a server cannot tell the difference.
   */
  async store(token: string): Promise<void> {
    if (typeof token !== "string") throw new InvalidTokenError(`invalid token: expected a string, got ${typeof token}`);
    const r = await this.#call("store", encoder.encode(token));
    if (r && !r.ok && r.fromPlugin && r.error.startsWith("invalid token")) throw new InvalidTokenError(r.error);
  }

  /**
   * Tells the store the broker refused the token `load` returned (HTTP
   * 401/409/410): logs `Broker rejected resume token, starting fresh
   * session` and deletes the token file, unless it already holds a newer
   * token another instance stored (then it is kept; seed 004, reconnection
   * race). Spec 000, "Broker Rejects Token".
   *
   * @returns resolves when done. Never rejects.
   */
  async reject(): Promise<void> {
    await this.#call("reject");
  }

  /**
   * Lists the token files of the state directory (never their tokens); for
   * diagnostics. Needs no host identity. A missing state directory is empty.
   *
   * @returns the files, sorted by name.
   * @throws {@link PluginError} (rejection) when the store is closed or the
   *   plugin fails.
   */
  async list(): Promise<ListedFile[]> {
    if (this.#closed) throw new PluginError("mcp-resume: store is closed");
    const r = await this.#serial(() => this.#raw("list"));
    if (!r.ok) throw new PluginError(`mcp-resume: list failed: ${r.error}`);
    let parsed: { files?: Array<{ name: string; pid: number; start_time: string; instance?: string }> };
    try {
      parsed = JSON.parse(decoder.decode(r.output));
    } catch (e) {
      throw new PluginError(`mcp-resume: list returned malformed JSON: ${(e as Error).message}`);
    }
    return (parsed.files ?? []).map((f) => {
      const file: ListedFile = { name: f.name, pid: f.pid, startTime: f.start_time };
      if (f.instance) file.instance = f.instance;
      return file;
    });
  }

  /**
   * Removes the token and lock files of MCP hosts that are gone (the pid is
   * absent, or names another process or boot) and of hosts that cannot be
   * checked once older than 30 days; never a file whose host is alive, nor
   * this instance's own. Each removal logs `stale_removed`. The first
   * `load`/`store`/`reject` already prunes once while resume is on; this is
   * for tools (`mcp-resume prune`). Needs no host identity.
   *
   * @returns the names removed.
   * @throws {@link PluginError} (rejection) when the store is closed or the
   *   plugin fails.
   */
  async prune(): Promise<string[]> {
    if (this.#closed) throw new PluginError("mcp-resume: store is closed");
    const r = await this.#serial(() => this.#raw("prune"));
    if (!r.ok) throw new PluginError(`mcp-resume: prune failed: ${r.error}`);
    let parsed: { removed?: string[] };
    try {
      parsed = JSON.parse(decoder.decode(r.output));
    } catch (e) {
      throw new PluginError(`mcp-resume: prune returned malformed JSON: ${(e as Error).message}`);
    }
    return parsed.removed ?? [];
  }

  /**
   * Waits for pending calls, then releases the plugin and the lock on the
   * token file, so another instance under the same host may take it over
   * (once it starts; a running instance does not retry). Safe to call more
   * than once; afterwards `load` resolves `undefined`, `store` and `reject`
   * do nothing, `list` and `prune` reject.
   */
  async close(): Promise<void> {
    if (this.#closed) return this.#closing;
    this.#closed = true;
    // Calls made before close() still run: the release queues behind them.
    this.#closing = this.#serial(async () => {
      this.#released = true;
      try {
        await this.#plugin.close();
      } catch {
        // nothing more to release
      }
      await this.#funcs.close();
    });
    return this.#closing;
  }

  /** Runs `fn` after every earlier call has settled (calls are serialised). */
  #serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.#queue.then(fn, fn);
    this.#queue = next.catch(() => undefined);
    return next;
  }

  /** Resolves the host identity once (before the first load/store/reject). */
  async #ensureIdentity(): Promise<void> {
    if (this.#identity) return;
    try {
      this.#identity = { ok: await this.#identitySource() };
    } catch (e) {
      this.#identity = { error: (e as Error)?.message ?? String(e) };
    }
  }

  /**
   * Takes this instance's lock ahead of the plugin (hostfuncs/README.md,
   * `mcp_resume_lock`): the plugin's `names` export gives the lock name from
   * the identity alone; if there is one and the state directory passes its
   * checks, {@link HostFunctions.acquireLock} takes it asynchronously, and
   * the plugin's synchronous `mcp_resume_lock` call answers from the result.
   * Runs once. Never throws: a failure here surfaces when the plugin calls
   * `mcp_resume_lock` (logged as `lock_failed` or `instance_busy`).
   */
  async #prepareLock(): Promise<void> {
    if (this.#lockPrepared) return;
    this.#lockPrepared = true;
    const r = await this.#raw("names");
    if (!r.ok) return;
    let lock: unknown;
    try {
      lock = (JSON.parse(decoder.decode(r.output)) as { lock?: unknown }).lock;
    } catch {
      return;
    }
    if (typeof lock !== "string" || lock === "") return;
    if (this.#funcs.checkDir()) return; // the plugin's prepare_dir will say why
    await this.#funcs.acquireLock(lock);
  }

  /** A load/store/reject call: serialised, identity first, failures logged. */
  #call(name: "load" | "store" | "reject", input?: Uint8Array): Promise<ExportResult | undefined> {
    if (this.#closed) return Promise.resolve(undefined);
    return this.#serial(async () => {
      await this.#ensureIdentity();
      const r = await this.#raw(name, input);
      if (!r.ok && !(name === "store" && r.fromPlugin && r.error.startsWith("invalid token"))) {
        safeLog(this.#logger, "error", "mcp-resume plugin failed; session resume skipped for this call", {
          event: "plugin_failed",
          export: name,
          error: r.error,
        });
      }
      return r;
    });
  }

  /**
   * Calls one export with exactly `input` and returns its output bytes or
   * error, then resets the SDK's per-call memory (Extism 1.0.3 trap: its
   * block table only grows otherwise). Never throws.
   */
  async #raw(name: ExportName, input?: Uint8Array): Promise<ExportResult> {
    if (this.#released) {
      return { ok: false, error: "mcp-resume: store is closed", fromPlugin: false };
    }
    if (name === "load" || name === "reject" || (name === "store" && input !== undefined && validToken(input))) {
      // What the plugin's first load, valid store or reject will need, and a
      // host function cannot do synchronously: the identity, then the lock.
      await this.#ensureIdentity();
      await this.#prepareLock();
    } else if (name === "store" && !this.#identity) {
      await this.#ensureIdentity();
    }
    // Extism 1.0.3 wraps a Uint8Array's whole underlying ArrayBuffer, not
    // the view: always hand it a fresh, exactly sized copy.
    const arg = input && input.length > 0 ? new Uint8Array(input) : undefined;
    try {
      const out = await this.#plugin.call(name, arg);
      return { ok: true, output: out ? new Uint8Array(out.bytes()) : new Uint8Array(0) };
    } catch (e) {
      const msg = (e as Error)?.message ?? String(e);
      return msg.startsWith(PLUGIN_ERROR_PREFIX)
        ? { ok: false, error: msg.slice(PLUGIN_ERROR_PREFIX.length), fromPlugin: true }
        : { ok: false, error: msg, fromPlugin: false };
    } finally {
      try {
        await this.#plugin.reset();
      } catch {
        // reset only frees host-side blocks
      }
    }
  }
}

/** Whether `b` is a token the plugin accepts: 1–4096 bytes of 0x21–0x7E. */
function validToken(b: Uint8Array): boolean {
  if (b.length === 0 || b.length > 4096) return false;
  for (const c of b) if (c < 0x21 || c > 0x7e) return false;
  return true;
}

/**
 * Opens a store running the plugin at `wasm` instead of the shipped one.
 * Internal: tests use it to load other modules (ABI mismatch, go-pdk logs).
 */
export function openStore(options: OpenOptions, wasm: string | URL): Promise<ResumeTokenStore> {
  return ResumeTokenStore._create(options, wasm);
}

/**
 * Calls a plugin export directly, serialised with the store's other calls,
 * resolving the identity and taking the lock first for load/store/reject (as
 * the public methods do); returns the exact
 * output bytes or error string (hostfuncs/conformance/README.md, step 5).
 * Internal, for the conformance runner.
 */
export function callExport(store: ResumeTokenStore, name: ExportName, input?: Uint8Array): Promise<ExportResult> {
  return rawAccess(store, name, input);
}

/** Stand-in for `fetch` handed to Extism: the plugin never makes HTTP calls. */
const noFetch = (async () => {
  throw new Error("mcp-resume: the plugin makes no HTTP requests");
}) as unknown as typeof fetch;

/** The parts of Extism's CallContext the host functions use. */
interface CallContextLike {
  read(addr: bigint | number): { bytes(): Uint8Array } | null;
  store(input: string | Uint8Array): bigint;
}

/**
 * Adapts {@link HostFunctions.call} to Extism: reads the JSON request from
 * plugin memory, answers, writes the response back. Never throws: a failure
 * to touch plugin memory returns offset 0, which the plugin treats as an io
 * error (as Go's adapter does).
 */
function hostCall(funcs: HostFunctions, name: string, cp: CallContextLike, offset: bigint): bigint {
  try {
    const req = cp.read(offset);
    if (!req) return 0n;
    return cp.store(funcs.call(name, req.bytes()));
  } catch {
    return 0n;
  }
}

/**
 * A `Console`-shaped object for Extism's `logger` option that routes the
 * SDK's own messages (and go-pdk `pdk.Log` lines) to `logger`, never to
 * stdout.
 */
function consoleFor(logger: Logger): Console {
  const text = (args: unknown[]): string => args.map((a) => (typeof a === "string" ? a : String(a))).join(" ");
  const fields = { event: "extism_log" };
  return {
    debug: (...a: unknown[]) => safeLog(logger, "debug", text(a), fields),
    trace: (...a: unknown[]) => safeLog(logger, "debug", text(a), fields),
    log: (...a: unknown[]) => safeLog(logger, "info", text(a), fields),
    info: (...a: unknown[]) => safeLog(logger, "info", text(a), fields),
    warn: (...a: unknown[]) => safeLog(logger, "warn", text(a), fields),
    error: (...a: unknown[]) => safeLog(logger, "error", text(a), fields),
  } as unknown as Console;
}

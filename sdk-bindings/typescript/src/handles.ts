/**
 * {@link HandleStore}: durable state handles for sessionless MCP servers.
 * Every rule (handle syntax and entropy, principal binding, idle TTL and
 * maximum age, tombstones, LRU eviction, generations and compare-and-set,
 * sealing at rest, the files and their locks) is the shared plugin's
 * (`plugin.wasm`, its `handles_open` and `handle_*` exports; plugin/README.md
 * and hostfuncs/README.md, "Plugin exports for the handle store"), the same
 * in Go, Python and TypeScript; this file turns the exports into async
 * methods and typed errors. `create`, `get` and `put` send the exports' binary
 * form (hostfuncs/README.md, "Binary form"), so a value crosses into the
 * plugin as raw bytes, never base64; the other calls send JSON.
 *
 * @packageDocumentation
 */
import { availableParallelism } from "node:os";

import { ConflictError, InvalidOptionError, InvalidValueError, MCPResumeError, PluginError, StoreUnavailableError, errorFromPlugin } from "./errors.js";
import { createStderrLogger, safeLog, type Logger } from "./logger.js";
import { loadRedis } from "./redis.js";
import { callExport, loadStore, type ExportResult, type ResumeTokenStore } from "./store.js";

/** Options of {@link HandleStore.open}. Omitted → the environment → the plugin's defaults (shown). A key not listed here is refused with {@link InvalidOptionError}. */
export interface HandleStoreOptions {
  /** The state root, as for resume (`$MCP_RESUME_STATE_DIR`, else per user); handles live in `<stateRoot>/<app dir>/handles`. */
  stateRoot?: string;
  /** Idle TTL in milliseconds: a handle not read or written for this long expires. Default `$MCP_RESUME_STATE_IDLE_TTL`, else 24 h. */
  idleTtlMs?: number;
  /** Maximum age in milliseconds from creation; nothing extends it. Default `$MCP_RESUME_STATE_MAX_AGE`, else 30 days. */
  maxAgeMs?: number;
  /** How long, in milliseconds, an expired or evicted handle still answers {@link HandleExpiredError}/{@link HandleEvictedError} (then {@link HandleNotFoundError}). Default 7 days. */
  tombstoneMs?: number;
  /** Live handles per app before the least recently used is evicted (exact per shard; see the README). Default 10,000. */
  maxHandles?: number;
  /** One principal's quota of live handles: a principal at it that creates evicts its own least recently used handle, never another principal's (the anonymous principal `""` too). Default `maxHandles`/4, rounded up. */
  maxHandlesPerPrincipal?: number;
  /** Largest value in bytes (at most 4 MiB). Default 1 MiB. */
  maxValueBytes?: number;
  /** How long, in milliseconds, an operation waits for a shard lock another process holds before {@link StoreUnavailableError}. Default 2000 (at most 10000). The wait blocks this thread. */
  lockWaitMs?: number;
  /** The clock, in Unix milliseconds (like `Date.now`), sent with every operation (`now_ms`); default the plugin's own clock. For tests. */
  clock?: () => number;
  /** Receives the plugin's log lines (`handle_created`, `handle_expired`…; never a handle, value or principal). Default {@link createStderrLogger}(). */
  logger?: Logger;
  /**
   * The Redis backend (hostfuncs/README.md, "The Redis backend"): `redis://[user:password@]host[:port][/db]`
   * or `rediss://…` (TLS), optionally `?cluster=true` (a node of a Redis Cluster). Redis 6.2 or later, or
   * Valkey. Default `$MCP_RESUME_STATE_URL` (read by the plugin); empty again: the file backend. When this
   * or the variable is non-empty the plugin runs in Extism's worker mode (a thread of its own), where the
   * store reaches Redis with node-redis while the event loop keeps turning.
   */
  stateUrl?: string;
  /** Redis only: the deadline of each operation in milliseconds, connecting included (1–60000). Default `$MCP_RESUME_STATE_TIMEOUT` (Go duration), else 2000. */
  timeoutMs?: number;
  /**
   * The most plugin instances the store runs, a positive integer. Each serves one call at a time; the
   * first is made by open, the others only when calls overlap (each costs a Wasm instance, and in worker
   * mode a thread and a Redis connection); callers beyond them wait in order. Default
   * `os.availableParallelism()`. On Redis (worker mode) the instances' waits for the server overlap; on
   * files the plugin runs on this thread, so their calls never run at the same time (docs/BENCHMARKS.md,
   * "TypeScript: the handle store's pool of instances", measures both).
   */
  poolSize?: number;
}

/** The store's effective settings (its policy), as `handles_open` answered them (durations in milliseconds). */
export interface HandleStoreSettings {
  /** `file` (records in {@link stateDir}) or `redis` (records on the server of {@link stateUrl}). */
  backend: "file" | "redis";
  /** Redis only: the URL with its password shown as `***` (safe to log). */
  stateUrl?: string;
  /** Redis only: the deadline of each operation, connecting included, in milliseconds. */
  timeoutMs?: number;
  /** Absolute directory of the records: `<stateRoot>/<app dir>/handles`; `""` on Redis. */
  stateDir: string;
  /** `""` on Redis. */
  stateRoot: string;
  idleTtlMs: number;
  maxAgeMs: number;
  tombstoneMs: number;
  maxHandles: number;
  /** One principal's quota of live handles in effect. */
  maxHandlesPerPrincipal: number;
  maxValueBytes: number;
  /** Number of shards (a power of two, 1..4096), fixed by the first open of the directory. */
  shards: number;
}

/** What {@link HandleStore.create} returns. `createdMs` is Unix milliseconds; TTLs are milliseconds. */
export interface Created {
  /** The bearer secret (`mrh1_` + 32 base64url characters, 192 random bits). Never logged nor stored. */
  handle: string;
  /** Always 1. */
  generation: number;
  idleTtlMs: number;
  maxAgeMs: number;
  createdMs: number;
}

/** What {@link HandleStore.get} returns. */
export interface HandleValue {
  /** The value as it was last written. */
  data: Uint8Array;
  /** 1 at create, +1 per successful put. */
  generation: number;
  /** Creation time, Unix milliseconds. */
  createdMs: number;
  idleTtlMs: number;
  maxAgeMs: number;
}

/** What {@link HandleStore.touch} returns. */
export interface Touched {
  generation: number;
  idleTtlMs: number;
  maxAgeMs: number;
}

/** One handle in {@link HandleList} (never its value, handle or principal). Ages in milliseconds, `size` in bytes. */
export interface HandleEntry {
  /** The first 12 hex characters of its key hash (as in log lines). */
  key: string;
  state: "live" | "expired_idle" | "expired_max_age" | "evicted";
  generation?: number;
  size?: number;
  ageMs: number;
  idleMs: number;
}

/** What {@link HandleStore.list} returns: every entry, the counts of live handles and tombstones, shards, and bytes on disk. */
export interface HandleList {
  handles: HandleEntry[];
  live: number;
  tombstones: number;
  shards: number;
  bytes: number;
}

/** What {@link HandleStore.gc} removed (counts) and how many handles remain live. */
export interface GcResult {
  expiredIdle: number;
  expiredMaxAge: number;
  tombstonesDropped: number;
  orphansRemoved: number;
  tempsRemoved: number;
  live: number;
}

/** The plugin's error answer as its class (docs/API.md, "Errors"). */
function errorOf(r: Extract<ExportResult, { ok: false }>): MCPResumeError {
  return errorFromPlugin(r.code, r.message, r.error);
}

/** snake_case keys to camelCase, recursively; `*_ms` stays `…Ms`. */
function camel(v: unknown): any {
  if (Array.isArray(v)) return v.map(camel);
  if (v === null || typeof v !== "object") return v;
  return Object.fromEntries(Object.entries(v).map(([k, x]) => [k.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase()), camel(x)]));
}

/** The keys {@link HandleStoreOptions} knows. */
const HANDLE_KEYS = new Set(["stateRoot", "idleTtlMs", "maxAgeMs", "tombstoneMs", "maxHandles", "maxHandlesPerPrincipal", "maxValueBytes", "lockWaitMs", "clock", "logger", "stateUrl", "timeoutMs", "poolSize"]);

const OPTION_KEYS: Array<[keyof HandleStoreOptions, string]> = [["stateRoot", "state_root"], ["idleTtlMs", "idle_ttl_ms"], ["maxAgeMs", "max_age_ms"],
  ["tombstoneMs", "tombstone_ms"], ["maxHandles", "max_handles"], ["maxHandlesPerPrincipal", "max_handles_per_principal"], ["maxValueBytes", "max_value_bytes"], ["lockWaitMs", "lock_wait_ms"],
  ["stateUrl", "state_url"], ["timeoutMs", "timeout_ms"]];

/**
 * Whether a store opened with `options` runs its plugin in Extism's worker mode: when `stateUrl`, else
 * `$MCP_RESUME_STATE_URL`, is non-empty. The only environment variable the host reads for the handle
 * store (the plugin reads every other, and this one again): the runtime mode is fixed when the plugin is
 * created, before `handles_open` could say which backend it chose, and Redis needs the asynchronous mode.
 */
export function needsWorker(options: HandleStoreOptions): boolean {
  const url = typeof options.stateUrl === "string" && options.stateUrl !== "" ? options.stateUrl : process.env["MCP_RESUME_STATE_URL"];
  return typeof url === "string" && url !== "";
}

/** `value` as a Buffer over the same bytes (no copy), or {@link MCPResumeError} `invalid_value` for anything but bytes. */
function bytesOf(value: unknown): Buffer {
  if (!(value instanceof Uint8Array)) throw new InvalidValueError("invalid_value", `value must be a Uint8Array, not ${value === null ? "null" : typeof value}`);
  return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
}

/** The flag bits of the binary input (hostfuncs/README.md, "Binary form"): which of its members are given. */
const FLAG = { now: 1, generation: 2, idleTtl: 4, maxAge: 8, value: 16 } as const;
/** The binary input's fixed part: `0x01`, flags, four i64, the principal's u16 length, the handle's u8 length. */
const BINARY_FIXED = 37;

/** What `handle_create`, `handle_get` and `handle_put` carry, as the caller gave it (the plugin judges every member). */
export interface HandleInput {
  principal: unknown;
  handle?: unknown;
  value?: Buffer;
  generation?: unknown;
  idleTtlMs?: unknown;
  maxAgeMs?: unknown;
}

/** Matches a lone surrogate: with the `u` flag a well-formed pair is one code point, not `Cs`. */
const LONE_SURROGATE = /\p{Surrogate}/u;

/**
 * `input` in the binary form (hostfuncs/README.md, "Binary form"), with `now` (Unix ms) when the store has a
 * clock. Internal (exported for the tests).
 *
 * @returns the bytes, or `undefined` when the form cannot carry what the caller gave (a principal or handle
 *   that is not a string, holds a lone surrogate, or is longer than its length field; a number that is not
 *   a safe integer, `null` included): the call then goes as JSON and the plugin answers it in its own words, as in every language.
 */
export function binaryInput(input: HandleInput, now: number | undefined): Buffer | undefined {
  const { principal, handle = "", value } = input;
  const ints = [now, input.generation, input.idleTtlMs, input.maxAgeMs];
  if (typeof principal !== "string" || typeof handle !== "string" || ints.some((v) => v !== undefined && !Number.isSafeInteger(v))) return undefined;
  // A lone surrogate has no UTF-8: Buffer.from would turn it into U+FFFD, so
  // that two different principals would reach the plugin as one. As JSON
  // it arrives as the escape it is, which the plugin refuses
  // (invalid_principal, invalid_handle).
  if (LONE_SURROGATE.test(principal) || LONE_SURROGATE.test(handle)) return undefined;
  const [p, h] = [Buffer.from(principal, "utf8"), Buffer.from(handle, "utf8")];
  if (p.length > 0xffff || h.length > 0xff) return undefined;
  const out = Buffer.allocUnsafe(BINARY_FIXED + p.length + h.length + (value?.length ?? 0));
  out[0] = 0x01;
  let flags = value !== undefined ? FLAG.value : 0;
  [FLAG.now, FLAG.generation, FLAG.idleTtl, FLAG.maxAge].forEach((bit, i) => {
    const v = ints[i] as number | undefined;
    if (v !== undefined) flags |= bit;
    out.writeBigInt64BE(BigInt(v ?? 0), 2 + 8 * i);
  });
  out[1] = flags;
  let at = out.writeUInt16BE(p.length, 34);
  at += p.copy(out, at);
  at = out.writeUInt8(h.length, at);
  at += h.copy(out, at);
  value?.copy(out, at);
  return out;
}

/** `input` as the export's JSON (the value base64), `now_ms` with it when given: the form for what {@link binaryInput} cannot carry. */
function jsonInput(input: HandleInput, now: number | undefined): Buffer {
  const o: Record<string, unknown> = { principal: input.principal };
  if (input.handle !== undefined) o["handle"] = input.handle;
  if (input.value !== undefined) o["value"] = input.value.toString("base64");
  if (input.generation !== undefined) o["generation"] = input.generation;
  if (input.idleTtlMs !== undefined) o["idle_ttl_ms"] = input.idleTtlMs;
  if (input.maxAgeMs !== undefined) o["max_age_ms"] = input.maxAgeMs;
  if (now !== undefined) o["now_ms"] = now;
  return Buffer.from(JSON.stringify(o));
}

/** The i64 at `at` of a binary output, as a number (generations, times and durations are safe integers). */
const i64 = (b: Buffer, at: number): number => Number(b.readBigInt64BE(at));

/**
 * A handle store: durable values behind opaque handles, for MCP servers
 * that keep no process state between calls (sessionless MCP). A pool of
 * plugin instances per store (`poolSize`), each serving one call at a time;
 * callers beyond them wait in order (FIFO), so a store may be shared by any
 * number of async callers. Operations on one handle are
 * linearizable across stores, processes and languages sharing the
 * directory (a lock per shard, held for one operation).
 *
 * ```ts
 * await using store = await HandleStore.open("my-server");
 * const { handle } = await store.create("", new TextEncoder().encode("{}"));
 * const v = await store.get(handle, "");
 * await store.put(handle, "", newBytes, { expect: v.generation }); // ConflictError if someone wrote meanwhile
 * ```
 *
 * Independent of resume: `MCP_RESUME=off` does not turn it off. On the file
 * backend each operation is synchronous inside the plugin (file I/O and, when
 * another process holds the shard, a wait of up to `lockWaitMs`), so it
 * blocks the event loop for its duration. On Redis (`stateUrl`) the plugin
 * runs on a worker thread and the event loop keeps turning while an
 * operation waits for the server (at most `timeoutMs`), and calls overlap
 * up to `poolSize` instances, each with its thread and its connection.
 */
export class HandleStore {
  readonly #pool: Pool;
  readonly #clock: (() => number) | undefined;
  #closed = false;

  /** Use {@link HandleStore.open}. */
  private constructor(pool: Pool, clock: (() => number) | undefined, readonly settings: HandleStoreSettings) {
    this.#pool = pool;
    this.#clock = clock;
  }

  /** How many plugin instances the store runs now (0 after {@link close}): 1 after open, at most `poolSize`. For diagnostics and tests. */
  get instances(): number {
    return this.#pool.size;
  }

  /**
   * Loads the plugin (compiled once per process), checks its ABI version and
   * opens the handle store of `app` (creating `handles/` 0700, sweeping
   * expired entries and stale temporary files).
   *
   * On Redis nothing is sent to the server here: a server that cannot be reached answers
   * {@link StoreUnavailableError} at the first operation, within `timeoutMs`.
   *
   * @param app - the server's app name (1–64 of `[A-Za-z0-9._-]`, starting with a letter or digit).
   * @param options - directory or Redis URL, lifetimes, capacity, lock wait, Redis deadline, clock, logger, pool size.
   * @returns a ready store; close it with {@link close} or `await using`.
   * @throws {@link InvalidOptionError} for an unknown option, a bad option or environment value (the message
   *   names it, and never holds a URL's password; a `poolSize` that is not a positive integer); {@link InvalidAppError} for a bad app name (as from
   *   {@link ResumeTokenStore.open}); {@link PluginError} when the plugin cannot be loaded or speaks another
   *   ABI version (as from {@link ResumeTokenStore.open}); {@link StoreUnavailableError} when the directory
   *   cannot be used or (Redis) the optional dependency `redis` is not installed.
   */
  static async open(app: string, options: HandleStoreOptions = {}): Promise<HandleStore> {
    if (options === null || typeof options !== "object" || Array.isArray(options)) {
      throw new InvalidOptionError("invalid_option", `options must be an object, not ${options === null ? "null" : Array.isArray(options) ? "an array" : `a ${typeof options}`}`);
    }
    const unknown = Object.keys(options).filter((k) => !HANDLE_KEYS.has(k));
    if (unknown.length > 0) {
      throw new InvalidOptionError("invalid_option", `unknown option ${unknown.map((k) => JSON.stringify(k)).join(", ")}: HandleStore.open knows ${[...HANDLE_KEYS].join(", ")}`);
    }
    const poolSize = options.poolSize;
    if (poolSize !== undefined && !(Number.isSafeInteger(poolSize) && poolSize >= 1)) {
      throw new InvalidOptionError("invalid_option", `poolSize must be a positive integer, not ${typeof poolSize === "number" ? String(poolSize) : typeof poolSize}`);
    }
    // caller: the plugin's messages then name options as TypeScript does (idleTtlMs, not idle_ttl_ms).
    const input: Record<string, unknown> = { caller: "typescript", app };
    for (const [k, wire] of OPTION_KEYS) if (options[k] !== undefined && !(k === "stateUrl" && options[k] === "")) input[wire] = options[k];
    const worker = needsWorker(options);
    const logger = options.logger ?? createStderrLogger();
    // node-redis is imported while the plugin's thread starts: open pays for it, not the first operation's deadline.
    const [first, lib] = await Promise.allSettled([openInstance(logger, worker, input), worker ? loadRedis() : undefined]);
    if (first.status === "rejected") throw first.reason;
    if (lib.status === "rejected") {
      await first.value.inst.close();
      throw new StoreUnavailableError("store_unavailable", `mcp-resume handle store: ${(lib.reason as Error)?.message ?? String(lib.reason)}`);
    }
    const pool = new Pool(first.value.inst, poolSize ?? availableParallelism(), () => openInstance(logger, worker, input).then((o) => o.inst), logger);
    return new HandleStore(pool, options.clock, camel(first.value.settings) as HandleStoreSettings);
  }

  /**
   * Creates a handle holding `value`.
   *
   * @param principal - who may use it: the authenticated subject, a client id, or `""` (anonymous); only its keyed hash is stored.
   * @param value - the bytes, at most `maxValueBytes`.
   * @param options - `idleTtlMs`/`maxAgeMs` for this handle: 1..the store's value (they may only shorten it).
   * @returns the handle and its generation (1), lifetimes and creation time. May evict the least recently used handle of its shard.
   * @throws {@link ValueTooLargeError}, {@link InvalidPrincipalError}, {@link InvalidOptionError}, {@link StoreUnavailableError}.
   */
  async create(principal: string, value: Uint8Array, options: { idleTtlMs?: number; maxAgeMs?: number } = {}): Promise<Created> {
    const { binary, output } = await this.#callHandle("handle_create", { principal, value: bytesOf(value), idleTtlMs: options.idleTtlMs, maxAgeMs: options.maxAgeMs });
    if (!binary) return camel(JSON.parse(output.toString()));
    // generation, idle_ttl_ms, max_age_ms, created_ms: i64; the handle: u8 length + ASCII.
    return { handle: output.toString("latin1", 33, 33 + output[32]!), generation: i64(output, 0), idleTtlMs: i64(output, 8), maxAgeMs: i64(output, 16), createdMs: i64(output, 24) };
  }

  /**
   * Reads a handle's value; refreshes its idle time.
   *
   * @throws {@link InvalidHandleError}, {@link HandleNotFoundError} (also another principal's handle), {@link HandleExpiredError},
   *   {@link HandleEvictedError}, {@link InvalidPrincipalError}, {@link StoreUnavailableError}.
   */
  async get(handle: string, principal: string): Promise<HandleValue> {
    const { binary, output } = await this.#callHandle("handle_get", { handle, principal });
    if (!binary) {
      const { value, ...rest } = camel(JSON.parse(output.toString())) as { value: string } & Omit<HandleValue, "data">;
      return { data: new Uint8Array(Buffer.from(value, "base64")), ...rest };
    }
    // value_at: u16 (where the value starts); generation, created_ms, idle_ttl_ms, max_age_ms: i64; the value
    // from value_at to the end (a view, not a copy).
    const at = output.length >= 34 ? output.readUInt16BE(0) : 0;
    if (at < 34 || at > output.length) {
      throw new StoreUnavailableError("store_unavailable", `mcp-resume plugin unusable: handle_get answered ${output.length} bytes with value_at ${at}`);
    }
    return { data: new Uint8Array(output.buffer, output.byteOffset + at, output.length - at), generation: i64(output, 2), createdMs: i64(output, 10), idleTtlMs: i64(output, 18), maxAgeMs: i64(output, 26) };
  }

  /**
   * Replaces a handle's value; refreshes its idle time. Without `expect` the
   * write is unconditional (the last writer wins, whatever the generation);
   * with it, the write happens only if the current generation is `expect`
   * (compare-and-set).
   *
   * @returns the new generation.
   * @throws {@link ConflictError} (with the current generation; nothing changed), {@link ValueTooLargeError} and those of {@link get}.
   */
  async put(handle: string, principal: string, value: Uint8Array, options: { expect?: number } = {}): Promise<number> {
    const { binary, output } = await this.#callHandle("handle_put", { handle, principal, value: bytesOf(value), generation: options.expect });
    return binary ? i64(output, 0) : Number((JSON.parse(output.toString()) as Record<string, unknown>)["generation"]);
  }

  /**
   * Deletes a handle (no tombstone: afterwards it answers {@link HandleNotFoundError}). Without `expect`
   * unconditionally; with it, only when the current generation is `expect`.
   *
   * @throws {@link ConflictError} and those of {@link get}.
   */
  async delete(handle: string, principal: string, options: { expect?: number } = {}): Promise<void> {
    const input: Record<string, unknown> = { handle, principal };
    if (options.expect !== undefined) input["generation"] = options.expect;
    await this.#call("handle_delete", input);
  }

  /** Refreshes a handle's idle time without reading its value (a `StateStore`'s `updateTTL`). @throws those of {@link get}. */
  async touch(handle: string, principal: string): Promise<Touched> {
    return camel(await this.#call("handle_touch", { handle, principal }));
  }

  /**
   * Whether the handle is live for this principal (false when unknown, expired, evicted or another's); never refreshes.
   *
   * @throws {@link InvalidHandleError} for a malformed handle, {@link InvalidPrincipalError}, {@link StoreUnavailableError}.
   */
  async exists(handle: string, principal: string): Promise<boolean> {
    return (await this.#call("handle_exists", { handle, principal }))["exists"] === true;
  }

  /** Every entry with its state, generation, size and ages, and the totals; never a value, handle or principal. @throws {@link StoreUnavailableError}. */
  async list(): Promise<HandleList> {
    return camel(await this.#call("handle_list", {}));
  }

  /** Removes expired records, old tombstones, orphan records and stale temporary files; returns the counts. @throws {@link StoreUnavailableError}. */
  async gc(): Promise<GcResult> {
    return camel(await this.#call("handle_gc", {}));
  }

  /**
   * Waits for the calls in flight and those queued (they complete), then releases every plugin instance
   * (their worker threads), their locks and their Redis connections. Idempotent; calls made after it
   * began reject with `not_open`.
   */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#pool.close();
  }

  /** {@link close}, for `await using store = await HandleStore.open(...)`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /** One export call with a JSON input in a pooled instance (in callers' order), with `now_ms` from the clock; the JSON output, or the typed error. */
  async #call(name: string, input: Record<string, unknown>): Promise<Record<string, unknown>> {
    const output = await this.#run(name, (now) => Buffer.from(JSON.stringify(now === undefined ? input : { ...input, now_ms: now })));
    return JSON.parse(output.toString()) as Record<string, unknown>;
  }

  /**
   * `handle_create`, `handle_get` or `handle_put` in the binary form ({@link binaryInput}), or as JSON when that
   * form cannot carry the caller's input; `binary` says which, and so how `output` is encoded.
   */
  async #callHandle(name: string, input: HandleInput): Promise<{ binary: boolean; output: Buffer }> {
    let binary = false;
    const output = await this.#run(name, (now) => {
      const b = binaryInput(input, now);
      binary = b !== undefined;
      return b ?? jsonInput(input, now);
    });
    return { binary, output };
  }

  /**
   * Runs export `name` in a pooled instance with the input `encode` makes, given `now_ms` from the clock
   * (read when an instance takes the call, not while it waits; `undefined` without a clock).
   *
   * @returns the export's output bytes.
   * @throws the plugin's error as its class; `not_open` once the store is closed.
   */
  async #run(name: string, encode: (now: number | undefined) => Buffer): Promise<Buffer> {
    if (this.#closed) throw new MCPResumeError("not_open", `mcp-resume ${name}: the handle store is closed`);
    const r = await this.#pool.run((inst) => callExport(inst, name, encode(this.#clock ? Math.floor(this.#clock()) : undefined)));
    if (!r.ok) throw errorOf(r);
    return Buffer.from(r.output.buffer, r.output.byteOffset, r.output.byteLength);
  }
}

/**
 * Loads one plugin instance (in worker mode or not) and opens the handle store in it with `input`
 * (`handles_open`'s JSON). Every instance of a store gets the same input, so the same policy.
 *
 * @returns the instance and `handles_open`'s answer (snake_case).
 * @throws {@link PluginError} when the plugin cannot be loaded or speaks another ABI version;
 *   {@link StoreUnavailableError} for another loading failure; the plugin's error when it refuses to open.
 */
async function openInstance(logger: Logger, worker: boolean, input: Record<string, unknown>): Promise<{ inst: ResumeTokenStore; settings: unknown }> {
  // The plugin instance lives in the resume store's shell, which confines the host functions to the
  // state_dir handles_open answers (none on Redis); none of its resume methods is used.
  let inst: ResumeTokenStore;
  try {
    inst = await loadStore(logger, undefined, undefined, worker);
  } catch (e) {
    if (e instanceof PluginError) throw e; // as from ResumeTokenStore.open
    throw new StoreUnavailableError("store_unavailable", `mcp-resume handle store: ${(e as Error)?.message ?? String(e)}`);
  }
  const r = await callExport(inst, "handles_open", Buffer.from(JSON.stringify(input)));
  if (!r.ok) {
    await inst.close();
    throw errorOf(r);
  }
  return { inst, settings: JSON.parse(Buffer.from(r.output).toString()) };
}

/**
 * The plugin instances of one store: each serves one call at a time; a call takes an idle instance,
 * else a new one while fewer than `max` exist, else waits, callers in order (FIFO). An instance that
 * failed (`plugin_failed`: a trap, which may leave its memory half-updated; the plugin never answers
 * that code itself) is closed, not reused. Internal to {@link HandleStore} (exported for the tests,
 * not by the package's index).
 */
export class Pool {
  /** Instances waiting for a call. */
  readonly #idle: ResumeTokenStore[] = [];
  /** Callers waiting for an instance, first come first served. */
  readonly #waiting: Array<{ take(inst: ResumeTokenStore): void; fail(e: unknown): void }> = [];
  /** Every instance that exists or is being made (all of {@link #idle}, the busy ones and the growing ones). */
  #size = 1;
  /** Instances being made. */
  #growing = 0;
  #closed = false;
  #closing: Promise<void> | undefined;
  /** Resolves close's wait once, after close began, no instance is busy or being made and no caller waits. */
  #drained: (() => void) | undefined;
  /** Instances handed to a caller and not yet released. */
  #busy = 0;

  /**
   * @param first - the instance open made (idle).
   * @param max - the most instances, at least 1.
   * @param make - makes one more instance, ready for calls.
   * @param logger - receives `handle_pool_grow_failed` and `handle_instance_dropped` (warn).
   */
  constructor(first: ResumeTokenStore, readonly max: number, readonly make: () => Promise<ResumeTokenStore>, readonly logger: Logger) {
    this.#idle.push(first);
  }

  /** Instances that exist or are being made. */
  get size(): number {
    return this.#size;
  }

  /**
   * Runs `fn` with an instance of its own, in callers' order; drops the instance when `fn` answers
   * `plugin_failed`, else gives it to the next caller.
   *
   * @returns what `fn` resolves to.
   * @throws the error of making the first instance of an empty pool (every earlier one was dropped).
   */
  async run(fn: (inst: ResumeTokenStore) => Promise<ExportResult>): Promise<ExportResult> {
    const inst = await this.#acquire(); // counted busy from when it is handed out
    let broken = true;
    try {
      const r = await fn(inst);
      broken = !r.ok && r.code === "plugin_failed";
      return r;
    } finally {
      this.#busy--;
      this.#release(inst, broken);
    }
  }

  /** An idle instance, else a promise of the next one free (growing the pool when it has room). */
  #acquire(): Promise<ResumeTokenStore> {
    if (this.#waiting.length === 0) {
      const inst = this.#idle.pop();
      if (inst) {
        this.#busy++;
        return Promise.resolve(inst);
      }
    }
    const p = new Promise<ResumeTokenStore>((take, fail) => this.#waiting.push({ take, fail }));
    if (this.#size < this.max && this.#growing < this.#waiting.length) this.#grow();
    return p;
  }

  /** Makes one more instance; it serves the first waiting caller, or idles. */
  #grow(): void {
    this.#size++;
    this.#growing++;
    this.make().then(
      (inst) => {
        this.#growing--;
        this.#release(inst, false);
      },
      (e: unknown) => {
        this.#growing--;
        this.#size--;
        safeLog(this.logger, "warn", "mcp-resume handle store: could not add a plugin instance; calls wait for the running ones", { event: "handle_pool_grow_failed", error: String((e as Error)?.message ?? e) });
        if (this.#size === 0) for (const w of this.#waiting.splice(0)) w.fail(e);
        this.#settle();
      },
    );
  }

  /** Gives `inst` to the first waiting caller or back to the idle ones; closes it when broken. */
  #release(inst: ResumeTokenStore, broken: boolean): void {
    if (broken) {
      this.#size--;
      safeLog(this.logger, "warn", "mcp-resume handle store: a plugin instance failed and is dropped", { event: "handle_instance_dropped" });
      void inst.close().catch(() => undefined);
      // Callers still waiting get a new instance (an empty pool must grow, whatever is queued).
      if (this.#waiting.length > this.#growing && this.#size < this.max) this.#grow();
    } else {
      const next = this.#waiting.shift();
      if (next) {
        this.#busy++;
        next.take(inst);
      } else this.#idle.push(inst);
    }
    this.#settle();
  }

  /** After close: resolves {@link #drained} once nothing is busy, waiting or being made. */
  #settle(): void {
    if (this.#closed && this.#busy === 0 && this.#growing === 0 && this.#waiting.length === 0) this.#drained?.();
  }

  /** Waits for the calls in flight and queued, then closes every instance. Idempotent: every call resolves when that is done. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      this.#closed = true;
      await new Promise<void>((resolve) => {
        this.#drained = resolve;
        this.#settle();
      });
      const all = this.#idle.splice(0);
      this.#size -= all.length;
      await Promise.all(all.map((i) => i.close().catch(() => undefined)));
    })();
    return this.#closing;
  }
}

/**
 * `mcp-resume/mcp`: the adapter for the official MCP TypeScript SDK's
 * `McpServer` (`@modelcontextprotocol/sdk`, a peer dependency only this
 * subpath needs). One line gives a server session resume and handles:
 *
 * ```ts
 * const server = new McpServer({ name: "my-server", version: "1.0.0" });
 * const resume = attach(server, "my-server");
 * server.registerTool("counter_add", { inputSchema: { handle: z.string() } }, resume.tool(async ({ handle }, extra) => {
 *   const { value } = await resume.update(extra, handle, (v: { n: number }) => ({ n: v.n + 1 }));
 *   return { content: [{ type: "text", text: String(value.n) }] };
 * }));
 * await server.connect(new StdioServerTransport());
 * ```
 *
 * The adapter opens both stores in the background once the client has sent
 * `notifications/initialized` (so the MCP handshake never waits for the
 * plugin), or earlier when a tool asks for one, and closes them when the
 * server closes. The principal of a tool call is the user the SDK's bearer
 * authentication found (`extra.authInfo.extra.sub`, else `clientId`), `""`
 * without authentication (stdio: the process belongs to its one client); an
 * authenticated request naming neither is refused ({@link principalOf}). A store error thrown in a
 * tool wrapped with {@link Resume.tool} becomes a tool error (`isError`).
 *
 * @packageDocumentation
 */
import type { AuthInfo } from "@modelcontextprotocol/sdk/server/auth/types.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";

import { ConflictError, HandleExpiredError, InvalidOptionError, InvalidPrincipalError, InvalidValueError, MCPResumeError, StoreUnavailableError } from "./errors.js";
import { HandleStore, type Created, type HandleStoreOptions } from "./handles.js";
import { createStderrLogger, safeLog, type Logger } from "./logger.js";
import { ResumeTokenStore, type OpenOptions } from "./store.js";

/** Options of {@link attach} and {@link openResume}; a key not listed here is refused with {@link InvalidOptionError}. */
export interface ResumeOptions {
  /** Options of the resume-token store ({@link ResumeTokenStore.open}), or `false` for none (a server with no MCP host parent, such as Streamable HTTP). Default `{}`. */
  tokens?: OpenOptions | false;
  /** Options of the handle store ({@link HandleStore.open}), or `false` for none. Default `{}` (the environment, then the plugin's defaults). */
  handles?: HandleStoreOptions | false;
  /** How many times {@link Resume.update} retries after a conflict (another writer got in between), an integer ≥ 0. Default 5. */
  retries?: number;
  /** Where the adapter logs a store that could not be opened (and the stores' own logger, unless their options name one). Default {@link createStderrLogger}(). */
  logger?: Logger;
}

/**
 * What {@link attach} needs of an `McpServer` (`@modelcontextprotocol/sdk/server/mcp.js`): its
 * low-level `server` with the `oninitialized` and `onclose` hooks. Structural, so that a server from
 * another installed copy of the SDK is accepted too.
 */
export interface AttachableServer {
  server: { oninitialized?: (() => void) | undefined; onclose?: (() => void) | undefined };
}

/** What a tool callback of the SDK receives as its last argument; the adapter reads only `authInfo`. */
export interface ToolExtra {
  /** The validated access token of the request (Streamable HTTP with bearer auth); absent on stdio. */
  authInfo?: AuthInfo | undefined;
}

/** What {@link Resume.getJson} and {@link Resume.update} return: the decoded value and its generation (an integer ≥ 1). */
export interface JsonValue<T> {
  value: T;
  generation: number;
}

const RESUME_KEYS = new Set(["tokens", "handles", "retries", "logger"]);
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * The principal of a tool call, from what the SDK's bearer authentication found for the request
 * (`extra.authInfo`): the user its token verifier named as `authInfo.extra.sub` (a non-empty string),
 * else `authInfo.clientId`; `""` when the request carries no `authInfo` (stdio, or HTTP without auth:
 * one anonymous client). `clientId` is the OAuth client, which several users may share: a verifier whose
 * client serves several users must set `extra.sub`, or they share their handles.
 *
 * @param extra - the tool callback's last argument (or undefined).
 * @returns the principal string handed to the handle store.
 * @throws {@link InvalidPrincipalError} when the request is authenticated but its `authInfo` names
 *   neither a user nor a client: treating it as `""` would put every such caller in one anonymous
 *   principal, so the call is refused instead.
 */
export function principalOf(extra: ToolExtra | undefined): string {
  const auth = extra?.authInfo;
  if (auth === undefined || auth === null) return "";
  const sub = (auth.extra as Record<string, unknown> | undefined)?.["sub"];
  if (typeof sub === "string" && sub !== "") return sub;
  if (typeof auth.clientId === "string" && auth.clientId !== "") return auth.clientId;
  throw new InvalidPrincipalError("invalid_principal",
    "the request is authenticated but its authInfo names no user (extra.sub) and no clientId: the handle store cannot tell its callers apart; have the token verifier set one");
}

/**
 * A store error as the MCP tool result servers answer with: `isError: true`, structured content
 * `{"error": code, "message", "reason"?, "generation"?}` and the same JSON as its text.
 *
 * @param e - an {@link MCPResumeError}.
 * @returns the CallToolResult.
 */
export function toolError(e: MCPResumeError): CallToolResult {
  const o: Record<string, unknown> = { error: e.code, message: e.message };
  if (e instanceof HandleExpiredError) o["reason"] = e.reason;
  if (e instanceof StoreUnavailableError && e.reason !== undefined) o["reason"] = e.reason;
  if (e instanceof ConflictError) o["generation"] = e.generation;
  return { content: [{ type: "text", text: JSON.stringify(o) }], structuredContent: o, isError: true };
}

/**
 * One server's resume store and handle store, opened lazily in the background, with the JSON helpers
 * bound to a tool call's principal. Made by {@link attach} (one `McpServer`) or {@link openResume} (shared
 * by many servers, e.g. one per stateless HTTP request).
 */
export class Resume {
  readonly #app: string;
  readonly #tokenOptions: OpenOptions | false;
  readonly #handleOptions: HandleStoreOptions | false;
  readonly #logger: Logger;
  readonly #retries: number;
  #tokens: Promise<ResumeTokenStore> | undefined;
  #handles: Promise<HandleStore> | undefined;
  #closed = false;

  /** Use {@link attach} or {@link openResume}, which check `options` first. @param app - the app name. @param options - checked options. */
  constructor(app: string, options: ResumeOptions) {
    this.#app = app;
    this.#logger = options.logger ?? createStderrLogger();
    this.#tokenOptions = options.tokens === false ? false : { logger: this.#logger, ...(options.tokens ?? {}) };
    this.#handleOptions = options.handles === false ? false : { logger: this.#logger, ...(options.handles ?? {}) };
    this.#retries = options.retries ?? 5;
  }

  /**
   * Starts opening both stores in the background, if not started yet (what {@link attach} does at
   * `notifications/initialized`). Never rejects: a failure is logged and answered by {@link tokens}/{@link handles}.
   */
  start(): void {
    if (this.#tokenOptions !== false) void this.tokens().catch(() => undefined);
    if (this.#handleOptions !== false) void this.handles().catch(() => undefined);
  }

  /**
   * The resume-token store (spec 000: `load` the broker token at startup, `store` the one the broker
   * returns, `reject` a refused one), starting its open now if it has not started.
   *
   * @returns the open store, shared by every caller; closed by {@link close}.
   * @throws {@link MCPResumeError} (rejection) why it could not be opened (serve without resume), or
   *   `not_open` when the adapter is closed or was made with `tokens: false`.
   */
  tokens(): Promise<ResumeTokenStore> {
    if (this.#closed) return Promise.reject(new MCPResumeError("not_open", "mcp-resume: the adapter is closed"));
    const o = this.#tokenOptions;
    if (o === false) return Promise.reject(new MCPResumeError("not_open", "mcp-resume: this server has no resume store (tokens: false)"));
    this.#tokens ??= ResumeTokenStore.open(this.#app, o).catch((e: unknown) => {
      safeLog(this.#logger, "warn", "session resume unavailable", { event: "resume_unavailable", error: (e as Error)?.message ?? String(e) });
      throw e;
    });
    return this.#tokens;
  }

  /**
   * The handle store, starting its open now if it has not started.
   *
   * @returns the open store, shared by every caller; closed by {@link close}.
   * @throws {@link StoreUnavailableError} (rejection) `the handle store could not be opened: <why>`, or
   *   when the adapter is closed or was made with `handles: false`.
   */
  handles(): Promise<HandleStore> {
    if (this.#closed) return Promise.reject(new StoreUnavailableError("store_unavailable", "the handle store is closed"));
    const o = this.#handleOptions;
    if (o === false) return Promise.reject(new StoreUnavailableError("store_unavailable", "this server has no handle store (handles: false)"));
    this.#handles ??= HandleStore.open(this.#app, o).catch((e: unknown) => {
      const why = (e as Error)?.message ?? String(e);
      safeLog(this.#logger, "warn", "the handle store is unavailable; tools will answer its error", { event: "handle_store_unavailable", error: why });
      throw new StoreUnavailableError("store_unavailable", `the handle store could not be opened: ${why}`);
    });
    return this.#handles;
  }

  /** The principal of a tool call ({@link principalOf}): `extra.authInfo.extra.sub`, else `clientId`, else `""` without auth. Throws {@link InvalidPrincipalError} as principalOf does. */
  principal(extra: ToolExtra | undefined): string {
    return principalOf(extra);
  }

  /**
   * Wraps a tool callback so that a store error it throws ({@link MCPResumeError}) becomes the tool
   * error of {@link toolError}; any other error is rethrown (the SDK answers it as a plain tool error).
   *
   * @param cb - the callback as `registerTool` takes it.
   * @returns a callback of the same arguments.
   */
  tool<A extends unknown[]>(cb: (...args: A) => CallToolResult | Promise<CallToolResult>): (...args: A) => Promise<CallToolResult> {
    return async (...args: A) => {
      try {
        return await cb(...args);
      } catch (e) {
        if (e instanceof MCPResumeError) return toolError(e);
        throw e;
      }
    };
  }

  /**
   * Creates a handle holding `value` as JSON (UTF-8), bound to the tool call's principal.
   *
   * @param extra - the tool callback's last argument (its `authInfo` gives the principal).
   * @param value - any JSON-serialisable value.
   * @param options - `idleTtlMs`/`maxAgeMs` for this handle (milliseconds, at most the store's).
   * @returns the handle, generation 1, lifetimes (ms) and creation time (Unix ms).
   * @throws {@link InvalidValueError} when `value` has no JSON form; those of {@link HandleStore.create} and {@link handles}.
   */
  async createJson(extra: ToolExtra | undefined, value: unknown, options: { idleTtlMs?: number; maxAgeMs?: number } = {}): Promise<Created> {
    return (await this.handles()).create(principalOf(extra), jsonBytes(value), options);
  }

  /**
   * Reads a handle's JSON value.
   *
   * @returns the decoded value and its generation.
   * @throws {@link InvalidValueError} when the handle holds no JSON; those of {@link HandleStore.get} and {@link handles}.
   */
  async getJson<T = unknown>(extra: ToolExtra | undefined, handle: string): Promise<JsonValue<T>> {
    const v = await (await this.handles()).get(handle, principalOf(extra));
    return { value: jsonOf(v.data) as T, generation: v.generation };
  }

  /**
   * Replaces a handle's value with `value` as JSON. Without `expect` the write is unconditional; with it,
   * only when the current generation is `expect`.
   *
   * @returns the new generation.
   * @throws {@link ConflictError} (with the current generation), {@link InvalidValueError}; those of {@link HandleStore.put}.
   */
  async putJson(extra: ToolExtra | undefined, handle: string, value: unknown, options: { expect?: number } = {}): Promise<number> {
    return (await this.handles()).put(handle, principalOf(extra), jsonBytes(value), options);
  }

  /**
   * Read-modify-write with compare-and-set: reads the handle's JSON, applies `fn`, writes the result
   * with `expect` = the generation read, and on a conflict (another writer got in between) starts over
   * after a random wait of up to 2^attempt ms (32 at most), at most `retries` times (the adapter's option,
   * default 5).
   *
   * @param fn - the new value from the current one; it may run more than once, so it must not have side effects.
   * @returns the value written and its generation.
   * @throws {@link ConflictError} when every attempt met a conflict; those of {@link getJson} and {@link putJson}, and whatever `fn` throws.
   */
  async update<T = unknown, R = T>(extra: ToolExtra | undefined, handle: string, fn: (value: T) => R | Promise<R>, options: { retries?: number } = {}): Promise<JsonValue<R>> {
    const retries = options.retries ?? this.#retries;
    for (let attempt = 0; ; attempt++) {
      const cur = await this.getJson<T>(extra, handle);
      const next = await fn(cur.value);
      try {
        return { value: next, generation: await this.putJson(extra, handle, next, { expect: cur.generation }) };
      } catch (e) {
        if (!(e instanceof ConflictError) || attempt >= retries) throw e;
        // A random wait up to 2^attempt ms (32 at most; "full jitter"), so that writers that lost a race at the
        // same moment do not race again in lockstep.
        await new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(2 ** attempt, 32)));
      }
    }
  }

  /** Closes whichever stores were opened (waiting for their pending calls). Idempotent; afterwards {@link tokens} and {@link handles} reject. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const opened = [this.#tokens, this.#handles].filter((p): p is Promise<ResumeTokenStore> | Promise<HandleStore> => p !== undefined);
    await Promise.all(opened.map((p) => p.then((s) => s.close(), () => undefined)));
  }

  /** {@link close}, for `await using`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}

/** `value` as UTF-8 JSON bytes, or {@link InvalidValueError}. */
function jsonBytes(value: unknown): Uint8Array {
  let s: string | undefined;
  try {
    s = JSON.stringify(value);
  } catch (e) {
    throw new InvalidValueError("invalid_value", `the value has no JSON form: ${(e as Error)?.message ?? String(e)}`);
  }
  if (s === undefined) throw new InvalidValueError("invalid_value", `the value has no JSON form: ${typeof value}`);
  return encoder.encode(s);
}

/** The JSON value of `data`, or {@link InvalidValueError} when it is not UTF-8 JSON. */
function jsonOf(data: Uint8Array): unknown {
  try {
    return JSON.parse(decoder.decode(data));
  } catch {
    throw new InvalidValueError("invalid_value", "the handle holds no JSON value");
  }
}

/** `options` checked: an object of known keys, `retries` an integer ≥ 0. */
function checked(options: ResumeOptions | undefined): ResumeOptions {
  if (options === undefined) return {};
  if (options === null || typeof options !== "object" || Array.isArray(options)) throw new InvalidOptionError("invalid_option", "options must be an object");
  const unknown = Object.keys(options).filter((k) => !RESUME_KEYS.has(k));
  if (unknown.length > 0) throw new InvalidOptionError("invalid_option", `unknown option ${unknown.map((k) => JSON.stringify(k)).join(", ")}: attach knows ${[...RESUME_KEYS].join(", ")}`);
  const r = options.retries;
  if (r !== undefined && !(Number.isInteger(r) && r >= 0)) throw new InvalidOptionError("invalid_option", `retries must be an integer of 0 or more, not ${JSON.stringify(r)}`);
  return options;
}

/**
 * A {@link Resume} not tied to one server: for servers made per request (stateless Streamable HTTP),
 * which share its stores. Nothing opens until {@link Resume.start}, {@link Resume.tokens} or
 * {@link Resume.handles}; close it with {@link Resume.close} when the process stops serving.
 *
 * @param app - the server's app name (1–64 of `[A-Za-z0-9._-]`; checked by the plugin at open).
 * @param options - see {@link ResumeOptions}.
 * @throws {@link InvalidOptionError} for an unknown option or a bad `retries`.
 */
export function openResume(app: string, options?: ResumeOptions): Resume {
  return new Resume(app, checked(options));
}

/**
 * Attaches resume and handles to `server`: both stores start opening in the background when the client
 * sends `notifications/initialized` (chaining any `server.server.oninitialized` set before), or earlier
 * when a tool asks for one; both close when the server closes (chaining `server.server.onclose`).
 *
 * @param server - the `McpServer`, before `connect`.
 * @param app - the server's app name (1–64 of `[A-Za-z0-9._-]`; checked by the plugin at open).
 * @param options - see {@link ResumeOptions}.
 * @returns the {@link Resume} the tools use.
 * @throws {@link InvalidOptionError} for an unknown option or a bad `retries`.
 */
export function attach(server: AttachableServer, app: string, options?: ResumeOptions): Resume {
  const resume = new Resume(app, checked(options));
  const low = server.server;
  const initialized = low.oninitialized;
  low.oninitialized = () => {
    initialized?.();
    resume.start();
  };
  const closed = low.onclose;
  low.onclose = () => {
    closed?.();
    void resume.close();
  };
  return resume;
}

/**
 * `mcp_resume_eval` for Node (hostfuncs/README.md, `mcp_resume_eval`): runs
 * one plugin-written Lua script on Redis or Valkey with node-redis (`redis`),
 * the handle store's Redis backend. node-redis is asynchronous, so this runs
 * only when the plugin runs in Extism's worker mode (store.ts, `worker`),
 * where host functions may return a promise; the synchronous host answers
 * `unsupported` ({@link HostFunctions.call}).
 *
 * One client per store and (URL, cluster), created on first use, closed with
 * the store. No command is ever resent: the offline queue is off
 * (`disableOfflineQueue`), a timed-out call drops its client (the next call
 * connects afresh), and only the connection is retried, a few times, within
 * the call's deadline. No message quotes the URL (it may hold a password).
 * Both forms of the request (JSON, and the binary form of evalbin.ts) run
 * here, on the same clients: only the keys' and arguments' type (strings or
 * raw Buffers) and the reply's decoding differ.
 *
 * @packageDocumentation
 */
import type { Json } from "./hostfuncs.js";

type Redis = typeof import("redis");
/** What both clients (single node, cluster) share here. */
interface Client {
  readonly isOpen: boolean;
  readonly isReady: boolean;
  connect(): Promise<unknown>;
  destroy(): void;
  on(event: string, listener: (...a: unknown[]) => void): unknown;
  off(event: string, listener: (...a: unknown[]) => void): unknown;
  eval(script: string, options: { keys: Array<string | Buffer>; arguments: Array<string | Buffer> }): Promise<unknown>;
  evalSha(sha1: string, options: { keys: Array<string | Buffer>; arguments: Array<string | Buffer> }): Promise<unknown>;
  withTypeMapping(mapping: Record<number, unknown>): Client;
}
/** One client and its first connect (rejects when the reconnect strategy gave up). */
interface Entry {
  client: Client;
  /** The same client (same connection) answering raw bytes: {@link bytesMapping}, for the binary form. */
  bytes: Client;
  connected: Promise<unknown>;
  failed: boolean;
}

/**
 * A validated `mcp_resume_eval` request: keys and args are strings (the JSON form) or Buffers of raw bytes
 * (the binary form, evalbin.ts), sent as they are.
 */
export interface EvalRequest<S extends string | Buffer = string> {
  url: string;
  cluster: boolean;
  sha1?: string;
  script?: string;
  keys: S[];
  args: S[];
  timeoutMs: number;
}

/** The largest `timeout_ms` in milliseconds (hostfuncs/README.md, `mcp_resume_eval`). */
export const MAX_EVAL_TIMEOUT_MS = 60_000;

/** An `mcp_resume_eval` failure: the wire's code and a message that never holds the URL. */
export class EvalError extends Error {
  /** @param code - `invalid_request`, `unsupported`, `noscript`, `script`, `auth`, `unavailable` or `timeout`. */
  constructor(readonly code: "invalid_request" | "unsupported" | "noscript" | "script" | "auth" | "unavailable" | "timeout", message: string) {
    super(message);
  }
}

const strings = (v: unknown): v is string[] => Array.isArray(v) && v.every((x) => typeof x === "string");

/**
 * Checks an `mcp_resume_eval` request before any network I/O.
 *
 * @throws {@link EvalError} `invalid_request`: no `url` string, a `cluster` that is not a boolean, both or
 *   neither of `sha1` (40 lowercase hex digits) and `script`, `keys`/`args` not lists of strings,
 *   `timeout_ms` not an integer 1–60000.
 */
export function evalRequest(req: Json): EvalRequest {
  const bad = (m: string): EvalError => new EvalError("invalid_request", m);
  if (typeof req["url"] !== "string" || !/^rediss?:\/\//.test(req["url"])) throw bad('"url" must be a redis:// or rediss:// URL');
  const cluster = req["cluster"] ?? false;
  if (typeof cluster !== "boolean") throw bad('"cluster" must be a boolean');
  // Absent, null and "" are not given (the Go host's rule): an empty script is refused, never run.
  const [sha1, script] = [req["sha1"], req["script"]].map((v) => (v === null || v === "" ? undefined : v));
  if ((sha1 === undefined) === (script === undefined)) throw bad('exactly one of "sha1" and "script" must be given');
  if (sha1 !== undefined && (typeof sha1 !== "string" || !/^[0-9a-f]{40}$/.test(sha1))) throw bad('"sha1" must be 40 lowercase hex digits');
  if (script !== undefined && typeof script !== "string") throw bad('"script" must be a string');
  if (!strings(req["keys"]) || !strings(req["args"])) throw bad('"keys" and "args" must be lists of strings');
  const t = req["timeout_ms"];
  if (typeof t !== "number" || !Number.isInteger(t) || t < 1 || t > MAX_EVAL_TIMEOUT_MS) throw bad(`"timeout_ms" must be an integer from 1 to ${MAX_EVAL_TIMEOUT_MS}`);
  return { url: req["url"], cluster, keys: req["keys"], args: req["args"], timeoutMs: t, ...(sha1 !== undefined ? { sha1: sha1 as string } : { script: script as string }) };
}

/** A reply of node-redis (RESP2) as the wire's JSON: null, integer, string, array, `{"err"}` for an error inside an array. */
export function replyJson(r: unknown): unknown {
  if (r === null || r === undefined) return null;
  if (typeof r === "number") return Math.trunc(r);
  if (typeof r === "bigint") return Number(r);
  if (typeof r === "string") return r;
  if (typeof r === "boolean") return r ? 1 : null; // RESP2 never sends one; Lua's true is 1, false nil
  if (Buffer.isBuffer(r)) return r.toString("utf8");
  if (r instanceof Error) return { err: r.message };
  if (Array.isArray(r)) return r.map(replyJson);
  return String(r);
}

/**
 * Server errors that mean "cannot serve now" (hostfuncs/README.md: `unavailable`), not a script failure: BUSY
 * (another client's script holds the server), TRYAGAIN, and a MOVED or ASK left after the cluster client's
 * redirects too; none of them ran the script.
 */
const UNAVAILABLE_REPLY = /^(LOADING|BUSY|CLUSTERDOWN|READONLY|MASTERDOWN|TRYAGAIN|MOVED|ASK)\b/;
/** Server errors that refuse the URL's credentials (hostfuncs/README.md: `auth`, ABI 9); the last, a server older than 6's. */
const AUTH_REPLY = /^(NOAUTH\b|WRONGPASS\b|ERR invalid password)/;

/** The words of `e` (an AggregateError's inner messages, a system error's code when it has no message). */
function words(e: unknown): string {
  const x = e as (Error & { code?: string; errors?: unknown[]; originalError?: unknown; socketError?: unknown }) | null;
  if (x?.socketError instanceof Error) return words(x.socketError); // ReconnectStrategyError: what the socket said
  if (Array.isArray(x?.errors) && x.errors.length > 0) return [...new Set(x.errors.map(words))].join("; ");
  return x?.message || x?.code || String(e);
}

/**
 * The failure `e` of node-redis as an {@link EvalError}: an error reply `NOSCRIPT` → `noscript`, one of
 * {@link AUTH_REPLY} → `auth` (also when the reconnect strategy gave up on one), one of
 * {@link UNAVAILABLE_REPLY} → `unavailable`, any other → `script` (the server's text, prefix kept); anything
 * else (refused, reset, DNS, TLS, offline, closed) → `unavailable`. `secrets` are cut out of the message.
 */
export function evalError(e: unknown, ErrorReply: Redis["ErrorReply"], secrets: string[]): EvalError {
  let text = words(e);
  for (const s of secrets) if (s.length >= 3) text = text.replaceAll(s, "***");
  if (AUTH_REPLY.test(text)) return new EvalError("auth", text);
  if (e instanceof ErrorReply && !(e as { socketError?: unknown }).socketError) {
    if (text.startsWith("NOSCRIPT")) return new EvalError("noscript", text);
    if (!UNAVAILABLE_REPLY.test(text)) return new EvalError("script", text);
  }
  return new EvalError("unavailable", `redis: ${text}`);
}

/** What may not appear in a message: the URL, its user and password (raw and decoded). */
function secretsOf(url: string): string[] {
  try {
    const u = new URL(url);
    return [url, u.password, decodeURIComponent(u.password), u.username, decodeURIComponent(u.username)].filter((s) => s !== "");
  } catch {
    return [url];
  }
}

let redisModule: Promise<Redis> | undefined;

/**
 * Imports node-redis once per process. Only Redis stores pay it, and it is most of their extra start
 * (its ~1,700 command modules: examples/bench/typescript/worker_start.mjs), so HandleStore.open starts it
 * while the plugin's thread starts.
 */
export function loadRedis(): Promise<Redis> {
  // `redis` is an optional dependency: only the Redis backend needs it, and a missing one says how to get it.
  redisModule ??= import("redis").catch((e: unknown) => {
    const missing = (e as { code?: unknown })?.code === "ERR_MODULE_NOT_FOUND";
    throw new Error(missing
      ? "the Redis backend needs node-redis, an optional dependency that is not installed: npm install redis"
      : `cannot load node-redis: ${(e as Error)?.message ?? String(e)}`);
  });
  redisModule.catch(() => (redisModule = undefined));
  return redisModule;
}

/**
 * The Redis side of one store: its clients by (URL, cluster) and the eval. Every call is bounded by its
 * `timeout_ms`, connecting included; calls come one at a time (the store queues its plugin calls).
 */
export class RedisEval {
  readonly #entries = new Map<string, Entry>();
  #closed = false;

  /**
   * Runs one validated request of the JSON form.
   *
   * @returns the reply converted by {@link replyJson}.
   * @throws {@link EvalError}: `invalid_request` (a URL node-redis refuses to parse), `noscript`, `script`,
   *   `auth` (NOAUTH, WRONGPASS), `unavailable`, `timeout` (no reply within `timeoutMs`, connecting included;
   *   the command is not resent and its client is dropped, so its late reply is never read as another's).
   */
  async eval(req: EvalRequest): Promise<unknown> {
    return replyJson(await this.#run(req, false));
  }

  /**
   * Runs one validated request of the binary form (evalbin.ts) on the same client, connection and rules as
   * {@link eval}: keys and args go as their raw bytes.
   *
   * @returns node-redis's reply, as the server sent it: a bulk or status string is a Buffer of its exact
   *   bytes, an integer a decimal string (exact to 64 bits), nil `null`, an array an Array, an error reply
   *   inside an array an `ErrorReply` (its message the server's text, prefix kept); evalbin.ts encodes it.
   * @throws {@link EvalError} as {@link eval}.
   */
  evalBytes(req: EvalRequest<Buffer>): Promise<unknown> {
    return this.#run(req, true);
  }

  /** One request on this store's client for its URL (created and connected on first use), within its deadline. */
  async #run(req: EvalRequest<string | Buffer>, bytes: boolean): Promise<unknown> {
    const deadline = performance.now() + req.timeoutMs;
    if (this.#closed) throw new EvalError("unavailable", "the store is closed");
    const key = `${req.cluster ? "cluster" : "node"} ${req.url}`;
    const options = { keys: req.keys, arguments: req.args };
    let redis: Redis | undefined;
    try {
      // Everything within the deadline: the library's first import, connecting, the command.
      return await within(deadline, async () => {
        redis = await loadRedis();
        let e = this.#entries.get(key);
        if (e && (e.failed || !e.client.isOpen)) {
          this.#drop(key); // the reconnect strategy gave up: start over
          e = undefined;
        }
        e ??= this.#create(redis, key, req);
        await e.connected;
        if (!e.client.isReady) await readyOrTerminated(e.client); // reconnecting after a broken connection
        const client = bytes ? e.bytes : e.client;
        return req.sha1 !== undefined ? client.evalSha(req.sha1, options) : client.eval(req.script!, options);
      });
    } catch (err) {
      if (err instanceof EvalError) throw err;
      if (err === TIMED_OUT) {
        this.#drop(key); // its reply may still come: never read it, never resend
        throw new EvalError("timeout", `redis: no reply within ${req.timeoutMs} ms`);
      }
      if (!redis) throw new EvalError("unavailable", `cannot load the node-redis package: ${(err as Error)?.message ?? String(err)}`);
      throw evalError(err, redis.ErrorReply, secretsOf(req.url));
    }
  }

  /** Destroys every client (pending commands are dropped, none is resent). Idempotent. */
  close(): void {
    this.#closed = true;
    for (const key of [...this.#entries.keys()]) this.#drop(key);
  }

  /** A new client for `req` (node or cluster), connecting; its connect failure marks it failed. */
  #create(redis: Redis, key: string, req: EvalRequest<string | Buffer>): Entry {
    try {
      redis.RedisClient.parseURL(req.url); // what createClient and the cluster's root node would refuse
    } catch (e) {
      throw new EvalError("invalid_request", `the url is not one node-redis accepts: ${evalError(e, redis.ErrorReply, secretsOf(req.url)).message.replace(/^redis: /, "")}`);
    }
    const socket = {
      connectTimeout: req.timeoutMs,
      // Bounded: three reconnects (50, 100, 200 ms), then the client gives up and the next call starts over.
      reconnectStrategy: (retries: number) => (retries < 3 ? 50 << retries : false),
      ...(req.url.startsWith("rediss:") ? { tls: true as const } : {}),
    };
    const common = { RESP: 2 as const, disableOfflineQueue: true, disableClientInfo: true, socket };
    // A password without a user is the default user's (hostfuncs/README.md, mcp_resume_eval): AUTH default <pw>,
    // which a server whose default user needs no password accepts, as go-redis's HELLO does.
    const u = new URL(req.url);
    if (u.password !== "" && u.username === "") u.username = "default";
    let client: Client;
    if (req.cluster) {
      const auth = { ...(u.username ? { username: decodeURIComponent(u.username) } : {}), ...(u.password ? { password: decodeURIComponent(u.password) } : {}) };
      // Discovered nodes take only `defaults`: the credentials and TLS go there too.
      client = redis.createCluster({ rootNodes: [{ url: req.url }], defaults: { ...common, ...auth }, RESP: 2, useReplicas: false }) as unknown as Client;
    } else {
      client = redis.createClient({ url: u.toString(), ...common }) as unknown as Client;
    }
    client.on("error", () => undefined); // each failure is answered to the plugin; an unheard 'error' would crash the process
    const entry: Entry = { client, bytes: client.withTypeMapping(bytesMapping(redis)), connected: Promise.resolve(), failed: false };
    entry.connected = client.connect().then(
      () => (client as unknown as { unref?: () => void }).unref?.(), // an idle store never keeps the process alive
      (e: unknown) => {
        entry.failed = true;
        throw e;
      },
    );
    entry.connected.catch(() => undefined);
    this.#entries.set(key, entry);
    return entry;
  }

  #drop(key: string): void {
    const e = this.#entries.get(key);
    this.#entries.delete(key);
    try {
      e?.client.destroy();
    } catch {} // already destroyed
  }
}

/**
 * The binary form's type mapping (node-redis's `withTypeMapping`): bulk and status strings as Buffers of the
 * exact bytes the server sent (never decoded as UTF-8), integers as decimal strings (exact where a Number is
 * not, past 2^53). Errors inside an array stay `ErrorReply`s; RESP2 sends no other type.
 */
function bytesMapping(redis: Redis): Record<number, unknown> {
  const T = redis.RESP_TYPES;
  return { [T.BLOB_STRING]: Buffer, [T.SIMPLE_STRING]: Buffer, [T.NUMBER]: String };
}

const TIMED_OUT = Symbol("timed out");

/**
 * `fn()`, or rejects with {@link TIMED_OUT} at `deadline` (performance.now() milliseconds), never before
 * (Node's timers run on a millisecond loop clock and may fire a fraction early: re-armed for the rest).
 * The timer keeps the process alive meanwhile.
 */
function within<T>(deadline: number, fn: () => Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const work = fn();
  work.catch(() => undefined); // abandoned at the deadline: its late failure is nobody's
  const expiry = new Promise<never>((_, reject) => {
    const arm = (): void => {
      const left = deadline - performance.now();
      if (left <= 0) return reject(TIMED_OUT);
      timer = setTimeout(arm, Math.ceil(left));
    };
    arm();
  });
  return Promise.race([work, expiry]).finally(() => clearTimeout(timer));
}

/** Resolves when `client` is ready again, rejects when its reconnect strategy gave up. */
function readyOrTerminated(client: Client): Promise<void> {
  return new Promise((resolve, reject) => {
    const ready = (): void => {
      client.off("terminated", terminated);
      resolve();
    };
    const terminated = (cause: unknown): void => {
      client.off("ready", ready);
      reject(cause);
    };
    client.on("ready", ready);
    client.on("terminated", terminated);
  });
}

/**
 * The twelve host functions of the plugin for Node (hostfuncs/README.md, ABI
 * version 11): operating-system primitives with no policy, `mcp_resume_eval`
 * (redis.ts; asynchronous, so only through {@link HostFunctions.callAsync} in
 * Extism's worker mode; its binary form in evalbin.ts) and `mcp_resume_crypto`
 * (crypto.ts; a binary request and response). None ever throws:
 * every failure, a malformed request included, is the response
 * `{"error": {"code", "message"}}`. Node specifics: `peer`, `sysctl` and
 * `procargs` answer `unsupported`; on macOS `ps` runs `/bin/ps`; the lock is
 * an abstract Unix socket on Linux, bound ahead of the plugin's call by
 * {@link HostFunctions.lockAhead} for the resume store and otherwise
 * synchronously by the process's lock worker (lockworker.ts), and `O_EXLOCK`
 * on macOS. Node opens every file close-on-exec (libuv adds `O_CLOEXEC`).
 * Over 500 lines: one function per contract section, kept together.
 *
 * @packageDocumentation
 */
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import { createServer, type Server } from "node:net";
import { userInfo } from "node:os";
import * as path from "node:path";

import { CryptoRequestError, serveCrypto, type CryptoFiles } from "./crypto.js";
import { decodeEvalBinary, encodeEvalReply, EVAL_BINARY_FORM } from "./evalbin.js";
import { LockWorker, lockWorker, sleepSync } from "./lockworker.js";
import { safeLog, type LogLevel, type Logger } from "./logger.js";
import { EvalError, evalRequest, RedisEval } from "./redis.js";

/** Version of the plugin/host contract this host implements. */
export const ABI_VERSION = "11";

/** Wasm import module of every host function (Extism's default for user functions). */
export const NAMESPACE = "extism:host/user";

/** Host function names, in the order of hostfuncs/README.md. */
export const FUNCTIONS = ["mcp_resume_facts", "mcp_resume_inspect", "mcp_resume_prepare_dir", "mcp_resume_read", "mcp_resume_write",
  "mcp_resume_remove", "mcp_resume_list", "mcp_resume_lock", "mcp_resume_log", "mcp_resume_unlock", "mcp_resume_eval", "mcp_resume_crypto"] as const;

/** The largest `limit` of `mcp_resume_read` in bytes (8 MiB: a sealed record of the largest handle value fits one read). */
export const MAX_READ_LIMIT = 8 << 20;
/** The largest `wait_ms` of `mcp_resume_lock`, in milliseconds. */
export const MAX_LOCK_WAIT_MS = 10_000;

/** Error codes of the contract (hostfuncs/README.md, "Error codes"). */
export type ErrorCode = "not_found" | "permission" | "unsupported" | "invalid_request" | "unsafe" | "busy" | "not_dir" | "exists" | "no_space" | "read_only" | "io"
  | "noscript" | "script" | "auth" | "unavailable" | "timeout";

/** errno names and their codes (hostfuncs/README.md, "Error codes"); any other errno is `io`. */
const ERRNO_CODES: Record<string, ErrorCode> = {
  ENOENT: "not_found", ESRCH: "not_found", EBADF: "not_found", EACCES: "permission", EPERM: "permission", ELOOP: "unsafe",
  ENOTDIR: "not_dir", EEXIST: "exists", ENOSPC: "no_space", EDQUOT: "no_space", EROFS: "read_only", EISDIR: "unsafe",
};

/** A JSON object: a request, a response, an inspect operation or its result. */
export type Json = Record<string, unknown>;

/** A failure answered as `{"error": {code, message}}`; thrown inside, caught by {@link HostFunctions.call}. */
export class HostError extends Error {
  /** @param code - the contract's error code. @param message - what failed; never a token. */
  constructor(readonly code: ErrorCode, message: string) {
    super(message);
  }
}

const bad = (message: string): HostError => new HostError("invalid_request", message);
/** `mcp_resume_eval` outside worker mode (either form). */
const evalUnsupported = (): HostError => new HostError("unsupported", "mcp_resume_eval: Redis needs Extism's worker mode, where a host function may wait for the network; HandleStore.open runs the plugin there when stateUrl or MCP_RESUME_STATE_URL is set");
const INT_MAX = 0x7fffffff;

/** A Node system error as a {@link HostError} coded by {@link ERRNO_CODES}, its message prefixed `what: `; a HostError as is. */
function osError(what: string, e: unknown): HostError {
  if (e instanceof HostError) return e;
  if (e instanceof EvalError) return new HostError(e.code, e.message);
  return new HostError(ERRNO_CODES[(e as NodeJS.ErrnoException | null)?.code ?? ""] ?? "io", `${what}: ${(e as Error | null)?.message ?? String(e)}`);
}

/** Any error as the wire's `{code, message}` ({@link osError}: a HostError as is, an unknown failure `io`). */
function toWire(e: unknown, what: string): { code: ErrorCode; message: string } {
  const { code, message } = osError(what, e);
  return { code, message };
}

/** Runs `fn`, throwing {@link osError}`(what, …)` for what it throws. */
function sys<T>(what: string, fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    throw osError(what, e);
  }
}

/** `fn()`, or `fallback` when it throws. */
function orElse<T>(fn: () => T, fallback: T): T {
  try {
    return fn();
  } catch {
    return fallback;
  }
}

/**
 * `facts.cwd`: the working directory when this module was first evaluated (`process.cwd()`, `""` when it throws: a
 * deleted directory), which is when the server imported the binding, before its own code could change directory.
 * A server that calls `process.chdir` before it opens a store (to its install directory, say) still reports the
 * directory it was launched in, part of the plugin's default instance key and the base of a relative `stateRoot`.
 * As the Go host's value at package init and the Python binding's at import; a chdir in code that runs before
 * the binding is imported (a module imported ahead of it, a `--import` hook) is not seen (README, "API", the
 * launch directory).
 */
const LAUNCH_CWD = orElse(() => process.cwd(), "");

/** `b` as UTF-8 with every byte of an invalid sequence as one U+FFFD, as Go's encoding/json sends it (Node's decoder gives one per sequence). */
function utf8(b: Buffer): string {
  let out = b.toString("utf8");
  if (!out.includes("\ufffd")) return out;
  const strict = new TextDecoder("utf-8", { fatal: true });
  out = "";
  for (let i = 0; i < b.length; ) {
    const n = b[i]! < 0xc0 ? 1 : b[i]! < 0xe0 ? 2 : b[i]! < 0xf0 ? 3 : 4;
    const one = orElse(() => strict.decode(b.subarray(i, i + n)), undefined);
    out += one ?? "\ufffd";
    i += one === undefined ? 1 : n;
  }
  return out;
}

/** The field `key` of `req`: a string (`str`), an integer in `[min, max]` (`int`), else `invalid_request`. */
function str(req: Json, key: string): string {
  if (typeof req[key] !== "string") throw bad(`request lacks the string ${JSON.stringify(key)}`);
  return req[key] as string;
}
function int(req: Json, key: string, min: number, max: number): number {
  const v = req[key];
  if (typeof v !== "number" || !Number.isInteger(v) || v < min || v > max) throw bad(`${JSON.stringify(key)} must be an integer from ${min} to ${max}`);
  return v;
}

/** `name` (raw bytes) if it obeys the name rule (1–255 bytes, not `.` or `..`, no `/` or NUL), else throws `invalid_request`; as {@link nameOf}, for the binary `mcp_resume_crypto`. */
function nameBytes(name: Buffer, key: string): Buffer {
  const dots = name.length <= 2 && name.every((c) => c === 0x2e);
  if (name.length < 1 || name.length > 255 || dots || name.includes(0x2f) || name.includes(0)) {
    throw bad(`${key} ${JSON.stringify(utf8(name))} is not one path element (1-255 bytes, not . or .., no / or NUL)`);
  }
  return name;
}

/** `req[key]` if it obeys the name rule (hostfuncs/README.md, "Names and the state directory"), else throws `invalid_request`. */
export function nameOf(req: Json, key = "name"): string {
  const n = req[key];
  const len = typeof n === "string" && Buffer.from(n).toString() === n ? Buffer.byteLength(n) : 0; // 0: not a string, or a lone surrogate
  if (typeof n !== "string" || len < 1 || len > 255 || n === "." || n === ".." || /[/\0]/.test(n)) {
    throw bad(`${key} ${JSON.stringify(n)} is not one path element (1-255 bytes, not . or .., no / or NUL)`);
  }
  return n;
}

/** The `pid` of an inspect op (`P` of hostfuncs/README.md, `mcp_resume_inspect`; `"self"` only if `self`), else throws `invalid_request`. */
export function pidOf(op: Json, self: boolean): string {
  const p = op["pid"];
  if (typeof p !== "string" || !((self && p === "self") || (/^[1-9][0-9]*$/.test(p) && Number(p) <= INT_MAX))) throw bad(`pid ${JSON.stringify(p)} is not a process ID${self ? ' or "self"' : ""}`);
  return p;
}

/** The `fd` of an inspect op, an integer 0..2147483647, else throws `invalid_request`. */
export function fdOf(op: Json): number {
  return int(op, "fd", 0, INT_MAX);
}

/**
 * Whether `s` is standard padded base64, checked in one linear pass: a length that is a multiple of 4, the
 * alphabet, and at most two `=` at the end only. (A regex of repeated 4-character groups backtracks
 * recursively and overflows V8's stack on values of a few MiB.)
 */
function isBase64(s: string): boolean {
  if (s.length % 4 !== 0) return false;
  let end = s.length;
  if (s.endsWith("==")) end -= 2;
  else if (s.endsWith("=")) end -= 1;
  for (let i = 0; i < end; i++) {
    const c = s.charCodeAt(i);
    const ok = (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || (c >= 48 && c <= 57) || c === 43 || c === 47;
    if (!ok) return false;
  }
  return true;
}
const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW, O_NONBLOCK } = fs.constants;
/** `O_EXLOCK` on macOS (`<sys/fcntl.h>`); Node's `fs.constants` lacks it. */
const O_EXLOCK_DARWIN = 0x20;

/** The most bytes a data read of `/proc` returns (hostfuncs/README.md, `mcp_resume_inspect`; Go: hostfuncs.MaxProcRead). */
export const MAX_PROC_READ = 65536;
/** The most bytes `environ` and `net` return, files that grow with the system: 1 MiB (Go: hostfuncs.MaxProcTableRead). */
export const MAX_PROC_TABLE_READ = 1 << 20;
/** The namespaces the `ns` op reads, `/proc/<P>/ns/<ns>` (Go: hostfuncs.Namespaces); any other `ns` is `invalid_request`. */
export const NAMESPACES: readonly string[] = Object.freeze(["net", "mnt", "uts", "ipc", "user", "cgroup", "pid"]);
/** The socket tables the `net` op reads, `/proc/<P>/net/<table>` (Go: hostfuncs.NetTables); any other `table` is `invalid_request`. */
export const NET_TABLES: readonly string[] = Object.freeze(["tcp", "tcp6", "udp", "udp6", "unix"]);

/**
 * The file-backed `/proc` ops (Go: hostfuncs.ProcOpOf): `/proc/<path(P, N, X)>` read (`data`, at most `max`
 * bytes) or readlink'd (`target`); `pid`/`fd`: members they take; `one`: the member X, a name of its fixed list.
 */
const PROC_OPS: Record<string, { read: "data" | "target"; path: (p: string, n: number, x: string) => string; pid?: true; fd?: true; one?: readonly [string, readonly string[]]; max?: number }> = {
  boot_id: { read: "data", path: () => "sys/kernel/random/boot_id" },
  self: { read: "target", path: () => "self" },
  timens: { read: "data", path: () => "self/timens_offsets" },
  stat: { read: "data", pid: true, path: (p) => `${p}/stat` },
  cmdline: { read: "data", pid: true, path: (p) => `${p}/cmdline` },
  pid_ns: { read: "target", pid: true, path: (p) => `${p}/ns/pid` },
  fd_link: { read: "target", pid: true, fd: true, path: (p, n) => `${p}/fd/${n}` },
  environ: { read: "data", pid: true, max: MAX_PROC_TABLE_READ, path: (p) => `${p}/environ` },
  ns: { read: "target", pid: true, one: ["ns", NAMESPACES], path: (p, _, ns) => `${p}/ns/${ns}` },
  net: { read: "data", pid: true, one: ["table", NET_TABLES], max: MAX_PROC_TABLE_READ, path: (p, _, t) => `${p}/net/${t}` },
};

/** The member `key` of an inspect op if it is a string of `list`, else throws `invalid_request` (a missing one too). */
function oneOf(op: Json, [key, list]: readonly [string, readonly string[]]): string {
  const v = op[key];
  if (typeof v !== "string" || !list.includes(v)) throw bad(`${JSON.stringify(key)} must be one of ${list.join(", ")}`);
  return v;
}

/**
 * Reads at most `max` bytes of `file`, opened `O_RDONLY|O_NOFOLLOW|flags`; `check` may refuse the open file by
 * its fstat. The buffer starts at the file's size plus one (4 KiB for `/proc`'s size 0) and doubles up to `max`,
 * so an 8 MiB limit costs a small record no 8 MiB allocation.
 */
function readFile(file: fs.PathLike, max: number, flags = 0, check?: (st: fs.Stats) => void): Buffer {
  const fd = fs.openSync(file, O_RDONLY | O_NOFOLLOW | flags);
  try {
    const st = fs.fstatSync(fd);
    check?.(st);
    let buf = Buffer.allocUnsafe(Math.min(max, st.size > 0 ? st.size + 1 : 4096));
    let n = 0;
    for (let r = 1; n < max && r > 0; n += r) {
      if (n === buf.length) buf = Buffer.concat([buf, Buffer.allocUnsafe(Math.min(max, buf.length * 2) - buf.length)]);
      r = fs.readSync(fd, buf, n, buf.length - n, null);
    }
    return buf.subarray(0, n);
  } finally {
    fs.closeSync(fd);
  }
}

/** The `socket` of a lock or unlock request: `""` for absent, null or `""` (none), else 1–107 bytes without NUL, else `invalid_request`. */
function socketOf(req: Json): string {
  const socket = req["socket"] ?? ""; // macOS ignores it; Node on Linux cannot lock without it
  if (typeof socket !== "string" || Buffer.byteLength(socket) > 107 || socket.includes("\0")) throw bad('"socket" must be a string of 1 to 107 bytes without NUL ("", null or absent: none)');
  return socket;
}

/** A check for {@link readFile}: anything but a regular file is `unsafe` (a FIFO, a directory, a device). */
const regular = (what: string) => (st: fs.Stats): void => {
  if (!st.isFile()) throw new HostError("unsafe", `${what} is not a regular file`);
};

/** The host functions of one store, confined by {@link HostFunctions.confine}; one lock holder (two instances exclude each other). */
export class HostFunctions {
  readonly #logger: Logger;
  #dir: string | undefined;
  /**
   * Locks held until unlock or close(), by socket (Linux) or path (macOS): a server bound ahead on this thread,
   * the lock worker that bound it synchronously, or an O_EXLOCK descriptor.
   */
  readonly #held = new Map<string, Server | LockWorker | number>();
  /** What lockAhead() found for sockets it could not bind. */
  readonly #failed = new Map<string, HostError>();
  readonly #pending = new Set<Promise<void>>();
  /** The Redis clients of `mcp_resume_eval`, made on its first call (worker mode only). */
  #redis: RedisEval | undefined;
  #closed = false;

  /** @param config - `logger` receives the `mcp_resume_log` lines. */
  constructor(config: { logger: Logger }) {
    this.#logger = config.logger;
  }

  /** Sets the store's state directory for good: the `state_dir` of a successful `open` (a later call, or `""`, changes nothing). */
  confine(dir: string): void {
    if (this.#dir === undefined && dir !== "") this.#dir = dir;
  }

  /**
   * Serves one host function call. Never throws.
   *
   * @param fn - a name of {@link FUNCTIONS} (anything else answers `invalid_request`).
   * @param request - the UTF-8 JSON request (`mcp_resume_crypto`, and `mcp_resume_eval` in its binary form: the
   *   binary request).
   * @returns the UTF-8 JSON response, padded with spaces to a multiple of 8 bytes (hostfuncs/README.md, "Calling
   *   convention"); for `mcp_resume_crypto` its binary response (exact, unpadded), or the JSON error object padded alike.
   *   `mcp_resume_eval` answers `unsupported` here (either form; a malformed request `invalid_request`): it needs
   *   {@link callAsync}.
   */
  call(fn: string, request: Uint8Array): Uint8Array {
    if (fn === "mcp_resume_crypto") return this.#crypto(request);
    if (fn === "mcp_resume_eval" && request[0] === EVAL_BINARY_FORM) {
      try {
        if (this.#closed) throw bad("the store is closed");
        decodeEvalBinary(request); // a malformed request is invalid_request in every mode
        throw evalUnsupported();
      } catch (e) {
        return padded({ error: toWire(e, fn) });
      }
    }
    let resp: unknown;
    try {
      resp = this.#dispatch(fn, this.#request(request));
    } catch (e) {
      resp = { error: toWire(e, fn) };
    }
    return padded(resp);
  }

  /**
   * Serves one host function call where it may wait (Extism's worker mode): `mcp_resume_eval` runs its
   * script on Redis (redis.ts, one client per URL for this store); any other function as {@link call}.
   * Never rejects.
   *
   * @param request - as {@link call}: `mcp_resume_eval`'s JSON request, or its binary form (first byte `0x01`,
   *   evalbin.ts), whose keys and args go to Redis as raw bytes.
   * @returns the padded UTF-8 JSON response, as {@link call}; for the binary form `0x00` and the binary reply
   *   (its strings the exact bytes Redis sent; exact size, unpadded), or the padded JSON error object.
   */
  async callAsync(fn: string, request: Uint8Array): Promise<Uint8Array> {
    if (fn !== "mcp_resume_eval") return this.call(fn, request);
    try {
      if (request[0] === EVAL_BINARY_FORM) {
        if (this.#closed) throw bad("the store is closed");
        const req = decodeEvalBinary(request);
        this.#redis ??= new RedisEval();
        return encodeEvalReply(await this.#redis.evalBytes(req));
      }
      const req = evalRequest(this.#request(request));
      this.#redis ??= new RedisEval();
      return padded({ reply: await this.#redis.eval(req) });
    } catch (e) {
      return padded({ error: toWire(e, fn) });
    }
  }

  /**
   * `mcp_resume_crypto` (crypto.ts): the binary response, or the JSON error object (`invalid_request` for a
   * malformed request or a closed store, the codes of `mcp_resume_read` and `mcp_resume_write` for `read_open`
   * and `seal_write`, which go through the same primitives: the name rule, `O_NOFOLLOW`, temp and rename).
   */
  #crypto(request: Uint8Array): Uint8Array {
    try {
      if (this.#closed) throw bad("the store is closed");
      return serveCrypto(request, this.#cryptoFiles);
    } catch (e) {
      const err = e instanceof CryptoRequestError ? bad(`mcp_resume_crypto: ${e.message}`) : e;
      return padded({ error: toWire(err, "mcp_resume_crypto") });
    }
  }

  /** The state directory's files for `read_open` and `seal_write`, as `mcp_resume_read` and `mcp_resume_write` use them. */
  readonly #cryptoFiles: CryptoFiles = {
    readFile: (name, limit) => {
      const file = this.#fileOf(name, "name");
      const shown = utf8(file);
      return sys(`read ${shown}`, () => readFile(file, limit, O_NONBLOCK, regular(shown)));
    },
    writeFile: (name, temp, data) => this.#writeBytes(this.#fileOf(name, "name"), this.#fileOf(temp, "temp"), data),
  };

  /** The path (bytes) of the raw name `name` in the state directory ({@link nameBytes}); `invalid_request` before `open` succeeded. */
  #fileOf(name: Buffer, key: string): Buffer {
    const dir = this.#file();
    return Buffer.concat([Buffer.from(dir + "/"), nameBytes(name, key)]);
  }

  /** The request as a JSON object, else `invalid_request` (also once the store is closed). */
  #request(request: Uint8Array): Json {
    if (this.#closed) throw bad("the store is closed");
    const req = orElse(() => JSON.parse(Buffer.from(request).toString("utf8")) as unknown, undefined);
    if (req === null || typeof req !== "object" || Array.isArray(req)) throw bad("the request is not a JSON object");
    return req as Json;
  }

  #dispatch(fn: string, req: Json): Json {
    switch (fn) {
      case "mcp_resume_facts":
        return this.facts();
      case "mcp_resume_inspect": {
        const ops = req["ops"];
        if (!Array.isArray(ops) || ops.length < 1 || ops.length > 64) throw bad('"ops" must hold 1 to 64 operations');
        return { results: ops.map((op: unknown) => {
          try {
            if (op === null || typeof op !== "object" || Array.isArray(op)) throw bad("an operation must be a JSON object");
            return this.inspect(op as Json);
          } catch (e) {
            return { error: toWire(e, String((op as Json | null)?.["op"])) };
          }
        }) };
      }
      case "mcp_resume_prepare_dir":
        return this.#prepareDir(req);
      case "mcp_resume_read": {
        const [file, limit] = [this.#file(req), int(req, "limit", 1, MAX_READ_LIMIT)];
        return { data: sys(`read ${file}`, () => readFile(file, limit, O_NONBLOCK, regular(file))).toString("base64") };
      }
      case "mcp_resume_write":
        return this.#write(this.#file(req), this.#file(req, "temp"), str(req, "data"));
      case "mcp_resume_remove": {
        const file = this.#file(req);
        sys(`remove ${file}`, () => fs.unlinkSync(file));
        return {};
      }
      case "mcp_resume_list":
        return this.#list(this.#file());
      case "mcp_resume_lock": {
        const socket = socketOf(req);
        const wait = req["wait_ms"] == null ? 0 : int(req, "wait_ms", 0, MAX_LOCK_WAIT_MS);
        this.#lock(this.#file(req), socket, wait);
        return {};
      }
      case "mcp_resume_unlock":
        this.#unlock(this.#file(req), socketOf(req));
        return {};
      case "mcp_resume_log": {
        const [level, event, message, detail] = [str(req, "level"), str(req, "event"), str(req, "message"), req["detail"] ?? ""];
        if (!["debug", "info", "warn", "error"].includes(level)) throw bad(`unknown level ${JSON.stringify(level)}: use debug, info, warn or error`);
        if (typeof detail !== "string") throw bad('"detail" must be a string');
        safeLog(this.#logger, level as LogLevel, message, { event, ...(detail !== "" ? { detail } : {}) });
        return {};
      }
      case "mcp_resume_eval":
        evalRequest(req); // a malformed request is invalid_request in every mode
        throw evalUnsupported();
      default:
        throw bad(`unknown host function ${fn}`);
    }
  }

  /** `mcp_resume_facts` of this process (hostfuncs/README.md, `mcp_resume_facts`), `cwd` the directory at module load ({@link LAUNCH_CWD}); the conformance runner pins others. */
  protected facts(): Json {
    const abs = (p: string | undefined): string => (p !== undefined && path.isAbsolute(p) ? p : "");
    const home = abs(process.env["HOME"]) || abs(orElse(() => userInfo().homedir, undefined));
    const env = Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => typeof e[1] === "string"));
    return { os: process.platform, pid: process.pid, euid: process.geteuid?.() ?? -1, home, xdg_state_home: process.env["XDG_STATE_HOME"] ?? "",
      cwd: LAUNCH_CWD, args: process.argv.slice(2), env, runtime: "node" };
  }

  /** The path of `/proc/<rel>`. The conformance runner's subclass maps it into a fixture tree. */
  protected proc(rel: string): string {
    return `/proc/${rel}`;
  }

  /** The system the inspect answers are for (`facts.os`): this one; the conformance runner's subclass pins another. */
  protected system(): string {
    return process.platform;
  }

  /**
   * One `mcp_resume_inspect` operation (hostfuncs/README.md, `mcp_resume_inspect`).
   *
   * @param op - `{"op", "pid"?, "fd"?, "targets"?, "ns"?, "table"?}`; other fields are ignored.
   * @returns the success object of that op.
   * @throws {@link HostError}, answered as that result's `error`: `invalid_request` for an unknown op or a field
   *   of the wrong type or range (a missing `ns` or `table`, or one outside {@link NAMESPACES} or
   *   {@link NET_TABLES}), `unsupported` for a `/proc` op off Linux, else the errno's code.
   */
  protected inspect(op: Json): Json {
    const proc = (rel: string): string => {
      if (this.system() !== "linux") throw new HostError("unsupported", `no /proc on ${this.system()}`);
      return this.proc(rel);
    };
    const name = String(op["op"]);
    const p = Object.hasOwn(PROC_OPS, name) ? PROC_OPS[name] : undefined;
    if (p) {
      // Every member is checked before the system is (an op malformed off Linux is still invalid_request), as in Go.
      const rel = p.path(p.pid ? pidOf(op, true) : "", p.fd ? fdOf(op) : 0, p.one ? oneOf(op, p.one) : "");
      if (p.read === "data") return { data: sys(`read /proc/${rel}`, () => readFile(proc(rel), p.max ?? MAX_PROC_READ)).toString("base64") };
      return { target: utf8(sys(`readlink /proc/${rel}`, () => fs.readlinkSync(proc(rel), { encoding: "buffer" }))) };
    }
    switch (name) {
      case "fds":
        return { fds: this.#fds(pidOf(op, true), op["targets"], proc) };
      case "kill0": {
        const n = Number(pidOf(op, false));
        sys(`kill(${n}, 0)`, () => process.kill(n, 0));
        return {};
      }
      case "exe": {
        // stat(2) follows /proc/<pid>/exe to the program file; bigint: an inode may exceed 2^53.
        const rel = `${pidOf(op, false)}/exe`;
        const st = sys(`stat /proc/${rel}`, () => fs.statSync(proc(rel), { bigint: true }));
        return { dev: st.dev.toString(), ino: st.ino.toString() };
      }
      case "fstat": {
        const fd = fdOf(op);
        const st = sys(`fstat ${fd}`, () => fs.fstatSync(fd));
        return { type: st.isFIFO() ? "fifo" : st.isSocket() ? "socket" : st.isCharacterDevice() ? "char" : st.isFile() ? "file" : st.isDirectory() ? "dir" : "other" };
      }
      case "peer":
        fdOf(op);
        throw new HostError("unsupported", "Node cannot read SO_PEERCRED");
      case "sysctl":
      case "procargs":
        pidOf(op, false);
        throw new HostError("unsupported", "Node cannot call sysctl");
      case "ps":
        return this.#ps(Number(pidOf(op, false)));
      default:
        throw bad(`unknown operation ${JSON.stringify(op["op"])}`);
    }
  }

  /** `fds`: the entries of `/proc/<pid>/fd` sorted by fd, with target and fdinfo flags (-1 when unreadable), filtered by `targets`. */
  #fds(pid: string, targets: unknown, proc: (rel: string) => string): Json[] {
    if (targets != null && (!Array.isArray(targets) || targets.some((t) => typeof t !== "string"))) throw bad('"targets" must be a list of strings');
    const out: Json[] = [];
    for (const n of sys(`list /proc/${pid}/fd`, () => fs.readdirSync(proc(`${pid}/fd`))).filter((x) => /^[0-9]+$/.test(x))) {
      let target: string;
      try {
        target = utf8(fs.readlinkSync(proc(`${pid}/fd/${n}`), { encoding: "buffer" }));
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code === "ENOENT" || code === "ESRCH") continue; // closed during the listing (or the process exited)
        throw osError(`readlink /proc/${pid}/fd/${n}`, e); // EACCES and the rest: cannot tell, the whole op fails
      }
      if (targets != null && !(targets as string[]).includes(target)) continue;
      const m = /^flags:\s*([0-7]+)\s*$/m.exec(orElse(() => readFile(proc(`${pid}/fdinfo/${n}`), 4096).toString("latin1"), ""));
      out.push({ fd: Number(n), target, flags: m ? parseInt(m[1]!, 8) : -1 });
    }
    return out.sort((a, b) => (a["fd"] as number) - (b["fd"] as number));
  }

  /** `ps` (macOS): the raw output of `LC_ALL=C TZ=UTC0 /bin/ps`, which the plugin parses; `not_found` when it prints nothing. */
  #ps(pid: number): Json {
    if (this.system() !== "darwin") throw new HostError("unsupported", `ps is only asked on macOS, not ${this.system()}`);
    const run = (args: string[]): Buffer => {
      const r = spawnSync("/bin/ps", [...args, "-p", String(pid)], { env: { ...process.env, LC_ALL: "C", TZ: "UTC0" }, stdio: ["ignore", "pipe", "ignore"] });
      if (r.error || (r.status !== 0 && r.status !== 1)) throw new HostError("io", `run /bin/ps: ${r.error?.message ?? `exit ${r.status}`}`);
      return r.stdout; // ps exits 1 when no process matched
    };
    const data = run(["-o", "pid=,ppid=,stat=,lstart=,ucomm="]);
    if (data.toString("latin1").trim() === "") throw new HostError("not_found", `ps printed nothing for pid ${pid}`);
    return { data: data.toString("base64"), args: run(["-ww", "-o", "args="]).toString("base64") };
  }

  /** `mcp_resume_prepare_dir`: `stat` or `mkdir` (only the state directory or an ancestor) of an absolute, clean path. */
  #prepareDir(req: Json): Json {
    const [op, dir] = [str(req, "op"), str(req, "path")];
    if (!path.posix.isAbsolute(dir) || path.posix.normalize(dir) !== dir || (dir !== "/" && dir.endsWith("/")) || dir.includes("\0")) {
      throw bad(`path ${JSON.stringify(dir)} is not an absolute, clean path`);
    }
    if (op === "stat") {
      const follow = req["follow"] ?? false;
      if (typeof follow !== "boolean") throw bad('"follow" must be a boolean');
      const st = sys(`stat ${dir}`, () => (follow ? fs.statSync(dir) : fs.lstatSync(dir)));
      return { type: st.isSymbolicLink() ? "symlink" : st.isDirectory() ? "dir" : st.isFile() ? "file" : "other", uid: st.uid, mode: st.mode & 0o7777 };
    }
    if (op !== "mkdir") throw bad(`unknown mcp_resume_prepare_dir op ${JSON.stringify(op)}: want stat or mkdir`);
    const sd = this.#dir;
    if (sd === undefined || (dir !== "/" && sd !== dir && !sd.startsWith(dir + "/"))) throw bad(`mkdir ${dir}: only the state directory (${sd ?? "none before open"}) or an ancestor may be made`);
    sys(`mkdir ${dir}`, () => fs.mkdirSync(dir, { mode: 0o700 }));
    return {};
  }

  /** The state directory, `invalid_request` before `open` succeeded; with a request, the path of its name `key` there ({@link nameOf}). */
  #file(req?: Json, key = "name"): string {
    if (this.#dir === undefined) throw bad("no state directory: the plugin's open has not succeeded, or its store has none (a Redis handle store)");
    return req ? path.join(this.#dir, nameOf(req, key)) : this.#dir;
  }

  /** `mcp_resume_write`: `tmp` created `O_CREAT|O_EXCL|O_NOFOLLOW` 0600, written, closed, renamed over `file`; unlinked on any later failure. */
  #write(file: string, tmp: string, data: string): Json {
    if (!isBase64(data)) throw bad('"data" is not standard base64');
    this.#writeBytes(file, tmp, Buffer.from(data, "base64"));
    return {};
  }

  /** {@link #write} of the bytes `buf` (also `mcp_resume_crypto`'s `seal_write`); throws the coded failure. */
  #writeBytes(file: string | Buffer, tmp: string | Buffer, buf: Uint8Array): void {
    const fd = sys(`create ${String(tmp)}`, () => fs.openSync(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600));
    try {
      try {
        for (let off = 0; off < buf.length; ) off += fs.writeSync(fd, buf, off, buf.length - off);
      } finally {
        fs.closeSync(fd);
      }
      fs.renameSync(tmp, file);
    } catch (e) {
      fs.rmSync(tmp, { force: true });
      throw osError(`write ${String(file)}`, e);
    }
  }

  /** `mcp_resume_list`: every entry of `dir` with its `lstat` type and age (floor(now − mtime) seconds); one whose lstat fails is skipped. */
  #list(dir: string): Json {
    const files: Json[] = [];
    for (const raw of sys(`list ${dir}`, () => fs.readdirSync(dir, { encoding: "buffer" }))) {
      const st = orElse(() => fs.lstatSync(Buffer.concat([Buffer.from(dir + "/"), raw])), undefined);
      if (!st) continue; // removed meanwhile
      const type = st.isFile() ? "file" : st.isDirectory() ? "dir" : st.isSymbolicLink() ? "symlink" : "other";
      files.push({ name: utf8(raw), type, age_seconds: Math.floor((Date.now() - st.mtimeMs) / 1000) });
    }
    return { files };
  }

  /**
   * Linux: binds the abstract socket `socket` (the plugin's `lock_socket`; libuv pads it to the whole `sun_path`)
   * ahead of the synchronous `mcp_resume_lock`, which answers from the outcome; the kernel frees it when the
   * process exits, however it exits. Touches no file. Elsewhere it does nothing. Never rejects.
   *
   * @param socket - the abstract socket name, without its leading NUL.
   */
  async lockAhead(socket: string): Promise<void> {
    if (process.platform !== "linux" || this.#closed || socket === "" || socket.includes("\0") || this.#held.has(socket)) return;
    const attempt = new Promise<Server>((resolve, reject) => {
      const server = createServer((conn) => conn.destroy());
      server.once("error", reject);
      // exclusive: a cluster worker binds itself instead of asking the primary.
      server.listen({ path: "\0" + socket, exclusive: true }, () => resolve(server.off("error", reject).on("error", () => undefined)));
    }).then(
      (server) => {
        server.unref(); // the lock never keeps the process alive
        if (this.#closed) server.close();
        else this.#held.set(socket, server);
        this.#failed.delete(socket);
      },
      (e: NodeJS.ErrnoException) => {
        this.#failed.set(socket, e?.code === "EADDRINUSE" ? new HostError("busy", "held by another server instance") : osError("bind the abstract socket", e));
      },
    );
    this.#pending.add(attempt);
    await attempt;
    this.#pending.delete(attempt);
  }

  /**
   * `mcp_resume_lock`: the lock file opened and checked first (anything but a regular file is `unsafe`, with or
   * without a socket, as in every host), then on Linux the socket: held by this store → done; what
   * {@link lockAhead} found for it when the call does not wait (the resume store's); else bound now by the process's lock
   * worker, retried while busy for `wait` ms (sleeping 0.2 ms, doubling to 5 ms); each retry is a whole try, the
   * file opened and checked again first, as in the Go and Python hosts (a file replaced meanwhile answers at
   * once). Without a socket Node has no lock there (no flock), hence `unsupported`. On macOS `O_EXLOCK`
   * (retried the same way), kept open.
   */
  #lock(file: string, socket: string, wait: number): void {
    const darwin = process.platform === "darwin";
    if (process.platform !== "linux" && !darwin) throw new HostError("unsupported", `no lock on ${process.platform}`);
    if (darwin && this.#held.has(file)) return; // a second O_EXLOCK open would conflict with our own
    const deadline = performance.now() + wait;
    const open = (): number => sys(`lock ${file}`, () => {
      for (let pause = 0.2; ; pause = Math.min(pause * 2, 5)) {
        try {
          return fs.openSync(file, O_RDONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | (darwin ? O_EXLOCK_DARWIN : 0), 0o600);
        } catch (e) {
          const code = (e as NodeJS.ErrnoException).code;
          if (!darwin || (code !== "EWOULDBLOCK" && code !== "EAGAIN")) throw e;
          const left = deadline - performance.now();
          if (left <= 0) throw new HostError("busy", "held by another server instance");
          sleepSync(Math.min(pause, left)); // macOS: retried for wait_ms like the socket below
        }
      }
    });
    /** Opens and checks the file: its descriptor, or throws (closed) when it is not a regular file. */
    const checked = (): number => {
      const fd = open();
      try {
        regular(file)(sys(`fstat ${file}`, () => fs.fstatSync(fd)));
      } catch (e) {
        fs.closeSync(fd);
        throw e;
      }
      return fd;
    };
    const fd = checked();
    if (darwin) return void this.#held.set(file, fd);
    fs.closeSync(fd);
    if (socket === "") throw new HostError("unsupported", `lock ${file}: Node locks only through the abstract socket on Linux (no flock), and the request names none`);
    const h = this.#held.get(socket);
    if (h !== undefined && !(h instanceof LockWorker && !h.alive)) return; // a dead worker's sockets are gone
    const failed = this.#failed.get(socket);
    // What the bind ahead found answers a call that does not wait (the resume store's); a wait retries it here.
    if (failed && (wait === 0 || failed.code !== "busy")) throw new HostError(failed.code, `lock ${file}: ${failed.message}`);
    const worker = lockWorker();
    for (let pause = 0.2; ; pause = Math.min(pause * 2, 5)) {
      const r = worker.bind(socket);
      if (r.code === 0) return void this.#held.set(socket, worker);
      if (r.code === 2) throw new HostError("io", `lock ${file}: bind the abstract socket: ${r.message}`);
      const left = deadline - performance.now();
      if (left <= 0) throw new HostError("busy", `lock ${file}: held by another server instance${wait > 0 ? ` (waited ${wait} ms)` : ""}`);
      sleepSync(Math.min(pause, left));
      fs.closeSync(checked()); // the next try is a whole one: the file may have been replaced meanwhile
    }
  }

  /**
   * `mcp_resume_unlock`: releases the lock this store holds on `file` (the socket on Linux, the O_EXLOCK
   * descriptor on macOS); never deletes the file; not held → nothing (idempotent). Synchronous: the name is
   * free for another process when it returns.
   */
  #unlock(file: string, socket: string): void {
    const key = process.platform === "darwin" ? file : socket;
    const h = this.#held.get(key);
    this.#held.delete(key);
    this.#failed.delete(key);
    if (h !== undefined) release(key, h);
  }

  /** Releases every lock this instance holds (the lock files stay) and destroys its Redis clients; every later call answers `invalid_request`. Idempotent; never rejects. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#redis?.close();
    await Promise.all(this.#pending);
    for (const [key, h] of this.#held) release(key, h);
    this.#held.clear();
  }
}

/** `resp` as UTF-8 JSON padded with spaces to a multiple of 8 bytes (hostfuncs/README.md, "Calling convention"). */
function padded(resp: unknown): Uint8Array {
  const out = JSON.stringify(resp);
  return Buffer.from(out + " ".repeat((8 - (Buffer.byteLength(out) % 8)) % 8), "utf8");
}

/** Releases one held lock: closes the descriptor (macOS), the server bound ahead, or asks the worker to close `key`. */
function release(key: string, h: Server | LockWorker | number): void {
  if (typeof h === "number") orElse(() => fs.closeSync(h), undefined);
  else if (h instanceof LockWorker) h.close(key);
  else h.close();
}

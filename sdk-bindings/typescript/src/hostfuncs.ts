/**
 * The nine host functions of the mcp-resume plugin, implemented exactly as
 * hostfuncs/README.md ("The nine host functions") states them, mirroring
 * the Go implementation (`hostfuncs/funcs.go`, `hostfuncs/perm_unix.go`).
 * The one deliberate difference is `mcp_resume_lock`: see `lock.ts` and
 * {@link HostFunctions.acquireLock}.
 *
 * Every function takes a UTF-8 JSON request and returns a JSON response.
 * **A host function never throws**: every failure, a malformed request
 * included, travels in the response as
 * `{"error": {"code": "<code>", "message": "<text>"}}`
 * (hostfuncs/README.md, "Calling convention").
 *
 * @packageDocumentation
 */
import { randomBytes } from "node:crypto";
import {
  closeSync,
  constants as fsc,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readSync,
  renameSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import * as path from "node:path";

import { acquireLock, acquireLockSync, LockFailure, type LockHandle } from "./lock.js";
import { safeLog, type LogLevel, type Logger } from "./logger.js";
import { alive as procAlive } from "./procid/index.js";

/** Version of the plugin/host contract this host implements. */
export const ABI_VERSION = "2";

/**
 * How old (by modification time) a leftover temporary file must be before
 * `mcp_resume_prepare_dir` deletes it, in milliseconds (Go:
 * `hostfuncs.TempMaxAge`). A live writer holds one for microseconds.
 */
export const TEMP_MAX_AGE_MS = 60_000;

/** Wasm import module of every host function (Extism's default for user functions). */
export const NAMESPACE = "extism:host/user";

/** Host function names, in the order of hostfuncs/README.md. */
export const FUNCTIONS = [
  "mcp_resume_identity",
  "mcp_resume_prepare_dir",
  "mcp_resume_read",
  "mcp_resume_write",
  "mcp_resume_remove",
  "mcp_resume_list",
  "mcp_resume_log",
  "mcp_resume_lock",
  "mcp_resume_probe",
] as const;

/** One host function name. */
export type HostFunctionName = (typeof FUNCTIONS)[number];

/** Error codes of the contract (hostfuncs/README.md, "Error codes"). */
export type ErrorCode = "not_found" | "invalid_request" | "unsafe" | "unavailable" | "busy" | "io";

/** The failure half of every response. */
export interface WireError {
  /** One of {@link ErrorCode}. */
  code: ErrorCode;
  /** What failed and what to do, for humans and logs; never a token. */
  message: string;
}

/**
 * The MCP host this server runs under: the pair the token file is named
 * after (spec 000, "Token File Naming Strategy").
 */
export interface HostIdentity {
  /** The host's process ID, a positive integer. */
  pid: number;
  /** Opaque start time: 1–96 bytes of `[0-9a-z.]` (the plugin checks it). */
  startTime: string;
}

/** Configuration of {@link HostFunctions}. */
export interface HostFunctionsConfig {
  /** The state directory: an absolute path, created 0700 on first use. */
  dir: string;
  /**
   * Returns the MCP host's identity or throws when it cannot be verified
   * (then `mcp_resume_identity` answers `unavailable` with the error's
   * message). Called each time the plugin asks, which is once per instance.
   */
  identity?: () => HostIdentity;
  /**
   * Which instance of the server this is, returned as `instance` by
   * `mcp_resume_identity` (hostfuncs/README.md); `""` (the default) for none.
   * The plugin hashes it into the file names.
   */
  instance?: string;
  /**
   * Reports whether process `pid` runs with `startTime`, for
   * `mcp_resume_probe`; throws when it cannot tell (then the probe answers
   * `unknown`). Defaults to the process-table check {@link procAlive}
   * (`alive` of `procid`). A seam for tests and embedders, like `identity`.
   * Must be synchronous: host functions are.
   */
  alive?: (pid: number, startTime: string) => boolean;
  /** Receives `mcp_resume_log` lines. */
  logger: Logger;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8");

/**
 * The name rule: 1–255 bytes of `[A-Za-z0-9._-]`, not starting with `.`
 * (hostfuncs/README.md, "Names"). No separators, no NUL, no `..`, no hidden
 * names (dot-names are this host's temporary files).
 */
export function validName(name: unknown): name is string {
  return typeof name === "string" && /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,254}$/.test(name);
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * Appends spaces (JSON whitespace) until the length is a multiple of 8:
 * go-pdk copies Extism memory 8 bytes per kernel call and the remainder one
 * byte per call (hostfuncs/README.md, "Calling convention"; optional, and
 * what the Go host does). `JSON.stringify` output is ASCII-escaped only for
 * control characters, so the UTF-8 length may differ from `s.length`; pad on
 * the encoded length.
 */
export function pad8(s: string): string {
  const len = Buffer.byteLength(s, "utf8");
  return len % 8 === 0 ? s : s + " ".repeat(8 - (len % 8));
}

function err(code: ErrorCode, message: string): { error: WireError } {
  return { error: { code, message } };
}

/** Maps a Node fs error to the contract's codes (Go: `ioError`). */
function ioError(op: string, e: unknown): WireError {
  const code = (e as NodeJS.ErrnoException | null)?.code;
  const msg = (e as Error | null)?.message ?? String(e);
  if (code === "ENOENT") return { code: "not_found", message: `${op}: ${msg}` };
  if (code === "ELOOP") return { code: "unsafe", message: `${op}: it is a symbolic link, which is never followed` };
  return { code: "io", message: `${op}: ${msg}` };
}

class RequestError extends Error {}

/** Reads an optional string field; a non-string is a malformed request. */
function str(req: Record<string, unknown>, key: string): string {
  const v = req[key];
  if (v === undefined || v === null) return "";
  if (typeof v !== "string") throw new RequestError(`field ${JSON.stringify(key)} must be a string`);
  return v;
}

/**
 * Throws {@link RequestError} (answered as `invalid_request`) unless the
 * request has a non-null `key`: a request missing a required field is refused
 * rather than guessed at (hostfuncs/README.md, "Calling convention").
 */
function need(req: Record<string, unknown>, key: string): void {
  if (req[key] === undefined || req[key] === null) throw new RequestError(`request lacks ${JSON.stringify(key)}`);
}

/** Reads an optional integer field. */
function int(req: Record<string, unknown>, key: string): number {
  const v = req[key];
  if (v === undefined || v === null) return 0;
  if (typeof v !== "number" || !Number.isInteger(v)) throw new RequestError(`field ${JSON.stringify(key)} must be an integer`);
  return v;
}

/** Reads an optional base64 field as bytes. */
function bytes(req: Record<string, unknown>, key: string): Buffer {
  const v = str(req, key);
  if (!BASE64.test(v)) throw new RequestError(`field ${JSON.stringify(key)} is not standard base64`);
  return Buffer.from(v, "base64");
}

function modeString(mode: number): string {
  return (mode & 0o7777).toString(8).padStart(4, "0");
}

/**
 * The host functions over one state directory. Stateless apart from its
 * configuration and the locks it holds (released by {@link close}); one
 * instance is one lock holder, so two instances exclude each other.
 */
export class HostFunctions {
  readonly #dir: string;
  readonly #identity: (() => HostIdentity) | undefined;
  readonly #instance: string;
  readonly #alive: (pid: number, startTime: string) => boolean;
  readonly #logger: Logger;
  /** Locks held, by name, until close(). */
  readonly #locks = new Map<string, LockHandle>();
  /** Failed attempts of acquireLock, by name: what mcp_resume_lock answers for them. */
  readonly #lockFailures = new Map<string, WireError>();
  /** acquireLock calls under way, by name. */
  readonly #acquiring = new Map<string, Promise<WireError | undefined>>();
  #closed = false;

  /** @param config - state directory, identity source, instance, liveness check and logger. */
  constructor(config: HostFunctionsConfig) {
    this.#dir = config.dir;
    this.#identity = config.identity;
    this.#instance = config.instance ?? "";
    this.#alive = config.alive ?? ((pid, startTime) => procAlive(pid, startTime));
    this.#logger = config.logger;
  }

  /** The state directory. */
  get dir(): string {
    return this.#dir;
  }

  /**
   * Serves one host function call natively.
   *
   * @param fn - a host function name (anything else answers `invalid_request`).
   * @param request - the UTF-8 JSON request bytes.
   * @returns the UTF-8 JSON response bytes. Never throws.
   */
  call(fn: string, request: Uint8Array): Uint8Array {
    let resp: unknown;
    try {
      resp = this.#dispatch(fn, request);
    } catch (e) {
      if (e instanceof RequestError) {
        resp = err("invalid_request", `request is not the JSON document the contract defines: ${e.message}`);
      } else {
        resp = err("io", `host function ${fn} failed: ${(e as Error)?.message ?? String(e)}`);
      }
    }
    return encoder.encode(pad8(JSON.stringify(resp)));
  }

  #dispatch(fn: string, request: Uint8Array): unknown {
    if (!(FUNCTIONS as readonly string[]).includes(fn)) {
      return err("invalid_request", `unknown host function ${fn}`);
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(decoder.decode(request));
    } catch (e) {
      throw new RequestError((e as Error).message);
    }
    if (parsed === null) parsed = {};
    if (typeof parsed !== "object" || Array.isArray(parsed)) throw new RequestError("the request must be a JSON object");
    const req = parsed as Record<string, unknown>;
    switch (fn as HostFunctionName) {
      case "mcp_resume_identity":
        return this.#identityFn();
      case "mcp_resume_prepare_dir": {
        const e = this.prepareDir();
        return e ? { error: e } : {};
      }
      case "mcp_resume_read":
        return this.#read(str(req, "name"), int(req, "limit"));
      case "mcp_resume_write": {
        const name = str(req, "name");
        need(req, "data");
        const e = this.#write(name, bytes(req, "data"));
        return e ? { error: e } : {};
      }
      case "mcp_resume_remove": {
        const e = this.#remove(str(req, "name"));
        return e ? { error: e } : {};
      }
      case "mcp_resume_list":
        need(req, "prefix");
        return this.#list(str(req, "prefix"));
      case "mcp_resume_log":
        if (str(req, "level") === "" || str(req, "message") === "") throw new RequestError("request lacks level and message");
        this.#log(str(req, "level"), str(req, "event"), str(req, "message"), str(req, "detail"));
        return {};
      case "mcp_resume_lock": {
        const e = this.#lock(str(req, "name"));
        return e ? { error: e } : {};
      }
      case "mcp_resume_probe":
        return this.#probe(str(req, "name"), int(req, "pid"), str(req, "start_time"));
    }
  }

  #identityFn(): unknown {
    if (!this.#identity) return err("unavailable", "no identity source configured");
    let id: HostIdentity;
    try {
      id = this.#identity();
    } catch (e) {
      return err("unavailable", (e as Error)?.message ?? String(e));
    }
    if (!id || !Number.isSafeInteger(id.pid) || id.pid <= 0 || typeof id.startTime !== "string") {
      return err("unavailable", "the identity source returned no valid {pid, startTime}");
    }
    // Go's wire.IdentityResponse omits an empty instance.
    return this.#instance === "" ? { pid: id.pid, start_time: id.startTime } : { pid: id.pid, start_time: id.startTime, instance: this.#instance };
  }

  /**
   * `mcp_resume_prepare_dir`: creates the state directory and missing
   * parents with mode 0700, then checks it is a real directory (not a
   * symlink), owned by the effective user, with no group or other bits.
   * Once it passes, deletes this host's leftover temporary files
   * (`.*.tmp`, regular, modified more than {@link TEMP_MAX_AGE_MS} ago;
   * best effort).
   *
   * @returns undefined when usable, else the error to answer (`unsafe` with
   *   a fix-it message, `io`, or `not_found`). Never throws.
   */
  prepareDir(): WireError | undefined {
    const e = this.checkDir();
    if (e) return e;
    this.#sweepTemporaries();
    return undefined;
  }

  /**
   * {@link prepareDir} without the sweep: creates the state directory if
   * missing and checks it. The store runs it before taking the lock ahead of
   * the plugin.
   *
   * @returns undefined when usable, else the error. Never throws.
   */
  checkDir(): WireError | undefined {
    const dir = this.#dir;
    if (!path.isAbsolute(dir)) {
      return { code: "unsafe", message: `state directory ${JSON.stringify(dir)} is not an absolute path` };
    }
    try {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
    } catch (e) {
      return ioError("create state directory", e);
    }
    let st;
    try {
      st = lstatSync(dir);
    } catch (e) {
      return ioError("inspect state directory", e);
    }
    if (st.isSymbolicLink() || !st.isDirectory()) {
      return {
        code: "unsafe",
        message: `state directory ${dir} is not a directory (or is a symbolic link); point MCP_RESUME_STATE_DIR at a real directory`,
      };
    }
    const euid = typeof process.geteuid === "function" ? process.geteuid() : st.uid;
    if (st.uid !== euid) {
      return {
        code: "unsafe",
        message: `state directory ${dir} is owned by uid ${st.uid}, not by this user (uid ${euid}); remove it or choose another with MCP_RESUME_STATE_DIR`,
      };
    }
    if ((st.mode & 0o077) !== 0) {
      return {
        code: "unsafe",
        message: `state directory ${dir} has mode ${modeString(st.mode & 0o777)}, which lets other users in; run: chmod 700 ${dir}`,
      };
    }
    return undefined;
  }

  /** Deletes `.*.tmp` regular files older than TEMP_MAX_AGE_MS; ignores every failure. */
  #sweepTemporaries(): void {
    let entries;
    try {
      entries = readdirSync(this.#dir, { withFileTypes: true });
    } catch {
      return;
    }
    const now = Date.now();
    for (const d of entries) {
      if (!d.name.startsWith(".") || !d.name.endsWith(".tmp") || !d.isFile()) continue;
      const p = path.join(this.#dir, d.name);
      try {
        const st = lstatSync(p);
        if (st.isFile() && now - st.mtimeMs > TEMP_MAX_AGE_MS) unlinkSync(p);
      } catch {
        // best effort
      }
    }
  }

  /**
   * Takes the lock `name` (`mcp_resume_lock`) asynchronously and remembers
   * the outcome, which the synchronous `mcp_resume_lock` then answers for
   * that name. Node cannot take the lock inside a host function on Linux
   * (binding a socket is asynchronous; see `lock.ts`), so the store calls
   * this before the first `load`/`store`/`reject` with the name the plugin's
   * `names` export returns. Idempotent for a held name; a failed attempt is
   * retried by the next call.
   *
   * @param name - the lock file name (the name rule applies).
   * @returns undefined when held, else the error the host function will
   *   answer (`busy`, `unsafe`, `not_found`, `io`, `invalid_request`). Never
   *   rejects.
   */
  acquireLock(name: string): Promise<WireError | undefined> {
    const [, e] = this.#path(name);
    if (e) return Promise.resolve(e);
    if (this.#locks.has(name)) return Promise.resolve(undefined);
    const pending = this.#acquiring.get(name);
    if (pending) return pending;
    const attempt = (async (): Promise<WireError | undefined> => {
      if (this.#closed) return { code: "io" as const, message: `lock ${name}: the store is closed` };
      try {
        const handle = await acquireLock(this.#dir, name);
        if (this.#closed) {
          await handle.release();
          return { code: "io" as const, message: `lock ${name}: the store is closed` };
        }
        this.#locks.set(name, handle);
        this.#lockFailures.delete(name);
        return undefined;
      } catch (e2) {
        const err = lockError(name, e2);
        this.#lockFailures.set(name, err);
        return err;
      } finally {
        this.#acquiring.delete(name);
      }
    })();
    this.#acquiring.set(name, attempt);
    return attempt;
  }

  /** Whether this instance holds the lock `name`. */
  holdsLock(name: string): boolean {
    return this.#locks.has(name);
  }

  /**
   * Releases every lock taken through {@link acquireLock} or
   * `mcp_resume_lock`; later attempts fail with `io`. The process exiting
   * releases them too. Safe to call more than once. Never rejects.
   */
  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all([...this.#acquiring.values()]);
    const held = [...this.#locks.values()];
    this.#locks.clear();
    this.#lockFailures.clear();
    await Promise.all(held.map((h) => h.release().catch(() => undefined)));
  }

  /**
   * `mcp_resume_lock`: answers from what {@link acquireLock} found for this
   * name; for a name it was not asked about, takes the lock synchronously
   * where the platform can (macOS) and answers `io` otherwise.
   */
  #lock(name: string): WireError | undefined {
    const [, e] = this.#path(name);
    if (e) return e;
    if (this.#locks.has(name)) return undefined;
    const failed = this.#lockFailures.get(name);
    if (failed) return failed;
    if (this.#closed) return { code: "io", message: `lock ${name}: the store is closed` };
    try {
      this.#locks.set(name, acquireLockSync(this.#dir, name));
      return undefined;
    } catch (e2) {
      return lockError(name, e2);
    }
  }

  /**
   * `mcp_resume_probe`: whether the host named by file `name` is alive, and
   * the file's age in whole seconds from its modification time (`lstat`).
   */
  #probe(name: string, pid: number, startTime: string): unknown {
    const [p, e] = this.#path(name);
    if (e) return { error: e };
    let st;
    try {
      st = lstatSync(p);
    } catch (e2) {
      return { error: ioError(`inspect ${name}`, e2) };
    }
    const age = Math.floor((Date.now() - st.mtimeMs) / 1000);
    let host: "alive" | "gone" | "unknown";
    try {
      host = this.#alive(pid, startTime) ? "alive" : "gone";
    } catch {
      host = "unknown";
    }
    return { host, age_seconds: age };
  }

  #path(name: string): [string, WireError | undefined] {
    if (!validName(name)) {
      return [
        "",
        {
          code: "invalid_request",
          message: `file name ${JSON.stringify(name)} is not allowed: names are 1-255 of [A-Za-z0-9._-], not starting with a dot`,
        },
      ];
    }
    return [path.join(this.#dir, name), undefined];
  }

  #read(name: string, limit: number): unknown {
    const [p, e] = this.#path(name);
    if (e) return { error: e };
    if (limit <= 0 || limit > 1 << 20) return err("invalid_request", `limit ${limit} is outside 1..1048576`);
    let fd: number;
    try {
      // O_NOFOLLOW: a symlink answers ELOOP. O_NONBLOCK: a FIFO planted at
      // the path must not block the server.
      fd = openSync(p, fsc.O_RDONLY | fsc.O_NOFOLLOW | fsc.O_NONBLOCK);
    } catch (e2) {
      return { error: ioError(`open ${name}`, e2) };
    }
    try {
      let st;
      try {
        st = fstatSync(fd);
      } catch (e2) {
        return { error: ioError(`inspect ${name}`, e2) };
      }
      if (!st.isFile()) {
        return err("unsafe", `${name} is not a regular file (mode ${modeString(st.mode)}, type ${fileType(st)})`);
      }
      const buf = Buffer.allocUnsafe(limit);
      let n = 0;
      try {
        while (n < buf.length) {
          const r = readSync(fd, buf, n, buf.length - n, null);
          if (r === 0) break;
          n += r;
        }
      } catch (e2) {
        return { error: ioError(`read ${name}`, e2) };
      }
      return n === 0 ? {} : { data: buf.subarray(0, n).toString("base64") };
    } finally {
      try {
        closeSync(fd);
      } catch {
        // nothing to do
      }
    }
  }

  /**
   * Atomic replace: a 0600 temporary file `.<name>.<16 hex>.tmp` created
   * with O_CREAT|O_EXCL|O_NOFOLLOW next to it, written, closed and renamed
   * over the name. A reader sees the old token or the new one; a symlink at
   * the name is replaced, not followed. No fsync (see hostfuncs/README.md).
   */
  #write(name: string, data: Buffer): WireError | undefined {
    const [p, e] = this.#path(name);
    if (e) return e;
    const tmp = path.join(this.#dir, `.${name}.${randomBytes(8).toString("hex")}.tmp`);
    let fd: number;
    try {
      fd = openSync(tmp, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_EXCL | fsc.O_NOFOLLOW, 0o600);
    } catch (e2) {
      return ioError(`create temporary file for ${name}`, e2);
    }
    let failure: unknown;
    try {
      let off = 0;
      while (off < data.length) off += writeSync(fd, data, off, data.length - off);
    } catch (e2) {
      failure = e2;
    }
    try {
      closeSync(fd);
    } catch (e2) {
      failure ??= e2;
    }
    if (failure === undefined) {
      try {
        renameSync(tmp, p);
      } catch (e2) {
        failure = e2;
      }
    }
    if (failure !== undefined) {
      try {
        unlinkSync(tmp);
      } catch {
        // already gone
      }
      return ioError(`write ${name}`, failure);
    }
    return undefined;
  }

  /** unlink(2), never rmdir: a directory at the name answers `io`. */
  #remove(name: string): WireError | undefined {
    const [p, e] = this.#path(name);
    if (e) return e;
    try {
      unlinkSync(p);
    } catch (e2) {
      return ioError(`remove ${name}`, e2);
    }
    return undefined;
  }

  #list(prefix: string): unknown {
    let entries;
    try {
      entries = readdirSync(this.#dir, { withFileTypes: true });
    } catch (e) {
      return { names: [], error: ioError("list state directory", e) };
    }
    const names = entries
      .filter((d) => d.isFile() && validName(d.name) && d.name.startsWith(prefix))
      .map((d) => d.name)
      .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    return { names };
  }

  #log(level: string, event: string, message: string, detail: string): void {
    const lv: LogLevel = level === "debug" || level === "warn" || level === "error" ? level : "info";
    const fields: { event: string; detail?: string } = { event };
    if (detail !== "") fields.detail = detail;
    safeLog(this.#logger, lv, message, fields);
  }
}

/** A LockFailure (or anything else thrown while locking) as the wire error. */
function lockError(name: string, e: unknown): WireError {
  if (e instanceof LockFailure) return { code: e.code, message: e.message };
  return { code: "io", message: `lock ${name}: ${(e as Error)?.message ?? String(e)}` };
}

function fileType(st: import("node:fs").Stats): string {
  if (st.isDirectory()) return "directory";
  if (st.isFIFO()) return "fifo";
  if (st.isSymbolicLink()) return "symlink";
  if (st.isSocket()) return "socket";
  if (st.isCharacterDevice()) return "char device";
  if (st.isBlockDevice()) return "block device";
  return "unknown";
}

/**
 * The nine host functions of the plugin (hostfuncs/README.md, ABI version 4)
 * for Node: operating-system primitives with **no policy** (the plugin
 * decides). None ever throws: every failure, a malformed request included,
 * is the response `{"error": {"code", "message"}}`. Node specifics: `peer`,
 * `sysctl` and `procargs` answer `unsupported`; on macOS `ps` runs `/bin/ps`;
 * the lock is an abstract Unix socket on Linux, taken ahead of the plugin's
 * call by {@link HostFunctions.lockAhead}, and `O_EXLOCK` on macOS.
 *
 * @packageDocumentation
 */
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import * as fs from "node:fs";
import { createServer, type Server } from "node:net";
import { userInfo } from "node:os";
import * as path from "node:path";

import { safeLog, type LogLevel, type Logger } from "./logger.js";

/** Version of the plugin/host contract this host implements. */
export const ABI_VERSION = "4";

/** Wasm import module of every host function (Extism's default for user functions). */
export const NAMESPACE = "extism:host/user";

/** Host function names, in the order of hostfuncs/README.md. */
export const FUNCTIONS = ["mcp_resume_facts", "mcp_resume_inspect", "mcp_resume_prepare_dir", "mcp_resume_read", "mcp_resume_write",
  "mcp_resume_remove", "mcp_resume_list", "mcp_resume_lock", "mcp_resume_log"] as const;

/** Error codes of the contract (hostfuncs/README.md, "Error codes"). */
export type ErrorCode =
  | "not_found"
  | "permission"
  | "unsupported"
  | "invalid_request"
  | "unsafe"
  | "busy"
  | "not_dir"
  | "exists"
  | "no_space"
  | "read_only"
  | "io";

/** errno names with a code of their own (hostfuncs/README.md, "Error codes"); ELOOP is handled apart. */
const ERRNO_CODES: Record<string, ErrorCode> = {
  ENOENT: "not_found",
  ESRCH: "not_found",
  EBADF: "not_found",
  EACCES: "permission",
  EPERM: "permission",
  ENOTDIR: "not_dir",
  EEXIST: "exists",
  ENOSPC: "no_space",
  EDQUOT: "no_space",
  EROFS: "read_only",
};

/** A JSON object: a request, a response, an inspect operation or its result. */
export type Json = Record<string, unknown>;

/** A failure answered as `{"error": {code, message}}`; thrown inside, caught by {@link HostFunctions.call}. */
export class HostError extends Error {
  /** @param code - the contract's error code. @param message - what failed and what to do; never a token. */
  constructor(readonly code: ErrorCode, message: string) {
    super(message);
  }
}

const bad = (message: string): HostError => new HostError("invalid_request", message);

/** Maps a Node system error to the contract's codes ({@link ERRNO_CODES}, else `io`); `ELOOP` (a refused symlink) is `unsafe` where files are concerned. */
function osError(op: string, e: unknown, symlinkUnsafe = false): HostError {
  const code = (e as NodeJS.ErrnoException | null)?.code ?? "";
  const msg = `${op}: ${(e as Error | null)?.message ?? String(e)}`;
  if (symlinkUnsafe && code === "ELOOP") return new HostError("unsafe", `${op}: it is a symbolic link, which is never followed`);
  return new HostError(ERRNO_CODES[code] ?? "io", msg);
}

/** Runs `fn`; a system error becomes {@link osError}`(what, …)`, a {@link HostError} passes through. */
function sys<T>(what: string, fn: () => T, symlinkUnsafe = false): T {
  try {
    return fn();
  } catch (e) {
    throw e instanceof HostError ? e : osError(what, e, symlinkUnsafe);
  }
}

/** The request's field `key`, which must be a string (`int`: an integer), else `invalid_request`. */
function str(req: Json, key: string): string {
  if (typeof req[key] !== "string") throw bad(`request lacks the string ${JSON.stringify(key)}`);
  return req[key] as string;
}
function int(req: Json, key: string): number {
  if (!Number.isSafeInteger(req[key])) throw bad(`request lacks the integer ${JSON.stringify(key)}`);
  return req[key] as number;
}

/** The name rule (hostfuncs/README.md, "Names"): 1–255 of `[A-Za-z0-9._-]`, not starting with `.`. */
export function validName(name: unknown): name is string {
  return typeof name === "string" && /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,254}$/.test(name);
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const PID = "(?:self|[1-9][0-9]*)";
/** The `/proc` allowlist (hostfuncs/README.md, "The allowlist"), checked before any system call. */
const ALLOWED = { read: new RegExp(`^/proc/(?:sys/kernel/random/boot_id|self/timens_offsets|${PID}/(?:stat|cmdline))$`),
  readlink: new RegExp(`^/proc/(?:self|${PID}/ns/pid|${PID}/fd/[0-9]+)$`) };
const DIGITS = /^[1-9][0-9]*$/;
const PROC_READ_MAX = 65536; // most bytes an inspect "read" returns

/** Reads at most `max` bytes of `file`, opened `O_RDONLY|O_NOFOLLOW` (plus `flags`); `fstatOk` may refuse the open file. */
function readFile(file: string, max: number, flags = 0, fstatOk?: (st: fs.Stats) => void): Buffer {
  const fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | flags);
  try {
    fstatOk?.(fs.fstatSync(fd));
    const buf = Buffer.allocUnsafe(max);
    let n = 0;
    for (let r = 1; n < max && r > 0; n += r) r = fs.readSync(fd, buf, n, max - n, null);
    return buf.subarray(0, n);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Configuration of {@link HostFunctions}: the `logger` of `mcp_resume_log`;
 * only the conformance runner sets `procRoot` (the directory read for
 * `/proc`, default `"/proc"`) and `os` (the system `/proc` and `ps` assume,
 * default `process.platform`; the lock always uses the real one).
 */
export interface HostConfig {
  logger: Logger;
  procRoot?: string;
  os?: string;
}

/**
 * The host functions of one store. The state directory is fixed by the first
 * successful `mcp_resume_prepare_dir` (the confinement rule); the file
 * functions answer `invalid_request` before that. One instance is one lock
 * holder: two instances exclude each other, in one process or two.
 */
export class HostFunctions {
  readonly #logger: Logger;
  readonly #proc: string;
  readonly #os: string;
  #dir: string | undefined;
  /** Locks held until close(): abstract socket servers (Linux) or O_EXLOCK descriptors (macOS), by key. */
  readonly #held = new Map<string, Server | number>();
  /** What lockAhead() found for keys it could not take. */
  readonly #failed = new Map<string, HostError>();
  readonly #pending = new Set<Promise<void>>();
  #closed = false;

  /** @param config - logger, and the conformance runner's `/proc` mapping. */
  constructor(config: HostConfig) {
    this.#logger = config.logger;
    this.#proc = config.procRoot ?? "/proc";
    this.#os = config.os ?? process.platform;
  }

  /**
   * Serves one host function call. Never throws.
   *
   * @param fn - a name of {@link FUNCTIONS} (anything else answers `invalid_request`).
   * @param request - the UTF-8 JSON request.
   * @returns the UTF-8 JSON response, padded with spaces to a multiple of 8 bytes (hostfuncs/README.md, "Calling convention").
   */
  call(fn: string, request: Uint8Array): Uint8Array {
    let resp: unknown;
    try {
      let req: unknown;
      try {
        req = JSON.parse(Buffer.from(request).toString("utf8"));
      } catch {} // not JSON
      if (req === null || typeof req !== "object" || Array.isArray(req)) throw bad("the request is not a JSON object");
      resp = this.#dispatch(fn, req as Json);
    } catch (e) {
      resp = { error: toWire(e, fn) };
    }
    let out = JSON.stringify(resp);
    out += " ".repeat((8 - (Buffer.byteLength(out) % 8)) % 8);
    return Buffer.from(out, "utf8");
  }

  #dispatch(fn: string, req: Json): Json {
    switch (fn) {
      case "mcp_resume_facts":
        return this.facts();
      case "mcp_resume_inspect": {
        const ops = req["ops"];
        if (!Array.isArray(ops) || ops.length < 1 || ops.length > 64) throw bad('"ops" must hold 1 to 64 operations');
        return {
          results: ops.map((op: unknown) => {
            try {
              if (op === null || typeof op !== "object" || Array.isArray(op)) throw bad("an operation must be a JSON object");
              return this.inspect(op as Json);
            } catch (e) {
              return { error: toWire(e, String((op as Json | null)?.["op"])) };
            }
          }),
        };
      }
      case "mcp_resume_prepare_dir":
        return this.#prepareDir(req);
      case "mcp_resume_read":
        return this.#read(this.#file(req), int(req, "limit"));
      case "mcp_resume_write": {
        const data = str(req, "data");
        if (!BASE64.test(data)) throw bad('"data" is not standard base64');
        return this.#write(this.#file(req), Buffer.from(data, "base64"));
      }
      case "mcp_resume_remove":
        sys(`remove ${String(req["name"])}`, () => fs.unlinkSync(this.#file(req)));
        return {};
      case "mcp_resume_list":
        return this.#list(str(req, "prefix"));
      case "mcp_resume_lock": {
        const socket = req["socket"] ?? "";
        if (typeof socket !== "string" || socket.includes("\0")) throw bad('"socket" must be a string without NUL');
        this.#lock(this.#file(req), socket);
        return {};
      }
      case "mcp_resume_log": {
        const level = str(req, "level");
        if (!["debug", "info", "warn", "error"].includes(level)) throw bad(`unknown level ${JSON.stringify(level)}: use debug, info, warn or error`);
        const [event, message] = [str(req, "event"), str(req, "message")];
        if (event === "" || message === "") throw bad('"event" and "message" must not be empty');
        const detail = typeof req["detail"] === "string" && req["detail"] !== "" ? { detail: req["detail"] } : {};
        safeLog(this.#logger, level as LogLevel, message, { event, ...detail });
        return {};
      }
      default:
        throw bad(`unknown host function ${fn}`);
    }
  }

  /**
   * `mcp_resume_facts` of this process (hostfuncs/README.md): `home` is `$HOME` when it is set and absolute, else
   * the password database's home directory of the effective uid (`os.userInfo()`, as Go's `os/user` and Python's
   * `pwd`), else `""`; `cwd` is `process.cwd()` (`""` when it fails); `args` are `process.argv.slice(2)`; `env` is
   * every variable. Node decodes argv, the environment and the working directory as UTF-8 with U+FFFD in place of
   * invalid bytes, which is what the contract asks. The conformance runner overrides it.
   */
  facts(): Json {
    let home = process.env["HOME"] ?? "";
    if (!path.isAbsolute(home)) {
      try {
        home = userInfo().homedir;
      } catch {
        home = ""; // no password-database entry
      }
      if (!path.isAbsolute(home)) home = "";
    }
    let cwd = "";
    try {
      cwd = process.cwd();
    } catch {} // a deleted working directory: ""
    const env = Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => typeof e[1] === "string"));
    const [euid, xdg] = [process.geteuid?.() ?? -1, process.env["XDG_STATE_HOME"] ?? ""];
    return { os: process.platform, pid: process.pid, euid, home, xdg_state_home: xdg, cwd, args: process.argv.slice(2), env, runtime: "node" };
  }

  /**
   * One `mcp_resume_inspect` operation (hostfuncs/README.md, table of ops);
   * the conformance runner overrides those without a file to read.
   *
   * @param op - `{"op", "path" | "pid" | "fd" | "targets"}`.
   * @returns the success object of that op.
   * @throws {@link HostError}, answered as that result's `error`.
   */
  inspect(op: Json): Json {
    switch (op["op"]) {
      case "read": {
        const p = this.#procPath(op, ALLOWED.read);
        return { data: sys(`read ${String(op["path"])}`, () => readFile(p, PROC_READ_MAX)).toString("base64") };
      }
      case "readlink": {
        const p = this.#procPath(op, ALLOWED.readlink);
        return { target: sys(`readlink ${String(op["path"])}`, () => fs.readlinkSync(p)) };
      }
      case "fds":
        return { fds: this.#fds(op) };
      case "kill0": {
        const pid = this.#pid(op);
        sys(`kill(${pid}, 0)`, () => process.kill(pid, 0));
        return {};
      }
      case "exe": {
        // stat(2) follows /proc/<pid>/exe to the program file; bigint: an inode may exceed 2^53.
        const pid = this.#pid(op);
        if (this.#os !== "linux") throw new HostError("unsupported", `no /proc on ${this.#os}`);
        const st = sys(`stat /proc/${pid}/exe`, () => fs.statSync(`${this.#proc}/${pid}/exe`, { bigint: true }));
        return { dev: st.dev.toString(), ino: st.ino.toString() };
      }
      case "fstat": {
        const fd = op["fd"] ?? 0;
        if (typeof fd !== "number" || !Number.isInteger(fd) || fd < 0 || fd > 0x7fffffff) throw bad('"fd" must be a file descriptor number (0 to 2147483647)');
        const st = sys(`fstat ${fd}`, () => fs.fstatSync(fd)); // EBADF (closed) is not_found
        const type = st.isFIFO() ? "fifo" : st.isSocket() ? "socket" : st.isCharacterDevice() ? "char" : st.isFile() ? "file" : st.isDirectory() ? "dir" : "other";
        return { type };
      }
      case "peer":
        throw new HostError("unsupported", "Node cannot read SO_PEERCRED");
      case "sysctl":
      case "procargs":
        throw new HostError("unsupported", "Node cannot call sysctl");
      case "ps":
        return this.#ps(this.#pid(op));
      default:
        throw bad(`unknown operation ${JSON.stringify(op["op"])}`);
    }
  }

  /** Checks `op.path` against `allowed`, then maps it under the `/proc` root. */
  #procPath(op: Json, allowed: RegExp): string {
    const p = op["path"];
    if (typeof p !== "string" || !allowed.test(p)) throw bad(`path ${JSON.stringify(p)} is not on the /proc allowlist`);
    if (this.#os !== "linux") throw new HostError("unsupported", `no /proc on ${this.#os}`);
    return this.#proc + p.slice("/proc".length);
  }

  #pid(op: Json): number {
    const pid = op["pid"];
    if (typeof pid !== "string" || !DIGITS.test(pid) || Number(pid) > 0x7fffffff) throw bad(`pid ${JSON.stringify(pid)} is not a process ID`);
    return Number(pid);
  }

  /** `fds`: `/proc/<pid>/fd`, sorted by fd, each with its target and fdinfo flags (-1 when unreadable). */
  #fds(op: Json): Json[] {
    const pid = op["pid"];
    if (pid !== "self" && (typeof pid !== "string" || !DIGITS.test(pid))) throw bad(`pid ${JSON.stringify(pid)} is not a process ID or "self"`);
    const targets = op["targets"];
    if (targets !== undefined && (!Array.isArray(targets) || targets.some((t) => typeof t !== "string"))) throw bad('"targets" must be a list of strings');
    if (this.#os !== "linux") throw new HostError("unsupported", `no /proc on ${this.#os}`);
    const dir = `${this.#proc}/${pid}/fd`;
    const out: Json[] = [];
    for (const n of sys(`list /proc/${pid}/fd`, () => fs.readdirSync(dir)).filter((x) => /^[0-9]+$/.test(x))) {
      let target: string;
      try {
        target = fs.readlinkSync(`${dir}/${n}`);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === "ENOENT") continue; // closed during the listing
        throw osError(`readlink /proc/${pid}/fd/${n}`, e);
      }
      if (targets && !(targets as string[]).includes(target)) continue;
      let flags = -1;
      try {
        const m = /^flags:\s*([0-7]+)\s*$/m.exec(readFile(`${this.#proc}/${pid}/fdinfo/${n}`, 4096).toString("latin1"));
        if (m) flags = parseInt(m[1]!, 8);
      } catch {} // -1: fdinfo cannot be read
      out.push({ fd: Number(n), target, flags });
    }
    return out.sort((a, b) => (a["fd"] as number) - (b["fd"] as number));
  }

  /** `ps` (macOS): the raw output of `/bin/ps`, which the plugin parses. */
  #ps(pid: number): Json {
    if (this.#os !== "darwin") throw new HostError("unsupported", `ps is only asked on macOS, not ${this.#os}`);
    const run = (args: string[]): Buffer => {
      const r = spawnSync("/bin/ps", [...args, "-p", String(pid)], { env: { ...process.env, LC_ALL: "C", TZ: "UTC0" }, stdio: ["ignore", "pipe", "ignore"] });
      if (r.error || (r.status !== 0 && r.status !== 1)) throw new HostError("io", `run /bin/ps: ${r.error?.message ?? `exit ${r.status}`}`);
      return r.stdout; // ps exits 1 when no process matched
    };
    const data = run(["-o", "pid=,ppid=,stat=,lstart=,ucomm="]);
    if (data.toString("latin1").trim() === "") throw new HostError("not_found", `ps printed nothing for pid ${pid}`);
    return { data: data.toString("base64"), args: run(["-ww", "-o", "args="]).toString("base64") };
  }

  /**
   * `mcp_resume_prepare_dir`: one primitive on an absolute, clean `path`,
   * with no rule about owners or modes (the plugin judges): `stat` (lstat,
   * or stat with `follow`: type, uid, `mode & 0o7777`), `mkdir` (one
   * directory, 0700; once a directory is fixed only it or an ancestor),
   * `fix` (the confinement rule, then sweep `.*.tmp` files older than
   * `sweep_seconds`).
   */
  #prepareDir(req: Json): Json {
    const [op, dir] = [str(req, "op"), str(req, "path")];
    if (!path.posix.isAbsolute(dir) || path.posix.normalize(dir) !== dir || (dir !== "/" && dir.endsWith("/")) || dir.includes("\0")) {
      throw bad(`path ${JSON.stringify(dir)} is not an absolute, clean path`);
    }
    switch (op) {
      case "stat": {
        const follow = req["follow"] ?? false;
        if (typeof follow !== "boolean") throw bad('"follow" must be a boolean');
        const st = sys(`stat ${dir}`, () => (follow ? fs.statSync(dir) : fs.lstatSync(dir)));
        const type = st.isSymbolicLink() ? "symlink" : st.isDirectory() ? "dir" : st.isFile() ? "file" : "other";
        return { type, uid: st.uid, mode: st.mode & 0o7777 };
      }
      case "mkdir": {
        const fixed = this.#dir;
        if (fixed !== undefined && dir !== "/" && fixed !== dir && !fixed.startsWith(dir + "/")) {
          throw bad(`this store's state directory is ${fixed}; mkdir ${dir} is outside it`);
        }
        sys(`mkdir ${dir}`, () => fs.mkdirSync(dir, { mode: 0o700 }));
        return {};
      }
      case "fix":
        break;
      default:
        throw bad(`unknown mcp_resume_prepare_dir op ${JSON.stringify(op)}: want stat, mkdir or fix`);
    }
    const sweepSeconds = int(req, "sweep_seconds");
    if (sweepSeconds < 0) throw bad("sweep_seconds must not be negative");
    if (this.#dir !== undefined && this.#dir !== dir) throw bad(`this store's state directory is ${this.#dir}; it cannot move to ${dir}`);
    this.#dir = dir;
    try {
      for (const n of fs.readdirSync(dir)) {
        if (!n.startsWith(".") || !n.endsWith(".tmp")) continue;
        const p = path.join(dir, n);
        const t = fs.lstatSync(p, { throwIfNoEntry: false });
        if (t?.isFile() && Date.now() - t.mtimeMs > sweepSeconds * 1000) fs.rmSync(p, { force: true });
      }
    } catch {} // best effort
    return {};
  }

  /** The state directory (the confinement rule); with a request, the path of its `name` there (the name rule). */
  #file(req?: Json): string {
    const name = req?.["name"];
    if (this.#dir === undefined) throw bad("no state directory: mcp_resume_prepare_dir has not succeeded");
    if (req && !validName(name)) throw bad(`file name ${JSON.stringify(name)} is not allowed: names are 1-255 of [A-Za-z0-9._-], not starting with a dot`);
    return req ? path.join(this.#dir, name as string) : this.#dir;
  }

  /** `mcp_resume_read`: `O_NOFOLLOW|O_NONBLOCK`, regular files only, at most `limit` bytes. */
  #read(file: string, limit: number): Json {
    if (limit < 1 || limit > 1 << 20) throw bad(`limit ${limit} is outside 1..1048576`);
    const name = path.basename(file);
    const regular = (st: fs.Stats): void => {
      if (!st.isFile()) throw new HostError("unsafe", `${name} is not a regular file`);
    };
    return { data: sys(`read ${name}`, () => readFile(file, limit, fs.constants.O_NONBLOCK, regular), true).toString("base64") };
  }

  /**
   * `mcp_resume_write`: atomic replace through `.<name>.<16 hex>.tmp`
   * (`O_CREAT|O_EXCL|O_NOFOLLOW`, 0600) renamed over the name; a symlink at
   * the name is replaced, not followed. No fsync (see the README).
   */
  #write(file: string, data: Buffer): Json {
    const name = path.basename(file);
    const tmp = path.join(path.dirname(file), `.${name}.${randomBytes(8).toString("hex")}.tmp`);
    const flags = fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_NOFOLLOW;
    const fd = sys(`create a temporary file for ${name}`, () => fs.openSync(tmp, flags, 0o600));
    try {
      try {
        for (let off = 0; off < data.length; ) off += fs.writeSync(fd, data, off, data.length - off);
      } finally {
        fs.closeSync(fd);
      }
      fs.renameSync(tmp, file);
      return {};
    } catch (e) {
      fs.rmSync(tmp, { force: true });
      throw osError(`write ${name}`, e);
    }
  }

  /** `mcp_resume_list`: regular files with valid names and the prefix, sorted, with their age (lstat). */
  #list(prefix: string): Json {
    const dir = this.#file();
    const files: Json[] = [];
    for (const name of sys("list the state directory", () => fs.readdirSync(dir)).filter((n) => validName(n) && n.startsWith(prefix)).sort()) {
      const st = fs.lstatSync(path.join(dir, name), { throwIfNoEntry: false });
      if (st?.isFile()) files.push({ name, age_seconds: Math.floor((Date.now() - Math.floor(st.mtimeMs)) / 1000) });
    }
    return { files };
  }

  /**
   * Linux: takes a lock ahead of the synchronous `mcp_resume_lock`, which
   * then answers from the outcome, by binding the abstract socket `socket`
   * (the `lock_socket` of the plugin's `names` export, the same name the Go
   * and Python hosts bind); the kernel frees it when the process exits,
   * however it exits. Touches no file. Elsewhere it does nothing. Never
   * rejects.
   *
   * @param socket - the abstract socket name, without its leading NUL.
   */
  async lockAhead(socket: string): Promise<void> {
    if (process.platform !== "linux" || this.#closed || socket === "" || socket.includes("\0")) return;
    if (this.#held.has(socket)) return;
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
        const busy = e?.code === "EADDRINUSE";
        this.#failed.set(socket, busy ? new HostError("busy", "the lock is held by another server instance") : osError("lock: bind abstract socket", e));
      },
    );
    this.#pending.add(attempt);
    await attempt;
    this.#pending.delete(attempt);
  }

  /**
   * `mcp_resume_lock`: creates the lock file (0600, `O_NOFOLLOW`, regular
   * only, never deleted), then on Linux answers what {@link lockAhead}
   * found for `socket`, and on macOS opens it with `O_EXLOCK|O_NONBLOCK`
   * (the flock lock of the Go and Python hosts) and keeps it open.
   */
  #lock(file: string, socket: string): void {
    const name = path.basename(file);
    const darwin = process.platform === "darwin";
    if (process.platform !== "linux" && !darwin) throw new HostError("unsupported", `no lock on ${process.platform}`);
    if (!darwin && socket === "") throw bad(`lock ${name}: "socket" is required on Linux (the plugin's lock_socket)`);
    const key = darwin ? file : socket;
    if (darwin && this.#held.has(key)) return; // a second O_EXLOCK open would conflict with our own
    if (this.#closed) throw new HostError("io", `lock ${name}: the store is closed`);
    let fd: number;
    try {
      fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_CREAT | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK | (darwin ? O_EXLOCK_DARWIN : 0), 0o600);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (darwin && (code === "EWOULDBLOCK" || code === "EAGAIN")) throw new HostError("busy", `${name} is held by another server instance`);
      if (code === "EISDIR") throw new HostError("unsafe", `${name} is a directory, not a regular file`);
      throw osError(`open lock ${name}`, e, true);
    }
    try {
      if (!sys(`inspect lock ${name}`, () => fs.fstatSync(fd)).isFile()) throw new HostError("unsafe", `${name} is not a regular file`);
    } catch (e) {
      fs.closeSync(fd);
      throw e;
    }
    if (darwin) {
      this.#held.set(key, fd);
      return;
    }
    fs.closeSync(fd);
    if (this.#held.has(key)) return;
    const failed = this.#failed.get(key);
    if (failed) throw new HostError(failed.code, failed.code === "busy" ? `${name} is held by another server instance` : `lock ${name}: ${failed.message}`);
    throw new HostError(
      "io",
      `lock ${name} was not taken ahead: Node binds sockets asynchronously, so the store binds the lock_socket of the plugin's names export before the first load, store or reject`,
    );
  }

  /** Releases every lock this instance holds (the lock files stay); later locks fail with `io`. Idempotent; never rejects. */
  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all(this.#pending);
    for (const h of this.#held.values()) typeof h === "number" ? fs.closeSync(h) : h.close();
    this.#held.clear();
  }
}

/** `O_EXLOCK` on macOS (`<sys/fcntl.h>`); Node's `fs.constants` lacks it. */
const O_EXLOCK_DARWIN = 0x20;

/** Any error as the wire's `{code, message}`: {@link HostError} as is, anything else `io`. */
function toWire(e: unknown, what: string): { code: ErrorCode; message: string } {
  if (e instanceof HostError) return { code: e.code, message: e.message };
  return { code: "io", message: `${what} failed: ${(e as Error | null)?.message ?? String(e)}` };
}

/**
 * The lock behind `mcp_resume_lock` (hostfuncs/README.md): an exclusive lock
 * that dies with its process, associated with a lock file in the state
 * directory. Go and Python `flock(2)` the file; Node has no flock, so:
 *
 * - **Linux**: bind an **abstract Unix socket** named
 *   `\0mcp-resume-lock-<first 40 hex digits of sha256(lock file path)>`,
 *   where the path is the lock file's absolute path with the state directory's
 *   symbolic links resolved (`realpath`), so two spellings of one directory
 *   name one lock. The kernel lets one socket at a time bind a name
 *   (`EADDRINUSE` otherwise: busy) and unbinds it when the socket is closed,
 *   by {@link LockHandle.release} or by the process exiting, however it exits
 *   (`kill -9` included). Abstract names live in the network namespace, not
 *   the filesystem: two server instances in different network namespaces
 *   (containers) never see each other's lock. The server is `unref()`ed, so
 *   it never keeps the process alive, and closes any connection at once.
 *   Binding is asynchronous in Node, hence {@link acquireLock} is async and
 *   the store takes the lock ahead of the plugin's synchronous call.
 * - **macOS**: open the lock file with `O_EXLOCK|O_NONBLOCK` (a BSD `flock`
 *   lock taken atomically by `open(2)`; `EWOULDBLOCK` means busy) and keep
 *   the descriptor open. Synchronous, and the same lock Go and Python take.
 *   Not run here: this package has been tested on Linux only.
 *
 * Either way the lock file itself is created (mode 0600, `O_NOFOLLOW`, must
 * be a regular file) and never deleted, so the state directory looks the
 * same as under the Go host; `prune` removes lock files of hosts that are
 * gone. Locks only exclude instances of the same host implementation (a
 * socket name does not conflict with a Go host's `flock` on Linux).
 *
 * @packageDocumentation
 */
import { createHash } from "node:crypto";
import { closeSync, constants as fsc, fstatSync, openSync, realpathSync } from "node:fs";
import { createServer } from "node:net";
import * as path from "node:path";

/** Prefix of the abstract socket name (Linux). */
export const LOCK_SOCKET_PREFIX = "mcp-resume-lock-";

/** `O_EXLOCK` on macOS (`<sys/fcntl.h>`); Node's `fs.constants` lacks it. */
export const O_EXLOCK_DARWIN = 0x20;

/** A lock this process holds. */
export interface LockHandle {
  /** Releases the lock (closes the socket or descriptor). Never rejects. */
  release(): Promise<void>;
}

/** Why a lock was not taken: the contract's error code and a message. */
export class LockFailure extends Error {
  /** `busy`, `unsafe`, `not_found` or `io`. */
  readonly code: "busy" | "unsafe" | "not_found" | "io";
  /**
   * @param code - the contract's error code.
   * @param message - for humans and logs.
   */
  constructor(code: "busy" | "unsafe" | "not_found" | "io", message: string) {
    super(message);
    this.name = "LockFailure";
    this.code = code;
  }
}

function fsFailure(op: string, e: unknown): LockFailure {
  const code = (e as NodeJS.ErrnoException | null)?.code;
  const msg = (e as Error | null)?.message ?? String(e);
  if (code === "ENOENT") return new LockFailure("not_found", `${op}: ${msg}`);
  if (code === "ELOOP") return new LockFailure("unsafe", `${op}: it is a symbolic link, which is never followed`);
  return new LockFailure("io", `${op}: ${msg}`);
}

function busy(name: string): LockFailure {
  return new LockFailure("busy", `${name} is held by another server instance`);
}

/**
 * Opens (creating it 0600 if missing) the lock file with `extra` flags and
 * checks it is a regular file; returns the open descriptor.
 */
function openLockFile(file: string, name: string, extra: number): number {
  let fd: number;
  try {
    fd = openSync(file, fsc.O_RDONLY | fsc.O_CREAT | fsc.O_NOFOLLOW | fsc.O_NONBLOCK | extra, 0o600);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException | null)?.code;
    if (extra !== 0 && (code === "EWOULDBLOCK" || code === "EAGAIN")) throw busy(name);
    throw fsFailure(`open lock ${name}`, e);
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new LockFailure("unsafe", `${name} is not a regular file (mode ${(st.mode & 0o170000).toString(8)})`);
  } catch (e) {
    closeSync(fd);
    throw e instanceof LockFailure ? e : fsFailure(`inspect lock ${name}`, e);
  }
  return fd;
}

/**
 * The abstract socket name (without the leading NUL) for the lock file
 * `name` in `dir`.
 *
 * @throws {@link LockFailure} when `dir` cannot be resolved.
 */
export function lockSocketName(dir: string, name: string): string {
  let real: string;
  try {
    real = realpathSync(dir);
  } catch (e) {
    throw fsFailure("resolve state directory", e);
  }
  const digest = createHash("sha256").update(path.join(real, name)).digest("hex");
  return LOCK_SOCKET_PREFIX + digest.slice(0, 40);
}

/** Binds the abstract socket `\0<socketName>`: resolves once bound, rejects with EADDRINUSE when taken. */
function bindAbstract(socketName: string): Promise<LockHandle> {
  return new Promise((resolve, reject) => {
    const server = createServer((conn) => conn.destroy());
    const onError = (e: Error): void => reject(e);
    server.once("error", onError);
    // exclusive: a cluster worker binds itself instead of asking the primary.
    server.listen({ path: "\0" + socketName, exclusive: true }, () => {
      server.off("error", onError);
      server.on("error", () => undefined);
      server.unref();
      let released: Promise<void> | undefined;
      resolve({
        release: () => (released ??= new Promise<void>((done) => server.close(() => done()))),
      });
    });
  });
}

/**
 * Takes the lock `name` in the state directory `dir` (an absolute path),
 * creating the lock file if missing.
 *
 * @param platform - for tests.
 * @returns the held lock.
 * @throws {@link LockFailure} `busy` when another holder has it (another
 *   process, or another, independent holder in this one), `unsafe` for a
 *   symlink or non-regular file, `not_found` when `dir` is missing, `io`
 *   otherwise (including platforms other than Linux and macOS).
 */
export async function acquireLock(dir: string, name: string, platform: NodeJS.Platform = process.platform): Promise<LockHandle> {
  if (platform === "darwin") return acquireLockSync(dir, name, platform);
  if (platform !== "linux") throw new LockFailure("io", `locking is not supported on ${platform}`);
  const file = path.join(dir, name);
  closeSync(openLockFile(file, name, 0));
  const socketName = lockSocketName(dir, name);
  try {
    return await bindAbstract(socketName);
  } catch (e) {
    if ((e as NodeJS.ErrnoException | null)?.code === "EADDRINUSE") throw busy(name);
    throw new LockFailure("io", `lock ${name}: bind abstract socket: ${(e as Error)?.message ?? String(e)}`);
  }
}

/**
 * {@link acquireLock} where it can be done synchronously (macOS); elsewhere
 * it throws `io`: Node binds sockets asynchronously only, so on Linux a lock
 * must be taken with {@link acquireLock} ahead of the synchronous host call.
 *
 * @throws {@link LockFailure} as {@link acquireLock}.
 */
export function acquireLockSync(dir: string, name: string, platform: NodeJS.Platform = process.platform): LockHandle {
  if (platform !== "darwin") {
    throw new LockFailure(
      "io",
      `lock ${name} was not taken ahead of this call, and Node cannot take it inside a synchronous host function on ${platform} (binding a socket is asynchronous); the store takes the lock named by the plugin's names export before the first load, store or reject`,
    );
  }
  const fd = openLockFile(path.join(dir, name), name, O_EXLOCK_DARWIN);
  let released = false;
  return {
    release: async () => {
      if (released) return;
      released = true;
      try {
        closeSync(fd);
      } catch {
        // already closed
      }
    },
  };
}

/**
 * Linux `/proc` reader, mirrored from Go's `procid/procfs.go`. Works on any
 * root directory so tests run against fixture trees.
 *
 * The start time is `<starttime ticks>.<boot_id hex>.<pid namespace inode>`:
 * two PID namespaces hand out the same pids, and share the boot ID and the
 * clock, so the inode of `/proc/<pid>/ns/pid` tells their processes apart.
 *
 * @packageDocumentation
 */
import { readFileSync, readlinkSync } from "node:fs";
import * as path from "node:path";

import { ProcIdError, type ProcessInfo, type ProcessSource } from "./types.js";

/** Fields of `/proc/<pid>/stat` this package uses. */
export interface StatInfo {
  /** Field 1. */
  pid: number;
  /** Field 2, between the first `(` and the last `)`. */
  comm: string;
  /** Field 3, one character. */
  state: string;
  /** Field 4. */
  ppid: number;
  /** Field 22, `starttime`: clock ticks from boot, as exact decimal text. */
  start: string;
}

const MAX_U64 = (1n << 64n) - 1n;

function short(data: string): string {
  return JSON.stringify(data.length > 64 ? data.slice(0, 64) : data);
}

/**
 * Parses the contents of `/proc/<pid>/stat` (proc_pid_stat(5)):
 * `pid (comm) state ppid pgrp … starttime(22) …`. `comm` may contain any
 * byte but NUL, spaces and parentheses included, so the fields after it are
 * found from the **last** `)`.
 *
 * @param data - file contents (latin1/utf-8 text).
 * @returns the parsed fields; `start` stays a decimal string (it may exceed
 *   2^53).
 * @throws {@link ProcIdError} `malformed` when the text is not a stat line.
 */
export function parseStat(data: string): StatInfo {
  const open = data.indexOf("(");
  const end = data.lastIndexOf(")");
  if (open < 0 || end < open) throw new ProcIdError("malformed", `no (comm) in ${short(data)}`);
  const pidText = data.slice(0, open).trim();
  const pid = /^\d+$/.test(pidText) ? Number(pidText) : NaN;
  if (!Number.isSafeInteger(pid) || pid <= 0) {
    throw new ProcIdError("malformed", `bad pid before (comm) in ${short(data)}`);
  }
  // Fields from 3 (state) on; field n is rest[n-3].
  const tail = data.slice(end + 1).trim();
  const rest = tail === "" ? [] : tail.split(/\s+/);
  if (rest.length < 22 - 2) {
    throw new ProcIdError("malformed", `${rest.length} fields after (comm), want at least ${22 - 2}`);
  }
  const state = rest[0]!;
  if (state.length !== 1) throw new ProcIdError("malformed", `bad state ${JSON.stringify(state)}`);
  const ppidText = rest[4 - 3]!;
  const ppid = /^\d+$/.test(ppidText) ? Number(ppidText) : NaN;
  if (!Number.isSafeInteger(ppid)) throw new ProcIdError("malformed", `bad ppid ${JSON.stringify(ppidText)}`);
  const start = rest[22 - 3]!;
  if (!/^\d+$/.test(start) || BigInt(start) > MAX_U64) {
    throw new ProcIdError("malformed", `bad starttime ${JSON.stringify(start)}`);
  }
  return { pid, comm: data.slice(open + 1, end), state, ppid, start: BigInt(start).toString() };
}

/**
 * Turns `/proc/sys/kernel/random/boot_id` (a UUID such as
 * `0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0\n`) into 32 lowercase hex digits.
 *
 * @throws {@link ProcIdError} `no_boot_id` when it is not a UUID.
 */
export function parseBootId(data: string): string {
  const id = data.trim().replaceAll("-", "").toLowerCase();
  if (!/^[0-9a-f]{32}$/.test(id)) throw new ProcIdError("no_boot_id", `boot ID ${short(data)} is not a UUID`);
  return id;
}

/**
 * Whether a Node fs error from reading `/proc/<pid>/...` means the process
 * does not exist (any more): `ENOENT` or `ESRCH`.
 *
 * @param err - the error thrown by a `node:fs` call.
 * @returns true for a vanished process; false for any other error.
 */
export function gone(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  return code === "ENOENT" || code === "ESRCH";
}

/**
 * Whether process `pid` exists although its `/proc` entry is missing (Go:
 * `hiddenPID`; docs/RELIABILITY.md fault 12): `process.kill(pid, 0)` throws
 * `EPERM` only for a process that exists and belongs to another user, which
 * a `/proc` mounted `hidepid=1` or `2` does not show.
 *
 * @param pid - the process ID.
 * @returns true only on `EPERM`; false for a pid that does not exist
 *   (`ESRCH`), one this process may signal, a pid that is not positive
 *   (`kill` would address a process group) or not a valid pid. Sends no
 *   signal; never throws.
 */
export function hiddenPid(pid: number): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException | null)?.code === "EPERM";
  }
  return false;
}

/**
 * Reads processes from a `/proc` tree rooted at `root` (`/proc` in
 * production). One reader serves one walk: it caches the boot ID after its
 * first read, so a walk uses one boot ID throughout.
 */
export class LinuxProcSource implements ProcessSource {
  readonly #root: string;
  readonly #afterStat: ((pid: number) => void) | undefined;
  readonly #hidden: ((pid: number) => boolean) | undefined;
  #boot = "";

  /**
   * @param root - the proc root, default `/proc`.
   * @param afterStat - test hook called after each successful stat read.
   * @param hidden - asked with a pid whose `<root>/<pid>/stat` is missing:
   *   whether the process exists all the same, hidden by a `/proc` mounted
   *   `hidepid=1`/`2` (Go: `linuxReader.hidden`; docs/RELIABILITY.md fault
   *   12). Production (`platformSource`/`alive` in `index.ts`) passes
   *   {@link hiddenPid}; fixture trees leave it undefined: their pids are
   *   not this machine's.
   */
  constructor(root = "/proc", afterStat?: (pid: number) => void, hidden?: (pid: number) => boolean) {
    this.#root = root;
    this.#afterStat = afterStat;
    this.#hidden = hidden;
  }

  /**
   * The boot ID as 32 lowercase hex digits, read once.
   *
   * @throws {@link ProcIdError} `no_boot_id`.
   */
  bootId(): string {
    if (this.#boot !== "") return this.#boot;
    const name = path.join(this.#root, "sys", "kernel", "random", "boot_id");
    let data: string;
    try {
      data = readFileSync(name, "latin1");
    } catch (err) {
      throw new ProcIdError("no_boot_id", `cannot read the kernel boot ID (is /proc mounted?): ${(err as Error).message}`);
    }
    this.#boot = parseBootId(data);
    return this.#boot;
  }

  /**
   * The inode number of `pid`'s PID namespace, from the link
   * `<root>/<pid>/ns/pid` (`pid:[4026531836]`); pid 0 means `<root>/self`
   * (Go: `linuxReader.pidNS`). Two PID namespaces hand out the same pids and
   * share the boot ID and clock, so this is what tells their processes apart.
   *
   * @throws {@link ProcIdError} `not_found` when process `pid` (not self) is
   *   gone, `namespace` when the link cannot be read or is malformed.
   */
  pidNs(pid: number): string {
    const name = path.join(this.#root, pid === 0 ? "self" : String(pid), "ns", "pid");
    let link: string;
    try {
      link = readlinkSync(name, "latin1");
    } catch (err) {
      if (pid !== 0 && gone(err)) throw new ProcIdError("not_found", `read ${name}: process not found`);
      throw new ProcIdError("namespace", `read ${name}: cannot verify the PID namespace: ${(err as Error).message}`);
    }
    const m = /^pid:\[(\d+)\]$/.exec(link);
    if (!m || BigInt(m[1]!) > MAX_U64) {
      throw new ProcIdError("namespace", `${name} links to ${JSON.stringify(link)}, not pid:[<inode>]: cannot verify the PID namespace`);
    }
    return m[1]!;
  }

  /**
   * Verifies that the root is the `/proc` of this process's PID namespace:
   * `<root>/self` must name `process.pid` (Go: `linuxReader.checkOwnProc`).
   * Under `unshare -p -f` without `--mount-proc` it names another pid, and
   * `<root>/<pid>` other processes.
   *
   * @param pid - this process's pid (tests).
   * @throws {@link ProcIdError} `namespace` otherwise.
   */
  checkOwnProc(pid: number = process.pid): void {
    const name = path.join(this.#root, "self");
    let self: string;
    try {
      self = readlinkSync(name, "latin1");
    } catch (err) {
      throw new ProcIdError("namespace", `read ${name}: cannot verify the PID namespace: ${(err as Error).message}`);
    }
    if (self !== String(pid)) {
      throw new ProcIdError(
        "namespace",
        `${name} is pid ${self} but this process is pid ${pid}: ${this.#root} belongs to another PID namespace (mount a /proc of this namespace, e.g. unshare --mount-proc)`,
      );
    }
  }

  /**
   * Reads and parses `<root>/<pid>/stat`.
   *
   * @param pid - the process ID.
   * @returns the parsed stat fields.
   * @throws {@link ProcIdError} `not_found` when the process does not exist
   *   (the file is missing and the `hidden` check, when set, does not claim
   *   the pid); `malformed` when the file cannot be read for another reason,
   *   cannot be parsed or describes another pid, and when it is missing but
   *   `hidden` says the process exists (`/proc` mounted `hidepid=1`/`2` hides
   *   another user's process): `read <name>: pid <pid> exists but <root>
   *   hides it (mounted hidepid=1 or 2) and it belongs to another user:
   *   permission denied`, so that `resolve` does not report a race and
   *   {@link LinuxProcSource.alive} throws (unknown) instead of answering
   *   "gone" (docs/RELIABILITY.md fault 12).
   */
  stat(pid: number): StatInfo {
    if (pid <= 0) throw new ProcIdError("not_found", `pid ${pid} is not positive`);
    const name = path.join(this.#root, String(pid), "stat");
    let data: string;
    try {
      data = readFileSync(name, "latin1");
    } catch (err) {
      if (gone(err)) {
        if (this.#hidden?.(pid)) {
          throw new ProcIdError(
            "malformed",
            `read ${name}: pid ${pid} exists but ${this.#root} hides it (mounted hidepid=1 or 2) and it belongs to another user: permission denied`,
          );
        }
        throw new ProcIdError("not_found", `read ${name}: process not found`);
      }
      throw new ProcIdError("malformed", `read ${name}: ${(err as Error).message}`);
    }
    let st: StatInfo;
    try {
      st = parseStat(data);
    } catch (err) {
      throw new ProcIdError("malformed", `parse ${name}: ${(err as Error).message}`);
    }
    if (st.pid !== pid) throw new ProcIdError("malformed", `parse ${name}: it describes pid ${st.pid}`);
    this.#afterStat?.(pid);
    return st;
  }

  /**
   * Reads `<root>/<pid>/cmdline`: NUL-separated arguments, trailing empty
   * ones dropped. Null when empty or unreadable for a reason other than the
   * process being gone.
   *
   * @throws {@link ProcIdError} `not_found` when the process is gone.
   */
  args(pid: number): string[] | null {
    const name = path.join(this.#root, String(pid), "cmdline");
    let data: string;
    try {
      data = readFileSync(name, "latin1");
    } catch (err) {
      if (gone(err)) throw new ProcIdError("not_found", `read ${name}: process not found`);
      return null;
    }
    const args = data.split("\0");
    while (args.length > 0 && args[args.length - 1] === "") args.pop();
    return args.length === 0 ? null : args;
  }

  /**
   * Whether `pid` runs and is the instance `want` names (Go:
   * `linuxReader.alive`): false when the process is absent, a zombie (state
   * `Z`) or dead (`X`/`x`), or has another start time (the pid was reused,
   * or `want` is from another boot or malformed).
   *
   * @throws {@link ProcIdError} when the answer is unknown: `no_boot_id`,
   *   `malformed` (the process may exist but cannot be read, among them a
   *   process whose entry a `/proc` mounted `hidepid` hides, see
   *   {@link LinuxProcSource.stat}: a prune never deletes a live hidden
   *   host's file; docs/RELIABILITY.md fault 12), `namespace`
   *   (`want` was recorded in another PID namespace, whose pids name nothing
   *   here, or a namespace link cannot be read).
   */
  alive(pid: number, want: string): boolean {
    const boot = this.bootId();
    const self = this.pidNs(0);
    const parts = want.split(".");
    if (parts.length === 3 && parts[2] !== self) {
      throw new ProcIdError(
        "namespace",
        `start time ${JSON.stringify(want)} was recorded in PID namespace ${parts[2]}, this is ${self}: cannot verify the PID namespace`,
      );
    }
    let st: StatInfo;
    try {
      st = this.stat(pid);
    } catch (err) {
      if (err instanceof ProcIdError && err.code === "not_found") return false;
      throw err;
    }
    if (st.state === "Z" || st.state === "X" || st.state === "x") return false;
    return `${st.start}.${boot}.${self}` === want;
  }

  /** {@inheritDoc ProcessSource.lookup} */
  async lookup(pid: number): Promise<ProcessInfo> {
    return this.lookupSync(pid);
  }

  /** Synchronous {@link LinuxProcSource.lookup}. */
  lookupSync(pid: number): ProcessInfo {
    const boot = this.bootId();
    const st = this.stat(pid);
    const args = this.args(pid);
    // A process visible in this /proc (checked to be ours) is in our PID
    // namespace, so our own link names it; it is always readable, where
    // another user's /proc/<pid>/ns/pid is not (Go procid does the same).
    const ns = this.pidNs(0);
    return { pid: st.pid, ppid: st.ppid, name: st.comm, args, startTime: `${st.start}.${boot}.${ns}` };
  }
}

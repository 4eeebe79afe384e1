/**
 * Types shared by the process-identity readers (mirrors Go's `procid`).
 *
 * @packageDocumentation
 */

/** One process as the kernel describes it (Go: `procid.Process`). */
export interface ProcessInfo {
  /** Process ID. */
  pid: number;
  /** Parent process ID; 0 when the parent is outside this PID namespace. */
  ppid: number;
  /**
   * Kernel short name. Linux: `comm` from `/proc/<pid>/stat` (≤ 15 bytes,
   * may hold spaces and parentheses). macOS: `ucomm` from `ps` (p_comm,
   * ≤ 16 bytes).
   */
  name: string;
  /**
   * Argument vector, or null when unknown. Linux: `/proc/<pid>/cmdline`
   * split on NUL, trailing empty strings dropped. macOS: `ps -o args=`
   * split on white space (a retitled `npm exec …` process is kept as one
   * element, as on Linux).
   */
  args: string[] | null;
  /**
   * Opaque start time naming this process instance among all that had
   * `pid`: Linux `<starttime ticks>.<boot_id hex>.<pid namespace inode>`
   * (the number in the link `/proc/<pid>/ns/pid`); macOS `<epoch seconds>`.
   */
  startTime: string;
}

/** The resolved MCP host (Go: `procid.Identity`). */
export interface ResolvedHost {
  /** The host's process ID. */
  pid: number;
  /** The host's {@link ProcessInfo.startTime}. */
  startTime: string;
  /** Ancestors walked, nearest first; the last is the host. Never empty. */
  chain: ProcessInfo[];
  /**
   * How the stdio check went (Go: `Identity.Stdio`; docs/RELIABILITY.md
   * fault 11c), one line for logs: `verified: stdin pipe:[123] is held by
   * the host as fd 7`, or `not checked: <reasons>` (a socket, which Node
   * cannot ask for its peer; a tty or `/dev/null`; another user's host;
   * `no subreapers on this system` on macOS). Set by `resolveHost` when it
   * resolves the current process; absent from `resolve` and from
   * `resolveHost({ pid })` for another process, which do not check.
   */
  stdio?: string;
}

/**
 * Why the host could not be identified; each means session resume is off
 * (spec 000, "Parent Process Information Unavailable"). Same cases as Go's
 * sentinel errors `procid.Err*`:
 *
 * - `unsupported`: not Linux or macOS (`ErrUnsupported`);
 * - `not_found`: the starting pid does not exist (`ErrNotFound`);
 * - `reaper`: the walk reaches pid 0/1 or an init/supervisor/subreaper
 *   known by name (`ErrReaper`);
 * - `race`: the process tree changed during the walk, or the host exited
 *   during the stdio check; retry (`ErrRace`);
 * - `no_boot_id`: the kernel boot ID cannot be read (`ErrNoBootID`);
 * - `too_deep`: too many launchers in a row (`ErrTooDeep`);
 * - `malformed`: the kernel's description cannot be parsed (`ErrMalformed`),
 *   or cannot be read although the process may exist: an unreadable
 *   `/proc/<pid>/stat`, or a missing one whose process exists but a `/proc`
 *   mounted `hidepid=1`/`2` hides (Go wraps the OS error there,
 *   `fs.ErrPermission` for hidepid; docs/RELIABILITY.md fault 12);
 * - `namespace`: Linux, `/proc` or a start time belongs to another PID
 *   namespace (`ErrNamespace`);
 * - `adopted`: Linux, the resolved host provably does not hold the other
 *   end of the server's stdin or stdout: the server was orphaned and
 *   adopted by a subreaper that is not on the reaper list, or the host
 *   passes its own stdio through like a launcher (`ErrAdopted`;
 *   docs/RELIABILITY.md fault 11c). Only `resolveHost` for the current
 *   process checks this.
 */
export type ProcIdErrorCode =
  | "unsupported"
  | "not_found"
  | "reaper"
  | "race"
  | "no_boot_id"
  | "too_deep"
  | "malformed"
  | "namespace"
  | "adopted";

/**
 * Error thrown by the identity functions; `code` tells the case.
 * `namespace` (Go: `procid.ErrNamespace`) is Linux only: `/proc` belongs to
 * another PID namespace than this process (so `/proc/<pid>` would name
 * other processes), a process's `/proc/<pid>/ns/pid` cannot be read, or
 * (from {@link alive}) the start time was recorded in another PID namespace
 * and cannot be checked. `adopted` (Go: `procid.ErrAdopted`) is Linux only
 * too, from `resolveHost` for the current process: the host found by the
 * walk holds neither the other end of the server's stdin nor of its stdout
 * while one of them provably is a pipe it does not hold (docs/RELIABILITY.md
 * fault 11c, the stdio check); its message lists the fds and ends with
 * `session resume is off`.
 */
export class ProcIdError extends Error {
  /** Which case of {@link ProcIdErrorCode}. */
  readonly code: ProcIdErrorCode;
  /**
   * @param code - the case.
   * @param message - what happened, for logs.
   */
  constructor(code: ProcIdErrorCode, message: string) {
    super(message);
    this.name = "ProcIdError";
    this.code = code;
  }
}

/** Reads processes from one kernel interface. */
export interface ProcessSource {
  /**
   * Describes `pid`.
   *
   * @throws {@link ProcIdError} `not_found` when it does not exist,
   *   `malformed`/`no_boot_id`/`namespace` when it cannot be read or parsed.
   */
  lookup(pid: number): Promise<ProcessInfo>;
}

/**
 * Names a process in error messages, as Go's `procid` does: `pid 42 ("sh")`.
 *
 * @param p - the process.
 * @returns the pid and the JSON-quoted name.
 */
export function describe(p: ProcessInfo): string {
  return `pid ${p.pid} (${JSON.stringify(p.name)})`;
}

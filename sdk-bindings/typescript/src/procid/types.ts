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
}

/**
 * Why the host could not be identified; each means session resume is off
 * (spec 000, "Parent Process Information Unavailable"). Same cases as Go's
 * sentinel errors `procid.Err*`.
 */
export type ProcIdErrorCode =
  | "unsupported"
  | "not_found"
  | "reaper"
  | "race"
  | "no_boot_id"
  | "too_deep"
  | "malformed"
  | "namespace";

/**
 * Error thrown by the identity functions; `code` tells the case.
 * `namespace` (Go: `procid.ErrNamespace`) is Linux only: `/proc` belongs to
 * another PID namespace than this process (so `/proc/<pid>` would name
 * other processes), a process's `/proc/<pid>/ns/pid` cannot be read, or
 * (from {@link alive}) the start time was recorded in another PID namespace
 * and cannot be checked.
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

/**
 * The stdio check (Linux): the resolved MCP host must hold the other end of
 * the server's stdin or stdout. Mirrors Go's `procid/stdio.go`; the rules
 * are those of `procid/doc.go` ("Stdio"), the fix for fault 11c of
 * `docs/RELIABILITY.md`.
 *
 * Why: when a server's launcher exits before the server resolves its
 * identity, the kernel re-parents the server to the nearest subreaper
 * (`PR_SET_CHILD_SUBREAPER`). A subreaper that is not on the reaper list
 * would then be "the host" of every server orphaned under it, and a second
 * MCP host's server would resume the first host's session (spec 000: never
 * resume the wrong session). An MCP host always holds the other end of the
 * pipes or socket pair it talks to the server through; a subreaper that
 * adopted the server does not.
 *
 * Each of fd 0 (stdin) and fd 1 (stdout) gets a {@link StdioVerdict}:
 *
 * - an anonymous pipe (`pipe:[N]`) is `verified` when the host has an fd
 *   linking to the same `pipe:[N]` opened for the other direction (read
 *   against write; `O_RDWR` matches anything), `disproved` otherwise (a
 *   forking launcher's copy of the server's own end does not count);
 * - a socket is always `not_checked` in Node: Node core cannot call
 *   `getsockopt(SO_PEERCRED)`, and Node/libuv hosts give their children
 *   socket pairs, so a TypeScript server under a Node host is not checked
 *   (Go and Python check the peer pid);
 * - a closed fd, a named FIFO, a tty, `/dev/null` or a file are
 *   `not_checked`, and so is a pipe when `/proc/<host>/fd` cannot be read
 *   (another user's host).
 *
 * Any `verified` fd wins; else any `disproved` fd fails with
 * {@link ProcIdError} `adopted`; else the check passes as "not checked".
 *
 * Works on any proc root directory, so tests run against fixture trees; the
 * fd-kind probe (`fstat`) and the directory listing are injectable for the
 * same reason.
 *
 * @packageDocumentation
 */
import { fstatSync, readdirSync, readFileSync, readlinkSync } from "node:fs";
import * as path from "node:path";

import { LAUNCHERS_ENV } from "./launcher.js";
import { gone } from "./linux.js";
import { describe, ProcIdError, type ProcessInfo } from "./types.js";

/**
 * What `fstat` says one of the server's stdio fds is:
 *
 * - `"closed"`: fstat failed (the fd is not open);
 * - `"pipe"`: `S_IFIFO`, an anonymous pipe or a named FIFO;
 * - `"socket"`: `S_IFSOCK`;
 * - `"other"`: a tty, `/dev/null`, a regular file, a directory.
 */
export type FdKind = "closed" | "pipe" | "socket" | "other";

/**
 * Describes fd `fd` (0 or 1) of the current process.
 *
 * @param fd - the file descriptor number.
 * @returns its {@link FdKind}; never throws.
 */
export type FdProbe = (fd: number) => FdKind;

/**
 * Lists the entries of a directory (the host's `/proc/<pid>/fd`).
 *
 * @param dir - the directory path.
 * @returns the entry names.
 * @throws a Node fs error with `code` (`EACCES`, `EPERM`, `ENOENT`, …).
 */
export type DirLister = (dir: string) => string[];

/**
 * The outcome of checking one stdio fd: the host holds its other end
 * (`verified`), provably does not (`disproved`), or the fd cannot tell
 * (`not_checked`).
 */
export type StdioVerdict = "verified" | "disproved" | "not_checked";

/** One stdio fd's verdict with the reason shown in logs and errors. */
export interface FdCheck {
  /** The fd: 0 (stdin) or 1 (stdout). */
  fd: number;
  /** The verdict. */
  verdict: StdioVerdict;
  /**
   * The reason, such as `stdin pipe:[123] is held by the host as fd 7`,
   * `stdout pipe:[123] is not held by the host`, `stdin is a socket; Node
   * cannot read its peer`, `stdin is not a pipe or socket`.
   */
  reason: string;
}

/** Options of {@link checkStdio}; production uses none of them. */
export interface StdioCheckOptions {
  /**
   * The proc root; default `"/proc"`. `<root>/self/fd/<n>`,
   * `<root>/self/fdinfo/<n>`, `<root>/<host>/fd/` and
   * `<root>/<host>/fdinfo/<n>` are read, so a fixture tree with symlinks
   * such as `self/fd/0 -> pipe:[123]` works.
   */
  root?: string;
  /** The fd-kind probe; default {@link probeFd} (the real `fstat`). */
  probe?: FdProbe;
  /** The directory lister; default `fs.readdirSync` (tests model `EACCES`). */
  readdir?: DirLister;
}

/** `stdin` / `stdout`, for reasons. */
const FD_NAMES = ["stdin", "stdout"] as const;

/** The description when the check does not apply (macOS: orphans go to launchd, pid 1, which the walk refuses). */
export const NO_SUBREAPERS = "not checked: no subreapers on this system";

/**
 * The real fd-kind probe: `fs.fstatSync(fd)`, then `isFIFO()` /
 * `isSocket()`.
 *
 * @param fd - a file descriptor of this process.
 * @returns `"closed"` when fstat fails, else the kind; never throws.
 */
export const probeFd: FdProbe = (fd) => {
  try {
    const st = fstatSync(fd);
    if (st.isFIFO()) return "pipe";
    if (st.isSocket()) return "socket";
    return "other";
  } catch {
    return "closed";
  }
};

/** Whether an fd's `/proc` link names an anonymous pipe (`pipe:[1234]`); a named FIFO's link is its path. */
export function isAnonPipe(link: string): boolean {
  return /^pipe:\[\d+\]$/.test(link);
}

/**
 * Parses the access mode out of a `/proc/<pid>/fdinfo/<fd>` file
 * (proc_pid_fdinfo(5)): the octal `flags:` line, masked with `O_ACCMODE`.
 *
 * @param data - the file's contents.
 * @returns 0 (`O_RDONLY`), 1 (`O_WRONLY`), 2 (`O_RDWR`) or 3.
 * @throws {@link ProcIdError} `malformed` when there is no octal `flags:` line.
 */
export function parseAccessMode(data: string): number {
  const m = /^flags:\s*([0-7]+)\s*$/m.exec(data);
  if (!m) throw new ProcIdError("malformed", "no octal flags: line");
  return Number.parseInt(m[1]!, 8) & 3;
}

/**
 * Whether a pipe fd opened with access mode `theirs` can be the other end
 * of one opened with `mine`: a reader's peer writes and a writer's peer
 * reads; `O_RDWR` on either side matches anything. A forking launcher's
 * inherited copy of the server's own end is not the other end.
 */
export function otherEnd(mine: number, theirs: number): boolean {
  if (mine === 2 || theirs === 2) return true;
  return mine !== theirs;
}

/** The Node fs error code of `err`, if any. */
function errCode(err: unknown): string | undefined {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  return typeof code === "string" ? code : undefined;
}

/** Short text of an fs error: `permission denied` for EACCES/EPERM, else the code or message. */
function errText(err: unknown): string {
  const code = errCode(err);
  if (code === "EACCES" || code === "EPERM") return "permission denied";
  return code ?? ((err as Error)?.message ?? String(err));
}

/** Reads the access mode of `<root>/<who>/fdinfo/<fd>`. Throws fs errors and `malformed`. */
function accessMode(root: string, who: string, fd: string): number {
  return parseAccessMode(readFileSync(path.join(root, who, "fdinfo", fd), "latin1"));
}

/**
 * Checks one stdio fd of the current process against the host (spec 000,
 * "Token File Naming Strategy": the host identity must be certain;
 * docs/RELIABILITY.md fault 11c).
 *
 * @param fd - 0 (stdin) or 1 (stdout).
 * @param host - the resolved host (the last element of the walk's chain).
 * @param options - proc root and test seams.
 * @returns the fd's verdict and reason.
 * @throws {@link ProcIdError} `race` when `/proc/<host>/fd` is gone
 *   (`ENOENT`/`ESRCH`): the host exited during the check.
 */
export function checkFd(fd: number, host: ProcessInfo, options: StdioCheckOptions = {}): FdCheck {
  const root = options.root ?? "/proc";
  const probe = options.probe ?? probeFd;
  const list = options.readdir ?? ((dir: string) => readdirSync(dir));
  const name = FD_NAMES[fd] ?? `fd ${fd}`;
  const notChecked = (reason: string): FdCheck => ({ fd, verdict: "not_checked", reason });

  switch (probe(fd)) {
    case "closed":
      return notChecked(`${name} is closed`);
    case "socket":
      return notChecked(`${name} is a socket; Node cannot read its peer`);
    case "other":
      return notChecked(`${name} is not a pipe or socket`);
    case "pipe":
      break;
  }

  const selfLink = path.join(root, "self", "fd", String(fd));
  let link: string;
  try {
    link = readlinkSync(selfLink, "latin1");
  } catch (err) {
    return notChecked(`${name}: cannot read ${selfLink}: ${errText(err)}`);
  }
  if (!isAnonPipe(link)) return notChecked(`${name} is a named FIFO`);

  let mine: number;
  try {
    mine = accessMode(root, "self", String(fd));
  } catch (err) {
    return notChecked(`${name} ${link}: cannot read its access mode: ${err instanceof ProcIdError ? err.message : errText(err)}`);
  }

  const dir = path.join(root, String(host.pid), "fd");
  let entries: string[];
  try {
    entries = list(dir);
  } catch (err) {
    if (gone(err)) {
      throw new ProcIdError("race", `the host ${describe(host)} exited during the stdio check; retry`);
    }
    return notChecked(`${name} ${link}: cannot list the host's fds: ${errText(err)}`);
  }
  for (const e of entries) {
    let theirLink: string;
    try {
      theirLink = readlinkSync(path.join(dir, e), "latin1");
    } catch {
      continue; // closed since the listing
    }
    if (theirLink !== link) continue;
    let theirs: number;
    try {
      theirs = accessMode(root, String(host.pid), e);
    } catch {
      continue; // closed since the listing, or unreadable
    }
    if (otherEnd(mine, theirs)) return { fd, verdict: "verified", reason: `${name} ${link} is held by the host as fd ${e}` };
  }
  return { fd, verdict: "disproved", reason: `${name} ${link} is not held by the host` };
}

/**
 * The stdio check: verifies that `host`, the resolved MCP host of the
 * current process `self`, holds the other end of this process's stdin or
 * stdout (Go: `linuxReader.checkStdio`; spec 000, "Token File Naming
 * Strategy"; docs/RELIABILITY.md fault 11c). Linux only; callers use
 * {@link NO_SUBREAPERS} elsewhere.
 *
 * @param self - this process's pid (for messages).
 * @param host - the resolved host: the **last** element of the chain, not
 *   a launcher.
 * @param options - proc root (default `/proc`) and test seams.
 * @returns the one-line description for `ResolvedHost.stdio`:
 *   `verified: <reason of the first verified fd>` when stdin or stdout is
 *   verified, else `not checked: <reasons joined by "; ">` when neither is
 *   disproved.
 * @throws {@link ProcIdError} `adopted` when no fd is verified and one is
 *   disproved (the server was orphaned and adopted by a subreaper, or the
 *   host passes its own stdio through like a launcher); `race` when the host
 *   exits during the check. Either means session resume is off.
 */
export function checkStdio(self: number, host: ProcessInfo, options: StdioCheckOptions = {}): string {
  const where = `procid: resolve MCP host of pid ${self}`;
  const checks: FdCheck[] = [];
  for (const fd of [0, 1]) {
    try {
      checks.push(checkFd(fd, host, options));
    } catch (err) {
      if (err instanceof ProcIdError) throw new ProcIdError(err.code, `${where}: ${err.message}`);
      throw err;
    }
  }
  const ok = checks.find((c) => c.verdict === "verified");
  if (ok) return `verified: ${ok.reason}`;
  const bad = checks.filter((c) => c.verdict === "disproved");
  if (bad.length > 0) {
    throw new ProcIdError(
      "adopted",
      `${where}: the host ${describe(host)} does not hold the other end of the server's stdio (${bad.map((c) => c.reason).join("; ")}): ` +
        `the server was probably orphaned and adopted by a subreaper, or ${JSON.stringify(host.name)} passes its own stdio through ` +
        `(if it only launches servers, add it to ${LAUNCHERS_ENV}); session resume is off`,
    );
  }
  return `not checked: ${checks.map((c) => c.reason).join("; ")}`;
}

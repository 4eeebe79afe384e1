/**
 * Resolves the MCP host of the current stdio server: the nearest ancestor
 * that is not a launcher, as the pair (pid, start time) the token file is
 * named after (spec 000, "Token File Naming Strategy"). A TypeScript mirror
 * of Go's `procid` package: same launcher and reaper lists, same walk, same
 * race check, same depth cap, and on Linux the same stdio check for the
 * current process (`stdio.ts`; docs/RELIABILITY.md fault 11c). See
 * `procid/doc.go` for the rules.
 *
 * @packageDocumentation
 */
import { darwinAlive, DarwinPsSource } from "./darwin.js";
import { isLauncher, isReaper, launcherSet, LAUNCHERS_ENV } from "./launcher.js";
import { hiddenPid, LinuxProcSource } from "./linux.js";
import { checkStdio, NO_SUBREAPERS, type StdioCheckOptions } from "./stdio.js";
import { describe, ProcIdError, type ProcessInfo, type ProcessSource, type ResolvedHost } from "./types.js";

export { ProcIdError } from "./types.js";
export type { ProcessInfo, ProcessSource, ResolvedHost, ProcIdErrorCode } from "./types.js";
export { DEFAULT_LAUNCHERS, LAUNCHERS_ENV, REAPERS } from "./launcher.js";
export { checkFd, checkStdio, NO_SUBREAPERS, probeFd } from "./stdio.js";
export type { DirLister, FdCheck, FdKind, FdProbe, StdioCheckOptions, StdioVerdict } from "./stdio.js";

/** Most ancestors read, the host included (Go: `procid.MaxDepth`). */
export const MAX_DEPTH = 16;

/** Options of {@link resolveHost}. */
export interface ResolveHostOptions {
  /** Extra launcher names, added to the defaults and `MCP_RESUME_LAUNCHERS`. */
  launchers?: readonly string[];
  /** Start from this pid instead of `process.pid`. */
  pid?: number;
  /** Process source; defaults to `/proc` on Linux and `/bin/ps` on macOS. */
  source?: ProcessSource;
  /** Environment to read `MCP_RESUME_LAUNCHERS` from (default `process.env`). */
  env?: NodeJS.ProcessEnv;
  /**
   * The operating system (tests); default `process.platform`. Picks the
   * default source and whether the stdio check runs (Linux only).
   */
  platform?: NodeJS.Platform;
  /**
   * Seams of the stdio check (tests): proc root (default `/proc`), fd-kind
   * probe (default the real `fstat`), directory lister. Production passes
   * none.
   */
  stdioCheck?: StdioCheckOptions;
}

/**
 * Walks from `pid`'s parent to the nearest ancestor that is not a launcher
 * in `set` (Go: `procid.resolve`). Each step reads the child's parent, then
 * re-reads the child and fails unless it still has the same parent and
 * start time. A pure walk: no stdio check (that is {@link resolveHost}'s,
 * for the current process only), so the result has no `stdio`.
 *
 * @param src - the process source.
 * @param pid - the server's pid.
 * @param set - launcher names.
 * @returns the host and the chain walked.
 * @throws {@link ProcIdError} `not_found` (pid absent), `reaper` (walk
 *   reaches pid 0/1 or an init/reaper), `race` (tree changed), `too_deep`
 *   ({@link MAX_DEPTH} ancestors), `no_boot_id`, `malformed`, `namespace`.
 */
export async function resolve(src: ProcessSource, pid: number, set: ReadonlySet<string>): Promise<ResolvedHost> {
  const where = `procid: resolve MCP host of pid ${pid}`;
  let child: ProcessInfo;
  try {
    child = await src.lookup(pid);
  } catch (err) {
    throw wrap(err, where);
  }
  const chain: ProcessInfo[] = [];
  for (;;) {
    if (chain.length === MAX_DEPTH) {
      throw new ProcIdError(
        "too_deep",
        `${where}: the ${MAX_DEPTH} nearest ancestors (${JSON.stringify(chain[0]!.name)} to ${JSON.stringify(chain[chain.length - 1]!.name)}) are all launchers; session resume is off`,
      );
    }
    if (child.ppid <= 1) {
      throw new ProcIdError(
        "reaper",
        `${where}: ${describe(child)} has parent pid ${child.ppid}: it was orphaned (restart the MCP host) or the host is outside this PID namespace; session resume is off`,
      );
    }
    let parent: ProcessInfo;
    try {
      parent = await src.lookup(child.ppid);
    } catch (err) {
      if (err instanceof ProcIdError && err.code === "not_found") {
        throw new ProcIdError("race", `${where}: parent of ${describe(child)} exited during the walk; retry: ${err.message}`);
      }
      throw wrap(err, `${where}: read parent of ${describe(child)}`);
    }
    let again: ProcessInfo;
    try {
      again = await src.lookup(child.pid);
    } catch (err) {
      if (err instanceof ProcIdError && err.code === "not_found") {
        throw new ProcIdError("race", `${where}: ${describe(child)} exited during the walk; retry: ${err.message}`);
      }
      throw wrap(err, `${where}: re-read ${describe(child)}`);
    }
    if (again.ppid !== child.ppid || again.startTime !== child.startTime) {
      throw new ProcIdError(
        "race",
        `${where}: ${describe(child)} changed from parent ${child.ppid} start ${child.startTime} to parent ${again.ppid} start ${again.startTime} while its parent was read; retry`,
      );
    }
    chain.push(parent);
    if (isReaper(parent)) {
      throw new ProcIdError("reaper", `${where}: the host would be ${describe(parent)}, which serves unrelated processes; session resume is off`);
    }
    if (!isLauncher(parent, set)) {
      return { pid: parent.pid, startTime: parent.startTime, chain };
    }
    child = parent;
  }
}

function wrap(err: unknown, where: string): ProcIdError {
  if (err instanceof ProcIdError) return new ProcIdError(err.code, `${where}: ${err.message}`);
  return new ProcIdError("malformed", `${where}: ${(err as Error)?.message ?? String(err)}`);
}

/**
 * The `/proc` reader, once `/proc` is verified to be this PID namespace's
 * (Go: `newSource` on Linux). It checks a missing `/proc/<pid>` with
 * {@link hiddenPid}, so a process that exists but that a `/proc` mounted
 * `hidepid=1`/`2` hides is reported as such (`malformed`), not as gone
 * (docs/RELIABILITY.md fault 12).
 *
 * @throws {@link ProcIdError} `namespace` when `/proc/self` is not this
 *   process: `/proc` was mounted by another PID namespace (`unshare -p -f`
 *   without `--mount-proc`), so `/proc/<pid>` names other processes.
 */
function ownProc(): LinuxProcSource {
  const src = new LinuxProcSource("/proc", undefined, hiddenPid);
  src.checkOwnProc();
  return src;
}

/**
 * The process source for this platform: `/proc` on Linux, `/bin/ps` on
 * macOS.
 *
 * @throws {@link ProcIdError} `unsupported` elsewhere (spec 000, "Platform
 *   Support"); `namespace` on Linux when `/proc` is not this PID
 *   namespace's.
 */
export function platformSource(platform: NodeJS.Platform = process.platform): ProcessSource {
  if (platform === "linux") return ownProc();
  if (platform === "darwin") return new DarwinPsSource();
  throw new ProcIdError("unsupported", "process identity is not supported on this operating system");
}

/**
 * Resolves the MCP host of this process (Go: `procid.Host`; spec 000,
 * "Token File Naming Strategy"): the walk of {@link resolve}, then, when
 * resolving the current process (`options.pid` absent or `process.pid`),
 * the stdio check of docs/RELIABILITY.md fault 11c: on Linux the host (the
 * last element of the chain) must hold the other end of this process's
 * stdin or stdout (see {@link checkStdio} in `stdio.ts`). A socket (what
 * Node/libuv hosts give their children) cannot be checked from Node, so a
 * server under a Node host passes as "not checked"; pipes (Go and Python
 * hosts) are checked. `resolveHost({ pid })` for another process is the
 * walk alone.
 *
 * @param options - extra launchers, a starting pid, a source, the platform
 *   and stdio-check seams (tests).
 * @returns `{pid, startTime, chain, stdio?}`; `startTime` is 1–96 bytes of
 *   `[0-9a-z.]`: Linux `<starttime ticks>.<boot_id without dashes>.<pid
 *   namespace inode>`, macOS
 *   `<epoch seconds>` (see `darwin.ts` for why seconds). `stdio` is set
 *   when the current process is resolved: `verified: …` or `not checked:
 *   …` on Linux, `not checked: no subreapers on this system` on macOS.
 * @throws {@link ProcIdError} whenever the host cannot be identified with
 *   certainty; the caller must turn resume off (spec 000, "Parent Process
 *   Information Unavailable"). The walk's codes (see {@link resolve}), plus
 *   for the current process on Linux: `adopted` when the host provably does
 *   not hold the server's stdio (an orphan adopted by a subreaper, or a
 *   process that passes its own stdio through like a launcher), and `race` when the
 *   host exits during the check.
 */
export async function resolveHost(options: ResolveHostOptions = {}): Promise<ResolvedHost> {
  const platform = options.platform ?? process.platform;
  const src = options.source ?? platformSource(platform);
  const env = options.env ?? process.env;
  const self = process.pid;
  const pid = options.pid ?? self;
  const host = await resolve(src, pid, launcherSet(options.launchers ?? [], env[LAUNCHERS_ENV] ?? ""));
  if (pid !== self) return host;
  if (platform !== "linux") return { ...host, stdio: NO_SUBREAPERS };
  return { ...host, stdio: checkStdio(self, host.chain[host.chain.length - 1]!, options.stdioCheck) };
}

/**
 * Reports whether process `pid` is running and is the instance `startTime`
 * names: a start time recorded earlier, possibly by another process or
 * before a reboot (Go: `procid.Alive`). It is how `mcp_resume_probe` tells a
 * stale token or lock file (spec 000, "PID Reuse").
 *
 * False when no process `pid` exists, when it is a zombie, when its start
 * time differs (the pid was reused), when `startTime` is from a previous
 * boot, and when it is malformed. On Linux a start time recorded in another
 * PID namespace (its third field is not this process's namespace inode)
 * cannot be checked: it throws `namespace`, so a probe answers `unknown`,
 * never `gone`. On macOS a whole-seconds `startTime` (this
 * package's) is compared to `ps`'s whole seconds, and a Go-style
 * `<sec>.<usec>` matches on its seconds.
 *
 * Synchronous: Linux reads `/proc`, macOS runs `/bin/ps` (up to 5 s).
 *
 * @param pid - the process ID recorded.
 * @param startTime - its start time as recorded.
 * @param platform - for tests.
 * @returns true only when that very process runs.
 * @throws {@link ProcIdError} when the answer is unknown (`unsupported`
 *   elsewhere than Linux and macOS, `no_boot_id`, `malformed` when the
 *   process exists but cannot be read, or exists but a `/proc` mounted
 *   `hidepid=1`/`2` hides it (docs/RELIABILITY.md fault 12), `namespace` when `/proc` or the start
 *   time belongs to another PID namespace). A caller must not treat the process
 *   as alive then.
 */
export function alive(pid: number, startTime: string, platform: NodeJS.Platform = process.platform): boolean {
  if (platform === "linux") return ownProc().alive(pid, startTime);
  if (platform === "darwin") return darwinAlive(pid, startTime);
  throw new ProcIdError("unsupported", "process liveness is not supported on this operating system");
}

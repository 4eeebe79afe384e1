/**
 * macOS process reader.
 *
 * Go reads `struct kinfo_proc` with `sysctl kern.proc.pid` and gets
 * `p_starttime` to the microsecond. Node has no sysctl binding and no FFI,
 * and this package ships no native addon, so it asks `/bin/ps`, which reads
 * the same `kinfo_proc`, in the C locale and UTC:
 *
 * ```sh
 * LC_ALL=C TZ=UTC0 /bin/ps -o pid=,ppid=,lstart=,ucomm= -p <pid>
 * LC_ALL=C TZ=UTC0 /bin/ps -ww -o args= -p <pid>
 * ```
 *
 * `lstart` is `p_starttime` formatted to **whole seconds**, so the macOS
 * start time of this package is `<tv_sec>` (no microseconds; Go's is
 * `<tv_sec>.<tv_usec>`). Why that is safe enough: the start time only has
 * to tell apart two processes that held the same PID. macOS hands out PIDs
 * sequentially up to 99998 before wrapping, so a PID is reused within the
 * same second only after ~100 000 forks in that second. The file names
 * differ from a Go host's, which is harmless: one app's state directory is
 * only ever written by one implementation.
 *
 * `args` is printed space-joined, so arguments containing spaces are split
 * wrongly; only the launcher rules read them (`node <tool>`, `sh -c`).
 *
 * @packageDocumentation
 */
import { execFile, execFileSync } from "node:child_process";

import { ProcIdError, type ProcessInfo, type ProcessSource } from "./types.js";
import { isNpmExecTitle } from "./launcher.js";

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
const DAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];

/** Whole epoch seconds of a C-locale `lstart` in UTC, or undefined if it is not a real date. */
function lstartSeconds(dow: string, mon: string, dd: string, hh: string, mi: string, ss: string, yyyy: string): number | undefined {
  const month = MONTHS.indexOf(mon);
  const ms = Date.UTC(Number(yyyy), month, Number(dd), Number(hh), Number(mi), Number(ss));
  const d = new Date(ms);
  if (
    month < 0 || d.getUTCDate() !== Number(dd) || d.getUTCHours() !== Number(hh) || d.getUTCMinutes() !== Number(mi) ||
    d.getUTCSeconds() !== Number(ss) || DAYS[d.getUTCDay()] !== dow || ms <= 0
  ) {
    return undefined;
  }
  return ms / 1000;
}

/** One line of `ps -o pid=,ppid=,lstart=,ucomm=`. */
export interface PsStat {
  /** Process ID. */
  pid: number;
  /** Parent process ID. */
  ppid: number;
  /** Start time, whole seconds since the Unix epoch (UTC). */
  startSec: number;
  /** `ucomm`: the accounting name, p_comm (≤ 16 bytes; may hold spaces). */
  name: string;
}

/**
 * Parses the output of
 * `LC_ALL=C TZ=UTC0 ps -o pid=,ppid=,lstart=,ucomm= -p <pids>`: one line per
 * process, `pid ppid Www Mmm d hh:mm:ss yyyy ucomm`, where `lstart` is
 * `strftime("%c")` in the C locale and ucomm (the rest of the line) may
 * contain spaces.
 *
 * @param stdout - the command's output.
 * @returns the processes by pid.
 * @throws {@link ProcIdError} `malformed` on any line that does not parse.
 */
export function parsePsStat(stdout: string): Map<number, PsStat> {
  const out = new Map<number, PsStat>();
  for (const raw of stdout.split("\n")) {
    const line = raw.replace(/\r$/, "");
    if (line.trim() === "") continue;
    const m = /^\s*(\d+)\s+(\d+)\s+([A-Z][a-z]{2})\s+([A-Z][a-z]{2})\s+(\d{1,2})\s+(\d{2}):(\d{2}):(\d{2})\s+(\d{4})\s(.*)$/.exec(line);
    if (!m) throw new ProcIdError("malformed", `cannot parse ps line ${JSON.stringify(line.slice(0, 96))}`);
    const [, pidS, ppidS, dow, mon, dd, hh, mi, ss, yyyy, comm] = m as unknown as string[];
    const pid = Number(pidS);
    const ppid = Number(ppidS);
    const startSec = lstartSeconds(dow!, mon!, dd!, hh!, mi!, ss!, yyyy!);
    const name = comm!.trim();
    if (startSec === undefined || pid <= 0 || name === "") {
      throw new ProcIdError("malformed", `cannot parse ps line ${JSON.stringify(line.slice(0, 96))}`);
    }
    out.set(pid, { pid, ppid, startSec, name });
  }
  return out;
}

/** One line of `ps -o pid=,stat=,lstart=`. */
export interface PsState {
  /** Process ID. */
  pid: number;
  /** `stat`: the state letters; a zombie starts with `Z`. */
  state: string;
  /** Start time, whole seconds since the Unix epoch (UTC). */
  startSec: number;
}

/**
 * Parses the output of `LC_ALL=C TZ=UTC0 ps -o pid=,stat=,lstart= -p <pid>`
 * (what {@link darwinAlive} runs).
 *
 * @throws {@link ProcIdError} `malformed` on any line that does not parse.
 */
export function parsePsState(stdout: string): Map<number, PsState> {
  const out = new Map<number, PsState>();
  for (const raw of stdout.split("\n")) {
    const line = raw.replace(/\r$/, "");
    if (line.trim() === "") continue;
    const m = /^\s*(\d+)\s+(\S+)\s+([A-Z][a-z]{2})\s+([A-Z][a-z]{2})\s+(\d{1,2})\s+(\d{2}):(\d{2}):(\d{2})\s+(\d{4})\s*$/.exec(line);
    const sec = m ? lstartSeconds(m[3]!, m[4]!, m[5]!, m[6]!, m[7]!, m[8]!, m[9]!) : undefined;
    if (!m || sec === undefined || Number(m[1]) <= 0) {
      throw new ProcIdError("malformed", `cannot parse ps line ${JSON.stringify(line.slice(0, 96))}`);
    }
    out.set(Number(m[1]), { pid: Number(m[1]), state: m[2]!, startSec: sec });
  }
  return out;
}

/**
 * Whether the macOS start time `have` (whole seconds, as this package reads
 * it) is the one recorded as `want`. A Go or Python host records
 * `<tv_sec>.<tv_usec>`: that matches on the seconds alone (Go:
 * `startTimeMatches`, the other way round). Erring towards "alive" only
 * ever keeps a file prune could have deleted, never resumes a session.
 */
export function darwinStartMatches(have: string, want: string): boolean {
  if (have === want) return true;
  const m = /^(\d+)\.\d+$/.exec(want);
  return m !== null && m[1] === have;
}

/** Runs a command synchronously and returns its stdout; throws with `status` set to the exit status. */
export type SyncCommandRunner = (file: string, args: string[]) => string;

/** Runs `/bin/ps` synchronously with the C locale and UTC, a 5 s timeout and no shell. */
export const runPsSync: SyncCommandRunner = (file, args) =>
  execFileSync(file, args, {
    env: { LC_ALL: "C", TZ: "UTC0", PATH: "/usr/bin:/bin" },
    timeout: 5000,
    maxBuffer: 1 << 20,
    encoding: "latin1",
    stdio: ["ignore", "pipe", "ignore"],
  });

/**
 * macOS liveness (Go: `darwinSource.alive`), synchronous because the
 * `mcp_resume_probe` host function is: `ps -o pid=,stat=,lstart= -p <pid>`.
 * False when no such process (ps exits 1), a zombie, or another start time.
 *
 * @throws {@link ProcIdError} `malformed` when ps fails otherwise (unknown).
 */
export function darwinAlive(pid: number, want: string, run: SyncCommandRunner = runPsSync): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0) return false;
  let out: string;
  try {
    out = run("/bin/ps", ["-o", "pid=,stat=,lstart=", "-p", String(pid)]);
  } catch (err) {
    if ((err as { status?: unknown }).status === 1) return false;
    throw new ProcIdError("malformed", `ps -p ${pid}: ${(err as Error).message}`);
  }
  const st = parsePsState(out).get(pid);
  if (!st) return false;
  if (st.state.startsWith("Z")) return false;
  return darwinStartMatches(String(st.startSec), want);
}

/**
 * Parses the output of `ps -ww -o args= -p <pid>` into an argument vector:
 * a retitled npm exec process (`npm exec foo`, `npm x foo`) stays one
 * element, as Linux shows it; anything else is split on white space.
 *
 * @param stdout - the command's output (one line).
 * @returns the arguments, or null when empty.
 */
export function parsePsArgs(stdout: string): string[] | null {
  const line = stdout.replace(/\r?\n$/, "").trim();
  if (line === "") return null;
  if (isNpmExecTitle(line)) return [line];
  return line.split(/\s+/);
}

/** Runs a command and resolves with its stdout; rejects with `code` set to the exit status. */
export type CommandRunner = (file: string, args: string[]) => Promise<string>;

/** Runs `/bin/ps` with the C locale and UTC, a 5 s timeout and no shell. */
export const runPs: CommandRunner = (file, args) =>
  new Promise((resolve, reject) => {
    execFile(
      file,
      args,
      { env: { LC_ALL: "C", TZ: "UTC0", PATH: "/usr/bin:/bin" }, timeout: 5000, maxBuffer: 1 << 20, encoding: "latin1" },
      (err, stdout) => (err ? reject(err) : resolve(stdout)),
    );
  });

/** Reads processes with `/bin/ps` (see the module documentation). */
export class DarwinPsSource implements ProcessSource {
  readonly #run: CommandRunner;

  /** @param run - command runner; tests pass canned outputs. */
  constructor(run: CommandRunner = runPs) {
    this.#run = run;
  }

  /** {@inheritDoc ProcessSource.lookup} */
  async lookup(pid: number): Promise<ProcessInfo> {
    if (!Number.isSafeInteger(pid) || pid <= 0) throw new ProcIdError("not_found", `pid ${pid} is not positive`);
    const [statOut, argsOut] = await Promise.all([
      this.#run("/bin/ps", ["-o", "pid=,ppid=,lstart=,ucomm=", "-p", String(pid)]).catch((err: unknown) => {
        // ps exits 1 when no process matched.
        if ((err as { code?: unknown }).code === 1) return "";
        throw new ProcIdError("malformed", `ps -p ${pid}: ${(err as Error).message}`);
      }),
      this.#run("/bin/ps", ["-ww", "-o", "args=", "-p", String(pid)]).catch(() => ""),
    ]);
    const st = parsePsStat(statOut).get(pid);
    if (!st) throw new ProcIdError("not_found", `ps -p ${pid}: process not found`);
    return { pid, ppid: st.ppid, name: st.name, args: parsePsArgs(argsOut), startTime: String(st.startSec) };
  }
}

// Shared helpers of the TypeScript binding's tests: paths, temporary
// directories, the real Go broker, the real Go-built test plugin, and the
// host functions with /proc and the system pinned (test code only).
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, readlinkSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

import { HostFunctions } from "../src/hostfuncs.js";
import type { Logger } from "../src/logger.js";

export const execFileP = promisify(execFile);

/** Repository root. */
export const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
/** sdk-bindings/typescript. */
export const PKG = fileURLToPath(new URL("../", import.meta.url));
/** The example server, built (make typescript-setup). */
export const SERVER_JS = path.join(ROOT, "examples", "typescript-server", "dist", "server.js");

const temps: string[] = [];

/** A fresh temporary directory, removed by {@link cleanupTemps}. */
export function tempDir(prefix = "mcp-resume-ts-"): string {
  const d = mkdtempSync(path.join(tmpdir(), prefix));
  temps.push(d);
  return d;
}

/** Removes every directory made by {@link tempDir}. */
export function cleanupTemps(): void {
  for (const d of temps.splice(0)) rmSync(d, { recursive: true, force: true });
}

/** `go`, from PATH. */
export const GO = process.env["GO"] ?? "go";

/**
 * Builds a Go main package of this repository into `out` (a real `go build`).
 *
 * @param pkg - e.g. `./examples/broker`.
 * @param env - extra environment (GOOS/GOARCH for the Wasm test plugin).
 */
export async function goBuild(pkg: string, out: string, env: Record<string, string> = {}, extra: string[] = []): Promise<string> {
  await execFileP(GO, ["build", ...extra, "-o", out, pkg], {
    cwd: ROOT,
    env: { ...process.env, GOFLAGS: "-buildvcs=false", ...env },
    maxBuffer: 1 << 24,
  });
  return out;
}

/** A running broker. */
export interface Broker {
  url: string;
  port: number;
  proc: ChildProcess;
  stderr: () => string;
  stop(): Promise<void>;
}

/**
 * Starts the real Go broker binary and reads its one stdout line
 * (`broker listening on http://127.0.0.1:PORT`).
 */
export function startBroker(bin: string, addr = "127.0.0.1:0"): Promise<Broker> {
  return new Promise((resolve, reject) => {
    const proc = spawn(bin, ["-addr", addr], { stdio: ["ignore", "pipe", "pipe"] });
    let err = "";
    proc.stderr!.on("data", (d: Buffer) => (err += d.toString()));
    const rl = createInterface({ input: proc.stdout! });
    const timer = setTimeout(() => reject(new Error(`broker did not start: ${err}`)), 15000);
    proc.on("exit", (code) => reject(new Error(`broker exited ${code}: ${err}`)));
    rl.once("line", (line) => {
      clearTimeout(timer);
      const m = /^broker listening on (http:\/\/[^\s]+)$/.exec(line);
      if (!m) return reject(new Error(`unexpected broker line ${line}`));
      const url = m[1]!;
      resolve({
        url,
        port: Number(new URL(url).port),
        proc,
        stderr: () => err,
        stop: () =>
          new Promise<void>((res) => {
            if (proc.exitCode !== null || proc.signalCode !== null) return res();
            proc.removeAllListeners("exit");
            proc.once("exit", () => res());
            proc.kill("SIGTERM");
          }),
      });
    });
  });
}

/** A running `test/fixtures/holder.mjs` and the signal it will exit with. */
export interface Holder {
  child: ChildProcess;
  exited: Promise<NodeJS.Signals | null>;
}

/**
 * Starts `test/fixtures/holder.mjs` with `args` (a mode, `lock` or `store`,
 * and its operands) in a real child process and waits until it prints
 * `held`: it then holds the lock until it is killed.
 *
 * @param args - the holder's arguments.
 * @returns the child and a promise of its exit signal.
 * @throws when the holder prints anything else or exits first.
 */
export async function startHolder(...args: string[]): Promise<Holder> {
  // stdin and stdout are socket pairs, as a Node MCP host gives its servers: stdin on /dev/null would
  // prove nothing about who launched the child, and the stdio check would turn resume off.
  const child = spawn(process.execPath, [path.join(PKG, "test", "fixtures", "holder.mjs"), ...args], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const exited = new Promise<NodeJS.Signals | null>((r) => child.once("exit", (_c, sig) => r(sig)));
  try {
    await new Promise<void>((resolve, reject) => {
      let out = "";
      child.stdout!.on("data", (d: Buffer) => {
        out += d;
        if (out.includes("held\n")) resolve();
        else if (out.includes("\n")) reject(new Error(`holder: ${out}`));
      });
      child.once("exit", (code) => reject(new Error(`holder exited ${code}`)));
    });
  } catch (err) {
    child.kill("SIGKILL");
    throw err;
  }
  return { child, exited };
}

/**
 * The identity start time of process `pid` as spec 000 names it on Linux
 * (`<starttime>.<boot_id>.<pid namespace>`), read from the real /proc: the
 * test oracle for the file names the plugin computes.
 */
export function startTimeOf(pid: number): string {
  const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
  const ticks = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19]!;
  const boot = readFileSync("/proc/sys/kernel/random/boot_id", "latin1").trim().replaceAll("-", "");
  const ns = /^pid:\[(\d+)\]$/.exec(readlinkSync("/proc/self/ns/pid"))![1]!;
  const exe = statSync(`/proc/${pid}/exe`, { bigint: true }); // the program image: an exec makes another host
  return `${ticks}.${boot}.${ns}.${exe.dev}x${exe.ino}`;
}

/**
 * The real host functions with `/proc` read from `procRoot` and the inspect
 * answers given for the system `os` (`facts.os`; the lock keeps the real
 * one): the conformance runner's fixture tree, and the unit tests of what a
 * real /proc cannot show (a 70000-byte file, a symlink, macOS's `ps` run here).
 */
export class PinnedHost extends HostFunctions {
  constructor(
    config: { logger: Logger },
    private readonly procRoot: string,
    private readonly os: string,
  ) {
    super(config);
  }
  protected override proc(rel: string): string {
    return path.join(this.procRoot, rel);
  }
  protected override system(): string {
    return this.os;
  }
}

/**
 * Launcher and reaper rules, mirrored from Go's `procid/launcher.go` (same
 * lists, same matching). See `procid/doc.go`, "Launchers" and "Reapers".
 *
 * @packageDocumentation
 */
import * as path from "node:path";

import type { ProcessInfo } from "./types.js";

/**
 * Process names always treated as launchers: processes that sit between an
 * MCP host and the stdio server it starts and live only as long as that
 * server. Shells count only when their arguments show they run a command.
 * Same list as Go's `procid.DefaultLaunchers`.
 */
export const DEFAULT_LAUNCHERS: readonly string[] = Object.freeze([
  // Shells, as used by "sh -c", spawn(..., {shell: true}) and wrapper scripts.
  "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish",
  // Command wrappers that exec or wait for one command.
  "env", "nice", "nohup", "setsid", "stdbuf", "time", "timeout", "ionice", "taskset", "chrt",
  // Python runners.
  "uv", "uvx", "pipx", "poetry", "hatch", "pdm",
  // JavaScript runners.
  "npm", "npx", "pnpm", "pnpx", "yarn", "bunx",
]);

/** Launcher names that count only when they run a command. */
const SHELLS = new Set(["sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish"]);

/** Scripts (without .js/.cjs/.mjs) that make a node process a launcher. */
const NODE_TOOLS = new Set(["npm", "npx", "npm-cli", "npx-cli", "pnpm", "pnpx", "yarn", "yarnpkg"]);

/**
 * Init systems, supervisors and subreapers: never an MCP host. Same list as
 * Go's `procid` reapers.
 */
export const REAPERS: readonly string[] = Object.freeze([
  "init", "systemd", "launchd", "kthreadd",
  "tini", "docker-init", "dumb-init", "catatonit",
  "s6-svscan", "s6-supervise", "runit", "runsv", "runsvdir", "openrc-init",
  "containerd-shim", "containerd-shim-runc-v2", "conmon",
]);

/** Environment variable with extra launcher names, comma-separated. */
export const LAUNCHERS_ENV = "MCP_RESUME_LAUNCHERS";

/**
 * Returns the launcher set in effect: {@link DEFAULT_LAUNCHERS}, plus
 * `extra`, plus the comma-separated names in `env` (the value of
 * `MCP_RESUME_LAUNCHERS`). Names are trimmed; empty names are ignored.
 *
 * @param extra - names from the `launchers` option.
 * @param env - value of `MCP_RESUME_LAUNCHERS`, or undefined.
 * @returns a new set of names.
 */
export function launcherSet(extra: readonly string[] = [], env = ""): Set<string> {
  const set = new Set<string>(DEFAULT_LAUNCHERS);
  for (const n of [...extra, ...env.split(",")]) {
    const t = n.trim();
    if (t !== "") set.add(t);
  }
  return set;
}

/**
 * Whether `s` is the process title npm exec (and so npx) gives itself, such
 * as `npm exec foo` or `npm x foo`, or a 15-byte truncation of one.
 */
export function isNpmExecTitle(s: string): boolean {
  return s === "npm exec" || s === "npm x" || s.startsWith("npm exec ") || s.startsWith("npm x ");
}

/**
 * Whether a shell with arguments `args` runs a command rather than an
 * interactive session: an option cluster with `c` (`-c`, `-lc`),
 * `--command`, or an operand such as a script path. Unknown args report
 * false.
 */
export function runsCommand(args: readonly string[] | null): boolean {
  if (!args || args.length < 2) return false;
  for (const a of args.slice(1)) {
    if (a === "--command" || a.startsWith("--command=")) return true;
    if (a === "-" || a === "--" || a.startsWith("--")) continue;
    if (a.startsWith("-") || a.startsWith("+")) {
      if (a.slice(1).includes("c")) return true;
      continue;
    }
    return true;
  }
  return false;
}

/**
 * Whether the kernel's process name matches `want`, allowing for
 * truncation: a name of 15 or more bytes also matches any longer `want` it
 * is a prefix of (Linux keeps 15 bytes of comm, macOS 16 of p_comm).
 * Names are read as latin1, so one character is one byte.
 */
export function nameMatches(name: string, want: string): boolean {
  if (name === want) return true;
  return name.length >= 15 && want.startsWith(name);
}

/** Base name of an argument as Go's `path.Base` (slash-separated). */
function base(arg: string): string {
  return path.posix.basename(arg) || (arg === "" ? "." : "/");
}

/**
 * Whether `p` is a launcher under `set`; the rule of `procid/doc.go`,
 * "Launchers".
 *
 * @param p - the process.
 * @param set - from {@link launcherSet}.
 */
export function isLauncher(p: ProcessInfo, set: ReadonlySet<string>): boolean {
  if (isNpmExecTitle(p.name)) return true;
  let arg0 = "";
  const args = p.args;
  if (args && args.length > 0) {
    arg0 = args[0]!;
    if (isNpmExecTitle(arg0)) return true;
    arg0 = base(arg0);
  }
  if (args && args.length > 1) {
    if (arg0 === "node" || arg0 === "nodejs") {
      let tool = base(args[1]!);
      for (const ext of [".js", ".cjs", ".mjs"]) {
        if (tool.endsWith(ext)) tool = tool.slice(0, -ext.length);
      }
      if (NODE_TOOLS.has(tool)) return true;
    } else if (arg0 === "bun" && args[1] === "x") {
      return true;
    }
  }
  for (const name of set) {
    if (!nameMatches(p.name, name) && arg0 !== name) continue;
    if (!SHELLS.has(name) || runsCommand(args)) return true;
  }
  return false;
}

/**
 * Whether `p` is pid 0 or 1, or an init or reaper by name or by the base
 * name of `args[0]` (`procid/doc.go`, "Reapers").
 */
export function isReaper(p: ProcessInfo): boolean {
  if (p.pid <= 1) return true;
  const arg0 = p.args && p.args.length > 0 ? base(p.args[0]!) : "";
  return REAPERS.some((r) => nameMatches(p.name, r) || arg0 === r);
}

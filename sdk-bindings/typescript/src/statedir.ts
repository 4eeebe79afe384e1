/**
 * Where token files live (hostfuncs/README.md, "The state directory";
 * spec 000, "Token Storage Location").
 *
 * @packageDocumentation
 */
import { homedir } from "node:os";
import * as path from "node:path";

/** Environment variable that overrides the state directory. */
export const ENV_STATE_DIR = "MCP_RESUME_STATE_DIR";

/** The app name rule: 1–64 of `[A-Za-z0-9._-]`, starting with a letter or digit. */
export const APP_RULE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/**
 * Expands a leading `~` (alone or followed by `/`) to `home`, as Go's
 * `adrg/xdg` does for `XDG_*` variables.
 */
function expandHome(p: string, home: string): string {
  if (p === "~") return home;
  if (p.startsWith("~/")) return path.join(home, p.slice(2));
  return p;
}

/**
 * Returns the default state directory of `app`, exactly as the Go host
 * (`host.StateDir`) and the Python binding compute it:
 *
 * - macOS: always `~/Library/Application Support/mcp-resume/<app>`;
 * - elsewhere: `$XDG_STATE_HOME/mcp-resume/<app>` when `XDG_STATE_HOME` is set
 *   to an absolute path (after `~` expansion; relative values are ignored, as
 *   the XDG Base Directory specification requires), else
 *   `~/.local/state/mcp-resume/<app>`.
 *
 * Only `HOME` (through `os.homedir()`) and `XDG_STATE_HOME` are consulted:
 * MCP hosts pass servers few environment variables.
 *
 * @param app - the MCP server app name; not validated here.
 * @param env - environment to read (default `process.env`).
 * @param platform - `process.platform` value (default: the running one).
 * @param home - home directory (default `os.homedir()`).
 * @returns an absolute path.
 */
export function defaultStateDir(
  app: string,
  env: NodeJS.ProcessEnv = process.env,
  platform: NodeJS.Platform = process.platform,
  home: string = homedir(),
): string {
  const xdg = expandHome(env["XDG_STATE_HOME"] ?? "", home);
  let base: string;
  if (platform === "darwin") {
    base = path.join(home, "Library", "Application Support");
  } else if (xdg !== "" && path.isAbsolute(xdg)) {
    base = xdg;
  } else {
    base = path.join(home, ".local", "state");
  }
  return path.join(base, "mcp-resume", app);
}

/**
 * Resolves the state directory of a store: the explicit option, else
 * `$MCP_RESUME_STATE_DIR`, else {@link defaultStateDir}; made absolute
 * against the current directory (hostfuncs/README.md, "The state directory").
 *
 * @param app - the app name.
 * @param explicit - the `stateDir` option, if any (wins over the environment).
 * @param env - environment to read (default `process.env`).
 * @returns an absolute path.
 */
export function resolveStateDir(app: string, explicit?: string, env: NodeJS.ProcessEnv = process.env): string {
  const dir = explicit || env[ENV_STATE_DIR] || defaultStateDir(app, env);
  return path.resolve(dir);
}

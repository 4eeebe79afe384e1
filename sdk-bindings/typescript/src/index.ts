/**
 * mcp-resume for TypeScript: session resume for stdio MCP servers
 * (spec 000, "MCP Server Session Resume Specification v1").
 *
 * ```ts
 * import { ResumeTokenStore } from "mcp-resume";
 *
 * const store = await ResumeTokenStore.open({ app: "my-server" });
 * const token = await store.load();          // string | undefined
 * // ... resume with token; if the broker refuses it: await store.reject()
 * await store.store(session.token);          // after every resume or new session
 * ```
 *
 * Several instances of one server under one MCP host resume independently
 * when launched differently (arguments, `MCP_RESUME_INSTANCE` or the
 * `instance` option); identical ones share one token file, which only the
 * first holds (hostfuncs/README.md, `mcp_resume_lock`).
 *
 * The resume logic is the shared Wasm plugin (`plugin.wasm`, the same module
 * the Go and Python hosts run); this package supplies its host functions
 * (hostfuncs/README.md) and runs it on `@extism/extism`. Nothing is ever
 * written to stdout, and no log line holds a token.
 *
 * @packageDocumentation
 */
export {
  ResumeTokenStore,
  InvalidAppError,
  InvalidTokenError,
  PluginError,
  ENV_INSTANCE,
  NO_INSTANCE,
  type ListedFile,
  type OpenOptions,
} from "./store.js";
export type { HostIdentity } from "./hostfuncs.js";
export { ABI_VERSION } from "./hostfuncs.js";
export { createStderrLogger, type Logger, type LogFields, type LogLevel, type StderrLoggerOptions } from "./logger.js";
export { defaultStateDir, ENV_STATE_DIR } from "./statedir.js";
export {
  resolveHost,
  alive,
  ProcIdError,
  DEFAULT_LAUNCHERS,
  LAUNCHERS_ENV,
  MAX_DEPTH,
  type ProcIdErrorCode,
  type ProcessInfo,
  type ResolvedHost,
  type ResolveHostOptions,
} from "./procid/index.js";

/**
 * mcp-resume for TypeScript: session resume for stdio MCP servers (spec 000,
 * "MCP Server Session Resume Specification v1"). The resume logic is the
 * shared Wasm plugin (`plugin.wasm`, also run by the Go and Python hosts);
 * this package supplies its host functions and runs it on `@extism/extism`.
 * See {@link ResumeTokenStore}, and {@link HandleStore} for durable state
 * handles (independent of resume). Nothing is ever written to stdout.
 *
 * @packageDocumentation
 */
export { ResumeTokenStore } from "./store.js";
export {
  MCPResumeError, InvalidAppError, InvalidOptionError, PluginError, InvalidTokenError, InvalidHandleError, InvalidPrincipalError,
  InvalidValueError, ValueTooLargeError, HandleNotFoundError, HandleExpiredError, HandleEvictedError, ConflictError, StoreUnavailableError,
} from "./errors.js";
export type { OpenOptions, PrunedFile, TokenFile, Whoami } from "./store.js";
export { ABI_VERSION } from "./hostfuncs.js";
export { createStderrLogger, type Logger, type LogFields, type LogLevel, type StderrLoggerOptions } from "./logger.js";
export { HandleStore } from "./handles.js";
export type { Created, GcResult, HandleEntry, HandleList, HandleStoreOptions, HandleStoreSettings, HandleValue, Touched } from "./handles.js";

/**
 * The one error family of mcp-resume for TypeScript (docs/API.md, "Errors"):
 * every failure of {@link ResumeTokenStore} and {@link HandleStore} is an
 * {@link MCPResumeError} whose `code` is the plugin's error code, and both
 * stores throw the same class for the same fault. Messages never hold a
 * token, handle, value or principal.
 *
 * @packageDocumentation
 */

/**
 * Any mcp-resume failure. `code` is the plugin's error code (`invalid_app`,
 * `handle_not_found`, `conflict`, …; `not_open` for a closed store,
 * `plugin_unusable`/`plugin_failed` when the plugin cannot load or trapped).
 */
export class MCPResumeError extends Error {
  /** @param code - the error code. @param message - what failed and what to do. */
  constructor(readonly code: string, message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/** `invalid_app`: the app name breaks the rule (1–64 of `[A-Za-z0-9._-]`, starting with a letter or digit), from either store's `open`. */
export class InvalidAppError extends MCPResumeError {}

/** `invalid_option`: an option the store does not know or refuses (wrong type, out of range, a bad environment value); the message names it, what it must be and what was given. */
export class InvalidOptionError extends MCPResumeError {}

/**
 * The plugin cannot be loaded or speaks another ABI version (`plugin_unusable`),
 * trapped (`plugin_failed`), or a resume-store diagnostic (`list`, `prune`,
 * `whoami`) failed or ran on a closed store (`not_open`).
 */
export class PluginError extends MCPResumeError {}

/** `invalid_token`: {@link ResumeTokenStore.store} got a token that is not 1–4096 bytes of 0x21–0x7E; nothing was written. */
export class InvalidTokenError extends MCPResumeError {}

/** `invalid_handle`: not the handle syntax; answered before any record is touched. */
export class InvalidHandleError extends MCPResumeError {}

/** `invalid_principal`: not a string, over 1024 bytes, or not valid UTF-8. */
export class InvalidPrincipalError extends MCPResumeError {}

/** `invalid_value`: the value is not bytes (a `Uint8Array`). */
export class InvalidValueError extends MCPResumeError {}

/** `value_too_large`: the value exceeds the store's `maxValueBytes`; nothing was written. */
export class ValueTooLargeError extends MCPResumeError {}

/** `handle_not_found`: unknown, deleted, another principal's, its tombstone period over, or its record corrupt (then removed). */
export class HandleNotFoundError extends MCPResumeError {}

/** `handle_expired`: its idle TTL or maximum age passed, within the tombstone period; `reason` says which. */
export class HandleExpiredError extends MCPResumeError {
  /** @param reason - `idle` (idle TTL) or `max_age` (maximum age). */
  constructor(code: string, message: string, readonly reason: "idle" | "max_age") {
    super(code, message);
  }
}

/** `handle_evicted`: the least recently used handle, evicted by the capacity cap, within the tombstone period. */
export class HandleEvictedError extends MCPResumeError {}

/** `conflict`: the expected generation was not the current one; nothing changed. `generation` is the current one. */
export class ConflictError extends MCPResumeError {
  /** @param generation - the handle's current generation (an integer ≥ 1). */
  constructor(code: string, message: string, readonly generation: number) {
    super(code, message);
  }
}

/**
 * `store_unavailable`: the directory cannot be used (I/O error, full disk,
 * lock wait over), the Redis server cannot be reached or did not answer in
 * time, node-redis is not installed, or the plugin cannot load; the message
 * says what to do. `reason` is the plugin's (`"auth"` when the server refused
 * the credentials), `undefined` when it gave none.
 */
export class StoreUnavailableError extends MCPResumeError {
  /** @param reason - why, when the plugin said (`auth`…). */
  constructor(code: string, message: string, readonly reason?: string) {
    super(code, message);
  }
}

const CLASSES: Record<string, new (code: string, message: string) => MCPResumeError> = {
  invalid_app: InvalidAppError, invalid_option: InvalidOptionError, invalid_token: InvalidTokenError,
  invalid_handle: InvalidHandleError, invalid_principal: InvalidPrincipalError, invalid_value: InvalidValueError,
  value_too_large: ValueTooLargeError, handle_not_found: HandleNotFoundError, handle_evicted: HandleEvictedError,
  plugin_unusable: PluginError, plugin_failed: PluginError, not_open: PluginError,
};

/**
 * The plugin's error answer (`{code, message, reason?, generation?}`) as its
 * class; `fallback` for a code without one. Internal.
 */
export function errorFromPlugin(code: string, message: string, error?: Record<string, unknown>, fallback: new (code: string, message: string) => MCPResumeError = MCPResumeError): MCPResumeError {
  if (code === "handle_expired") return new HandleExpiredError(code, message, error?.["reason"] === "max_age" ? "max_age" : "idle");
  if (code === "conflict") return new ConflictError(code, message, Number(error?.["generation"] ?? 0));
  if (code === "store_unavailable") return new StoreUnavailableError(code, message, typeof error?.["reason"] === "string" ? (error["reason"] as string) : undefined);
  const C = CLASSES[code] ?? fallback;
  return new C(code, message);
}

/**
 * Logging for mcp-resume: the {@link Logger} shape callers may pass, and the
 * default logger, which writes to **stderr only**.
 *
 * A stdio MCP server speaks JSON-RPC on stdout, so nothing in this package
 * ever writes there (hostfuncs/README.md, "Loading the plugin";
 * `mcp_resume_log`: "Never to stdout"). No log line carries a token: the
 * plugin never puts one in a message or detail, and this package adds none.
 *
 * @packageDocumentation
 */

/** The log levels of the host-function contract (`mcp_resume_log.level`). */
export type LogLevel = "debug" | "info" | "warn" | "error";

/**
 * Structured fields attached to one log line.
 *
 * - `event`: the stable machine name of the line, such as `token_corrupted`
 *   (hostfuncs/README.md, table of messages and events).
 * - `detail`: optional human context (what was wrong), never a token.
 *
 * Other keys may appear on lines this package emits itself (for example
 * `export` and `error` when the plugin fails).
 */
export interface LogFields {
  /** Stable event name, e.g. `"token_not_found"`. */
  event?: string;
  /** Optional context for humans; never contains a token. */
  detail?: string;
  /** Further structured values (strings or numbers). */
  [key: string]: unknown;
}

/**
 * What {@link ResumeTokenStore.open} accepts as `logger`: four methods, one
 * per level, each taking the human message (for the spec's lines, verbatim:
 * spec 000, "Logging Strategy") and structured fields.
 *
 * `console` is **not** a suitable logger for a stdio MCP server: in Node,
 * `console.info` and `console.debug` write to stdout. Methods must not throw;
 * if one does, the error is swallowed (the resume layer must never crash the
 * server).
 */
export interface Logger {
  /** Debug-level line (e.g. `token_found`). */
  debug(message: string, fields?: LogFields): void;
  /** Info-level line (e.g. `token_not_found`, `session_resumed`). */
  info(message: string, fields?: LogFields): void;
  /** Warn-level line (e.g. `token_corrupted`, `identity_unavailable`). */
  warn(message: string, fields?: LogFields): void;
  /** Error-level line (e.g. `write_failed`). */
  error(message: string, fields?: LogFields): void;
}

const LEVEL_RANK: Record<LogLevel, number> = { debug: 0, info: 1, warn: 2, error: 3 };

/** Options of {@link createStderrLogger}. */
export interface StderrLoggerOptions {
  /**
   * Lowest level written. Defaults to `"info"`, like Go's `slog.Default()`,
   * so the debug line `token_found` is dropped unless asked for.
   */
  level?: LogLevel;
  /**
   * Where lines go; defaults to `process.stderr`. Anything with a
   * `write(string)` method. Never pass `process.stdout` in a stdio server.
   */
  stream?: { write(chunk: string): unknown };
}

/** Quotes a logfmt value when it holds spaces, quotes, `=` or is empty. */
function fmtValue(v: unknown): string {
  const s = typeof v === "string" ? v : v instanceof Error ? v.message : String(v);
  return s === "" || /[\s"=\\]/.test(s) || /[^\x20-\x7e]/.test(s) ? JSON.stringify(s) : s;
}

/**
 * Returns a {@link Logger} writing one logfmt line per call, in the style of
 * Go's `slog.TextHandler`:
 *
 * ```text
 * time=2025-01-01T00:00:00.000Z level=WARN msg="Token file corrupted, treating as stale" event=token_corrupted detail="..."
 * ```
 *
 * @param options - minimum level (default `"info"`) and stream (default
 *   `process.stderr`).
 * @returns a logger that never throws (write errors are ignored) and never
 *   writes to stdout unless you pass stdout as `stream`.
 */
export function createStderrLogger(options: StderrLoggerOptions = {}): Logger {
  const min = LEVEL_RANK[options.level ?? "info"];
  const stream = options.stream ?? process.stderr;
  const emit = (level: LogLevel, message: string, fields?: LogFields): void => {
    if (LEVEL_RANK[level] < min) return;
    try {
      let line = `time=${new Date().toISOString()} level=${level.toUpperCase()} msg=${fmtValue(message)}`;
      for (const [k, v] of Object.entries(fields ?? {})) {
        if (v !== undefined && v !== "") line += ` ${k}=${fmtValue(v)}`;
      }
      stream.write(line + "\n");
    } catch {
      // A logger must never crash the server.
    }
  };
  return {
    debug: (m, f) => emit("debug", m, f),
    info: (m, f) => emit("info", m, f),
    warn: (m, f) => emit("warn", m, f),
    error: (m, f) => emit("error", m, f),
  };
}

/**
 * Calls `logger[level](message, fields)` and swallows anything it throws.
 *
 * @param logger - the caller's logger.
 * @param level - one of the four levels.
 * @param message - the human message.
 * @param fields - structured fields.
 */
export function safeLog(logger: Logger, level: LogLevel, message: string, fields?: LogFields): void {
  try {
    logger[level](message, fields);
  } catch {
    // Never let a caller's logger crash the resume layer.
  }
}

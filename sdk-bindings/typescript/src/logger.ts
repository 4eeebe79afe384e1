/**
 * Logging: the {@link Logger} shape callers may pass, and the default logger,
 * which writes to **stderr only**. A stdio MCP server speaks JSON-RPC on
 * stdout, so nothing here ever writes there (hostfuncs/README.md,
 * `mcp_resume_log`: "Never to stdout"). No line carries a token.
 *
 * @packageDocumentation
 */

/** The log levels of the host-function contract (`mcp_resume_log.level`). */
export type LogLevel = "debug" | "info" | "warn" | "error";

/** Structured fields of one log line (this package's own lines may add `export` and `error`). */
export interface LogFields {
  /** Stable event name, e.g. `"token_not_found"`. */
  event?: string;
  /** Optional context; never a token. */
  detail?: string;
  /** Further structured values. */
  [key: string]: unknown;
}

/**
 * What {@link ResumeTokenStore.open} accepts as `logger`: one method per
 * level, each taking the human message (the spec's lines verbatim: spec 000,
 * "Logging Strategy") and fields. `console` is **not** suitable in a stdio
 * server (`console.info` writes to stdout). A method that throws is ignored.
 */
export interface Logger {
  /** Debug line (e.g. `host_identified`). */
  debug(message: string, fields?: LogFields): void;
  /** Info line (e.g. `token_not_found`, `session_resumed`). */
  info(message: string, fields?: LogFields): void;
  /** Warn line (e.g. `token_corrupted`, `identity_unavailable`). */
  warn(message: string, fields?: LogFields): void;
  /** Error line (e.g. `write_failed`). */
  error(message: string, fields?: LogFields): void;
}

const RANK: Record<LogLevel, number> = { debug: 0, info: 1, warn: 2, error: 3 };

/** Options of {@link createStderrLogger}. */
export interface StderrLoggerOptions {
  /** Lowest level written; default `"info"`, like Go's `slog.Default()`. */
  level?: LogLevel;
  /** Where lines go; default `process.stderr`. Never `process.stdout` in a stdio server. */
  stream?: { write(chunk: string): unknown };
}

/** A logfmt value, quoted when it holds spaces, quotes, `=`, non-ASCII or is empty. */
const fmt = (v: unknown): string => {
  const s = typeof v === "string" ? v : v instanceof Error ? v.message : String(v);
  return s === "" || /[\s"=\\]|[^\x20-\x7e]/.test(s) ? JSON.stringify(s) : s;
};

/**
 * Returns a {@link Logger} writing one logfmt line per call, in the style of
 * Go's `slog.TextHandler`:
 * `time=2025-01-01T00:00:00.000Z level=WARN msg="Token file corrupted, treating as stale" event=token_corrupted detail="..."`.
 *
 * @param options - minimum level (default `"info"`) and stream (default `process.stderr`).
 * @returns a logger that never throws (write errors are ignored).
 */
export function createStderrLogger(options: StderrLoggerOptions = {}): Logger {
  const min = RANK[options.level ?? "info"];
  const stream = options.stream ?? process.stderr;
  const at = (level: LogLevel) => (message: string, fields?: LogFields) => {
    if (RANK[level] < min) return;
    try {
      let line = `time=${new Date().toISOString()} level=${level.toUpperCase()} msg=${fmt(message)}`;
      for (const [k, v] of Object.entries(fields ?? {})) if (v !== undefined && v !== "") line += ` ${k}=${fmt(v)}`;
      stream.write(line + "\n");
    } catch {
      // a logger must never crash the server
    }
  };
  return { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
}

/** Calls `logger[level](message, fields)`, swallowing anything it throws. */
export function safeLog(logger: Logger, level: LogLevel, message: string, fields?: LogFields): void {
  try {
    logger[level](message, fields);
  } catch {
    // never let a caller's logger crash the resume layer
  }
}

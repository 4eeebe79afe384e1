/**
 * A small client of the demo token broker (examples/broker/README.md,
 * "Protocol"), on Node's `fetch`. Every request times out after
 * {@link TIMEOUT_MS}. Error messages never contain a token.
 *
 * @packageDocumentation
 */

/** Per-request timeout, in milliseconds (≤ 5 s so a dead broker cannot stall startup). */
export const TIMEOUT_MS = 5000;

/** A broker session (`POST /v1/sessions` and `/v1/sessions/resume` answers). */
export interface Session {
  /** `s_` + 16 hex digits; stable across resumes; not a credential. */
  session_id: string;
  /** The current token: a credential, never logged. */
  token: string;
  /** True when the session was resumed. */
  resumed: boolean;
}

/** Any broker failure: network error, timeout, or an unexpected status. */
export class BrokerError extends Error {
  /** HTTP status, or 0 for network errors and timeouts. */
  readonly status: number;
  /** The broker's `error` code, when it sent one. */
  readonly code: string;
  /**
   * @param message - what failed.
   * @param status - HTTP status or 0.
   * @param code - broker error code or "".
   */
  constructor(message: string, status = 0, code = "") {
    super(message);
    this.name = "BrokerError";
    this.status = status;
    this.code = code;
  }
}

/**
 * The broker refused a resume token: 401 `unknown_token`, 409
 * `token_rotated` or 410 `token_expired`. The caller deletes the token file
 * and starts a new session (spec 000, "Broker Rejects Token").
 */
export class BrokerRejectedError extends BrokerError {
  override readonly name = "BrokerRejectedError";
}

/** Client of one broker base URL (no trailing slash). */
export class BrokerClient {
  readonly #base: string;

  /** @param baseURL - e.g. `http://127.0.0.1:43117`. */
  constructor(baseURL: string) {
    this.#base = baseURL.replace(/\/+$/, "");
  }

  async #request(method: string, path: string, body?: unknown, token?: string): Promise<{ status: number; json: unknown }> {
    const headers: Record<string, string> = { "Content-Type": "application/json" };
    if (token !== undefined) headers["Authorization"] = `Bearer ${token}`;
    let res: Response;
    try {
      res = await fetch(this.#base + path, {
        method,
        headers,
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(TIMEOUT_MS),
      });
    } catch (e) {
      const cause = (e as { cause?: { code?: string } }).cause?.code;
      throw new BrokerError(`broker ${method} ${path}: ${(e as Error).name === "TimeoutError" ? `no answer within ${TIMEOUT_MS} ms` : `${(e as Error).message}${cause ? ` (${cause})` : ""}`}`);
    }
    const text = await res.text().catch(() => "");
    let json: unknown = null;
    try {
      json = text === "" ? null : JSON.parse(text);
    } catch {
      json = null;
    }
    return { status: res.status, json };
  }

  #fail(method: string, path: string, status: number, json: unknown): BrokerError {
    const o = (json ?? {}) as { error?: unknown; message?: unknown };
    const code = typeof o.error === "string" ? o.error : "";
    const msg = typeof o.message === "string" ? o.message : "";
    return new BrokerError(`broker ${method} ${path}: HTTP ${status}${code ? ` ${code}` : ""}${msg ? `: ${msg}` : ""}`, status, code);
  }

  /**
   * `POST /v1/sessions`: starts a new session.
   *
   * @throws {@link BrokerError} unless the broker answers 201.
   */
  async start(): Promise<Session> {
    const { status, json } = await this.#request("POST", "/v1/sessions", {});
    if (status !== 201) throw this.#fail("POST", "/v1/sessions", status, json);
    return session(json);
  }

  /**
   * `POST /v1/sessions/resume`: resumes the session of `token`; the answer
   * carries a new (rotated) token that must be stored.
   *
   * @throws {@link BrokerRejectedError} on 401/409/410 (the token is dead).
   * @throws {@link BrokerError} on anything else (broker unavailable).
   */
  async resume(token: string): Promise<Session> {
    const { status, json } = await this.#request("POST", "/v1/sessions/resume", { token });
    if (status === 200) return session(json);
    const err = this.#fail("POST", "/v1/sessions/resume", status, json);
    if (status === 401 || status === 409 || status === 410) {
      throw new BrokerRejectedError(err.message, err.status, err.code);
    }
    throw err;
  }

  /**
   * `POST /v1/notes`: appends a note to the session of `token`.
   *
   * @throws {@link BrokerError} unless the broker answers 204.
   */
  async addNote(token: string, note: string): Promise<void> {
    const { status, json } = await this.#request("POST", "/v1/notes", { note }, token);
    if (status !== 204) throw this.#fail("POST", "/v1/notes", status, json);
  }

  /**
   * `GET /v1/notes`: the notes of the session of `token`, oldest first.
   *
   * @throws {@link BrokerError} unless the broker answers 200.
   */
  async notes(token: string): Promise<string[]> {
    const { status, json } = await this.#request("GET", "/v1/notes", undefined, token);
    if (status !== 200) throw this.#fail("GET", "/v1/notes", status, json);
    const notes = (json as { notes?: unknown }).notes;
    return Array.isArray(notes) ? notes.map(String) : [];
  }
}

function session(json: unknown): Session {
  const o = (json ?? {}) as Partial<Session>;
  if (typeof o.session_id !== "string" || typeof o.token !== "string") {
    throw new BrokerError("broker answered without session_id and token");
  }
  return { session_id: o.session_id, token: o.token, resumed: o.resumed === true };
}

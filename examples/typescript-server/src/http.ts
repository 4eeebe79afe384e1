/**
 * The example server's Streamable HTTP mode (`--http 127.0.0.1:PORT`): the
 * same tools as stdio, served at `/mcp` on node:http in the SDK's stateless
 * mode (`sessionIdGenerator: undefined`, a fresh server and transport per
 * request, as the SDK's stateless example does: any replica answers any
 * request), with bearer-token principals from `MCP_EXAMPLE_PRINCIPALS`.
 *
 * The SDK's `requireBearerAuth` is Express middleware (it answers through
 * Express's `res.status().json()`), so on node:http a small check here
 * does its part: a missing or unknown token answers HTTP 401 with
 * `WWW-Authenticate: Bearer error="invalid_token", ...` and the SDK's own
 * `InvalidTokenError` body; a known one becomes the request's `auth`
 * ({@link AuthInfo}), which the transport hands to each tool as
 * `extra.authInfo`, where mcp-resume's adapter (`mcp-resume/mcp`) takes the
 * principal from (`authInfo.clientId`).
 *
 * There is no MCP host parent to identify in this mode, so no resume store
 * is opened; the handle store opens from the environment
 * (`MCP_RESUME_STATE_DIR`, or `MCP_RESUME_STATE_URL` for Redis), which
 * replicas share.
 *
 * @packageDocumentation
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

import { InvalidTokenError } from "@modelcontextprotocol/sdk/server/auth/errors.js";
import type { AuthInfo } from "@modelcontextprotocol/sdk/server/auth/types.js";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import type { Logger } from "mcp-resume";

/** The environment variable of the static bearer-token map: this server's setting, not the library's. */
export const ENV_PRINCIPALS = "MCP_EXAMPLE_PRINCIPALS";

/** Bad arguments or settings: the server says why on stderr and exits with status 2. Never quotes a token. */
export class UsageError extends Error {}

/**
 * The host and port of a `--http HOST:PORT` or `--http=HOST:PORT` among
 * `args` (the arguments after the script), or `undefined` (stdio). Other
 * arguments are left alone (the resume plugin's instance key in stdio mode).
 *
 * @throws {@link UsageError} for a missing or malformed address.
 */
export function httpAddr(args: string[]): { host: string; port: number } | undefined {
  let value: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === "--http") {
      value = args[i + 1] ?? "";
      break;
    }
    if (a.startsWith("--http=")) {
      value = a.slice("--http=".length);
      break;
    }
  }
  if (value === undefined) return undefined;
  const colon = value.lastIndexOf(":");
  const host = value.slice(0, colon).replace(/^\[|\]$/g, "");
  const port = value.slice(colon + 1);
  if (colon < 1 || !host || !/^\d+$/.test(port) || Number(port) > 65535) {
    throw new UsageError(`--http needs HOST:PORT (e.g. --http 127.0.0.1:0), not ${JSON.stringify(value)}`);
  }
  return { host, port: Number(port) };
}

const sha256 = (s: string): Buffer => createHash("sha256").update(s, "utf8").digest();

/** The static bearer-token map: each token's SHA-256 and its principal's name. */
export type Principals = Array<{ digest: Buffer; name: string }>;

/**
 * Parses `MCP_EXAMPLE_PRINCIPALS`: comma-separated `name:token` pairs,
 * names and tokens non-empty, tokens without white space and unique.
 * Returns `undefined` for an empty value (anonymous mode).
 *
 * @throws {@link UsageError} naming the entry, never the token.
 */
export function parsePrincipals(spec: string): Principals | undefined {
  if (spec.trim() === "") return undefined;
  const out: Principals = [];
  spec.split(",").forEach((pair, i) => {
    const p = pair.trim();
    const colon = p.indexOf(":");
    if (colon < 0) throw new UsageError(`${ENV_PRINCIPALS}: entry ${i + 1} is not name:token`);
    const name = p.slice(0, colon);
    const token = p.slice(colon + 1);
    if (!name || !token) throw new UsageError(`${ENV_PRINCIPALS}: entry ${i + 1} has an empty name or token`);
    if (/\s/.test(token)) throw new UsageError(`${ENV_PRINCIPALS}: the token of ${JSON.stringify(name)} has white space`);
    const digest = sha256(token);
    if (out.some((e) => e.digest.equals(digest))) {
      throw new UsageError(`${ENV_PRINCIPALS}: the token of ${JSON.stringify(name)} is also another principal's`);
    }
    out.push({ digest, name });
  });
  return out;
}

/**
 * The principal whose token `authorization` (an `Authorization` header)
 * bears, as the SDK's {@link AuthInfo} (`clientId` = the name), or
 * `undefined`. Every entry is compared with `timingSafeEqual` over
 * equal-length digests, so timing tells nothing of which token matched.
 */
export function verifyBearer(principals: Principals, authorization: string | undefined): AuthInfo | undefined {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? "");
  if (!m) return undefined;
  const digest = sha256(m[1]!);
  let name: string | undefined;
  for (const e of principals) if (timingSafeEqual(e.digest, digest)) name = e.name;
  return name === undefined ? undefined : { token: m[1]!, clientId: name, scopes: ["mcp"] };
}

/** Answers 401 as the SDK's bearer middleware does: `WWW-Authenticate: Bearer error=...` and the OAuth error body. */
function unauthorized(res: ServerResponse, why: string): void {
  const err = new InvalidTokenError(why);
  res.writeHead(401, {
    "Content-Type": "application/json",
    "WWW-Authenticate": `Bearer error="${err.errorCode}", error_description="${why}"`,
  });
  res.end(JSON.stringify(err.toResponseObject()));
}

/** How long SIGTERM/SIGINT waits for requests in flight before closing their connections, in milliseconds. */
export const SHUTDOWN_WAIT_MS = 5_000;

/**
 * Serves MCP at `http://host:port/mcp` (stateless Streamable HTTP) until
 * SIGTERM or SIGINT, then closes the server and calls `onClose`, and exits
 * the process with status 0. `newServer` builds a server with every tool
 * registered, once per request. `principals` undefined: no bearer check
 * (anonymous). Logs `listening` with `url=http://<host>:<real port>/mcp`.
 * Resolves once listening; rejects when it cannot listen.
 */
export async function serveHttp(opts: {
  host: string;
  port: number;
  principals: Principals | undefined;
  newServer: () => McpServer;
  logger: Logger;
  onClose?: () => void;
}): Promise<void> {
  const { principals, newServer, logger } = opts;
  const handle = async (req: IncomingMessage & { auth?: AuthInfo }, res: ServerResponse): Promise<void> => {
    if (new URL(req.url ?? "/", "http://localhost").pathname !== "/mcp") {
      res.writeHead(404, { "Content-Type": "text/plain" }).end("not found: MCP is at /mcp\n");
      return;
    }
    if (principals) {
      const auth = verifyBearer(principals, req.headers.authorization);
      if (!auth) {
        unauthorized(res, req.headers.authorization ? "Unknown bearer token" : "Missing bearer token");
        return;
      }
      req.auth = auth;
    }
    const server = newServer();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on("close", () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res);
  };
  const http = createServer((req, res) => {
    handle(req, res).catch((e: unknown) => {
      logger.error("request failed", { error: (e as Error)?.message ?? String(e) });
      if (!res.headersSent) res.writeHead(500, { "Content-Type": "text/plain" });
      res.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    http.once("error", reject);
    http.listen(opts.port, opts.host, () => {
      http.off("error", reject);
      resolve();
    });
  });
  const { port } = http.address() as AddressInfo;
  const shown = opts.host.includes(":") ? `[${opts.host}]` : opts.host;
  logger.info("listening", { url: `http://${shown}:${port}/mcp` });
  let stopping = false;
  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    logger.info("shutting down");
    const force = setTimeout(() => http.closeAllConnections(), SHUTDOWN_WAIT_MS);
    force.unref();
    http.close(() => {
      opts.onClose?.();
      process.exit(0);
    });
    http.closeIdleConnections();
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
}

#!/usr/bin/env node
/**
 * Example stdio MCP server on the official TypeScript SDK whose broker
 * session survives relaunches by the same MCP host, through mcp-resume.
 * The TypeScript twin of examples/go-server.
 *
 * Environment:
 *
 * - `MCP_EXAMPLE_BROKER_URL`: the token broker (examples/broker), required;
 *   this server's own setting, hence not `MCP_RESUME_*`.
 * - `MCP_RESUME_STATE_DIR`: overrides the state directory (optional).
 * - `MCP_RESUME_INSTANCE`: tells this instance apart from others the same MCP
 *   host runs at once (optional; default: this process's arguments, which
 *   the server otherwise ignores). Identical instances share one token file,
 *   which only the first holds.
 * - `MCP_RESUME`: `off` turns session resume off (the plugin logs `Session
 *   resume turned off by MCP_RESUME=off` and reads or writes nothing).
 * - `MCP_EXAMPLE_BENCH_ELD`: `1` logs, once the broker session is
 *   established, the event loop's longest delay up to the handshake and
 *   during the store's startup (examples/bench/initbench measures with it).
 * - `MCP_EXAMPLE_BENCH_EAGER`: `1` starts the store before the transport
 *   connects instead of after the handshake, the order this server does not
 *   use, kept so that examples/bench/initbench can measure what it costs.
 *
 * The `MCP_RESUME_*` variables are the library's (read by the plugin); a
 * server copied from this one keeps them and names its own settings with
 * its own prefix. The two `MCP_EXAMPLE_BENCH_*` hooks are the only
 * benchmark code left in a server (its startup benchmark runs
 * examples/bench/typescript/server-start.mjs instead): they observe and
 * reorder this server's own event loop during the handshake, which nothing
 * outside the process can do; a copy of this server can drop them.
 *
 * Tools: `remember(note)` → `remembered`; `recall()` → `{"notes": [...]}`;
 * `session_info()` → `{"session_id": string, "resumed": boolean}`; and the
 * notebook tools of the handle store (notebook.ts), opened at start as the
 * same app, independent of resume (`MCP_RESUME=off` leaves them on), so
 * that notebook_create's description can state the store's policy. Both
 * stores come from mcp-resume's adapter for the MCP SDK (`attach`, from
 * `mcp-resume/mcp`), which closes them when the server closes.
 * `MCP_RESUME_STATE_IDLE_TTL` and `MCP_RESUME_STATE_MAX_AGE` (Go duration
 * syntax, e.g. `90s`) set the notebooks' lifetimes.
 *
 * With `--http HOST:PORT` (e.g. `--http 127.0.0.1:0`) it serves the same
 * tools over stateless Streamable HTTP at `http://HOST:PORT/mcp` instead
 * (http.ts), for several replicas behind one URL: `MCP_EXAMPLE_PRINCIPALS`
 * (`alice:<token>,bob:<token>`) maps bearer tokens to principals, the broker
 * is optional and no resume store is opened.
 *
 * Startup follows spec 000, "MCP Server Startup": load the stored token,
 * offer it to the broker, reject it if the broker refuses, store whatever
 * token the broker issues. It runs in the background, after the MCP
 * handshake: the plugin's work is synchronous on this thread (Extism's host
 * functions are), so it starts once `initialize` has been answered (the
 * client's `notifications/initialized`, or the first tool call, whichever
 * comes first), yielding to the event loop between steps. `initialize` never
 * waits for the plugin or the broker; a tool call waits for the broker
 * session, at most {@link SESSION_WAIT_MS}. Logs go to stderr; stdout
 * carries only JSON-RPC.
 *
 * @packageDocumentation
 */
import { monitorEventLoopDelay } from "node:perf_hooks";

import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { createStderrLogger, type Logger, type ResumeTokenStore } from "mcp-resume";
import { attach, openResume, type Resume } from "mcp-resume/mcp";
import { z } from "zod";

import { BrokerClient, BrokerRejectedError, type Session } from "./broker.js";
import { ENV_PRINCIPALS, httpAddr, parsePrincipals, serveHttp, type Principals } from "./http.js";
import { policyOf, registerNotebookTools } from "./notebook.js";

/**
 * This server's app name: its token files live in their own state directory.
 * `$EXAMPLE_APP` overrides it (the fault suite runs the Go, Python and
 * TypeScript example servers as one app, to show that servers on different
 * hosts exclude one another through one lock).
 */
export const APP = process.env["EXAMPLE_APP"] || "example-typescript";

/**
 * The environment variable holding the token broker's URL: this server's
 * own setting, not the library's, so not `MCP_RESUME_*`.
 */
export const ENV_BROKER_URL = "MCP_EXAMPLE_BROKER_URL";

/** How long a tool call waits for the broker session startup establishes in the background, in milliseconds. */
export const SESSION_WAIT_MS = 20_000;

const logger: Logger = createStderrLogger();

/** Resolves after the event loop has run its pending I/O (a `setImmediate` turn). */
const yieldToLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

function newServer(): McpServer {
  return new McpServer({ name: "mcp-resume-example-typescript", version: "0.1.0" });
}

/**
 * Gets a broker session: the stored one if the broker still honours its
 * token, else a fresh one; then stores the token the broker returned.
 *
 * @throws {@link BrokerError} when no session can be had (broker down).
 */
async function establish(store: ResumeTokenStore | undefined, broker: BrokerClient): Promise<Session> {
  let session: Session | undefined;
  if (store) {
    const token = await store.load();
    if (token !== undefined) {
      try {
        session = await broker.resume(token);
      } catch (e) {
        if (e instanceof BrokerRejectedError) {
          await store.reject();
        } else {
          // The broker is unreachable, not refusing: keep the file.
          logger.warn("could not offer the stored token to the broker", { error: (e as Error).message });
        }
      }
    }
  }
  session ??= await broker.start();
  if (store) {
    try {
      await store.store(session.token);
    } catch (e) {
      logger.warn("broker issued a token the resume store cannot hold", { error: (e as Error).message });
    }
  }
  return session;
}

function text(s: string): { content: Array<{ type: "text"; text: string }> } {
  return { content: [{ type: "text", text: s }] };
}

/** What the background startup ended with: a session, or why there is none. */
type Outcome = { session: Session; error?: undefined } | { session?: undefined; error: string };

/**
 * Waits for the adapter's resume store and establishes the broker session,
 * yielding to the event loop before each synchronous plugin step. Never rejects.
 */
async function startup(resume: Resume, broker: BrokerClient): Promise<Outcome> {
  await yieldToLoop();
  // Resume is an optimisation: without the store (the adapter logged why), serve without it.
  const store = await resume.tokens().catch(() => undefined);
  await yieldToLoop();
  try {
    return { session: await establish(store, broker) };
  } catch (e) {
    const error = (e as Error).message;
    logger.error("no broker session; tools will fail until restart", { error });
    return { error };
  }
}

/**
 * The event loop's delay (perf_hooks.monitorEventLoopDelay, 1 ms
 * resolution) up to the handshake and during startup, logged once on
 * stderr (`MCP_EXAMPLE_BENCH_ELD=1`).
 */
function delayMonitor(): { handshake(): void; done(): void } {
  const h = monitorEventLoopDelay({ resolution: 1 });
  h.enable();
  let handshakeMaxMs = -1;
  return {
    handshake() {
      if (handshakeMaxMs >= 0) return;
      handshakeMaxMs = h.max / 1e6;
      h.reset();
    },
    done() {
      h.disable();
      logger.info("event-loop delay", { event: "bench_eld", handshake_max_ms: handshakeMaxMs.toFixed(1), startup_max_ms: (h.max / 1e6).toFixed(1) });
    },
  };
}

/**
 * Registers the broker tools on `server`: `current` gives the broker
 * session (or rejects saying why there is none); `broker` undefined (HTTP
 * mode without a broker) never gets that far.
 */
function registerBrokerTools(server: McpServer, broker: BrokerClient | undefined, current: () => Promise<Session>): void {
  server.registerTool(
    "remember",
    {
      description: "Keep a note in this session's context at the broker.",
      inputSchema: { note: z.string().describe("the note to keep in this session") },
    },
    async ({ note }) => {
      const s = await current();
      await broker!.addNote(s.token, note);
      return text("remembered");
    },
  );
  server.registerTool("recall", { description: "List the notes of this session." }, async () => {
    const s = await current();
    const notes = await broker!.notes(s.token);
    return text(JSON.stringify({ notes }));
  });
  server.registerTool(
    "session_info",
    { description: "The broker session ID and whether it was resumed." },
    async () => {
      const s = await current();
      return text(JSON.stringify({ session_id: s.session_id, resumed: s.resumed }));
    },
  );
}

/**
 * Waits for `started` (the background startup's outcome) at most
 * {@link SESSION_WAIT_MS} and returns its session, or throws why there is none.
 */
async function sessionOf(started: Promise<Outcome>): Promise<Session> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<Outcome>((resolve) => {
    timer = setTimeout(
      () => resolve({ error: `startup still running after ${SESSION_WAIT_MS / 1000} s (is the broker at ${ENV_BROKER_URL} reachable?)` }),
      SESSION_WAIT_MS,
    );
  });
  const o = await Promise.race([started, timeout]).finally(() => clearTimeout(timer));
  if (!o.session) throw new Error(`no broker session: ${o.error}`);
  return o.session;
}

/**
 * HTTP mode (http.ts): the same tools over stateless Streamable HTTP, one
 * server per request, with bearer principals. No resume store (no MCP host
 * parent to identify); the broker is optional; the handle store opens once,
 * from the environment, before listening.
 */
async function mainHttp(host: string, port: number): Promise<void> {
  let principals: Principals | undefined;
  try {
    principals = parsePrincipals(process.env[ENV_PRINCIPALS] ?? "");
  } catch (e) {
    logger.error((e as Error).message);
    process.exit(2);
  }
  if (!principals) logger.warn(`HTTP mode without ${ENV_PRINCIPALS}: every request runs as the anonymous principal ""`);
  logger.info("HTTP mode: no MCP host parent to identify, so no session resume store; the handle store opens from the environment");
  const brokerURL = process.env[ENV_BROKER_URL];
  const broker = brokerURL ? new BrokerClient(brokerURL) : undefined;
  const started: Promise<Outcome> = broker
    ? establish(undefined, broker).then(
        (session): Outcome => ({ session }),
        (e: unknown): Outcome => {
          const error = (e as Error).message;
          logger.error("no broker session; broker tools will fail until restart", { error });
          return { error };
        },
      )
    : Promise.resolve({ error: `${ENV_BROKER_URL} is not set: this replica has no broker session` });
  // One handle store for every request's server, opened before listening (tools/list states its policy).
  const resume = openResume(APP, { tokens: false, logger });
  const policy = policyOf(await resume.handles().catch(() => undefined));
  await serveHttp({
    host,
    port,
    principals,
    logger,
    newServer: () => {
      const server = newServer();
      registerNotebookTools(server, resume, policy);
      registerBrokerTools(server, broker, () => sessionOf(started));
      return server;
    },
    onClose: () => {
      void resume.close();
    },
  });
}

/**
 * Applies the fault suite's two test-only settings (examples/faults, fault 31): `EXAMPLE_UNSET` names a variable
 * the server removes from its environment and `EXAMPLE_CHDIR` a directory it changes to, both at startup, before
 * the resume store opens, as a server that consumes a secret from its environment or changes to its install
 * directory does. Neither is set in normal use. Throws the chdir's error (the server then exits 1).
 */
function applyTestKnobs(): void {
  const name = process.env["EXAMPLE_UNSET"];
  if (name) delete process.env[name];
  const dir = process.env["EXAMPLE_CHDIR"];
  if (dir) process.chdir(dir);
}

async function main(): Promise<void> {
  applyTestKnobs();
  let addr: { host: string; port: number } | undefined;
  try {
    addr = httpAddr(process.argv.slice(2));
  } catch (e) {
    logger.error((e as Error).message);
    process.exit(2);
  }
  if (addr) return mainHttp(addr.host, addr.port);
  const brokerURL = process.env[ENV_BROKER_URL];
  if (!brokerURL) {
    logger.error(`${ENV_BROKER_URL} is not set: point it at the token broker (go run ./examples/broker prints its URL)`);
    process.exit(1);
  }
  const eld = process.env["MCP_EXAMPLE_BENCH_ELD"] === "1" ? delayMonitor() : undefined;
  const broker = new BrokerClient(brokerURL);
  const server = newServer();
  let started: Promise<Outcome> | undefined;
  const start = (): Promise<Outcome> =>
    (started ??= startup(resume, broker).then((o) => {
      eld?.done();
      return o;
    }));
  // initialize has been answered: the plugin's synchronous work may run now. Set before attach, which
  // chains it and then starts opening both stores in the background.
  server.server.oninitialized = () => {
    eld?.handshake();
    void start();
  };
  const resume = attach(server, APP, { logger });
  // Opened before connecting, so that tools/list already states the store's policy: ~60 ms of compile and
  // instantiation the resume store would otherwise pay after initialize.
  registerNotebookTools(server, resume, policyOf(await resume.handles().catch(() => undefined)));
  registerBrokerTools(server, broker, () => sessionOf(start()));

  if (process.env["MCP_EXAMPLE_BENCH_EAGER"] === "1") void start();
  await server.connect(new StdioServerTransport());
}

main().catch((e: unknown) => {
  logger.error("typescript-server stopped", { error: (e as Error)?.message ?? String(e) });
  process.exit(1);
});

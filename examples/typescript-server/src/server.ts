#!/usr/bin/env node
/**
 * Example stdio MCP server on the official TypeScript SDK whose broker
 * session survives relaunches by the same MCP host, through mcp-resume.
 * The TypeScript twin of examples/go-server.
 *
 * Environment:
 *
 * - `MCP_RESUME_BROKER_URL`: the token broker (examples/broker), required.
 * - `MCP_RESUME_STATE_DIR`: overrides the state directory (optional).
 * - `MCP_RESUME_INSTANCE`: tells this instance apart from others the same MCP
 *   host runs at once (optional; default: this process's arguments, which
 *   the server otherwise ignores). Identical instances share one token file,
 *   which only the first holds.
 * - `MCP_RESUME_BENCH`: `load` opens the store, calls `load()` once and
 *   exits 0 (startup benchmark); `baseline` does the same startup without
 *   the store and exits at the same point.
 *
 * Tools: `remember(note)` → `remembered`; `recall()` → `{"notes": [...]}`;
 * `session_info()` → `{"session_id": string, "resumed": boolean}`.
 *
 * Startup follows spec 000, "MCP Server Startup": load the stored token,
 * offer it to the broker, reject it if the broker refuses, store whatever
 * token the broker issues. Logs go to stderr; stdout carries only JSON-RPC.
 *
 * @packageDocumentation
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { createStderrLogger, ResumeTokenStore, type Logger } from "mcp-resume";
import { z } from "zod";

import { BrokerClient, BrokerRejectedError, type Session } from "./broker.js";

/** This server's app name: its token files live in their own state directory. */
export const APP = "example-typescript";

const logger: Logger = createStderrLogger();

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

async function main(): Promise<void> {
  const bench = process.env["MCP_RESUME_BENCH"];
  const server = newServer();
  if (bench === "baseline") process.exit(0);

  let store: ResumeTokenStore | undefined;
  try {
    store = await ResumeTokenStore.open({ app: APP, logger });
  } catch (e) {
    // Resume is an optimisation: serve without it.
    logger.warn("session resume unavailable", { error: (e as Error).message });
  }
  if (bench === "load") {
    // The measured point is the load answer: exit there, skipping teardown.
    await store?.load();
    process.exit(0);
  }

  const brokerURL = process.env["MCP_RESUME_BROKER_URL"];
  if (!brokerURL) {
    logger.error(
      "MCP_RESUME_BROKER_URL is not set: point it at the token broker (go run ./examples/broker prints its URL)",
    );
    process.exit(1);
  }
  const broker = new BrokerClient(brokerURL);
  let session: Session | undefined;
  let sessionError = "";
  try {
    session = await establish(store, broker);
  } catch (e) {
    sessionError = (e as Error).message;
    logger.error("no broker session; tools will fail until restart", { error: sessionError });
  }
  const current = (): Session => {
    if (!session) throw new Error(`no broker session: ${sessionError}`);
    return session;
  };

  server.registerTool(
    "remember",
    {
      description: "Keep a note in this session's context at the broker.",
      inputSchema: { note: z.string().describe("the note to keep in this session") },
    },
    async ({ note }) => {
      await broker.addNote(current().token, note);
      return text("remembered");
    },
  );
  server.registerTool("recall", { description: "List the notes of this session." }, async () => {
    const notes = await broker.notes(current().token);
    return text(JSON.stringify({ notes }));
  });
  server.registerTool(
    "session_info",
    { description: "The broker session ID and whether it was resumed." },
    async () => {
      const s = current();
      return text(JSON.stringify({ session_id: s.session_id, resumed: s.resumed }));
    },
  );

  await server.connect(new StdioServerTransport());
}

main().catch((e: unknown) => {
  logger.error("typescript-server stopped", { error: (e as Error)?.message ?? String(e) });
  process.exit(1);
});

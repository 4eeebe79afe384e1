#!/usr/bin/env node
// The startup benchmark's stand-in for the TypeScript example server
// (examples/typescript-server): the same startup, stopped at the point
// startup.mjs measures, so the server itself carries no benchmark mode.
//
//   node server-start.mjs load|baseline
//
// baseline  the server's module imports (the MCP SDK's server and stdio
//           transport, mcp-resume, zod, the example's broker client) and its
//           McpServer construction, then exit 0
// load      the same, then ResumeTokenStore.open() with the server's app name
//           and logger, and one load(); exits 0 right after the load answer
//           (before any broker call: no broker is needed)
//
// A store that cannot open is logged and the load skipped, as the server
// serves without resume. Exit status 2 for an unknown mode. Nothing is
// written to stdout.
//
// It must run from a directory whose node_modules is a symbolic link to
// examples/typescript-server/node_modules (startup.mjs copies it into its
// work directory and makes that link): its imports then resolve to exactly
// the files the server loads (Node follows the link to their real paths),
// with no loader flag on the measured process.
import { realpathSync } from "node:fs";
import "node:perf_hooks";
import path from "node:path";
import { pathToFileURL } from "node:url";

import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import "@modelcontextprotocol/sdk/server/stdio.js";
import { createStderrLogger, ResumeTokenStore } from "mcp-resume";
import "zod";

const mode = process.argv.length === 3 ? process.argv[2] : "";
if (mode !== "load" && mode !== "baseline") {
  process.stderr.write("usage: server-start.mjs load|baseline\n");
  process.exit(2);
}
// The example's own modules: its broker client, next to the server.
const example = path.dirname(realpathSync(new URL("./node_modules", import.meta.url)));
await import(pathToFileURL(path.join(example, "dist", "broker.js")).href);

const APP = process.env["EXAMPLE_APP"] || "example-typescript";
const logger = createStderrLogger();
new McpServer({ name: "mcp-resume-example-typescript", version: "0.1.0" });
if (mode === "baseline") process.exit(0);
let store;
try {
  store = await ResumeTokenStore.open(APP, { logger });
} catch (e) {
  logger.warn("session resume unavailable", { error: e.message });
}
// The measured point is the load answer: exit there, skipping teardown.
await store?.load();
process.exit(0);

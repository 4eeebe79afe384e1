// The example server's notebook tools (examples/typescript-server, built)
// under the official TypeScript MCP client, against the real Go broker and
// the real plugin on real files: the contract's JSON and tool errors, the
// durability policy in notebook_create's description, a notebook outliving
// its server, idle expiry set by MCP_RESUME_STATE_IDLE_TTL,
// MCP_RESUME=off leaving the store on, and an unusable store leaving every
// other tool working. No handle may reach the server's stderr.
import assert from "node:assert/strict";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { after, before, describe, test } from "node:test";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

import { cleanupTemps, goBuild, ROOT, SERVER_JS, startBroker, tempDir, type Broker } from "./helpers.js";

let broker: Broker;
const handles: string[] = [];
const stderrs: string[] = [];
/** Every client, closed at the end even when a test failed before closing its own (its server then exits). */
const clients: Client[] = [];

before(async () => {
  assert.ok(existsSync(SERVER_JS), `${SERVER_JS} is missing: run make typescript-setup`);
  broker = await startBroker(await goBuild("./examples/broker", path.join(tempDir("broker-"), "broker")));
});

after(async () => {
  for (const c of clients) await c.close().catch(() => undefined);
  await broker?.stop();
  for (const s of stderrs) for (const h of handles) assert.ok(!s.includes(h), "a handle reached the server's stderr");
  cleanupTemps();
});

type Tool = { structured: Record<string, any>; text: string; isError: boolean };

/** Launches the example server under this process with `env`; `tool` calls one tool and returns its structured content and text. */
async function launch(env: Record<string, string>) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [SERVER_JS],
    cwd: ROOT,
    env: { ...(process.env as Record<string, string>), MCP_EXAMPLE_BROKER_URL: broker.url, ...env },
    stderr: "pipe",
  });
  let err = "";
  transport.stderr!.on("data", (d: Buffer) => (err += d.toString()));
  const client = new Client({ name: "mcp-resume-notebook-host", version: "0.1.0" });
  const errors: Error[] = [];
  client.onerror = (e) => errors.push(e);
  await client.connect(transport);
  clients.push(client);
  const tool = async (name: string, args: Record<string, unknown> = {}): Promise<Tool> => {
    const r = (await client.callTool({ name, arguments: args })) as { content: Array<{ text: string }>; structuredContent?: Record<string, unknown>; isError?: boolean };
    const text = r.content[0]?.text ?? "";
    if (name.startsWith("notebook_")) assert.deepEqual(r.structuredContent, JSON.parse(text), `${name}: the text content is the structured content's JSON`);
    if (typeof r.structuredContent?.["handle"] === "string") handles.push(r.structuredContent["handle"]);
    return { structured: r.structuredContent ?? {}, text, isError: r.isError === true };
  };
  return {
    client,
    tool,
    stderr: () => err,
    close: async () => {
      await client.close();
      stderrs.push(err);
      assert.deepEqual(errors.map(String), [], "only JSON-RPC on the server's stdout");
    },
  };
}

/** A state root for one test; the server's handle store is <root>/example-typescript/handles. */
const rootFor = () => path.join(tempDir("notebook-"), "state");

describe("notebook tools of the TypeScript example server", { concurrency: false }, () => {
  test("create, add, read, delete: the contract's JSON; errors are isError tools with the code", async () => {
    const root = rootFor();
    const s = await launch({ MCP_RESUME_STATE_DIR: root });
    const { tools } = await s.client.listTools();
    const create = tools.find((t) => t.name === "notebook_create")!;
    assert.equal(
      create.description,
      "Creates a notebook and returns its handle. The notebook expires after 24h0m0s idle and 720h0m0s after creation at the latest; an expired handle answers handle_expired.",
    );
    for (const n of ["notebook_add", "notebook_read", "notebook_delete", "remember", "recall", "session_info"]) assert.ok(tools.some((t) => t.name === n), n);
    const c = await s.tool("notebook_create");
    assert.equal(c.isError, false);
    assert.deepEqual(Object.keys(c.structured).sort(), ["generation", "handle", "idle_ttl_seconds", "max_age_seconds"]);
    assert.match(c.structured["handle"], /^mrh1_[A-Za-z0-9_-]{32}$/);
    assert.deepEqual([c.structured["generation"], c.structured["idle_ttl_seconds"], c.structured["max_age_seconds"]], [1, 86400, 2592000]);
    const h = c.structured["handle"] as string;
    assert.deepEqual((await s.tool("notebook_add", { handle: h, note: "first" })).structured, { generation: 2 });
    assert.deepEqual((await s.tool("notebook_add", { handle: h, note: "second", generation: 2 })).structured, { generation: 3 });
    const stale = await s.tool("notebook_add", { handle: h, note: "lost", generation: 2 });
    assert.equal(stale.isError, true);
    assert.equal(stale.structured["error"], "conflict");
    assert.equal(stale.structured["generation"], 3);
    assert.match(stale.structured["message"], /generation 3/);
    assert.deepEqual((await s.tool("notebook_read", { handle: h })).structured, { notes: ["first", "second"], generation: 3 });
    const bad = await s.tool("notebook_read", { handle: "not-a-handle" });
    assert.deepEqual([bad.isError, bad.structured["error"]], [true, "invalid_handle"]);
    const del = await s.tool("notebook_delete", { handle: h, generation: 2 });
    assert.deepEqual([del.isError, del.structured["error"], del.structured["generation"]], [true, "conflict", 3]);
    assert.deepEqual((await s.tool("notebook_delete", { handle: h, generation: 3 })).structured, {});
    const gone = await s.tool("notebook_read", { handle: h });
    assert.deepEqual([gone.isError, gone.structured["error"]], [true, "handle_not_found"]);
    assert.ok(!gone.text.includes(h), "no handle in an error");
    await s.close();
  });

  test("a notebook outlives its server: the next one, with MCP_RESUME=off (resume off, a fresh session), reads it", async () => {
    const root = rootFor();
    const a = await launch({ MCP_RESUME_STATE_DIR: root });
    const h = (await a.tool("notebook_create")).structured["handle"] as string;
    await a.tool("notebook_add", { handle: h, note: "before the restart" });
    await a.close();
    const b = await launch({ MCP_RESUME_STATE_DIR: root, MCP_RESUME: "off" });
    assert.equal(JSON.parse((await b.tool("session_info")).text).resumed, false, "resume is off");
    assert.deepEqual((await b.tool("notebook_read", { handle: h })).structured, { notes: ["before the restart"], generation: 2 });
    await b.close();
    assert.ok(b.stderr().includes("Session resume turned off by MCP_RESUME=off"), b.stderr());
  });

  test("MCP_RESUME_STATE_IDLE_TTL=2s: the description says it, and an idle notebook answers handle_expired with reason idle", async () => {
    const s = await launch({ MCP_RESUME_STATE_DIR: rootFor(), MCP_RESUME_STATE_IDLE_TTL: "2s", MCP_RESUME_STATE_MAX_AGE: "90s" });
    const { tools } = await s.client.listTools();
    assert.match(tools.find((t) => t.name === "notebook_create")!.description!, /expires after 2s idle and 1m30s after creation/);
    const c = await s.tool("notebook_create");
    assert.deepEqual([c.structured["idle_ttl_seconds"], c.structured["max_age_seconds"]], [2, 90]);
    await new Promise((r) => setTimeout(r, 2300));
    const r = await s.tool("notebook_read", { handle: c.structured["handle"] });
    assert.deepEqual([r.isError, r.structured["error"], r.structured["reason"]], [true, "handle_expired", "idle"]);
    await s.close();
  });

  test("a store that cannot open: the notebook tools answer store_unavailable, every other tool works", async () => {
    const root = rootFor();
    mkdirSync(path.join(root, "example-typescript"), { recursive: true, mode: 0o700 });
    writeFileSync(path.join(root, "example-typescript", "handles"), "not a directory");
    const s = await launch({ MCP_RESUME_STATE_DIR: root });
    const r = await s.tool("notebook_create");
    assert.deepEqual([r.isError, r.structured["error"]], [true, "store_unavailable"]);
    assert.match(r.structured["message"], /handles/);
    assert.match((await s.tool("session_info")).text, /session_id/);
    assert.equal((await s.tool("remember", { note: "n" })).text, "remembered");
    await s.close();
  });

  test("an unusable environment value: the server still starts and says why in store_unavailable", async () => {
    const s = await launch({ MCP_RESUME_STATE_DIR: rootFor(), MCP_RESUME_STATE_IDLE_TTL: "soon" });
    const r = await s.tool("notebook_create");
    assert.deepEqual([r.isError, r.structured["error"]], [true, "store_unavailable"]);
    assert.match(r.structured["message"], /MCP_RESUME_STATE_IDLE_TTL/);
    assert.match((await s.tool("session_info")).text, /session_id/);
    await s.close();
  });
});

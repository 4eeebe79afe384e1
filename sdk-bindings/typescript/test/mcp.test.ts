// mcp-resume/mcp, the adapter for the official MCP SDK, under the SDK's real client: a stdio server built
// with the adapter alone (test/fixtures/adapter-server.mjs) resumes its token and keeps its handles across
// a relaunch under the same host (this process), answers a store error as an isError tool result with the
// structured error, and retries an update after a real conflict; the example server in HTTP mode (built
// with the adapter) takes the principal from the bearer token, so alice's handle is handle_not_found for
// bob. Real plugin, real files, real processes; run under a terminal (bin/withtty) for resume.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import * as path from "node:path";
import { createInterface } from "node:readline";
import { after, describe, test } from "node:test";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

import { InvalidOptionError, InvalidPrincipalError } from "../src/index.js";
import { attach, openResume, principalOf } from "../src/mcp.js";
import { cleanupTemps, PKG, ROOT, SERVER_JS, tempDir } from "./helpers.js";

after(cleanupTemps);
const FIXTURE = path.join(PKG, "test", "fixtures", "adapter-server.mjs");

type Result = { structured: Record<string, any>; text: string; isError: boolean };

/** A real SDK client connected to `transport`; `call` returns a tool's structured content, text and isError. */
async function connect(transport: StdioClientTransport | StreamableHTTPClientTransport) {
  const client = new Client({ name: "mcp-resume-adapter-host", version: "0.1.0" });
  await client.connect(transport);
  const call = async (name: string, args: Record<string, unknown> = {}): Promise<Result> => {
    const r = (await client.callTool({ name, arguments: args })) as { content: Array<{ text: string }>; structuredContent?: Record<string, unknown>; isError?: boolean };
    return { structured: r.structuredContent ?? {}, text: r.content[0]?.text ?? "", isError: r.isError === true };
  };
  return { client, call };
}

/** Launches the adapter fixture server under this process with state root `root`. */
async function launch(root: string) {
  let err = "";
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [FIXTURE],
    cwd: PKG,
    env: { ...(process.env as Record<string, string>), MCP_RESUME_STATE_DIR: root, MCP_RESUME_INSTANCE: "adapter" },
    stderr: "pipe",
  });
  transport.stderr!.on("data", (d: Buffer) => (err += d.toString()));
  return { ...(await connect(transport)), stderr: () => err };
}

describe("mcp-resume/mcp with the official MCP SDK", { concurrency: false }, () => {
  test("stdio: the resume token and a handle survive a relaunch under the same host", async () => {
    const root = tempDir("adapter-");
    const a = await launch(root);
    assert.deepEqual((await a.call("token_load")).structured, { token: null });
    assert.equal((await a.call("token_store", { token: "tok-first" })).isError, false);
    const { handle } = (await a.call("counter_create")).structured;
    assert.deepEqual((await a.call("counter_add", { handle, delay_ms: 0 })).structured, { n: 1, generation: 2, attempts: 1 });
    await a.client.close();

    const b = await launch(root);
    assert.deepEqual((await b.call("token_load")).structured, { token: "tok-first" }, `the relaunch resumes (stderr: ${b.stderr()})`);
    assert.deepEqual((await b.call("counter_read", { handle })).structured, { n: 1, generation: 2 });
    await b.client.close();
  });

  test("a store error is an isError tool result with the structured error and its JSON as text", async () => {
    const a = await launch(tempDir("adapter-"));
    const bad = await a.call("counter_read", { handle: "mrh1_" + "A".repeat(32) });
    assert.equal(bad.isError, true);
    assert.equal(bad.structured["error"], "handle_not_found");
    assert.equal(typeof bad.structured["message"], "string");
    assert.deepEqual(JSON.parse(bad.text), bad.structured);
    const malformed = await a.call("counter_read", { handle: "nope" });
    assert.equal(malformed.isError, true);
    assert.equal(malformed.structured["error"], "invalid_handle");
    await a.client.close();
  });

  test("update retries after a real conflict: two concurrent adds both land", async () => {
    const a = await launch(tempDir("adapter-"));
    const { handle } = (await a.call("counter_create")).structured;
    const [x, y] = await Promise.all([a.call("counter_add", { handle, delay_ms: 300 }), a.call("counter_add", { handle, delay_ms: 300 })]);
    assert.equal(x.isError || y.isError, false, `${x.text} ${y.text}`);
    assert.deepEqual([x.structured["attempts"], y.structured["attempts"]].sort(), [1, 2], "one of them met the other's write and retried");
    assert.deepEqual([x.structured["n"], y.structured["n"]].sort(), [1, 2]);
    assert.deepEqual((await a.call("counter_read", { handle })).structured, { n: 2, generation: 3 });
    await a.client.close();
  });

  test("HTTP with bearer auth (the example server): the principal is the token's client; alice's notebook is handle_not_found for bob", async (t) => {
    if (!existsSync(SERVER_JS)) return t.skip(`${SERVER_JS} is missing: run make typescript-setup`);
    const root = tempDir("adapter-http-");
    const child = spawn(process.execPath, [SERVER_JS, "--http", "127.0.0.1:0"], {
      cwd: ROOT,
      env: { ...process.env, MCP_RESUME_STATE_DIR: root, MCP_EXAMPLE_PRINCIPALS: "alice:tok-alice,bob:tok-bob", MCP_EXAMPLE_BROKER_URL: "" },
      stdio: ["ignore", "ignore", "pipe"],
    });
    t.after(() => void child.kill("SIGTERM"));
    const url = await new Promise<string>((resolve, reject) => {
      const lines = createInterface({ input: child.stderr! });
      lines.on("line", (l) => {
        const m = /url=(\S+)/.exec(l);
        if (m) resolve(m[1]!.replace(/^"|"$/g, ""));
      });
      child.once("exit", (code) => reject(new Error(`the server exited ${code}`)));
    });
    const as = (token: string) => connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
    const alice = await as("tok-alice");
    const bob = await as("tok-bob");
    const { handle } = (await alice.call("notebook_create")).structured;
    assert.equal((await alice.call("notebook_add", { handle, note: "mine" })).isError, false);
    assert.deepEqual((await alice.call("notebook_read", { handle })).structured, { notes: ["mine"], generation: 2 });
    const stolen = await bob.call("notebook_read", { handle });
    assert.equal(stolen.isError, true);
    assert.equal(stolen.structured["error"], "handle_not_found");
    await alice.client.close();
    await bob.client.close();
  });

  test("attach and openResume refuse an unknown option", () => {
    assert.throws(() => openResume("x", { retry: 3 } as never), InvalidOptionError);
    assert.throws(() => openResume("x", { retries: -1 }), InvalidOptionError);
    assert.throws(() => attach({ server: {} }, "x", { handle: {} } as never), InvalidOptionError);
  });

  test("the principal of an authenticated request: extra.sub, else clientId; a token naming neither is refused, never anonymous", () => {
    assert.equal(principalOf(undefined), "");
    assert.equal(principalOf({} as never), "");
    const auth = (clientId: string, extra?: Record<string, unknown>) => ({ authInfo: { token: "t", clientId, scopes: [], extra } }) as never;
    assert.equal(principalOf(auth("shared-client", { sub: "alice" })), "alice");
    assert.equal(principalOf(auth("bob")), "bob");
    assert.equal(principalOf(auth("bob", { sub: "" })), "bob");
    assert.throws(() => principalOf(auth("")), InvalidPrincipalError);
    assert.throws(() => principalOf(auth("", { sub: 7 })), InvalidPrincipalError);
  });
});

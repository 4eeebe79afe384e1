// The guest's random source is real (hostfuncs/README.md, "Loading the
// plugin", WASI): the plugin names each temporary file
// `.<name>.<16 lowercase hex>.tmp` from WASI random_get and sends it as
// `temp` in its mcp_resume_write request; a runtime with a fixed random
// sequence would give two servers the same temporary names. Two stores
// opened as production opens them (each a fresh plugin instance, the real
// host identity: this process's parent is the MCP host) store twice each;
// a spy on the host functions that calls through records every request.
import assert from "node:assert/strict";
import * as path from "node:path";
import { after, test } from "node:test";

import { HostFunctions } from "../src/hostfuncs.js";
import { ResumeTokenStore } from "../src/index.js";
import { cleanupTemps, tempDir } from "./helpers.js";

after(cleanupTemps);

const quiet = { debug() {}, info() {}, warn() {}, error() {} };

test("temporary file names come from a real random source", { skip: process.platform !== "linux" && "the writes need the real MCP host identity (/proc)" }, async (t) => {
  const writes: Array<{ name: string; temp: string }> = [];
  const real = HostFunctions.prototype.call;
  t.mock.method(HostFunctions.prototype, "call", function (this: HostFunctions, fn: string, req: Uint8Array) {
    if (fn === "mcp_resume_write") writes.push(JSON.parse(Buffer.from(req).toString("utf8")) as { name: string; temp: string });
    return real.call(this, fn, req);
  });
  const stateRoot = path.join(tempDir(), "state");
  for (const app of ["rand-a", "rand-b"]) {
    const store = await ResumeTokenStore.open(app, { stateRoot, logger: quiet, instance: "" });
    await store.store("tok-1");
    await store.store("tok-2");
    await store.close();
  }
  assert.equal(writes.length, 4, JSON.stringify(writes));
  const digits = writes.map((w) => {
    const m = new RegExp(`^\\.${w.name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\\.([0-9a-f]{16})\\.tmp$`).exec(w.temp);
    assert.ok(m, `temp ${JSON.stringify(w.temp)} for ${JSON.stringify(w.name)} is not .<name>.<16 lowercase hex>.tmp`);
    return m[1];
  });
  assert.equal(new Set(digits).size, 4, `random digits drawn twice, the guest's random source is not real: ${digits.join(" ")}`);
});

// Stress helper of the handle store's end-to-end tests (examples/handles), for the TypeScript
// API (HandleStore.open): the same protocol as the Go helper, documented in
// examples/handles/helpers_test.go.
//
// Environment: HANDLES_HELPER ("cas" or "putloop"), HANDLES_ROOT (state root), HANDLES_APP,
// HANDLES_HANDLE (an existing handle, principal ""), HANDLES_THREADS, HANDLES_OPS, HANDLES_SEED.
//
// - cas: print "ready", wait for a line on stdin, then HANDLES_THREADS concurrent async loops
//   (Node has one thread: the store queues their calls) each make HANDLES_OPS successful
//   compare-and-set increments of {"count": N}; print one JSON line {puts, conflicts, errors, failed}.
// - putloop: get, then put the next self-checking value expecting the generation read, forever;
//   print "ready" after the first put.
// - principals: print the JSON list of codes ("ok" for success) of: create with a 1025-byte
//   principal, create with a lone surrogate (not valid UTF-8), get with a 1025-byte principal,
//   create with a 1024-byte principal, get with "".
//
// Only the protocol goes to stdout.

import { createHash } from "node:crypto";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import path from "node:path";

const here = path.dirname(fileURLToPath(import.meta.url));
const { HandleStore, MCPResumeError, ConflictError } = await import(path.join(here, "..", "..", "..", "sdk-bindings", "typescript", "dist", "index.js"));

const enc = new TextEncoder();
const dec = new TextDecoder();

/** The putloop value of generation gen, writer seed, i-th put (crashValue in helpers_test.go). */
function crashValue(gen, seed, i) {
  const n = (seed * 131 + i * 977) % 65536;
  let pad = "";
  for (let j = 0; j < n; j++) pad += String.fromCharCode(97 + ((gen + j) % 26));
  const sum = createHash("sha256").update(`${gen}:${seed}:${pad}`).digest("hex").slice(0, 16);
  return enc.encode(JSON.stringify({ gen, seed, pad, sum }));
}

async function cas(store, handle, threads, ops) {
  const rep = { puts: 0, conflicts: 0, errors: [], failed: 0 };
  const fail = (msg) => {
    rep.failed++;
    if (rep.errors.length < 10) rep.errors.push(msg);
  };
  const worker = async () => {
    for (let done = 0, tries = 0; done < ops && tries < ops * 200; tries++) {
      let v;
      try {
        v = await store.get(handle, "");
      } catch (e) {
        fail(`get: ${e}`);
        continue;
      }
      const gen0 = v.generation;
      const count = JSON.parse(dec.decode(v.data)).count;
      if (count !== gen0 - 1) {
        fail(`read count ${count} at generation ${gen0}`);
        continue;
      }
      try {
        const gen = await store.put(handle, "", enc.encode(JSON.stringify({ count: count + 1 })), { expect: gen0 });
        if (gen !== gen0 + 1) {
          fail(`put expecting ${gen0} returned generation ${gen}`);
          continue;
        }
        done++;
        rep.puts++;
      } catch (e) {
        if (e instanceof ConflictError) {
          if (e.generation <= gen0) fail(`conflict expecting ${gen0} named generation ${e.generation}`);
          rep.conflicts++;
        } else {
          fail(`put: ${e}`);
        }
      }
    }
  };
  await Promise.all(Array.from({ length: threads }, worker));
  return rep;
}

const mode = process.env.HANDLES_HELPER;
const handle = process.env.HANDLES_HANDLE;
const store = await HandleStore.open(process.env.HANDLES_APP, { stateRoot: process.env.HANDLES_ROOT });
if (mode === "cas") {
  process.stdout.write("ready\n");
  const rl = createInterface({ input: process.stdin });
  await new Promise((resolve) => rl.once("line", resolve));
  rl.close();
  const rep = await cas(store, handle, Number(process.env.HANDLES_THREADS), Number(process.env.HANDLES_OPS));
  process.stdout.write(JSON.stringify(rep) + "\n");
  await store.close();
  process.exit(0);
} else if (mode === "principals") {
  const code = async (f) => {
    try {
      await f();
      return "ok";
    } catch (e) {
      return e instanceof MCPResumeError ? e.code : `error: ${e}`;
    }
  };
  const long = "p".repeat(1025);
  const empty = enc.encode("{}");
  const codes = [
    await code(() => store.create(long, empty)),
    await code(() => store.create("\ud800", empty)),
    await code(() => store.get(handle, long)),
    await code(() => store.create(long.slice(0, 1024), empty)),
    await code(() => store.get(handle, "")),
  ];
  process.stdout.write(JSON.stringify(codes) + "\n");
  await store.close();
  process.exit(0);
} else if (mode === "putloop") {
  const seed = Number(process.env.HANDLES_SEED);
  for (let i = 0; ; i++) {
    const v = await store.get(handle, "");
    const gen0 = v.generation;
    await store.put(handle, "", crashValue(gen0 + 1, seed, i), { expect: gen0 });
    if (i === 0) process.stdout.write("ready\n");
  }
} else {
  process.stderr.write(`unknown HANDLES_HELPER mode ${mode}\n`);
  process.exit(2);
}

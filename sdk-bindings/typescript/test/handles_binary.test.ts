// The binary form of handle_create, handle_get and handle_put
// (hostfuncs/README.md, "Binary form") as HandleStore sends it: the encoding
// pinned byte for byte against the conformance case handles_binary_roundtrip,
// values of every byte through the real plugin on real files, and the JSON
// form for what the binary form cannot carry (the plugin then answers in its
// own words, as in every language).
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";

import { binaryInput } from "../src/handles.js";
import { HandleNotFoundError, HandleStore, InvalidHandleError, InvalidOptionError, InvalidPrincipalError, MCPResumeError, type HandleStoreOptions } from "../src/index.js";
import type { Logger } from "../src/logger.js";
import { cleanupTemps, tempDir } from "./helpers.js";

after(cleanupTemps);

const quiet: Logger = { debug() {}, info() {}, warn() {}, error() {} };
const T0 = 1767225600000; // 2026-01-01T00:00:00Z, the conformance cases' clock

async function open(options: HandleStoreOptions = {}) {
  return HandleStore.open("hs-binary", { stateRoot: tempDir("handles-binary-"), logger: quiet, ...options });
}

/** Resolves with the error `p` rejects with, of class `cls` and code `code`. */
async function failure(p: Promise<unknown>, cls: new (...a: any[]) => MCPResumeError, code: string): Promise<MCPResumeError> {
  const e = await p.then(() => assert.fail(`resolved, want ${cls.name}`), (x: unknown) => x);
  assert.ok(e instanceof cls, `want ${cls.name}, got ${(e as Error)?.name}: ${(e as Error)?.message}`);
  assert.equal((e as MCPResumeError).code, code);
  return e as MCPResumeError;
}

describe("binaryInput: the layout", () => {
  test("create, get and put as the conformance case handles_binary_roundtrip spells them", () => {
    const value = Buffer.from("0001" + Buffer.from("binary").toString("hex") + "ff", "hex");
    assert.equal(binaryInput({ principal: "alice", value }, T0)!.toString("hex"),
      "01110000019b76daa8000000000000000000000000000000000000000000000000000005616c69636500000162696e617279ff");
    const h = "mrh1_" + "A".repeat(32);
    const hh = Buffer.from(h).toString("hex");
    assert.equal(binaryInput({ principal: "alice", handle: h }, T0 + 1000)!.toString("hex"),
      "01010000019b76daabe80000000000000000000000000000000000000000000000000005616c69636525" + hh);
    assert.equal(binaryInput({ principal: "alice", handle: h, value: Buffer.from("0077f0726c64", "hex"), generation: 1 }, T0 + 2000)!.toString("hex"),
      "01130000019b76daafd00000000000000001000000000000000000000000000000000005616c69636525" + hh + "0077f0726c64");
    // Without a clock (flag 0 clear, 0), a per-handle idle TTL and max age (flags 2 and 3), the anonymous principal.
    assert.equal(binaryInput({ principal: "", value: Buffer.alloc(0), idleTtlMs: 86_400_000, maxAgeMs: 1 }, undefined)!.toString("hex"),
      "011c" + "0000000000000000" + "0000000000000000" + "0000000005265c00" + "0000000000000001" + "0000" + "00");
  });
  test("what the form cannot carry is undefined (sent as JSON): a non-string principal or handle, lengths past their fields, numbers that are not safe integers", () => {
    const v = Buffer.from("x");
    for (const input of [
      { principal: 5, value: v },
      { principal: null, value: v },
      { principal: "a", handle: 7 },
      { principal: "a", handle: "h".repeat(256) },
      { principal: "p".repeat(65536), value: v },
      { principal: "a", value: v, generation: 1.5 },
      { principal: "a", value: v, generation: "2" },
      { principal: "a", value: v, idleTtlMs: null },
      { principal: "a", value: v, maxAgeMs: 2 ** 53 },
      { principal: "\ud800", value: v },
      { principal: "a\udc00b", value: v },
      { principal: "a", handle: "mrh1_\ud800" },
    ]) {
      assert.equal(binaryInput(input, undefined), undefined, JSON.stringify(input).slice(0, 80));
    }
    assert.equal(binaryInput({ principal: "a", value: v }, NaN), undefined, "a clock answering NaN");
    assert.ok(binaryInput({ principal: "p".repeat(65535), handle: "h".repeat(255), value: v }, undefined), "the longest that fit");
  });
});

describe("HandleStore over the binary form", () => {
  test("every byte value, an empty value, a value at max_value_bytes and a view into a larger buffer come back exactly", async () => {
    await using store = await open({ maxValueBytes: 1 << 20 });
    const all = Uint8Array.from({ length: 256 }, (_, i) => i);
    const c = await store.create("alice", all);
    assert.deepEqual(await store.get(c.handle, "alice").then((v) => Buffer.from(v.data)), Buffer.from(all));
    assert.equal(await store.put(c.handle, "alice", new Uint8Array(0)), 2);
    const empty = await store.get(c.handle, "alice");
    assert.equal(empty.data.length, 0);
    assert.equal(empty.generation, 2);
    const big = Buffer.alloc(1 << 20, 0xa5);
    assert.equal(await store.put(c.handle, "alice", big, { expect: 2 }), 3);
    assert.ok(Buffer.from((await store.get(c.handle, "alice")).data).equals(big));
    // A view: only its bytes are sent, not the rest of its ArrayBuffer.
    const backing = Buffer.from("0123456789");
    assert.equal(await store.put(c.handle, "alice", new Uint8Array(backing.buffer, backing.byteOffset + 3, 4)), 4);
    assert.equal(Buffer.from((await store.get(c.handle, "alice")).data).toString(), "3456");
  });
  test("the integers: the clock's now_ms, per-handle lifetimes, generations", async () => {
    let now = T0;
    await using store = await open({ clock: () => now });
    const c = await store.create("bob", Buffer.from("v"), { idleTtlMs: 60_000, maxAgeMs: 3_600_000 });
    assert.deepEqual({ ...c, handle: "" }, { handle: "", generation: 1, idleTtlMs: 60_000, maxAgeMs: 3_600_000, createdMs: T0 });
    now += 1000;
    const v = await store.get(c.handle, "bob");
    assert.deepEqual({ ...v, data: Buffer.from(v.data).toString() }, { data: "v", generation: 1, createdMs: T0, idleTtlMs: 60_000, maxAgeMs: 3_600_000 });
    now += 59_999;
    assert.equal(await store.put(c.handle, "bob", Buffer.from("w"), { expect: 1 }), 2, "the get refreshed the idle time");
    now += 60_000;
    await failure(store.get(c.handle, "bob"), MCPResumeError, "handle_expired");
  });
  test("input the binary form cannot carry goes as JSON, and the plugin refuses it in its own words", async () => {
    await using store = await open();
    const c = await store.create("", Buffer.from("v"));
    const e = await failure(store.create(5 as unknown as string, Buffer.from("v")), InvalidPrincipalError, "invalid_principal");
    assert.match(e.message, /principal/);
    await failure(store.get(42 as unknown as string, ""), InvalidHandleError, "invalid_handle");
    await failure(store.get("h".repeat(300), ""), InvalidHandleError, "invalid_handle");
    await failure(store.put(c.handle, "", Buffer.from("w"), { expect: 1.5 }), InvalidOptionError, "invalid_option");
    await failure(store.create("", Buffer.from("v"), { idleTtlMs: "1s" as unknown as number }), InvalidOptionError, "invalid_option");
    await failure(store.create("p".repeat(70_000), Buffer.from("v")), InvalidPrincipalError, "invalid_principal");
    // Two principals that differ only in a lone surrogate must never meet
    // as one (U+FFFD): each is refused, and a well-formed pair is carried.
    await failure(store.create("\ud800", Buffer.from("v")), InvalidPrincipalError, "invalid_principal");
    await failure(store.get(c.handle, "\udfff"), InvalidPrincipalError, "invalid_principal");
    const pair = await store.create("\ud83d\ude00", Buffer.from("v"));
    assert.equal(Buffer.from((await store.get(pair.handle, "\ud83d\ude00")).data).toString(), "v");
    await failure(store.get(pair.handle, "\ufffd"), HandleNotFoundError, "handle_not_found");
    // null is an absent member in JSON: the store's default.
    assert.equal((await store.create("", Buffer.from("v"), { idleTtlMs: null as unknown as number })).idleTtlMs, 86_400_000);
    assert.equal(await store.put(c.handle, "", Buffer.from("w"), { expect: null as unknown as number }), 2);
  });
});

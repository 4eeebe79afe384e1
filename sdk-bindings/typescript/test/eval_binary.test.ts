// mcp_resume_eval's binary form (hostfuncs/README.md, "mcp_resume_eval", The
// binary form) served by this package's real HostFunctions against a real
// redis-server (helpers.ts, startRedis; skipped with a line on stderr when
// there is none, failed when MCP_RESUME_REQUIRE_REDIS=1): keys, arguments
// and replies holding every byte value, a 4 MiB value both ways, integers
// past 2^53, a timeout dropping its connection as the JSON form's does, the
// JSON and binary forms sharing one connection, a Redis Cluster, and the
// synchronous mode's answers. Requests are encoded and replies decoded here
// by the README's layout (the Go statement: hostfuncs/evalbin.go).
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { after, before, describe, test } from "node:test";

import { HostFunctions } from "../src/hostfuncs.js";
import type { Logger } from "../src/logger.js";
import { startCluster, startRedis, type RedisServer } from "./helpers.js";

const quiet: Logger = { debug() {}, info() {}, warn() {}, error() {} };

/** A request in the binary form: `script` is Lua source unless `sha1` is set. */
function request(q: { url: string; script?: string; sha1?: string; keys?: Buffer[]; args?: Buffer[]; timeoutMs?: number; cluster?: boolean }): Buffer {
  const b32 = (b: Buffer): Buffer => Buffer.concat([u32(b.length), b]);
  const list = (l: Buffer[]): Buffer[] => [Buffer.from([l.length >> 8, l.length & 0xff]), ...l.map(b32)];
  const flags = (q.cluster ? 0x01 : 0) | (q.sha1 === undefined ? 0x02 : 0);
  return Buffer.concat([Buffer.from([0x01, flags]), u32(q.timeoutMs ?? 5000), b32(Buffer.from(q.sha1 ?? q.script ?? "")), ...list(q.keys ?? []), ...list(q.args ?? []), Buffer.from(q.url)]);
}
const u32 = (n: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
};

/** A decoded reply: null, bigint, Buffer, `{err}` or an array. */
type Reply = null | bigint | Buffer | { err: string } | Reply[];

/** The response: the decoded reply on 0x00 (every byte read), else the JSON error's code. */
function response(out: Uint8Array): { reply?: Reply; code?: string } {
  const b = Buffer.from(out);
  if (b[0] === 0x7b) return { code: (JSON.parse(b.toString()) as { error: { code: string } }).error.code };
  assert.equal(b[0], 0x00, `response starts with ${b.subarray(0, 16).toString("hex")}`);
  let at = 1;
  const read = (): Reply => {
    const kind = String.fromCharCode(b[at++]!);
    if (kind === "n") return null;
    if (kind === "i") return (at += 8), b.readBigInt64BE(at - 8);
    const n = b.readUInt32BE(at);
    at += 4;
    if (kind === "a") return Array.from({ length: n }, read);
    const s = b.subarray(at, (at += n));
    if (kind === "s") return s;
    assert.equal(kind, "e", `unknown reply kind at ${at}`);
    return { err: s.toString() };
  };
  const reply = read();
  assert.equal(at, b.length, "bytes after the reply");
  return { reply };
}

/** Every byte value 0–255, then `tail`. */
const allBytes = (tail = ""): Buffer => Buffer.concat([Buffer.from(Array.from({ length: 256 }, (_, i) => i)), Buffer.from(tail)]);

let redis: RedisServer | undefined;
before(async () => {
  redis = await startRedis();
  if (!redis) process.stderr.write("eval_binary.test.ts SKIPPED: no redis-server on PATH (MCP_RESUME_REQUIRE_REDIS=1 makes this a failure)\n");
});
after(async () => await redis?.stop());

describe("mcp_resume_eval, binary form, worker mode", () => {
  let host: HostFunctions;
  const call = async (q: Parameters<typeof request>[0] | Buffer) => response(await host.callAsync("mcp_resume_eval", Buffer.isBuffer(q) ? q : request(q)));
  before(() => void (host = new HostFunctions({ logger: quiet })));
  after(async () => await host.close());
  const skip = (t: { skip(m: string): void }) => (redis ? false : (t.skip("no redis-server on PATH"), true));

  test("keys and args of every byte value reach Redis as those bytes and come back exact; EVALSHA; integers past 2^53; status, nil, nested error", async (t) => {
    if (skip(t)) return;
    await redis!.flush();
    const [key, value] = [allBytes("k"), allBytes("v")];
    const set = "redis.call('SET', KEYS[1], ARGV[1]) return {redis.call('GET', KEYS[1]), KEYS[1], redis.status_reply('OK'), false, 1152921504606846976, -7, {err='WRONGTYPE inner'}}";
    const { reply } = await call({ url: redis!.url, script: set, keys: [key], args: [value] });
    assert.deepEqual(reply, [value, key, Buffer.from("OK"), null, 1n << 60n, -7n, { err: "WRONGTYPE inner" }]);
    // The server holds exactly those bytes under exactly that key (read with the runner's own client).
    const stored = await redis!.client.withTypeMapping({ [36]: Buffer }).sendCommand(["GET", key]);
    assert.ok(Buffer.isBuffer(stored) && stored.equals(value), "the stored value");
    const get = "return redis.call('GET', KEYS[1])";
    await call({ url: redis!.url, script: get, keys: [key] }); // EVAL caches it
    const sha1 = createHash("sha1").update(get).digest("hex");
    assert.deepEqual((await call({ url: redis!.url, sha1, keys: [key] })).reply, value);
    assert.deepEqual((await call({ url: redis!.url, sha1: "0".repeat(40), keys: [key] })).code, "noscript");
  });

  test("a 4 MiB value round-trips, both ways", async (t) => {
    if (skip(t)) return;
    await redis!.flush();
    const big = Buffer.allocUnsafe(4 << 20);
    for (let i = 0; i < big.length; i++) big[i] = (i * 13 + 5) & 0xff;
    const set = await call({ url: redis!.url, script: "return redis.call('SET', KEYS[1], ARGV[1])", keys: [Buffer.from("big")], args: [big], timeoutMs: 10_000 });
    assert.deepEqual(set.reply, Buffer.from("OK"));
    const t0 = performance.now();
    const got = await call({ url: redis!.url, script: "return {redis.call('GET', KEYS[1]), redis.call('STRLEN', KEYS[1])}", keys: [Buffer.from("big")], timeoutMs: 10_000 });
    process.stderr.write(`eval_binary: a 4 MiB GET through the binary form took ${(performance.now() - t0).toFixed(1)} ms\n`);
    const [value, len] = got.reply as [Buffer, bigint];
    assert.equal(len, BigInt(big.length));
    assert.ok(value.equals(big), "the 4 MiB value");
  });

  test("a timeout drops its connection: the script's late reply never answers the next call", async (t) => {
    if (skip(t)) return;
    await redis!.flush();
    const t0 = performance.now();
    const slow = await call({ url: redis!.url, script: "local x = 0 for i = 1, 200000000 do x = x + i end return 'late'", timeoutMs: 150 });
    assert.equal(slow.code, "timeout");
    assert.ok(performance.now() - t0 < 700, "answered at the deadline");
    assert.deepEqual((await call({ url: redis!.url, script: "return 'next'", timeoutMs: 5000 })).reply, Buffer.from("next"));
    assert.deepEqual((await call({ url: redis!.url, script: "return 'after'", timeoutMs: 5000 })).reply, Buffer.from("after"));
  });

  test("the JSON and binary forms share the store's one connection", async (t) => {
    if (skip(t)) return;
    const fresh = new HostFunctions({ logger: quiet });
    try {
      const json = JSON.parse(Buffer.from(await fresh.callAsync("mcp_resume_eval", Buffer.from(JSON.stringify({ url: redis!.url, script: "return 'j'", keys: [], args: [], timeout_ms: 5000 })))).toString()) as { reply: string };
      assert.equal(json.reply, "j");
      assert.deepEqual(response(await fresh.callAsync("mcp_resume_eval", request({ url: redis!.url, script: "return 'b'" }))).reply, Buffer.from("b"));
      const clients = String(await redis!.client.sendCommand(["CLIENT", "LIST"])).trim().split("\n");
      assert.equal(clients.length, 2 + 1, `this test's store, the describe's store and the runner's client: ${clients.join("\n")}`);
    } finally {
      await fresh.close();
    }
  });

  test("a malformed request is invalid_request before any connection; a closed store's too", async (t) => {
    if (skip(t)) return;
    const fresh = new HostFunctions({ logger: quiet });
    const before = String(await redis!.client.sendCommand(["INFO", "stats"])).match(/total_connections_received:(\d+)/)![1];
    const good = request({ url: redis!.url, script: "return 1" });
    for (const bad of [good.subarray(0, 1), Buffer.concat([good.subarray(0, 1), Buffer.from([0x06]), good.subarray(2)]), request({ url: redis!.url, script: "" }), request({ url: redis!.url, sha1: "A".repeat(40) }), request({ url: redis!.url, script: "return 1", timeoutMs: 0 }), request({ url: "http://127.0.0.1:1/0", script: "return 1" }), good.subarray(0, 14)]) {
      const out = Buffer.from(await fresh.callAsync("mcp_resume_eval", bad));
      assert.equal(response(out).code, "invalid_request", bad.toString("hex"));
      assert.match((JSON.parse(out.toString()) as { error: { message: string } }).error.message, /^mcp_resume_eval binary request: \S/);
    }
    assert.equal(String(await redis!.client.sendCommand(["INFO", "stats"])).match(/total_connections_received:(\d+)/)![1], before, "no connection was made");
    await fresh.close();
    assert.equal(response(await fresh.callAsync("mcp_resume_eval", good)).code, "invalid_request");
  });
});

test("synchronous mode: the binary form answers unsupported, a malformed one invalid_request", async () => {
  const f = new HostFunctions({ logger: quiet });
  assert.equal(response(f.call("mcp_resume_eval", request({ url: "redis://127.0.0.1:1/0", script: "return 1" }))).code, "unsupported");
  assert.equal(response(f.call("mcp_resume_eval", Buffer.from([0x01, 0x02]))).code, "invalid_request");
  await f.close();
});

test("a Redis Cluster: raw keys with one hash tag reach the node owning their slot", async (t) => {
  if (!redis) return t.skip("no redis-server on PATH");
  const cluster = await startCluster(3);
  if (!cluster) return t.skip("no redis-server or redis-cli on PATH");
  const host = new HostFunctions({ logger: quiet });
  try {
    const url = cluster.url.replace("?cluster=true", "");
    for (let i = 0; i < 12; i++) {
      const tag = Buffer.from([0x7b, 0xff, i, 0x80, 0x7d]); // {\xff<i>\x80}: the slot of these raw bytes
      const keys = [Buffer.concat([tag, Buffer.from("a")]), Buffer.concat([tag, Buffer.from([0x00])])];
      const r = response(await host.callAsync("mcp_resume_eval", request({ url, cluster: true, script: "redis.call('SET', KEYS[1], ARGV[1]) redis.call('SET', KEYS[2], ARGV[1]) return redis.call('GET', KEYS[2])", keys, args: [allBytes(String(i))] })));
      assert.deepEqual(r.reply, allBytes(String(i)), `key set ${i}`);
    }
    const counts = await Promise.all(cluster.nodes.map(async (n) => Number(await n.client.sendCommand(["DBSIZE"]))));
    assert.equal(counts.reduce((a, b) => a + b, 0), 24, `keys per node: ${counts.join(", ")}`);
    assert.ok(counts.filter((c) => c > 0).length >= 2, `the keys spread over the masters: ${counts.join(", ")}`);
  } finally {
    await host.close();
    await cluster.stop();
  }
});

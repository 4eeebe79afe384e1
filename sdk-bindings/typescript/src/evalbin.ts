/**
 * The binary form of `mcp_resume_eval` (hostfuncs/README.md, "mcp_resume_eval", The binary form, ABI 11): the
 * request's keys and arguments and the reply's strings are raw bytes, which the JSON form cannot carry. This
 * module only decodes requests and encodes replies; the request's rules are the JSON form's
 * ({@link evalRequest}) and it runs through the same clients ({@link RedisEval.evalBytes}), so connection,
 * TLS, cluster, never-resend, timeouts and error codes are the JSON form's. The Go statement of the layout
 * is hostfuncs/evalbin.go.
 *
 * @packageDocumentation
 */
import { CryptoRequestError, Reader } from "./crypto.js";
import { EvalError, evalRequest, type EvalRequest } from "./redis.js";

/** The first byte of a binary `mcp_resume_eval` request (a JSON request starts with `{`). */
export const EVAL_BINARY_FORM = 0x01;
/** Flag bit: the URL names one node of a Redis Cluster (the JSON form's `cluster`). */
const FLAG_CLUSTER = 0x01;
/** Flag bit: the script is the Lua source (`EVAL`), else its SHA-1 (`EVALSHA`). */
const FLAG_SOURCE = 0x02;

/** The reply kinds (hostfuncs/README.md: `n`, `i`, `s`, `a`, `e`). */
const KIND = { nil: 0x6e, int: 0x69, str: 0x73, array: 0x61, err: 0x65 } as const;

/**
 * Decodes and checks a binary `mcp_resume_eval` request, before any network I/O.
 *
 * @param request - the request: `0x01`, flags (u8), timeout_ms (u32), the script (b32: the source or the
 *   SHA-1, by the flags), the keys and the args (a u16 count, then each a b32), the URL (the rest).
 * @returns the request with `keys` and `args` as Buffers viewing `request` (no copy: keep `request` unchanged
 *   while it runs); the script (the plugin's Lua source or a SHA-1) and the URL as UTF-8 text.
 * @throws {@link EvalError} `invalid_request`, saying which: a first byte that is not `0x01`, an unknown flag
 *   bit, a field cut short, or a rule of the JSON form broken ({@link evalRequest}: the URL's scheme, the
 *   SHA-1's form, the timeout's range; an empty script or SHA-1 counts as none given).
 */
export function decodeEvalBinary(request: Uint8Array): EvalRequest<Buffer> {
  const b = Buffer.isBuffer(request) ? request : Buffer.from(request.buffer, request.byteOffset, request.byteLength);
  const bad = (m: string): EvalError => new EvalError("invalid_request", `mcp_resume_eval binary request: ${m}`);
  if (b[0] !== EVAL_BINARY_FORM) throw bad(b.length === 0 ? "the request is empty" : "the first byte is not 0x01");
  let flags: number, timeoutMs: number, script: Buffer, keys: Buffer[], args: Buffer[], url: string;
  try {
    const r = new Reader(b);
    flags = r.u8("the flags");
    if ((flags & ~(FLAG_CLUSTER | FLAG_SOURCE)) !== 0) throw bad(`unknown flag bits 0x${(flags & ~(FLAG_CLUSTER | FLAG_SOURCE)).toString(16)}`);
    timeoutMs = r.u32("timeout_ms");
    script = r.b32("the script");
    keys = list(r, "key");
    args = list(r, "arg");
    url = r.rest().toString("utf8");
  } catch (e) {
    if (e instanceof CryptoRequestError) throw bad(e.message);
    throw e;
  }
  const text = script.length > 0 ? script.toString("utf8") : undefined; // the plugin's Lua source or SHA-1: UTF-8, sent back as the same bytes
  try {
    const q = evalRequest({ url, cluster: (flags & FLAG_CLUSTER) !== 0, timeout_ms: timeoutMs, [(flags & FLAG_SOURCE) !== 0 ? "script" : "sha1"]: text, keys: [], args: [] });
    return { ...q, keys, args };
  } catch (e) {
    throw e instanceof EvalError ? bad(e.message) : e;
  }
}

/** A u16 count, then that many b32 strings (views of the request). */
function list(r: Reader, what: string): Buffer[] {
  const out = new Array<Buffer>(r.u16(`the count of ${what}s`));
  for (let i = 0; i < out.length; i++) out[i] = r.b32(`${what} ${i}`);
  return out;
}

/**
 * Encodes a successful binary response: `0x00`, then the reply (a kind byte and its body: `n` nothing, `i` an
 * i64 big-endian, `s` and `e` a u32 length and the bytes, `a` a u32 count and the replies).
 *
 * @param reply - node-redis's reply as {@link RedisEval.evalBytes} answers it: `null`/`undefined` nil, a Buffer
 *   a string's exact bytes, a string of decimal digits, a number (truncated) or a bigint an integer, an Error
 *   (`ErrorReply`) an error inside an array (its message, prefix kept), an Array an array; `true` is 1 and
 *   `false` nil (as Lua's booleans in RESP2); any other value the UTF-8 of its text.
 * @returns the response in one allocation of its exact size, owning its whole ArrayBuffer (so the caller may
 *   hand it to Extism without another copy).
 */
export function encodeEvalReply(reply: unknown): Uint8Array {
  const out = Buffer.allocUnsafeSlow(1 + sizeOf(reply));
  out[0] = 0x00;
  write(out, 1, reply);
  return out;
}

const INTEGER = /^-?\d+$/;

/** Whether `r` encodes as an integer (`i`). */
const isInt = (r: unknown): boolean => typeof r === "number" || typeof r === "bigint" || r === true || (typeof r === "string" && INTEGER.test(r));

/** The encoded size of `r` in bytes. */
function sizeOf(r: unknown): number {
  if (r === null || r === undefined || r === false) return 1;
  if (isInt(r)) return 9;
  if (Buffer.isBuffer(r)) return 5 + r.length;
  if (Array.isArray(r)) {
    let n = 5;
    for (const e of r) n += sizeOf(e);
    return n;
  }
  return 5 + Buffer.byteLength(r instanceof Error ? r.message : String(r), "utf8");
}

/** Writes `r` into `out` at `off`; returns the offset after it. */
function write(out: Buffer, off: number, r: unknown): number {
  if (r === null || r === undefined || r === false) {
    out[off] = KIND.nil;
    return off + 1;
  }
  if (isInt(r)) {
    out[off] = KIND.int;
    const v = r === true ? 1n : typeof r === "number" ? BigInt(Number.isFinite(r) ? Math.trunc(r) : 0) : BigInt(r as string | bigint);
    out.writeBigInt64BE(BigInt.asIntN(64, v), off + 1);
    return off + 9;
  }
  if (Buffer.isBuffer(r)) {
    out[off] = KIND.str;
    out.writeUInt32BE(r.length, off + 1);
    r.copy(out, off + 5);
    return off + 5 + r.length;
  }
  if (Array.isArray(r)) {
    out[off] = KIND.array;
    out.writeUInt32BE(r.length, off + 1);
    let at = off + 5;
    for (const e of r) at = write(out, at, e);
    return at;
  }
  out[off] = r instanceof Error ? KIND.err : KIND.str;
  const n = out.write(r instanceof Error ? r.message : String(r), off + 5, "utf8");
  out.writeUInt32BE(n, off + 1);
  return off + 5 + n;
}

/**
 * The host function `mcp_resume_crypto` (hostfuncs/README.md, "mcp_resume_crypto", ABI 10): the handle
 * store's bulk cryptography with `node:crypto` (HKDF-SHA256, HMAC-SHA256, SHA-256, AES-256-GCM) and a sealed record
 * read or written in one call. Its request and response are binary. No policy: every key, nonce, associated
 * data, header and file name comes from the plugin's request; the host never interprets a record's bytes.
 * The Go statement of the layout is hostfuncs/crypto.go (its decoder's checks and messages are mirrored here);
 * {@link HostFunctions.call} serves it, with the store's own read and write primitives for the files.
 *
 * @packageDocumentation
 */
import { createCipheriv, createDecipheriv, createHash, createHmac, hkdfSync } from "node:crypto";

/** The operations: the first byte of a request (Go: hostfuncs.CryptoOp*). */
export const CRYPTO_OP = Object.freeze({ hkdf: 0x01, hmac: 0x02, seal: 0x03, open: 0x04, read_open: 0x05, seal_write: 0x06, sha256: 0x07 });
/** The first byte of a response: success (the output follows), or "the seal does not open" (`open`, `read_open`); a failure starts with `{` (Go: hostfuncs.CryptoStatus*). */
export const CRYPTO_STATUS = Object.freeze({ ok: 0x00, noOpen: 0x01 });
/** At most this many items per `hkdf`, `hmac` or `sha256` request. */
export const CRYPTO_MAX_BATCH = 16;
/** At most this many output bytes per `hkdf` item. */
export const CRYPTO_MAX_HKDF_LEN = 64;
/** The largest `header_len` of `read_open`, in bytes. */
export const CRYPTO_MAX_HEADER_LEN = 4096;
/** The largest `limit` of `read_open`, in bytes (8 MiB, as `mcp_resume_read`'s). */
export const CRYPTO_MAX_READ_LIMIT = 8 << 20;
const KEY_LEN = 32;
const NONCE_LEN = 12;
const TAG_LEN = 16;
/** Node's `hkdfSync` refuses an `info` over this many bytes; a longer one is expanded with HMAC here (RFC 5869 §2.3). */
const NODE_HKDF_MAX_INFO = 1024;

/** A malformed request: answered `invalid_request` with this message (prefixed `mcp_resume_crypto: `). */
export class CryptoRequestError extends Error {}

/**
 * The state directory's files, as `read_open` and `seal_write` need them: the host's own `mcp_resume_read`
 * and `mcp_resume_write`, with their name rule, flags and error codes. Each throws what those functions
 * answer (a `HostError`, or a Node system error the host codes by its errno).
 */
export interface CryptoFiles {
  /** The first min(size, `limit`) bytes of the regular file `name` (raw bytes of one path element), opened `O_NOFOLLOW|O_NONBLOCK`. */
  readFile(name: Buffer, limit: number): Buffer;
  /** `data` written to `temp` (`O_CREAT|O_EXCL|O_NOFOLLOW`, 0600), closed, renamed over `name`; `temp` unlinked on any later failure. */
  writeFile(name: Buffer, temp: Buffer, data: Uint8Array): void;
}

/**
 * Walks a binary request after its first byte (the op; `mcp_resume_eval`'s form byte too, evalbin.ts): each
 * field a view of the request, never a copy; a read past the end throws {@link CryptoRequestError}.
 */
export class Reader {
  #off = 1;
  constructor(readonly b: Buffer) {}
  take(n: number, what: string): Buffer {
    if (this.#off + n > this.b.length) throw new CryptoRequestError(`${what} runs past the end of the request`);
    const v = this.b.subarray(this.#off, this.#off + n);
    this.#off += n;
    return v;
  }
  u8(what: string): number {
    return this.take(1, what)[0]!;
  }
  u16(what: string): number {
    return this.take(2, what).readUInt16BE(0);
  }
  u32(what: string): number {
    return this.take(4, what).readUInt32BE(0);
  }
  b16(what: string): Buffer {
    return this.take(this.u16(`${what}'s length`), what);
  }
  b32(what: string): Buffer {
    return this.take(this.u32(`${what}'s length`), what);
  }
  /** Every byte to the end. */
  rest(): Buffer {
    const v = this.b.subarray(this.#off);
    this.#off = this.b.length;
    return v;
  }
  /** Throws when bytes follow the last field (no padding: the plugin sends exact lengths). */
  end(): void {
    if (this.#off < this.b.length) throw new CryptoRequestError(`${this.b.length - this.#off} bytes after the last field`);
  }
}

/**
 * HKDF-SHA256 (RFC 5869, extract then expand) of `ikm` with `salt` and `info`, `length` bytes (1..64).
 * `hkdfSync`, except for an `info` over 1024 bytes, which Node refuses and the contract allows (up to
 * 65535): then extract and expand with `createHmac`, the RFC's own definition (an empty salt is HMAC's
 * zero-padded key, the RFC's default salt).
 */
export function hkdfSha256(ikm: Buffer, salt: Buffer, info: Buffer, length: number): Buffer {
  if (info.length <= NODE_HKDF_MAX_INFO) return Buffer.from(hkdfSync("sha256", ikm, salt, info, length));
  const prk = createHmac("sha256", salt).update(ikm).digest();
  const blocks: Buffer[] = [];
  let t = Buffer.alloc(0);
  for (let i = 1, n = 0; n < length; i++, n += t.length) {
    t = createHmac("sha256", prk).update(t).update(info).update(Buffer.of(i)).digest();
    blocks.push(t);
  }
  return Buffer.concat(blocks).subarray(0, length);
}

/** AES-256-GCM: `plaintext` sealed under `key` and `nonce` with associated data `aad`: the ciphertext parts and the 16-byte tag. */
function seal(key: Buffer, nonce: Buffer, aad: Buffer, plaintext: Buffer): Buffer[] {
  const c = createCipheriv("aes-256-gcm", key, nonce, { authTagLength: TAG_LEN });
  c.setAAD(aad);
  const head = c.update(plaintext);
  const tail = c.final();
  return [head, tail, c.getAuthTag()];
}

/** AES-256-GCM: `sealed` (ciphertext then its 16-byte tag, at least 16 bytes) opened, or `undefined` when it does not open. */
function open(key: Buffer, nonce: Buffer, aad: Buffer, sealed: Buffer): Buffer | undefined {
  const d = createDecipheriv("aes-256-gcm", key, nonce, { authTagLength: TAG_LEN });
  d.setAuthTag(sealed.subarray(sealed.length - TAG_LEN));
  d.setAAD(aad);
  const head = d.update(sealed.subarray(0, sealed.length - TAG_LEN));
  try {
    return Buffer.concat([head, d.final()]);
  } catch {
    return undefined; // the tag does not verify
  }
}

const OK = Buffer.of(CRYPTO_STATUS.ok);
const NO_OPEN = Buffer.of(CRYPTO_STATUS.noOpen);

/**
 * Answers one `mcp_resume_crypto` request.
 *
 * @param request - the binary request: `op: u8` and the operation's fields (hostfuncs/README.md, "mcp_resume_crypto").
 * @param files - the store's file primitives, for `read_open` and `seal_write`.
 * @returns the response: `0x00` and the operation's output (hkdf, hmac and sha256: the batch's outputs concatenated), or `0x01` (the seal does not open; for `read_open`
 *   followed by the file's first min(size, `header_len`) bytes).
 * @throws {@link CryptoRequestError} for a malformed request (empty, an unknown op, a field past the end, bytes
 *   after the last field, a count, length or limit out of range): the caller answers `invalid_request`; and what
 *   `files` throws (`read_open`, `seal_write`): the caller answers its code.
 */
export function serveCrypto(request: Uint8Array, files: CryptoFiles): Buffer {
  const b = Buffer.from(request.buffer, request.byteOffset, request.byteLength);
  if (b.length === 0) throw new CryptoRequestError("empty request: the first byte is the operation");
  const r = new Reader(b);
  switch (b[0]) {
    case CRYPTO_OP.hkdf:
    case CRYPTO_OP.hmac:
    case CRYPTO_OP.sha256: {
      const n = r.u8("count");
      if (n < 1 || n > CRYPTO_MAX_BATCH) throw new CryptoRequestError(`count must be 1..${CRYPTO_MAX_BATCH}, not ${n}`);
      const items: Array<() => Buffer> = [];
      for (let i = 0; i < n; i++) {
        if (b[0] === CRYPTO_OP.sha256) {
          const message = r.b32("message");
          items.push(() => createHash("sha256").update(message).digest());
        } else if (b[0] === CRYPTO_OP.hkdf) {
          const [ikm, salt, info, length] = [r.b16("ikm"), r.b16("salt"), r.b16("info"), r.u16("length")];
          if (length < 1 || length > CRYPTO_MAX_HKDF_LEN) throw new CryptoRequestError(`hkdf length must be 1..${CRYPTO_MAX_HKDF_LEN}, not ${length}`);
          items.push(() => hkdfSha256(ikm, salt, info, length));
        } else {
          const [key, message] = [r.b16("key"), r.b32("message")];
          items.push(() => createHmac("sha256", key).update(message).digest());
        }
      }
      r.end(); // the whole request is checked before anything is computed
      return Buffer.concat([OK, ...items.map((f) => f())]);
    }
    case CRYPTO_OP.seal:
    case CRYPTO_OP.open: {
      const [key, nonce, aad, data] = [r.take(KEY_LEN, "key"), r.take(NONCE_LEN, "nonce"), r.b32("aad"), r.rest()];
      if (b[0] === CRYPTO_OP.seal) return Buffer.concat([OK, ...seal(key, nonce, aad, data)]);
      if (data.length < TAG_LEN) throw new CryptoRequestError("open: the sealed bytes are shorter than the 16-byte tag");
      const plain = open(key, nonce, aad, data);
      return plain ? Buffer.concat([OK, plain]) : NO_OPEN;
    }
    case CRYPTO_OP.read_open: {
      const [key, name, limit, headerLen, nonceAt, aadPrefix] = [r.take(KEY_LEN, "key"), r.b16("name"), r.u32("limit"), r.u16("header_len"), r.u16("nonce_at"), r.b32("aad_prefix")];
      r.end();
      if (limit < 1 || limit > CRYPTO_MAX_READ_LIMIT) throw new CryptoRequestError(`read_open limit must be 1..${CRYPTO_MAX_READ_LIMIT}, not ${limit}`);
      if (headerLen < 1 || headerLen > CRYPTO_MAX_HEADER_LEN) throw new CryptoRequestError(`read_open header_len must be 1..${CRYPTO_MAX_HEADER_LEN}, not ${headerLen}`);
      if (nonceAt + NONCE_LEN > headerLen) throw new CryptoRequestError("read_open nonce_at + 12 must not pass header_len");
      const data = files.readFile(name, limit);
      if (data.length < headerLen + TAG_LEN) return Buffer.concat([NO_OPEN, data.subarray(0, Math.min(data.length, headerLen))]);
      const header = data.subarray(0, headerLen);
      const plain = open(key, header.subarray(nonceAt, nonceAt + NONCE_LEN), Buffer.concat([aadPrefix, header]), data.subarray(headerLen));
      return Buffer.concat(plain ? [OK, header, plain] : [NO_OPEN, header]);
    }
    case CRYPTO_OP.seal_write: {
      const [key, nonce, name, temp, header, aadPrefix, plaintext] = [r.take(KEY_LEN, "key"), r.take(NONCE_LEN, "nonce"), r.b16("name"), r.b16("temp"), r.b32("header"), r.b32("aad_prefix"), r.rest()];
      files.writeFile(name, temp, Buffer.concat([header, ...seal(key, nonce, Buffer.concat([aadPrefix, header]), plaintext)]));
      return OK;
    }
    default:
      throw new CryptoRequestError(`unknown operation ${b[0]} (1 hkdf, 2 hmac, 3 seal, 4 open, 5 read_open, 6 seal_write, 7 sha256)`);
  }
}

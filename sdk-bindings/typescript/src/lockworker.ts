/**
 * The synchronous abstract-socket lock of Node on Linux (hostfuncs/README.md,
 * `mcp_resume_lock` and `mcp_resume_unlock`). Extism's JS SDK calls host
 * functions synchronously, and Node binds a socket only asynchronously, so
 * one `worker_threads` Worker per process owns the `net.Server`s: the host
 * function posts `{bind|close, socket}` to it and blocks on `Atomics.wait`
 * until the worker has answered through a `MessageChannel` port, which it
 * then reads with `receiveMessageOnPort`. A lock held this way dies with the
 * process (the kernel closes the worker's sockets), however it exits.
 *
 * @packageDocumentation
 */
import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from "node:worker_threads";

/** What a bind answers: `0` bound, `1` busy (`EADDRINUSE`), `2` another error (with the OS's words). */
export type BindCode = 0 | 1 | 2;

/** The longest a host function waits for the worker's answer, in milliseconds (its first start included). */
const ANSWER_TIMEOUT_MS = 10_000;

// The worker, as CommonJS source: a file would need resolving both from dist/ and from the tests' tsx.
// It writes nothing anywhere (its stdout is not piped to ours anyway: `stdout: true` below).
const WORKER_SOURCE = `
const { workerData, parentPort } = require("node:worker_threads");
const net = require("node:net");
const sig = new Int32Array(workerData.sab);
const port = workerData.port;
const servers = new Map();
const answer = (id, code, message, socket) => {
  port.postMessage({ id, code, message, socket, bind: code === 0 && servers.has(socket) });
  Atomics.add(sig, 0, 1);
  Atomics.notify(sig, 0);
};
parentPort.on("message", ({ id, op, socket }) => {
  if (op === "close") {
    const s = servers.get(socket);
    servers.delete(socket);
    if (s) s.close(); // libuv closes the descriptor now: the name is free when we answer
    return answer(id, 0, "", socket);
  }
  if (servers.has(socket)) return answer(id, 1, "held by another store of this process", socket);
  const server = net.createServer((conn) => conn.destroy());
  server.once("error", (e) => answer(id, e && e.code === "EADDRINUSE" ? 1 : 2, String((e && e.message) || e), socket));
  // exclusive: a cluster worker binds itself instead of asking the primary.
  server.listen({ path: "\\0" + socket, exclusive: true }, () => {
    server.removeAllListeners("error");
    server.on("error", () => undefined);
    servers.set(socket, server);
    answer(id, 0, "", socket);
  });
});
`;

/** One answer of the worker, matched to its request by `id`. */
interface Answer {
  id: number;
  code: BindCode;
  message: string;
  socket: string;
  /** True when this answer left `socket` bound. */
  bind: boolean;
}

/**
 * The process's lock worker: binds and closes abstract Unix sockets on
 * request, synchronously for the caller. Shared by every store of the
 * process, so two stores of one process exclude each other as two processes
 * do (the second bind fails with `EADDRINUSE`). Use {@link lockWorker}.
 */
export class LockWorker {
  readonly #worker: Worker;
  readonly #port: MessagePort;
  readonly #sig = new Int32Array(new SharedArrayBuffer(4));
  #next = 1;
  #dead = false;

  constructor() {
    const { port1, port2 } = new MessageChannel();
    this.#port = port1;
    this.#worker = new Worker(WORKER_SOURCE, {
      eval: true,
      execArgv: [], // not the parent's loaders (tsx): the source is plain JavaScript
      stdout: true, // never piped to the process's stdout (JSON-RPC)
      workerData: { sab: this.#sig.buffer, port: port2 },
      transferList: [port2],
      resourceLimits: { maxOldGenerationSizeMb: 16, maxYoungGenerationSizeMb: 4 },
    });
    this.#worker.unref(); // a lock never keeps the process alive
    this.#worker.on("error", () => (this.#dead = true));
    this.#worker.on("exit", () => (this.#dead = true));
  }

  /** False once the worker has exited: its sockets, hence its locks, are gone. */
  get alive(): boolean {
    return !this.#dead;
  }

  /**
   * Binds the abstract socket `socket` (padded by libuv to the whole
   * `sun_path`, as every Node binds it) and keeps it bound until
   * {@link close}. Blocks the calling thread until the worker answers.
   *
   * @param socket - the name without its leading NUL, 1–107 bytes, no NUL.
   * @returns `{code: 0}` bound, `{code: 1}` busy, `{code: 2, message}` another failure
   *   (also when the worker is gone or did not answer in 10 s).
   */
  bind(socket: string): { code: BindCode; message: string } {
    return this.#ask("bind", socket);
  }

  /** Closes the socket `socket` bound by {@link bind} (nothing when it is not bound); synchronous like bind. */
  close(socket: string): void {
    this.#ask("close", socket);
  }

  #ask(op: "bind" | "close", socket: string): { code: BindCode; message: string } {
    if (this.#dead) return { code: 2, message: "the lock worker thread has exited" };
    const id = this.#next++;
    this.#worker.postMessage({ id, op, socket });
    const deadline = performance.now() + ANSWER_TIMEOUT_MS;
    for (;;) {
      const seen = Atomics.load(this.#sig, 0);
      for (let m = receiveMessageOnPort(this.#port); m !== undefined; m = receiveMessageOnPort(this.#port)) {
        const a = m.message as Answer;
        if (a.id === id) return { code: a.code, message: a.message };
        // The late answer of a request that timed out: undo a bind nobody will release.
        if (a.bind) this.#worker.postMessage({ id: 0, op: "close", socket: a.socket });
      }
      const left = deadline - performance.now();
      if (left <= 0 || this.#dead) return { code: 2, message: `the lock worker thread did not answer ${op} in ${ANSWER_TIMEOUT_MS} ms` };
      Atomics.wait(this.#sig, 0, seen, Math.min(left, 100));
    }
  }
}

let shared: LockWorker | undefined;

/** The process's {@link LockWorker}, started on first use (and again if the previous one exited). */
export function lockWorker(): LockWorker {
  if (!shared?.alive) shared = new LockWorker();
  return shared;
}

const sleeper = new Int32Array(new SharedArrayBuffer(4));

/** Blocks the calling thread for `ms` milliseconds (fractions allowed): `Atomics.wait` on a value nobody changes. */
export function sleepSync(ms: number): void {
  if (ms > 0) Atomics.wait(sleeper, 0, 0, ms);
}

// Shared helpers of the TypeScript binding's tests: paths, temporary
// directories, the real Go broker, the real Go-built test plugin, the
// host functions with /proc and the system pinned (test code only), and a
// plain abstract socket held as another server instance would hold it.
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, readlinkSync, rmSync, statSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

import { HostFunctions } from "../src/hostfuncs.js";
import type { Logger } from "../src/logger.js";

export const execFileP = promisify(execFile);

/** Repository root. */
export const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
/** sdk-bindings/typescript. */
export const PKG = fileURLToPath(new URL("../", import.meta.url));
/** The example server, built (make typescript-setup). */
export const SERVER_JS = path.join(ROOT, "examples", "typescript-server", "dist", "server.js");

const temps: string[] = [];

/** A fresh temporary directory, removed by {@link cleanupTemps}. */
export function tempDir(prefix = "mcp-resume-ts-"): string {
  const d = mkdtempSync(path.join(tmpdir(), prefix));
  temps.push(d);
  return d;
}

/** Removes every directory made by {@link tempDir}. */
export function cleanupTemps(): void {
  for (const d of temps.splice(0)) rmSync(d, { recursive: true, force: true });
}

/**
 * The 16-hex-digit file-name suffix (token, lock and ambiguity marker) of a declared instance key for a
 * server in this process's namespaces (Linux): the first 16 hex digits of the SHA-256 of the key material,
 * which the plugin builds as netstrings (`<length>:<bytes>,`) of the tag "mcp-resume instance key material
 * v2", "ns", the count and each of /proc/self/ns/{net,mnt,uts,ipc,user,cgroup}'s link targets, then "key"
 * and the key (plugin/internal/resume, KeyMaterial and InstanceSuffix). A child launched by this process
 * shares its namespaces, so the suffix is the child's too.
 *
 * @param key - the declared instance key (the instance option or MCP_RESUME_INSTANCE).
 * @throws when /proc/self/ns is unreadable (not Linux).
 */
export function instanceSuffix(key: string): string {
  const parts = ["mcp-resume instance key material v2", "ns", "6"];
  for (const ns of ["net", "mnt", "uts", "ipc", "user", "cgroup"]) parts.push(readlinkSync(`/proc/self/ns/${ns}`));
  parts.push("key", key);
  const material = parts.map((p) => `${Buffer.byteLength(p)}:${p},`).join("");
  return createHash("sha256").update(material).digest("hex").slice(0, 16);
}

/** `go`, from PATH. */
export const GO = process.env["GO"] ?? "go";

/**
 * Builds a Go main package of this repository into `out` (a real `go build`).
 *
 * @param pkg - e.g. `./examples/broker`.
 * @param env - extra environment (GOOS/GOARCH for the Wasm test plugin).
 */
export async function goBuild(pkg: string, out: string, env: Record<string, string> = {}, extra: string[] = []): Promise<string> {
  await execFileP(GO, ["build", ...extra, "-o", out, pkg], {
    cwd: ROOT,
    env: { ...process.env, GOFLAGS: "-buildvcs=false", ...env },
    maxBuffer: 1 << 24,
  });
  return out;
}

/** A running broker. */
export interface Broker {
  url: string;
  port: number;
  proc: ChildProcess;
  stderr: () => string;
  stop(): Promise<void>;
}

/**
 * Starts the real Go broker binary and reads its one stdout line
 * (`broker listening on http://127.0.0.1:PORT`).
 */
export function startBroker(bin: string, addr = "127.0.0.1:0"): Promise<Broker> {
  return new Promise((resolve, reject) => {
    const proc = spawn(bin, ["-addr", addr], { stdio: ["ignore", "pipe", "pipe"] });
    let err = "";
    proc.stderr!.on("data", (d: Buffer) => (err += d.toString()));
    const rl = createInterface({ input: proc.stdout! });
    const timer = setTimeout(() => reject(new Error(`broker did not start: ${err}`)), 15000);
    proc.on("exit", (code) => reject(new Error(`broker exited ${code}: ${err}`)));
    rl.once("line", (line) => {
      clearTimeout(timer);
      const m = /^broker listening on (http:\/\/[^\s]+)$/.exec(line);
      if (!m) return reject(new Error(`unexpected broker line ${line}`));
      const url = m[1]!;
      resolve({
        url,
        port: Number(new URL(url).port),
        proc,
        stderr: () => err,
        stop: () =>
          new Promise<void>((res) => {
            if (proc.exitCode !== null || proc.signalCode !== null) return res();
            proc.removeAllListeners("exit");
            proc.once("exit", () => res());
            proc.kill("SIGTERM");
          }),
      });
    });
  });
}

/** A running `test/fixtures/holder.mjs` and the signal it will exit with. */
export interface Holder {
  child: ChildProcess;
  exited: Promise<NodeJS.Signals | null>;
}

/**
 * Starts `test/fixtures/holder.mjs` with `args` (a mode, `lock` or `store`,
 * and its operands) in a real child process and waits until it prints
 * `held`: it then holds the lock until it is killed.
 *
 * @param args - the holder's arguments.
 * @returns the child and a promise of its exit signal.
 * @throws when the holder prints anything else or exits first.
 */
export async function startHolder(...args: string[]): Promise<Holder> {
  // stdin and stdout are socket pairs, as a Node MCP host gives its servers: stdin on /dev/null would
  // prove nothing about who launched the child, and the stdio check would turn resume off.
  const child = spawn(process.execPath, [path.join(PKG, "test", "fixtures", "holder.mjs"), ...args], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const exited = new Promise<NodeJS.Signals | null>((r) => child.once("exit", (_c, sig) => r(sig)));
  try {
    await new Promise<void>((resolve, reject) => {
      let out = "";
      child.stdout!.on("data", (d: Buffer) => {
        out += d;
        if (out.includes("held\n")) resolve();
        else if (out.includes("\n")) reject(new Error(`holder: ${out}`));
      });
      child.once("exit", (code) => reject(new Error(`holder exited ${code}`)));
    });
  } catch (err) {
    child.kill("SIGKILL");
    throw err;
  }
  return { child, exited };
}

/**
 * The identity start time of process `pid` as spec 000 names it on Linux
 * (`<starttime>.<boot_id>.<pid namespace>`), read from the real /proc: the
 * test oracle for the file names the plugin computes.
 */
export function startTimeOf(pid: number): string {
  const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
  const ticks = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19]!;
  const boot = readFileSync("/proc/sys/kernel/random/boot_id", "latin1").trim().replaceAll("-", "");
  const ns = /^pid:\[(\d+)\]$/.exec(readlinkSync("/proc/self/ns/pid"))![1]!;
  const exe = statSync(`/proc/${pid}/exe`, { bigint: true }); // the program image: an exec makes another host
  return `${ticks}.${boot}.${ns}.${exe.dev}x${exe.ino}`;
}

/**
 * The real host functions with `/proc` read from `procRoot` and the inspect
 * answers given for the system `os` (`facts.os`; the lock keeps the real
 * one): the conformance runner's fixture tree, and the unit tests of what a
 * real /proc cannot show (a 70000-byte file, a symlink, macOS's `ps` run here).
 */
export class PinnedHost extends HostFunctions {
  constructor(
    config: { logger: Logger },
    private readonly procRoot: string,
    private readonly os: string,
  ) {
    super(config);
  }
  protected override proc(rel: string): string {
    return path.join(this.procRoot, rel);
  }
  protected override system(): string {
    return this.os;
  }
}

/** sun_path's size on Linux (`<sys/un.h>`): a padded abstract address is a NUL, the name, then NULs up to it. */
const SUN_PATH = 108;

/**
 * Binds the abstract Unix socket `name` (Linux) with a plain node:net server,
 * not through the host functions, in the padded form of hostfuncs/README.md,
 * `mcp_resume_lock` (a NUL, the name, NULs up to the whole 108-byte
 * `sun_path`, address length 110): libuv pads `listen({path: "\0" + name})`
 * so. The conformance runner's `hold_socket` action.
 *
 * @param name - the socket name without its leading NUL, 1–107 bytes.
 * @returns the listening server; the caller closes it when the case ends.
 * @throws the bind error (`EADDRINUSE` when someone holds the name), or an
 *   assertion error when /proc/net/unix does not show the padded form (a
 *   libuv that passes the exact length would make `hold_socket` pin nothing).
 */
export async function holdAbstractSocket(name: string): Promise<Server> {
  const server = createServer((conn) => conn.destroy());
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    // exclusive: bind in this process even under cluster.
    server.listen({ path: "\0" + name, exclusive: true }, () => {
      server.off("error", reject).on("error", () => undefined); // a later error must not crash the runner
      resolve();
    });
  });
  server.unref();
  // /proc/net/unix shows each NUL of an abstract address as "@": the padded form is "@" + name + "@" * (107 - length).
  const padded = "@" + name + "@".repeat(SUN_PATH - 1 - Buffer.byteLength(name));
  const bound = readFileSync("/proc/net/unix", "latin1").split("\n").some((line) => line.split(" ").at(-1) === padded);
  if (!bound) {
    server.close();
    throw new Error(`hold_socket ${name}: /proc/net/unix lacks the padded address ${JSON.stringify(padded)}`);
  }
  return server;
}

/** A redis-server of the tests' own (hostfuncs/conformance/README.md, "Redis: ..."): its URL, a client of its own (RESP2), stop. */
export interface RedisServer {
  url: string;
  port: number;
  client: import("redis").RedisClientType<any, any, any, 2>;
  /** FLUSHALL and SCRIPT FLUSH (before each case using it). */
  flush(): Promise<void>;
  /** SIGKILL, as a crash would. */
  kill(): void;
  stop(): Promise<void>;
}

/** Whether a missing redis-server fails the run (`make test` sets MCP_RESUME_REQUIRE_REDIS=1) rather than skipping its runs. */
export const REQUIRE_REDIS = process.env["MCP_RESUME_REQUIRE_REDIS"] === "1";

/** A free loopback TCP port (bound, then released). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/**
 * Starts `redis-server` from PATH on a free loopback port (or `onPort`: a restart) in a temporary
 * directory, without persistence, with `extra` arguments, and waits for its PING (its own client
 * authenticating with `password`, when the extra arguments set one).
 *
 * @returns the server, or `undefined` when there is no `redis-server` on PATH (the caller skips and says so).
 * @throws when there is none and {@link REQUIRE_REDIS}, or when it does not answer within 10 s.
 */
export async function startRedis(onPort?: number, extra: string[] = [], password?: string): Promise<RedisServer | undefined> {
  // PATH, then the stand-ins `make provision` puts in bin/redis when no Redis is installed.
  const dirs = [...(process.env["PATH"] ?? "").split(path.delimiter), path.join(ROOT, "bin", "redis")];
  const bin = dirs.map((d) => path.join(d, "redis-server")).find((p) => {
    try {
      return statSync(p).isFile();
    } catch {
      return false;
    }
  });
  if (!bin) {
    if (REQUIRE_REDIS) throw new Error("MCP_RESUME_REQUIRE_REDIS=1 but there is no redis-server on PATH or in bin/redis: run `make provision` (Debian's package as root, else a stand-in from PyPI)");
    return undefined;
  }
  const dir = tempDir("mcp-resume-redis-");
  const port = onPort ?? (await freePort());
  const proc = spawn(bin, ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir, ...extra], { stdio: ["ignore", "ignore", "pipe"] });
  let err = "";
  proc.stderr!.on("data", (d: Buffer) => (err += d.toString()));
  const url = `redis://127.0.0.1:${port}/0`;
  const { createClient } = await import("redis");
  const client = createClient({ url, RESP: 2, socket: { reconnectStrategy: false }, ...(password ? { password } : {}) });
  client.on("error", () => undefined);
  const until = Date.now() + 10_000;
  for (;;) {
    try {
      await client.connect();
      await client.ping();
      break;
    } catch (e) {
      if (Date.now() > until || proc.exitCode !== null) {
        proc.kill("SIGKILL");
        throw new Error(`redis-server did not answer on ${url}: ${(e as Error).message} ${err}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return {
    url,
    port,
    client: client as RedisServer["client"],
    async flush() {
      await client.sendCommand(["FLUSHALL"]);
      await client.sendCommand(["SCRIPT", "FLUSH"]);
    },
    kill() {
      proc.kill("SIGKILL");
    },
    async stop() {
      client.destroy();
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill("SIGTERM");
        await new Promise((r) => proc.once("exit", r));
      }
    },
  };
}

/** A Redis Cluster of the tests' own: its masters and the URL of one node with `?cluster=true`, as a store takes it. */
export interface RedisCluster {
  url: string;
  nodes: RedisServer[];
  stop(): Promise<void>;
}

/**
 * Starts `n` (at least 3) cluster-enabled redis-servers on free loopback ports, joins them with
 * `redis-cli --cluster create` (masters only) and waits for `cluster_state:ok` on every node.
 *
 * @returns the cluster, or `undefined` when redis-server or redis-cli is missing (as {@link startRedis}).
 */
export async function startCluster(n = 3): Promise<RedisCluster | undefined> {
  const cli = (process.env["PATH"] ?? "").split(path.delimiter).map((d) => path.join(d, "redis-cli")).find((p) => {
    try {
      return statSync(p).isFile();
    } catch {
      return false;
    }
  });
  const nodes: RedisServer[] = [];
  const stop = async () => void (await Promise.all(nodes.map((s) => s.stop())));
  try {
    for (let i = 0; i < n; i++) {
      const s = await startRedis(undefined, ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "2000"]);
      if (!s) return undefined;
      nodes.push(s);
    }
    if (!cli) {
      if (REQUIRE_REDIS) throw new Error("MCP_RESUME_REQUIRE_REDIS=1 but there is no redis-cli on PATH");
      await stop();
      return undefined;
    }
    await execFileP(cli, ["--cluster", "create", ...nodes.map((s) => `127.0.0.1:${s.port}`), "--cluster-replicas", "0", "--cluster-yes"]);
    for (const until = Date.now() + 20_000; ; ) {
      const infos = await Promise.all(nodes.map((s) => s.client.sendCommand(["CLUSTER", "INFO"]) as Promise<string>));
      if (infos.every((i) => i.includes("cluster_state:ok"))) break;
      if (Date.now() > until) throw new Error(`the cluster did not come up: ${infos[0]}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  } catch (e) {
    await stop();
    throw e;
  }
  return { url: `redis://127.0.0.1:${nodes[0]!.port}/0?cluster=true`, nodes, stop };
}

// A redis-server for the TypeScript benchmarks (redis.mjs, pool.mjs), as
// hostfuncs/conformance/redistest starts one for the Go tests: on a free loopback port,
// in a temporary directory, without persistence.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";

/**
 * Starts $MCP_RESUME_REDIS_SERVER, else redis-server from PATH. It does not
 * wait for the server to accept connections: the caller's first client
 * retries. A server that cannot be started ends the process with status 2.
 *
 * @param {string} prefix - the temporary directory's name prefix.
 * @returns {Promise<{port: number, url: string, work: string, stop: () => void}>}
 *   the port, its redis:// URL (db 0), the temporary directory (free for
 *   the caller's own files), and stop, which kills the server and removes
 *   the directory.
 */
export async function startRedis(prefix) {
  const work = mkdtempSync(path.join(tmpdir(), prefix));
  const port = await new Promise((resolve, reject) => {
    const s = createServer().once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const p = s.address().port;
      s.close(() => resolve(p));
    });
  });
  const server = spawn(process.env.MCP_RESUME_REDIS_SERVER || "redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", work], { stdio: "ignore" });
  server.once("error", (e) => {
    console.error(`cannot start redis-server: ${e.message}`);
    process.exit(2);
  });
  const stop = () => {
    server.kill();
    rmSync(work, { recursive: true, force: true });
  };
  return { port, url: `redis://127.0.0.1:${port}/0`, work, stop };
}

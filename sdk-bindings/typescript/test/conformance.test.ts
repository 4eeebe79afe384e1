// The shared cases of hostfuncs/conformance, run against the real plugin
// (the shipped plugin.wasm) in Extism's JS SDK with this package's real host
// functions on real files, exactly as hostfuncs/conformance/README.md says.
// Only the host identity (and instance) and the liveness of other hosts are
// pinned by each case. hold_lock takes the lock through a second, independent
// HostFunctions (another lock holder, as another server instance would be).
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { after, describe, test } from "node:test";
import { fileURLToPath } from "node:url";

import { HostFunctions } from "../src/hostfuncs.js";
import { callExport, ResumeTokenStore } from "../src/store.js";
import type { LogFields, Logger } from "../src/logger.js";

const CASES_DIR = fileURLToPath(new URL("../../../hostfuncs/conformance/cases/", import.meta.url));

type Content =
  | string
  | {
      text?: string;
      base64?: string;
      repeat?: string;
      count?: number;
      dir?: boolean;
      symlink?: string;
      fifo?: boolean;
      mode?: string;
      age_days?: number;
    };

interface Call {
  export?: "load" | "store" | "reject" | "list" | "prune";
  action?: "put_file" | "hold_lock";
  name?: string;
  content?: Content;
  input?: Content;
  want?: { output?: Content | null; output_json?: unknown; error_prefix?: string };
}

interface Case {
  name: string;
  spec: string;
  identity: { pid?: number; start_time?: string; instance?: string; error?: string };
  hosts_alive?: Array<{ pid: number; start_time: string }>;
  liveness_unknown?: boolean;
  state_dir?: { create?: boolean; mode?: string };
  state_dir_after?: { exists: boolean; mode?: string };
  files_before?: Record<string, Content>;
  files_after?: Record<string, Content>;
  outside_before?: Record<string, Content>;
  outside_after?: Record<string, Content>;
  calls: Call[];
  logs: Array<{ level: string; event: string; message?: string; message_prefix?: string }>;
}

function norm(c: Content): Exclude<Content, string> {
  return typeof c === "string" ? { text: c } : c;
}

function bytesOf(c: Content): Buffer {
  const n = norm(c);
  if (n.text !== undefined) return Buffer.from(n.text, "utf8");
  if (n.base64 !== undefined) return Buffer.from(n.base64, "base64");
  if (n.count !== undefined && n.count > 0) return Buffer.from((n.repeat ?? "").repeat(n.count), "utf8");
  return Buffer.alloc(0);
}

function parseMode(s: string | undefined, def: number): number {
  return s ? parseInt(s, 8) : def;
}

function makeFiles(dir: string, files: Record<string, Content> | undefined): void {
  for (const [name, c0] of Object.entries(files ?? {})) {
    const c = norm(c0);
    const p = path.join(dir, name);
    if (c.dir) mkdirSync(p, { mode: 0o700 });
    else if (c.symlink !== undefined) symlinkSync(c.symlink, p);
    else if (c.fifo) execFileSync("mkfifo", ["-m", "600", p]);
    else writeFileSync(p, bytesOf(c), { mode: 0o600 });
    if (c.age_days !== undefined && c.age_days > 0) {
      const old = new Date(Date.now() - c.age_days * 24 * 3600 * 1000);
      utimesSync(p, old, old);
    }
  }
}

/** dir holds exactly `want` (when exact; only the listed names otherwise). */
function checkFiles(dir: string, want: Record<string, Content> | undefined, exact: boolean): void {
  const w = want ?? {};
  if (exact) {
    const got = readdirSync(dir).sort();
    assert.deepEqual(got, Object.keys(w).sort(), `files in ${path.basename(dir)} (no temporary files allowed)`);
  }
  for (const [name, c0] of Object.entries(w)) {
    const c = norm(c0);
    const p = path.join(dir, name);
    const st = lstatSync(p);
    if (c.dir) {
      assert.ok(st.isDirectory(), `${name} is a directory`);
    } else if (c.symlink !== undefined) {
      assert.equal(readlinkSync(p), c.symlink, `${name} symlink target`);
    } else {
      assert.ok(st.isFile(), `${name} is a regular file`);
      assert.ok(readFileSync(p).equals(bytesOf(c)), `${name} content`);
      if (c.mode) assert.equal(st.mode & 0o777, parseMode(c.mode, 0), `${name} mode`);
    }
  }
}

function captureLogger(lines: Array<{ level: string; event: string; message: string }>): Logger {
  const add = (level: string) => (message: string, fields?: LogFields) =>
    lines.push({ level, event: String(fields?.event ?? ""), message });
  return { debug: add("debug"), info: add("info"), warn: add("warn"), error: add("error") };
}

const files = readdirSync(CASES_DIR).filter((f) => f.endsWith(".json")).sort();
const tmpRoots: string[] = [];
after(() => {
  for (const r of tmpRoots) rmSync(r, { recursive: true, force: true });
});

describe("conformance", () => {
  test("all 33 shared cases are present", () => {
    assert.equal(files.length, 33, `cases found: ${files.join(", ")}`);
  });

  for (const file of files) {
    const c = JSON.parse(readFileSync(path.join(CASES_DIR, file), "utf8")) as Case;
    test(`${c.name} (${c.spec})`, async () => {
      const root = mkdtempSync(path.join(tmpdir(), "mcp-resume-conf-"));
      tmpRoots.push(root);
      const dir = path.join(root, "state");
      if (c.state_dir?.create !== false) {
        const mode = parseMode(c.state_dir?.mode, 0o700);
        mkdirSync(dir, { mode });
        chmodSync(dir, mode);
      }
      makeFiles(root, c.outside_before);
      makeFiles(dir, c.files_before);

      const logs: Array<{ level: string; event: string; message: string }> = [];
      const store = await ResumeTokenStore.open({
        app: "conformance",
        stateDir: dir,
        logger: captureLogger(logs),
        instance: c.identity.instance ?? "",
        identity: () => {
          if (c.identity.error !== undefined) throw new Error(c.identity.error);
          return { pid: c.identity.pid!, startTime: c.identity.start_time! };
        },
        alive: (pid, startTime) => {
          if (c.liveness_unknown) throw new Error("liveness pinned unknown");
          return (c.hosts_alive ?? []).some((h) => h.pid === pid && h.start_time === startTime);
        },
      });
      const others: HostFunctions[] = [];
      try {
        for (const [i, cl] of c.calls.entries()) {
          if (cl.action === "put_file") {
            writeFileSync(path.join(dir, cl.name!), bytesOf(cl.content!), { mode: 0o600 });
            continue;
          }
          if (cl.action === "hold_lock") {
            // A second, independent lock holder: another server instance.
            const other = new HostFunctions({ dir, logger: captureLogger([]) });
            others.push(other);
            const e = await other.acquireLock(cl.name!);
            assert.equal(e, undefined, `hold_lock ${cl.name}: ${JSON.stringify(e)}`);
            continue;
          }
          const input = cl.input === undefined ? undefined : bytesOf(cl.input);
          const r = await callExport(store, cl.export!, input);
          const w = cl.want ?? {};
          const what = `call ${i} ${cl.export}`;
          if (w.error_prefix !== undefined) {
            assert.ok(!r.ok, `${what}: want error with prefix ${JSON.stringify(w.error_prefix)}, got success`);
            assert.ok(r.error.startsWith(w.error_prefix), `${what}: error ${JSON.stringify(r.error)} lacks prefix ${JSON.stringify(w.error_prefix)}`);
            continue;
          }
          assert.ok(r.ok, `${what}: unexpected error ${r.ok ? "" : r.error}`);
          if (w.output_json !== undefined) {
            assert.deepEqual(JSON.parse(Buffer.from(r.output).toString("utf8")), w.output_json, `${what}: output_json`);
          } else if (w.output === null || w.output === undefined) {
            assert.equal(r.output.length, 0, `${what}: want empty output, got ${r.output.length} bytes`);
          } else {
            assert.ok(Buffer.from(r.output).equals(bytesOf(w.output)), `${what}: output ${Buffer.from(r.output).subarray(0, 40).toString()}`);
          }
        }
      } finally {
        await store.close();
        for (const o of others) await o.close();
      }

      if (c.state_dir_after?.exists === false) {
        assert.throws(() => statSync(dir), { code: "ENOENT" }, "state directory must not exist");
      } else {
        checkFiles(dir, c.files_after, true);
      }
      if (c.state_dir_after?.exists) {
        const st = statSync(dir);
        assert.ok(st.isDirectory());
        if (c.state_dir_after.mode) assert.equal(st.mode & 0o777, parseMode(c.state_dir_after.mode, 0), "state directory mode");
      }
      checkFiles(root, c.outside_after, false);

      assert.equal(logs.length, c.logs.length, `log lines:\n got ${JSON.stringify(logs)}\nwant ${JSON.stringify(c.logs)}`);
      for (const [i, want] of c.logs.entries()) {
        const got = logs[i]!;
        assert.equal(got.level, want.level, `log line ${i} level (${JSON.stringify(got)})`);
        assert.equal(got.event, want.event, `log line ${i} event (${JSON.stringify(got)})`);
        if (want.message_prefix !== undefined) {
          assert.ok(got.message.startsWith(want.message_prefix), `log line ${i} message ${JSON.stringify(got.message)}`);
        } else {
          assert.equal(got.message, want.message, `log line ${i} message`);
        }
      }
    });
  }
});

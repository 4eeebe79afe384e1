/**
 * Stress helpers of the fault-injection suite (examples/faults/faults_test.go),
 * faults 8 (SIGKILL during store) and 9 (concurrent instances), for the
 * TypeScript binding: the same three modes as the Go helpers in
 * faults_helpers_test.go and faults_stress.py, through the binding's public API
 * (`ResumeTokenStore` of sdk-bindings/typescript/dist, which `make
 * typescript-setup` builds), the real plugin in the real Node host.
 *
 * Run by the suite as `node faults_stress.mjs` with FAULTS_HELPER:
 *
 * - `storeloop`: open a store (state dir and instance from the environment:
 *   MCP_RESUME_STATE_DIR, MCP_RESUME_INSTANCE=-), store stress token
 *   `s<FAULTS_SEED>.i0`, print `ready`, then store `.i1`, `.i2`, ... until killed.
 * - `loader`: for each state directory read on stdin, open a fresh store,
 *   load once, close, print one JSON line
 *   `{"found", "valid", "seed", "iter", "len", "events", "open_err"}`.
 * - `hammer`: print `ready`, wait for a line on stdin, then FAULTS_ROUNDS
 *   rounds of (open a store, FAULTS_OPS times load / reject one load in four /
 *   store, close); print one JSON report
 *   `{"instance", "stored", "loads", "invalid", "rejects", "events", "open_errs"}`.
 *
 * Stress tokens are self-checking (`s<seed>.i<iter>.<filler>.<crc32>`); the
 * format is stressToken in faults_helpers_test.go. Nothing but the protocol goes
 * to stdout; warnings and up go to stderr.
 */
import { createInterface } from "node:readline";
import { crc32 } from "node:zlib";

const { ResumeTokenStore } = await import(new URL("../../../sdk-bindings/typescript/dist/index.js", import.meta.url).href);

const APP = "example-typescript";

/** The stress token of (seed, iteration): 40 to ~4070 bytes of visible ASCII. */
function stressToken(seed, iter) {
  const n = 24 + ((seed * 131 + iter * 977) % 4000);
  let body = "";
  for (let j = 0; j < n; j++) body += String.fromCharCode(65 + ((seed + iter + j) % 26));
  const s = `s${seed}.i${iter}.${body}`;
  return `${s}.${crc32(Buffer.from(s)).toString(16).padStart(8, "0")}`;
}

/** [seed, iteration, complete]; complete is false for anything no loop stored. */
function parseStressToken(tok) {
  const m = /^s(\d+)\.i(\d+)\./.exec(tok);
  if (!m) return [0, 0, false];
  const seed = Number(m[1]);
  const iter = Number(m[2]);
  return [seed, iter, stressToken(seed, iter) === tok];
}

/** A Logger that counts lines by event and passes warnings and up to stderr. */
function countingLogger(counts) {
  const line = (level, toStderr) => (message, fields) => {
    const ev = fields?.event ?? message;
    counts[ev] = (counts[ev] ?? 0) + 1;
    if (toStderr) process.stderr.write(`level=${level} msg=${JSON.stringify(message)} event=${fields?.event ?? ""} detail=${JSON.stringify(fields?.detail ?? "")}\n`);
  };
  return { debug: line("DEBUG", false), info: line("INFO", false), warn: line("WARN", true), error: line("ERROR", true) };
}

const say = (line) => new Promise((resolve) => process.stdout.write(line + "\n", resolve));

async function* lines() {
  const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const l of rl) yield l;
}

async function storeloop() {
  const seed = Number(process.env.FAULTS_SEED);
  const store = await ResumeTokenStore.open(APP, { logger: countingLogger({}) });
  await store.store(stressToken(seed, 0));
  await say("ready");
  for (let i = 1; ; i++) await store.store(stressToken(seed, i));
}

async function loader() {
  for await (const root of lines()) {
    const counts = {};
    const ans = { found: false, valid: false, seed: 0, iter: 0, len: 0 };
    try {
      const store = await ResumeTokenStore.open(APP, { stateRoot: root, logger: countingLogger(counts) });
      let tok;
      try {
        tok = await store.load();
      } finally {
        await store.close();
      }
      if (tok !== undefined) {
        const [seed, iter, ok] = parseStressToken(tok);
        Object.assign(ans, { found: true, len: tok.length, seed, iter, valid: ok });
      }
    } catch (e) {
      ans.open_err = String(e);
    }
    ans.events = counts;
    await say(JSON.stringify(ans));
  }
}

async function hammer() {
  const inst = Number(process.env.FAULTS_INSTANCE);
  const rounds = Number(process.env.FAULTS_ROUNDS);
  const ops = Number(process.env.FAULTS_OPS);
  const input = lines();
  await say("ready");
  await input.next();
  const counts = {};
  const logger = countingLogger(counts);
  const rep = { instance: inst, stored: 0, loads: [], invalid: 0, rejects: 0, open_errs: 0 };
  for (let r = 0; r < rounds; r++) {
    let store;
    try {
      store = await ResumeTokenStore.open(APP, { logger });
    } catch (e) {
      process.stderr.write(`open: ${e}\n`);
      rep.open_errs++;
      continue;
    }
    for (let j = 0; j < ops; j++) {
      const tok = await store.load();
      if (tok !== undefined) {
        const [seed, iter, ok] = parseStressToken(tok);
        if (ok) rep.loads.push([seed, iter]);
        else rep.invalid++;
        if (Math.random() < 0.25) {
          await store.reject();
          rep.rejects++;
        }
      }
      await store.store(stressToken(inst, rep.stored));
      rep.stored++;
    }
    await store.close();
  }
  rep.events = counts;
  await say(JSON.stringify(rep));
}

const modes = { storeloop, loader, hammer };
const mode = modes[process.env.FAULTS_HELPER ?? ""];
if (!mode) {
  process.stderr.write(`unknown FAULTS_HELPER ${JSON.stringify(process.env.FAULTS_HELPER)}\n`);
  process.exit(2);
}
await mode();
process.exit(0);

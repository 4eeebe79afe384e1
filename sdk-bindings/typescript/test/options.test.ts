// Options a user gets wrong fail loudly, in the plugin's words (the same in
// Go, Python and TypeScript): the option, what it must be and what was given,
// said once. A string for `launchers` is refused, never split into letters.
// Real plugin, real Extism runtime.
import assert from "node:assert/strict";
import * as path from "node:path";
import { after, describe, test } from "node:test";

import { InvalidAppError, InvalidOptionError, MCPResumeError, ResumeTokenStore, type OpenOptions } from "../src/index.js";
import { cleanupTemps, tempDir } from "./helpers.js";

after(cleanupTemps);

const quiet = { debug() {}, info() {}, warn() {}, error() {} };
const HINT = 'give a list of process names, e.g. ["my-wrapper"]';
const APP_MISSING = "app name missing: give the server's application name, 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit";

async function refusal(options: unknown): Promise<Error> {
  try {
    const { app, ...rest } = options as OpenOptions & { app?: unknown };
    const s = await ResumeTokenStore.open(app as string, rest);
    await s.close();
  } catch (e) {
    return e as Error;
  }
  assert.fail(`open(${JSON.stringify(options)}) did not fail`);
}

describe("options", () => {
  test("wrongly typed options name the option, the type expected and the type given", async () => {
    const stateRoot = path.join(tempDir(), "state");
    const cases: Array<[Record<string, unknown>, typeof InvalidOptionError | typeof InvalidAppError, string]> = [
      [{ launchers: "npx" }, InvalidOptionError, `launchers must be a list of strings, not a string: ${HINT}`],
      [{ launchers: ["ok", 5] }, InvalidOptionError, `launchers must be a list of strings, not a list holding a number: ${HINT}`],
      [{ launchers: 5 }, InvalidOptionError, `launchers must be a list of strings, not a number: ${HINT}`],
      [{ launchers: [() => 1] }, InvalidOptionError, "launchers must be a list of strings, not a list holding a function"],
      [{ stateRoot: 5 }, InvalidOptionError, "stateRoot must be a string, not a number: give an absolute path, or leave it out for the default"],
      [{ stateDir: "/tmp/x" }, InvalidOptionError, "stateDir is now stateRoot: the option names the state root, the directory that holds one state directory per app; rename it"],
      [{ instance: 7 }, InvalidOptionError, "instance must be a string, not a number"],
      [{ instance: 7n }, InvalidOptionError, "instance must be a string, not a bigint"],
      [{ app: 5 }, InvalidAppError, "app must be a string, not a number"],
      [{ app: null }, InvalidAppError, APP_MISSING],
      [{ app: undefined }, InvalidAppError, APP_MISSING],
      [{ app: "a/b" }, InvalidAppError, `invalid app name "a/b": use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit`],
    ];
    for (const [extra, cls, message] of cases) {
      const label = Object.entries(extra).map(([k, v]) => `${k}=${String(v)}`).join(",");
      const e = await refusal({ app: "app", stateRoot, logger: quiet, ...extra });
      assert.ok(e instanceof cls, `${label}: ${e}`);
      assert.equal(e.message, message, label);
      assert.ok(!e.message.includes("wire:"));
    }
    assert.ok((await refusal({ app: "app", launchers: "npx", logger: quiet })) instanceof MCPResumeError, "InvalidOptionError is an MCPResumeError");
    const unknown = await refusal({ app: "app", stateRoot, logger: quiet, launcher: ["x"] });
    assert.ok(unknown instanceof InvalidOptionError, String(unknown));
    assert.match(unknown.message, /unknown option "launcher"/);
  });
  test("launchers: any iterable of names", async () => {
    const stateRoot = path.join(tempDir(), "state");
    for (const launchers of [["my-wrapper"], new Set(["a", "b"]), (function* () { yield "x"; })()]) {
      await (await ResumeTokenStore.open("app", { stateRoot, logger: quiet, launchers: launchers as Iterable<string> as readonly string[] })).close();
    }
  });
});

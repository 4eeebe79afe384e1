/**
 * Loading `@extism/extism` 1.0.3 and the plugin module, with the SDK's traps handled (README, "Extism
 * 1.0.3 and its traps"): the `node:wasi` warning ({@link loadExtism}), the missing `get_log_level`
 * ({@link extismEnvExtras}), the worker mode's thread ({@link withSdkWorker}); the store resets the block
 * table after every call and keeps stdout clean.
 *
 * @packageDocumentation
 */
import { readFile } from "node:fs/promises";
import { createRequire, syncBuiltinESMExports } from "node:module";
import { fileURLToPath } from "node:url";
import { setFlagsFromString } from "node:v8";

import type * as ExtismModule from "@extism/extism";

/** The `@extism/extism` module namespace. */
export type Extism = typeof ExtismModule;

/** A compiled `WebAssembly.Module` (typed through Extism's manifest: `@types/node` 20 lacks the `WebAssembly` global). */
export type WasmModule = ExtismModule.ManifestWasmModule["module"];

const wasm = (globalThis as unknown as { WebAssembly: { compile(bytes: Uint8Array): Promise<WasmModule> } }).WebAssembly;
const WASI_WARNING = /^WASI is an experimental feature/;
let extismPromise: Promise<Extism> | undefined;

/**
 * Imports `@extism/extism` once per process, dropping only Node's "WASI is
 * an experimental feature" warning while it loads.
 *
 * @returns the SDK module.
 * @throws whatever the import throws (the SDK is not installed).
 */
export function loadExtism(): Promise<Extism> {
  extismPromise ??= (async () => {
    const original = process.emitWarning;
    const filtered = function (this: unknown, warning: string | Error, ...rest: unknown[]): void {
      const text = typeof warning === "string" ? warning : warning?.message;
      if (typeof text === "string" && WASI_WARNING.test(text)) return;
      return (original as (...a: unknown[]) => void).call(process, warning, ...rest);
    } as typeof process.emitWarning;
    process.emitWarning = filtered;
    try {
      return await import("@extism/extism");
    } finally {
      if (process.emitWarning === filtered) process.emitWarning = original;
    }
  })();
  extismPromise.catch(() => (extismPromise = undefined));
  return extismPromise;
}

const modules = new Map<string, Promise<WasmModule>>();

/**
 * Compiles a Wasm file once per process and path (hostfuncs/README.md:
 * "Compile the module once per process"), for V8's baseline compiler only (`--liftoff-only`
 * while `WebAssembly.compile` starts, then the default again, unless the process set a liftoff
 * flag itself): the plugin's few short calls never pay for TurboFan tier-up, ~90 ms and ~20 MiB
 * RSS at the first `load` (examples/bench/typescript/startup.mjs measures it).
 *
 * @param file - absolute path or `file:` URL of the `.wasm`.
 * @returns the compiled module, shared by later calls.
 * @throws when the file cannot be read or is not valid Wasm.
 */
export function compiledModule(file: string | URL): Promise<WasmModule> {
  const key = typeof file === "string" ? file : fileURLToPath(file);
  let p = modules.get(key);
  if (!p) {
    p = readFile(key).then((bytes) => {
      const own = !`${process.execArgv.join(" ")} ${process.env["NODE_OPTIONS"] ?? ""}`.includes("liftoff");
      if (own) setFlagsFromString("--liftoff-only");
      const compiled = wasm.compile(bytes); // V8 takes the flag here, synchronously; compile never throws
      if (own) setFlagsFromString("--no-liftoff-only");
      return compiled;
    });
    modules.set(key, p);
    p.catch(() => modules.delete(key));
  }
  return p;
}

/** go-pdk's log level answered by `get_log_level`: 3 (warn), so only warn and error `pdk.Log` lines reach the host. */
export const PLUGIN_LOG_LEVEL = 3;

/** Functions added to `extism:host/env` for what 1.0.3 lacks: `get_log_level () -> i32`. */
export function extismEnvExtras(): Record<string, (...args: unknown[]) => unknown> {
  return { get_log_level: () => PLUGIN_LOG_LEVEL };
}

const SDK_WORKER_PREFIX = "data:text/javascript;base64,";
let workerPatches = 0;

/**
 * Runs `create` (an Extism `createPlugin` with `runInWorker: true`) with the SDK's worker thread started
 * safely. 1.0.3 starts it as `new Worker(<data: URL>)` with the parent's `execArgv`, and its source ends
 * with `//# sourceMappingURL=worker.js.map`: with source maps on (`--enable-source-maps`, tsx) the
 * thread dies on that relative URL before it answers, and it prints Node's "WASI is experimental"
 * warning on stderr. For the duration of `create`, `worker_threads.Worker` (re-exported to ES modules
 * with `syncBuiltinESMExports`) starts the SDK's source (recognised by its text) without that comment,
 * with no inherited `execArgv` (it is plain JavaScript) but `--disable-warning=ExperimentalWarning`, and
 * with its stdout never piped to ours (`stdout: true`: JSON-RPC). Every other Worker starts unchanged.
 *
 * @param create - the plugin creation; its promise is returned as is.
 */
export async function withSdkWorker<T>(create: () => Promise<T>): Promise<T> {
  const wt = createRequire(import.meta.url)("node:worker_threads") as typeof import("node:worker_threads");
  const original = wt.Worker;
  if (workerPatches++ === 0) {
    wt.Worker = class SdkWorker extends original {
      constructor(url: string | URL, options?: import("node:worker_threads").WorkerOptions) {
        const href = url instanceof URL ? url.href : "";
        const src = href.startsWith(SDK_WORKER_PREFIX) ? Buffer.from(href.slice(SDK_WORKER_PREFIX.length), "base64").toString("utf8") : "";
        if (!src.includes("github.com/extism/js-sdk")) {
          super(url, options);
          return;
        }
        const clean = src.replace(/\n\/\/# sourceMappingURL=\S*\s*$/, "\n");
        super(new URL(SDK_WORKER_PREFIX + Buffer.from(clean).toString("base64")), { ...options, execArgv: ["--disable-warning=ExperimentalWarning"], stdout: true });
      }
    } as typeof original;
    syncBuiltinESMExports();
  }
  try {
    return await create();
  } finally {
    if (--workerPatches === 0) {
      wt.Worker = Object.getPrototypeOf(wt.Worker) as typeof original;
      syncBuiltinESMExports();
    }
  }
}

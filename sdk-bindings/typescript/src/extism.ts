/**
 * Loading `@extism/extism` 1.0.3 and the plugin module, with the SDK's traps handled (README, "Extism
 * 1.0.3 and its traps"): the `node:wasi` warning ({@link loadExtism}), the missing `get_log_level`
 * ({@link extismEnvExtras}); the store resets the block table after every call and keeps stdout clean.
 *
 * @packageDocumentation
 */
import { readFile } from "node:fs/promises";
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

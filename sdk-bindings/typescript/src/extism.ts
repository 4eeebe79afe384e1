/**
 * Loading `@extism/extism` 1.0.3 and the plugin module, with the SDK's known
 * traps handled (see README, "Extism 1.0.3 and its traps"):
 *
 * 1. **WASI warning.** The SDK imports `node:wasi` at module load, and Node
 *    prints `ExperimentalWarning: WASI is an experimental feature…` to
 *    stderr. {@link loadExtism} imports the SDK dynamically with a filter on
 *    `process.emitWarning` that drops exactly that warning and passes every
 *    other one through.
 * 2. **Missing `get_log_level`.** 1.0.3's `extism:host/env` lacks
 *    `get_log_level`, which go-pdk ≥ 1.1 imports as soon as a plugin calls
 *    `pdk.Log`; such a plugin fails to link. {@link extismEnvExtras}
 *    supplies it (the current `plugin.wasm` does not import it; a test
 *    checks both).
 * 3. **Memory growth.** 1.0.3 never shrinks its table of host memory blocks
 *    between calls; the store calls `plugin.reset()` after every call.
 * 4. **stdout.** The SDK's default logger is `console` (whose `info` and
 *    `debug` write to stdout) and `EXTISM_ENABLE_WASI_OUTPUT` would route the
 *    guest's stdout to ours; the store always passes its own logger and
 *    `enableWasiOutput: false`.
 *
 * @packageDocumentation
 */
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";

import type * as ExtismModule from "@extism/extism";
import type { ManifestWasmModule } from "@extism/extism";

/** The `@extism/extism` module namespace. */
export type Extism = typeof ExtismModule;

/**
 * A compiled `WebAssembly.Module` (typed through Extism's manifest type:
 * `@types/node` 20 does not declare the `WebAssembly` global).
 */
export type WasmModule = ManifestWasmModule["module"];

/** The `WebAssembly` global, as far as this package uses it. */
const wasmGlobal = (globalThis as unknown as { WebAssembly: { compile(bytes: Uint8Array): Promise<WasmModule> } })
  .WebAssembly;

/** The warning Node prints when `node:wasi` loads (Node 20–24). */
const WASI_WARNING = /^WASI is an experimental feature/;

let extismPromise: Promise<Extism> | undefined;

/**
 * Imports `@extism/extism` once per process, suppressing only Node's
 * "WASI is an experimental feature" warning while it loads.
 *
 * @returns the SDK module.
 * @throws whatever the import throws (the SDK is not installed).
 */
export function loadExtism(): Promise<Extism> {
  extismPromise ??= (async () => {
    const original = process.emitWarning;
    const filtered = function (this: unknown, warning: string | Error, ...rest: unknown[]): void {
      const text = typeof warning === "string" ? warning : warning?.message;
      const type = typeof rest[0] === "string" ? rest[0] : (rest[0] as { type?: string } | undefined)?.type;
      const name = typeof warning === "string" ? type : warning?.name;
      if (typeof text === "string" && WASI_WARNING.test(text) && (name === "ExperimentalWarning" || name === undefined)) {
        return;
      }
      return (original as (...a: unknown[]) => void).call(process, warning, ...rest);
    } as typeof process.emitWarning;
    process.emitWarning = filtered;
    try {
      return await import("@extism/extism");
    } finally {
      if (process.emitWarning === filtered) process.emitWarning = original;
    }
  })();
  extismPromise.catch(() => {
    extismPromise = undefined;
  });
  return extismPromise;
}

const modules = new Map<string, Promise<WasmModule>>();

/**
 * Compiles a Wasm file once per process and path; later calls share the
 * compiled `WebAssembly.Module` (hostfuncs/README.md: "Compile the module
 * once per process").
 *
 * @param file - absolute path or `file:` URL of the `.wasm`.
 * @returns the compiled module.
 * @throws when the file cannot be read or is not valid Wasm.
 */
export function compiledModule(file: string | URL): Promise<WasmModule> {
  const key = typeof file === "string" ? file : fileURLToPath(file);
  let p = modules.get(key);
  if (!p) {
    p = readFile(key).then((bytes) => wasmGlobal.compile(bytes));
    modules.set(key, p);
    p.catch(() => modules.delete(key));
  }
  return p;
}

/**
 * go-pdk's log level values (`pdk.LogTrace` = 0 … `pdk.LogError` = 4).
 * `get_log_level` answers {@link PLUGIN_LOG_LEVEL}: only warn and error
 * lines logged with `pdk.Log` reach the host.
 */
export const PLUGIN_LOG_LEVEL = 3;

/**
 * Host functions added to the `extism:host/env` namespace to make up for
 * what 1.0.3 lacks: `get_log_level () -> i32`. 1.0.3 merges user functions
 * into that namespace's import object, so this is enough for a go-pdk
 * plugin that calls `pdk.Log` to link.
 */
export function extismEnvExtras(): Record<string, (...args: unknown[]) => unknown> {
  return { get_log_level: () => PLUGIN_LOG_LEVEL };
}

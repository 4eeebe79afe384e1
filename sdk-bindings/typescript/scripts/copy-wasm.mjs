// Copies the one committed plugin (plugin/plugin.wasm at the repository
// root) next to package.json, where the built package loads it from
// (dist/store.js resolves ../plugin.wasm). The copy is gitignored; never
// commit a second plugin.wasm. Outside the repository (an installed
// tarball) the packed plugin.wasm is already in place and is kept.
import { copyFileSync, existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const src = fileURLToPath(new URL("../../../plugin/plugin.wasm", import.meta.url));
const dst = fileURLToPath(new URL("../plugin.wasm", import.meta.url));

if (existsSync(src)) {
  copyFileSync(src, dst);
} else if (!existsSync(dst)) {
  console.error(`mcp-resume: cannot find the plugin: neither ${src} nor ${dst} exists`);
  process.exit(1);
}

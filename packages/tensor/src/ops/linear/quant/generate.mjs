// Regenerates module.generated.ts from the generators of this folder.
// Usage (from packages/tensor): node src/ops/linear/quant/generate.mjs
// The generators are TypeScript; esbuild (installed with tsup) bundles them in memory first.
import { build } from 'esbuild';
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
// The committed file may be stale or missing while it is regenerated: stand in empty modules.
const out = await build({
  entryPoints: [join(here, 'module.ts')],
  bundle: true,
  write: false,
  format: 'esm',
  platform: 'node',
  logLevel: 'warning',
  plugins: [{ name: 'stub', setup: (b) => b.onLoad({ filter: /module\.generated\.ts$/ }, () => ({ contents: "export const QUANT_WASM_RELAXED = ''; export const QUANT_WASM_SIMD = '';", loader: 'ts' })) }],
});
const url = `data:text/javascript;base64,${Buffer.from(out.outputFiles[0].text).toString('base64')}`;
const { renderGeneratedFile } = await import(url);
writeFileSync(join(here, 'module.generated.ts'), renderGeneratedFile());
console.log(`wrote ${join(here, 'module.generated.ts')}`);

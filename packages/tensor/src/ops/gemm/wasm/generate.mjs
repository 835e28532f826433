// Regenerates module.generated.ts from codegen.ts / variants.ts.
// Usage (from packages/tensor): node src/ops/gemm/wasm/generate.mjs
// The generator is TypeScript; esbuild (installed with tsup) bundles it in memory first.
import { build } from 'esbuild';
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const out = await build({
  entryPoints: [join(here, 'variants.ts')],
  bundle: true,
  write: false,
  format: 'esm',
  platform: 'node',
  logLevel: 'warning',
});
const url = `data:text/javascript;base64,${Buffer.from(out.outputFiles[0].text).toString('base64')}`;
const { renderGeneratedFile, GENERATED_FILE } = await import(url);
writeFileSync(join(here, GENERATED_FILE), renderGeneratedFile());
console.log(`wrote ${join(here, GENERATED_FILE)}`);

import { defineConfig } from 'tsup';

export default defineConfig([
  {
    // The library (server and `./engine`): ESM + CJS with type declarations.
    entry: ['src/index.ts', 'src/engine.ts'],
    format: ['esm', 'cjs'],
    dts: true,
    sourcemap: true,
    clean: ['index.*', 'engine.*', 'chunk-*'],
    target: 'node20',
  },
  {
    // The `apertus-serve` executable (ESM only).
    entry: { 'bin/apertus-serve': 'src/bin/apertus-serve.ts' },
    format: ['esm'],
    sourcemap: true,
    clean: ['bin/**'],
    splitting: false,
    target: 'node20',
    banner: { js: '#!/usr/bin/env node' },
  },
]);

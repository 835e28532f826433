import { defineConfig } from 'tsup';

export default defineConfig([
  {
    // The library: ESM + CJS with type declarations.
    entry: ['src/index.ts', 'src/browser.ts'],
    // One copy of the modules both entries share (./browser is the core, the main entry adds Node I/O).
    splitting: true,
    format: ['esm', 'cjs'],
    dts: true,
    sourcemap: true,
    clean: ['index.*', 'browser.*', 'chunk-*'],
    target: 'node20',
  },
  {
    // The `apertus-quantize` executable (ESM only).
    entry: { 'bin/apertus-quantize': 'src/bin/apertus-quantize.ts' },
    format: ['esm'],
    sourcemap: true,
    clean: ['bin/**'],
    splitting: false,
    target: 'node20',
    banner: { js: '#!/usr/bin/env node' },
  },
]);

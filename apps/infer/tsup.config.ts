import { defineConfig } from 'tsup';

export default defineConfig([
  {
    // The app's functions (for embedding and tests): ESM with type declarations.
    entry: ['src/index.ts'],
    format: ['esm'],
    dts: true,
    sourcemap: true,
    clean: ['index.*'],
    target: 'node20',
  },
  {
    // The executables.
    entry: { 'bin/apertus-chat': 'src/bin/apertus-chat.ts', 'bin/apertus-generate': 'src/bin/apertus-generate.ts' },
    format: ['esm'],
    sourcemap: true,
    clean: ['bin/**'],
    splitting: false,
    target: 'node20',
    banner: { js: '#!/usr/bin/env node' },
  },
]);

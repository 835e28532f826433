import { defineConfig } from 'tsup';

// One ESM build for the library entry and the CLI; the banner makes dist/cli.js executable.
export default defineConfig({
  entry: ['src/index.ts', 'src/cli.ts'],
  format: ['esm'],
  dts: { entry: 'src/index.ts' },
  sourcemap: true,
  clean: true,
  target: 'node20',
  banner: { js: '#!/usr/bin/env node' },
});

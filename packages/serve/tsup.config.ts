import { defineConfig } from 'tsup';
import { libraryAndBinsBuild } from '@apertus/tsup-config';

// The library (server, `./engine` and the `./testing` fixtures: ESM + CJS with type declarations) and the `apertus-serve` executable (ESM only).
export default defineConfig(libraryAndBinsBuild({ entry: ['src/index.ts', 'src/engine.ts', 'src/testing.ts'], format: ['esm', 'cjs'], bins: { 'apertus-serve': 'src/bin/apertus-serve.ts' } }));

import { defineConfig } from 'tsup';
import { libraryAndBinsBuild } from '@apertus/tsup-config';

// The library (ESM + CJS with type declarations) and the `apertus-quantize` executable (ESM only).
export default defineConfig(libraryAndBinsBuild({ entry: ['src/index.ts'], format: ['esm', 'cjs'], bins: { 'apertus-quantize': 'src/bin/apertus-quantize.ts' } }));

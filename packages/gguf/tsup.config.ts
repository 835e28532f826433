import { defineConfig } from 'tsup';
import { libraryAndBinsBuild } from '@apertus/tsup-config';

// The library and its Node-free `./browser` core (ESM + CJS with type declarations; splitting keeps
// one copy of the modules both entries share) and the `apertus-quantize` executable (ESM only).
export default defineConfig(libraryAndBinsBuild({ entry: ['src/index.ts', 'src/browser.ts'], format: ['esm', 'cjs'], splitting: true, bins: { 'apertus-quantize': 'src/bin/apertus-quantize.ts' } }));

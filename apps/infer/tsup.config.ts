import { defineConfig } from 'tsup';
import { libraryAndBinsBuild } from '@apertus/tsup-config';

// The app's functions (ESM with type declarations) and the `apertus-chat` / `apertus-generate` executables.
export default defineConfig(
  libraryAndBinsBuild({ entry: ['src/index.ts'], format: ['esm'], bins: { 'apertus-chat': 'src/bin/apertus-chat.ts', 'apertus-generate': 'src/bin/apertus-generate.ts' } }),
);

import { defineConfig } from 'tsup';
import { libraryBuild } from '@apertus/tsup-config';

// The library and its `./testing` entry: ESM + CJS with type declarations.
export default defineConfig(libraryBuild(['src/index.ts', 'src/testing.ts']));

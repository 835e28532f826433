import { defineConfig } from 'tsup';
import { libraryBuild } from '@apertus/tsup-config';

// ESM + CJS with type declarations.
export default defineConfig(libraryBuild());

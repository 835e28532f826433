import { defineConfig } from 'tsup';
import { libraryBuild } from '@apertus/tsup-config';

// The recipes (Node entry) and their Node-free `browser` entry: ESM + CJS with type declarations;
// splitting keeps one copy of the modules the entries share.
export default defineConfig(libraryBuild(['src/index.ts', 'src/browser.ts'], { splitting: true }));

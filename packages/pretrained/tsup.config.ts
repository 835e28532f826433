import { defineConfig } from 'tsup';
import { libraryBuild } from '@apertus/tsup-config';

// The library and its Node-free `./browser` core: ESM + CJS with type declarations; splitting
// keeps one copy of the modules both entries share.
export default defineConfig(libraryBuild(['src/index.ts', 'src/browser.ts'], { splitting: true }));

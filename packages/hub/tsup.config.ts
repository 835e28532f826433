import { defineConfig } from 'tsup';
import { libraryBuild } from '@apertus/tsup-config';

// The library, its Node-free `./browser` core and the `./testing` Hub server: ESM + CJS with type
// declarations; splitting keeps one copy of the modules the entries share.
export default defineConfig(libraryBuild(['src/index.ts', 'src/browser.ts', 'src/testing.ts'], { splitting: true }));

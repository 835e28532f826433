import { defineConfig } from 'tsup';
import { libraryBuild } from '@apertus/tsup-config';

// kernels: the extension API; gpujs: the optional gpu.js entry; testing: test helpers for the
// packages that extend the compute layer (vitest stays external). Splitting keeps one copy of the
// shared modules (the kernel registry, the error classes) for every entry; shims give the
// CommonJS build import.meta.url (the webgpu worker resolves gpu.js and webgpu from it).
export default defineConfig(libraryBuild(['src/index.ts', 'src/kernels.ts', 'src/gpujs.ts', 'src/testing.ts'], { splitting: true, shims: true, external: ['vitest'] }));

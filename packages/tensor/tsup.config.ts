import { defineConfig } from 'tsup';
import { libraryBuild } from '@apertus/tsup-config';

// gpujs: the optional gpu.js entry. Splitting keeps one copy of the shared modules (the backend
// registry, the error classes) for both entries; shims give the CommonJS build import.meta.url
// (the webgpu worker resolves gpu.js and webgpu from it).
export default defineConfig(libraryBuild(['src/index.ts', 'src/gpujs.ts'], { splitting: true, shims: true }));

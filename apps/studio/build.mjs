// Build the studio as plain static files: dist/index.html, dist/studio.js (the page, src/main.ts),
// dist/worker.js (the model worker, src/worker.ts; esbuild bundles for the browser, the packages
// resolve to their `browser` entries; the WebGPU device starts its own worker from a blob URL).
// Serve dist/ with the cross-origin isolation headers (COOP same-origin, COEP require-corp):
// WebAssembly threads and the WebGPU device's reads need SharedArrayBuffer;
// `apertus-serve --studio apps/studio/dist` does.
import fs from 'node:fs';
import path from 'node:path';
import { build } from 'esbuild';

const here = import.meta.dirname;

/** Bundle `entry` (relative to src/) for the browser into `outfile`; returns esbuild's metafile. */
export async function bundle(entry, outfile, plugins = []) {
  const r = await build({
    entryPoints: [path.join(here, 'src', entry)],
    bundle: true,
    platform: 'browser',
    format: 'esm',
    target: 'es2022',
    minify: true,
    outfile,
    metafile: true,
    logLevel: 'error',
    plugins,
  });
  return r.metafile;
}

/** Write the static site into `outdir`. */
export async function buildStudio(outdir, plugins = []) {
  fs.mkdirSync(outdir, { recursive: true });
  await bundle('main.ts', path.join(outdir, 'studio.js'), plugins);
  await bundle('worker.ts', path.join(outdir, 'worker.js'), plugins);
  fs.copyFileSync(path.join(here, 'index.html'), path.join(outdir, 'index.html'));
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.join(here, 'build.mjs')) {
  await buildStudio(path.join(here, 'dist'));
}

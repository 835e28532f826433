import type { Metafile, Plugin } from 'esbuild';

/** Bundle `entry` (relative to src/) for the browser into `outfile`; returns esbuild's metafile. */
export function bundle(entry: string, outfile: string, plugins?: Plugin[]): Promise<Metafile>;
/** Write the static site (index.html, studio.js) into `outdir`. */
export function buildStudio(outdir: string, plugins?: Plugin[]): Promise<void>;

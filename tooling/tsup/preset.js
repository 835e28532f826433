// Shared tsup build configurations for Apertus.ts. Every build targets Node 22 (the packages' engines) with source maps;
// executables are ESM with a shebang banner (npm links `bin/<name>.js`, which imports them).

const common = { sourcemap: true, target: 'node22' };
const shebang = { js: '#!/usr/bin/env node' };

/**
 * A library: `entry` (default the package's index) as ESM and CommonJS with type declarations;
 * `extra` adds tsup options (shims, splitting).
 * @param {string[]} [entry]
 * @param {import('tsup').Options} [extra]
 */
export function libraryBuild(entry = ['src/index.ts'], extra = {}) {
  return { ...common, entry, format: ['esm', 'cjs'], dts: true, clean: true, ...extra };
}

/** An app's command line: the executable `dist/cli.js` (ESM; what the app runs is a library's). */
export function appBuild() {
  return { ...common, entry: ['src/cli.ts'], format: ['esm'], clean: true, banner: shebang };
}

/**
 * A library (`entry`, in `format`, with type declarations; `splitting` keeps one copy of the modules
 * several entries share) and its executables (`bins`: output name under `dist/bin/` → source),
 * built separately so the executables are self-contained ESM.
 * @param {{ entry: string[], format: ('esm' | 'cjs')[], splitting?: boolean, bins: Record<string, string> }} o
 */
export function libraryAndBinsBuild({ entry, format, splitting, bins }) {
  const names = entry.map((e) => `${e.replace(/^src\//, '').replace(/\.ts$/, '')}.*`);
  return [
    { ...common, entry, format, dts: true, clean: entry.length > 1 ? [...names, 'chunk-*'] : names, ...(splitting !== undefined ? { splitting } : {}) },
    {
      ...common,
      entry: Object.fromEntries(Object.entries(bins).map(([name, src]) => [`bin/${name}`, src])),
      format: ['esm'],
      clean: ['bin/**'],
      splitting: false,
      banner: shebang,
    },
  ];
}

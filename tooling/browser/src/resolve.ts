// Bundling the packages for a browser from their sources: an esbuild plugin that resolves
// `@apertus/<name>[/<entry>]` the way a bundler resolves the published package under the
// `browser` condition (the manifest's `exports`), then maps the `dist/<entry>.js` it names back to
// `src/<entry>.ts`, so the bundle is of the sources next to this test, never a stale build.

import fs from 'node:fs';
import path from 'node:path';
import { builtinModules } from 'node:module';
import { build, type BuildResult, type Metafile, type Plugin } from 'esbuild';

export const root = path.resolve(import.meta.dirname, '../../..');

/** The packages whose cores must run in a browser. */
export const BROWSER_PACKAGES = ['tensor', 'safetensors', 'xielu', 'ademamix', 'goldfish', 'qrpo', 'tokenizer', 'model', 'trainer', 'recipes', 'gguf', 'hub', 'pretrained'] as const;

type Conditions = Record<string, unknown>;

/** The target of `exports[subpath]` under the conditions browser, import, default (in that order of preference). */
export function browserTarget(pkg: string, subpath: string): string {
  const manifest = JSON.parse(fs.readFileSync(path.join(root, 'packages', pkg, 'package.json'), 'utf8')) as { exports: Record<string, unknown> };
  const pick = (v: unknown): string | null => {
    if (typeof v === 'string') return v;
    if (v === null || typeof v !== 'object') return null;
    for (const c of ['browser', 'import', 'default']) {
      const t = pick((v as Conditions)[c]);
      if (t !== null) return t;
    }
    return null;
  };
  const target = pick(manifest.exports[subpath]);
  if (target === null) throw new Error(`@apertus/${pkg}: exports["${subpath}"] has no browser, import or default target`);
  return target;
}

/** esbuild plugin: `@apertus/*` to the sources of the browser targets of their manifests. */
export const apertusSources: Plugin = {
  name: 'apertus-sources',
  setup(b) {
    b.onResolve({ filter: /^@apertus\/[a-z0-9-]+(\/[a-z0-9-]+)?$/ }, (args) => {
      const [, pkg, sub] = /^@apertus\/([a-z0-9-]+)(?:\/([a-z0-9-]+))?$/.exec(args.path)!;
      const target = browserTarget(pkg!, sub ? `./${sub}` : '.');
      const m = /^\.\/dist\/([a-z0-9-]+)\.js$/.exec(target);
      if (!m) throw new Error(`@apertus/${pkg}: unexpected browser target ${target}`);
      return { path: path.join(root, 'packages', pkg!, 'src', `${m[1]}.ts`) };
    });
  },
};

const NODE_BUILTINS = new Set([...builtinModules, ...builtinModules.map((m) => `node:${m}`)]);

/** Bundle `entry` for a browser (ES module, minified when asked); throws on any unresolved import. */
export async function bundleForBrowser(entry: string, opts: { outfile?: string; minify?: boolean } = {}): Promise<{ result: BuildResult; metafile: Metafile; nodeImports: string[] }> {
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    platform: 'browser',
    format: 'esm',
    target: 'es2022',
    write: opts.outfile !== undefined,
    ...(opts.outfile !== undefined ? { outfile: opts.outfile } : {}),
    minify: opts.minify ?? false,
    metafile: true,
    logLevel: 'silent',
    plugins: [apertusSources],
  });
  const metafile = result.metafile!;
  const nodeImports = Object.values(metafile.inputs).flatMap((i) => i.imports.map((x) => x.path)).filter((p) => NODE_BUILTINS.has(p));
  return { result, metafile, nodeImports: [...new Set(nodeImports)] };
}

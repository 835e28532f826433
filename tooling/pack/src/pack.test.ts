// Every publishable package as npm would publish it: one `npm pack` of all of them, one
// `npm install` of all the tarballs into an empty project (external dependencies from the npm
// cache, else the registry), then per package: what the tarball holds, arethetypeswrong on the
// tarball, and the README's example (plain JavaScript) type-checked as .mts and .cts and run as it
// is in an .mjs file, as CommonJS and as an esbuild bundle. Needs the packages built (`npm test` builds them first).

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { build, transform } from 'esbuild';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { packAll } from '../pack-all.mjs';
import { asCommonJsSource, readmeExample } from './readme-example';

const root = path.resolve(import.meta.dirname, '../../..');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

interface Manifest {
  name: string;
  private?: boolean;
  files?: string[];
  main?: string;
  types?: string;
  bin?: Record<string, string>;
  exports?: Record<string, unknown>;
}

const packages = fs
  .readdirSync(path.join(root, 'packages'))
  .map((dir) => ({ dir: path.join(root, 'packages', dir), manifest: JSON.parse(fs.readFileSync(path.join(root, 'packages', dir, 'package.json'), 'utf8')) as Manifest }))
  .filter((p) => !p.manifest.private);

/** Run a command; its status, and stdout + stderr for the failure message. */
function run(cmd: string, args: string[], cwd: string, timeout = 300_000): { status: number | null; output: string } {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', timeout, env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' } });
  return { status: r.status, output: `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? String(r.error) : ''}` };
}

function runOk(cmd: string, args: string[], cwd: string, timeout?: number): string {
  const r = run(cmd, args, cwd, timeout);
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} (in ${cwd}) exited with ${r.status}:\n${r.output.slice(-4000)}`);
  return r.output;
}

/** Every file path a manifest points at (main, types, bin, exports targets). */
function manifestTargets(m: Manifest): string[] {
  const out = [m.main, m.types, ...Object.values(m.bin ?? {})].filter((x): x is string => typeof x === 'string');
  const walk = (v: unknown): void => {
    if (typeof v === 'string') out.push(v);
    else if (v && typeof v === 'object') Object.values(v).forEach(walk);
  };
  walk(m.exports);
  return [...new Set(out.map((t) => t.replace(/^\.\//, '')))];
}

let work: string;
let consumer: string;
const tarballs = new Map<string, { file: string; files: string[] }>();
/** README examples by package name. */
const examples = new Map<string, string>();
/** tsc's diagnostics for all examples (one run). */
let typeErrors: string[] = [];
const slugOf = (name: string) => name.replace('@apertus/', '');

beforeAll(() => {
  for (const p of packages) {
    if (!fs.existsSync(path.join(p.dir, 'dist'))) throw new Error(`${p.manifest.name} is not built (no dist/): run \`npm run build\` first`);
  }
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'apertus-pack-'));
  const packed = path.join(work, 'tarballs');
  fs.mkdirSync(packed);
  // `npm run pack`'s packing, as the READMEs tell users to install before the packages are published.
  for (const t of packAll(packed)) tarballs.set(t.name, { file: path.join(packed, t.filename), files: t.files.map((f) => f.path) });

  consumer = path.join(work, 'consumer');
  fs.mkdirSync(consumer);
  fs.writeFileSync(path.join(consumer, 'package.json'), JSON.stringify({ name: 'consumer', version: '0.0.0', private: true }));
  for (const p of packages) {
    const code = readmeExample(fs.readFileSync(path.join(p.dir, 'README.md'), 'utf8'));
    if (code !== null) examples.set(p.manifest.name, code);
  }
  // Other packages the examples import (a client library, say), at the monorepo's versions.
  const others = new Set([...examples.values()].flatMap((code) => [...code.matchAll(/\bfrom\s+['"]([^'"]+)['"]/g)].map((m) => m[1]!)));
  const extra = [...others]
    .filter((s) => !s.startsWith('node:') && !s.startsWith('@apertus/'))
    .map((s) => `${s}@${(JSON.parse(fs.readFileSync(path.join(root, 'node_modules', s, 'package.json'), 'utf8')) as { version: string }).version}`);
  runOk(npm, ['install', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error', ...[...tarballs.values()].map((t) => t.file), ...extra], consumer, 600_000);
  fs.writeFileSync(path.join(consumer, 'tsconfig.json'), JSON.stringify({
    compilerOptions: {
      module: 'node16', moduleResolution: 'node16', target: 'ES2022', lib: ['ES2023', 'DOM'], strict: true, noImplicitAny: false,
      skipLibCheck: true, noEmit: true, types: ['node'], typeRoots: [path.join(root, 'node_modules/@types')],
    },
    include: ['examples/**/*'],
  }));
  // Types: the import condition's .d.ts for .mts, the require condition's .d.cts for .cts.
  for (const [name, code] of examples) {
    const dir = path.join(consumer, 'examples', slugOf(name));
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'example.mts'), code);
    fs.writeFileSync(path.join(dir, 'example.cts'), asCommonJsSource(code));
  }
  const tsc = run(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', path.join(consumer, 'tsconfig.json')], consumer);
  typeErrors = tsc.output.split('\n').filter((l) => l.trim() !== '');
  if (tsc.status !== 0 && !typeErrors.some((l) => l.startsWith('examples/'))) throw new Error(`tsc failed:\n${tsc.output}`);
});

afterAll(() => {
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

test('the tarballs install side by side: one copy of each package, from its tarball', () => {
  expect(tarballs.size).toBe(packages.length);
  const lock = JSON.parse(fs.readFileSync(path.join(consumer, 'package-lock.json'), 'utf8')) as { packages: Record<string, { resolved?: string }> };
  const apertus = Object.entries(lock.packages).filter(([k]) => /(^|\/)node_modules\/@apertus\//.test(k));
  expect(apertus.map(([k]) => k).sort()).toEqual(packages.map((p) => `node_modules/${p.manifest.name}`).sort());
  for (const [, v] of apertus) expect(v.resolved).toMatch(/^file:.*\.tgz$/);
});

describe.each(packages.map((p) => [p.manifest.name, p] as const))('%s', (name, pkg) => {
  test('tarball: LICENSE, README, every file the manifest names; no sources, tests or fixtures', () => {
    const files = tarballs.get(name)!.files;
    expect(files).toContain('LICENSE');
    expect(files).toContain('README.md');
    for (const target of manifestTargets(pkg.manifest)) expect(files, target).toContain(target);
    for (const entry of pkg.manifest.files ?? []) expect(files.some((f) => f === entry || f.startsWith(`${entry}/`)), `files entry ${entry}`).toBe(true);
    expect(files.filter((f) => /(^|\/)src\/|\.test\.|test-|fixture|__fixtures__/.test(f))).toEqual([]);
  });

  test('arethetypeswrong: no problem in any module resolution mode', () => {
    const r = run(process.execPath, [path.join(root, 'node_modules/@arethetypeswrong/cli/dist/index.js'), tarballs.get(name)!.file, '--no-definitely-typed', '--format', 'json'], work);
    const report = JSON.parse(r.output.slice(r.output.indexOf('{'))) as { analysis: { problems: unknown[] } };
    expect(report.analysis.problems).toEqual([]);
    expect(r.status).toBe(0);
  });

  test('README example: types (.mts, .cts), the code as it is in an .mjs file, CommonJS, esbuild bundle', async () => {
    const code = examples.get(name);
    expect(code, 'README has a ```js example').toBeDefined();
    const slug = slugOf(name);
    const dir = path.join(consumer, 'examples', slug);
    expect(typeErrors.filter((l) => l.startsWith(`examples/${slug}/`)), 'type errors in the example').toEqual([]);

    // The README's code verbatim: what a reader pastes into a file.
    const esm = path.join(dir, 'example.mjs');
    fs.writeFileSync(esm, code!);
    const cjs = path.join(dir, 'example.cjs');
    fs.writeFileSync(cjs, (await transform(asCommonJsSource(code!), { loader: 'js', format: 'cjs', target: 'node22' })).code);
    expect(fs.readFileSync(cjs, 'utf8')).toMatch(/require\("@apertus\//);
    const bundle = path.join(dir, 'bundle.mjs');
    await build({
      entryPoints: [esm], bundle: true, platform: 'node', format: 'esm', target: 'node22', outfile: bundle, logLevel: 'silent',
      // CommonJS dependencies inside an ES module bundle call require() for Node built-ins.
      banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
    });
    expect(fs.readFileSync(bundle, 'utf8')).not.toMatch(/(?:from\s*|require\(|import\()\s*["']@apertus\//);

    for (const file of [esm, cjs, bundle]) {
      const cwd = fs.mkdtempSync(path.join(work, `${slug}-run-`));
      const r = run(process.execPath, [file], cwd);
      expect(r.status, `${path.basename(file)}:\n${r.output.slice(-3000)}`).toBe(0);
    }
  });
});

// The dependency graph of the publishable packages, three ways that must agree: what each
// package's sources import (`@apertus/*`, test files left out), what its manifest declares, and the
// list in the root README. The graph has no cycle.

import fs from 'node:fs';
import path from 'node:path';
import { expect, test } from 'vitest';

const root = path.resolve(import.meta.dirname, '../../..');
const packagesDir = path.join(root, 'packages');

interface Pkg {
  readonly name: string;
  readonly declared: string[];
  readonly imported: string[];
}

const short = (name: string) => name.replace('@apertus/', '');

function sources(dir: string): string[] {
  return fs.readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && /\.(ts|mts|mjs|js)$/.test(e.name) && !/\.test\.|test-helper|\.d\.ts$/.test(e.name))
    .map((e) => path.join(e.parentPath, e.name));
}

const packages: Pkg[] = fs.readdirSync(packagesDir).filter((d) => fs.existsSync(path.join(packagesDir, d, 'package.json'))).map((d) => {
  const manifest = JSON.parse(fs.readFileSync(path.join(packagesDir, d, 'package.json'), 'utf8')) as { name: string; private?: boolean; dependencies?: Record<string, string> };
  const imported = new Set<string>();
  for (const file of sources(path.join(packagesDir, d, 'src'))) {
    for (const m of fs.readFileSync(file, 'utf8').matchAll(/(?:from\s+|import\s*\(\s*|import\s+)['"](@apertus\/[a-z0-9-]+)(?:\/[a-z0-9-]+)?['"]/g)) imported.add(short(m[1]!));
  }
  imported.delete(short(manifest.name));
  return {
    name: short(manifest.name),
    declared: Object.keys(manifest.dependencies ?? {}).filter((k) => k.startsWith('@apertus/')).map(short).sort(),
    imported: [...imported].sort(),
  };
});

test('every package declares exactly the @apertus packages its sources import', () => {
  for (const p of packages) expect(p.declared, p.name).toEqual(p.imported);
});

test('the package graph has no cycle', () => {
  const deps = new Map(packages.map((p) => [p.name, p.declared]));
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (n: string, trail: string[]): void => {
    if (state.get(n) === 'done') return;
    if (state.get(n) === 'visiting') throw new Error(`cycle: ${[...trail, n].join(' → ')}`);
    state.set(n, 'visiting');
    for (const d of deps.get(n) ?? []) visit(d, [...trail, n]);
    state.set(n, 'done');
  };
  for (const p of packages) expect(() => visit(p.name, [])).not.toThrow();
});

test("the root README's dependency list is the graph of the manifests", () => {
  const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
  const start = readme.indexOf('<!-- dependency graph -->');
  expect(start, 'README.md has a <!-- dependency graph --> list').toBeGreaterThanOrEqual(0);
  const listed = new Map<string, string[]>();
  for (const line of readme.slice(start).split('\n').slice(1)) {
    const m = /^- (`[a-z0-9-]+`(?:, `[a-z0-9-]+`)*) on (nothing|`[a-z0-9-]+`(?:, `[a-z0-9-]+`)*)\.?$/.exec(line.trim());
    if (!m) break;
    const names = [...m[1]!.matchAll(/`([a-z0-9-]+)`/g)].map((x) => x[1]!);
    const on = m[2] === 'nothing' ? [] : [...m[2]!.matchAll(/`([a-z0-9-]+)`/g)].map((x) => x[1]!).sort();
    for (const n of names) listed.set(n, on);
  }
  expect(Object.fromEntries([...listed].sort())).toEqual(Object.fromEntries(packages.map((p) => [p.name, p.declared] as const).sort()));
});

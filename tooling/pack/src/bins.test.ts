// `npm install` links a workspace's bin only when its target file exists at install time, before
// anything is built: every bin must point at a committed launcher (with a shebang) that runs the
// built program, so that `npx apertus-chat` and friends resolve locally on a fresh clone.

import fs from 'node:fs';
import path from 'node:path';
import { expect, test } from 'vitest';

const root = path.resolve(import.meta.dirname, '../../..');
const workspaces = ['packages', 'apps', 'tooling'].flatMap((group) => fs.readdirSync(path.join(root, group)).map((d) => path.join(root, group, d)));
const bins = workspaces.flatMap((dir) => {
  const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as { bin?: Record<string, string> };
  return Object.entries(manifest.bin ?? {}).map(([name, target]) => [name, dir, target] as const);
});

test('the README commands are all bins', () => {
  const names = bins.map(([name]) => name);
  for (const cmd of ['apertus-serve', 'apertus-chat', 'apertus-generate', 'apertus-pretrain', 'apertus-sft', 'apertus-align', 'apertus-eval']) expect(names).toContain(cmd);
});

test.each(bins)('%s: a committed launcher, not a build output', (_name, dir, target) => {
  const file = path.join(dir, target);
  expect(path.relative(dir, file).split(path.sep)[0]).not.toBe('dist');
  expect(fs.readFileSync(file, 'utf8').startsWith('#!/usr/bin/env node\n')).toBe(true);
  expect(fs.statSync(file).mode & 0o111).not.toBe(0);
  // What a launcher runs is a file of the package's build (`npm test` builds first).
  const runs = /^import '(\.\.\/dist\/[^']+)';$/m.exec(fs.readFileSync(file, 'utf8'));
  if (runs) expect(fs.existsSync(path.resolve(path.dirname(file), runs[1]!)), runs[1]).toBe(true);
});

// apertus-eval: the CLI prints the side-by-side table (identical columns for identical models),
// writes it, and names the flag of a bad value (the suite itself is tested in @apertus/trainer).

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtCli, makeTinyModel, tempDir, type TinyModel } from '@apertus/trainer/testing';

const APP = path.resolve(import.meta.dirname, '..');
let CLI: string;
let root: string;
let tiny: TinyModel;

beforeAll(async () => {
  CLI = builtCli(APP);
  root = tempDir('apertus-eval-');
  tiny = await makeTinyModel(root);
}, 120_000);
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

describe('apertus-eval CLI', () => {
  it('prints one column per model (identical models, identical columns) and writes the table', () => {
    const out = path.join(root, 'report.md');
    const r = spawnSync(
      process.execPath,
      [CLI, '--model', `base=${tiny.dir}`, '--model', `copy=${tiny.dir}`, '--held-out', 'none', '--max-chars', '120', '--max-tokens', '2', '--probes', '1', '--suffix-length', '4', '--threads', '1', '--out', out],
      { encoding: 'utf8', timeout: 120_000 },
    );
    expect(r.status, r.stderr).toBe(0);
    const rows = r.stdout.split('\n').filter((l) => l.startsWith('| chrF') || l.startsWith('| BLEU') || l.startsWith('| Memorization'));
    expect(rows).toHaveLength(6); // chrF, chrF++, BLEU and three memorization rows
    for (const row of rows) {
      const cells = row.split('|').map((c) => c.trim());
      expect(cells[2]).toBe(cells[3]);
    }
    expect(fs.readFileSync(out, 'utf8')).toBe(r.stdout);
    const bad = spawnSync(process.execPath, [CLI, '--model', tiny.dir, '--probes', 'many'], { encoding: 'utf8' });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toBe('apertus-eval: error: --probes: expected an integer in [0, 100000], got "many"\n');
    const missing = spawnSync(process.execPath, [CLI, '--model', path.join(root, 'nope')], { encoding: 'utf8' });
    expect(missing.status).toBe(1);
    expect(missing.stderr).toMatch(/nope: no such file or directory, and not a Hub id \(owner\/name\[@revision\]\[:QUANT\]\)\n$/);
  });
});

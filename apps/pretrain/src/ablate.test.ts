import fs from 'node:fs';
import path from 'node:path';
import { tempDir } from '@apertus/trainer/testing';
import { afterAll, expect, it } from 'vitest';
import { ablateCommand } from './ablate';

const dir = tempDir('apertus-ablate-');
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

it('the ablate subcommand validates its flags before training, naming the flag', async () => {
  const parse = (args: string[]) => ablateCommand(() => {}).exitOverride().parseAsync(args, { from: 'user' });
  await expect(parse(['--steps', '0', '--out', path.join(dir, 'd')])).rejects.toThrow(/--steps: steps: expected an integer in \[1, /);
  await expect(parse(['--seeds', '1,x', '--out', path.join(dir, 'd')])).rejects.toThrow(/--seeds: seeds: expected a number, got "x"/);
  await expect(parse(['--seeds', '2,2', '--out', path.join(dir, 'd')])).rejects.toThrow(/seeds: expected distinct/);
  expect(fs.existsSync(path.join(dir, 'd'))).toBe(false);
});

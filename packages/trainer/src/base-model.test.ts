import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { missingModelReason, readTokenizerFiles } from './base-model';

// Which directory a location designates (`findModelDir`) is tested in @apertus/model; here, what the
// trainer adds: the reason given when there is none, and the tokenizer files carried into checkpoints.
describe('a run\'s base model', () => {
  test('why nothing was found, and which tokenizer files are carried', () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'modeldir-'));
    fs.mkdirSync(path.join(root, 'empty'));
    expect(missingModelReason(path.join(root, 'empty'), 'hint')).toMatch(/^no model here/);
    expect(missingModelReason(path.join(root, 'nope'), 'pass --model')).toBe('model not found (pass --model)');
    const m = path.join(root, 'plain');
    fs.mkdirSync(m);
    fs.writeFileSync(path.join(m, 'tokenizer.json'), '{"a":1}');
    fs.mkdirSync(path.join(m, 'tokenizer_config.json'));
    expect(readTokenizerFiles(m)).toEqual({ 'tokenizer.json': '{"a":1}' });
    fs.rmSync(root, { recursive: true, force: true });
  });
});

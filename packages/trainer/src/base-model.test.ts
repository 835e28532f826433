import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { findModelDir, isModelDir, missingModelReason, readTokenizerFiles } from './base-model';

function modelDir(dir: string, sharded = false): string {
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'config.json'), '{}');
  fs.writeFileSync(path.join(dir, sharded ? 'model.safetensors.index.json' : 'model.safetensors'), '');
  return dir;
}

describe('finding a run\'s model directory', () => {
  test('a model dir, a finished run, a checkpoints folder and a run in progress', () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'modeldir-'));
    const m = modelDir(path.join(root, 'plain'));
    expect(isModelDir(m)).toBe(true);
    expect(isModelDir(modelDir(path.join(root, 'sharded'), true))).toBe(true);
    expect(findModelDir(m)).toBe(m);
    const finished = path.join(root, 'finished');
    modelDir(path.join(finished, 'model'));
    expect(findModelDir(finished)).toBe(path.join(finished, 'model'));
    const running = path.join(root, 'running');
    modelDir(path.join(running, 'checkpoints', 'step-000004'));
    fs.writeFileSync(path.join(running, 'checkpoints', 'latest'), 'step-000004\n');
    expect(findModelDir(running)).toBe(path.join(running, 'checkpoints', 'step-000004'));
    expect(findModelDir(path.join(running, 'checkpoints'))).toBe(path.join(running, 'checkpoints', 'step-000004'));
    fs.mkdirSync(path.join(root, 'empty'));
    expect(findModelDir(path.join(root, 'empty'))).toBeNull();
    expect(missingModelReason(path.join(root, 'empty'), 'hint')).toMatch(/^no model here/);
    expect(missingModelReason(path.join(root, 'nope'), 'pass --model')).toBe('model not found (pass --model)');
    fs.writeFileSync(path.join(m, 'tokenizer.json'), '{"a":1}');
    fs.mkdirSync(path.join(m, 'tokenizer_config.json'));
    expect(readTokenizerFiles(m)).toEqual({ 'tokenizer.json': '{"a":1}' });
    fs.rmSync(root, { recursive: true, force: true });
  });
});

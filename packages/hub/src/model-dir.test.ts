import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { findModelDir, isModelDir } from './model-dir';

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'model-dir-'));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

function modelDir(dir: string, sharded = false): string {
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'config.json'), '{}');
  fs.writeFileSync(path.join(dir, sharded ? 'model.safetensors.index.json' : 'model.safetensors'), '');
  return dir;
}

describe('findModelDir', () => {
  test('a model directory, a finished run, a checkpoints folder, a run in progress', () => {
    const m = modelDir(path.join(root, 'plain'));
    expect([isModelDir(m), isModelDir(modelDir(path.join(root, 'sharded'), true)), isModelDir(root)]).toEqual([true, true, false]);
    expect(findModelDir(m)).toBe(m);
    const finished = path.join(root, 'finished');
    modelDir(path.join(finished, 'model'));
    expect(findModelDir(finished)).toBe(path.join(finished, 'model'));
    const running = path.join(root, 'running');
    modelDir(path.join(running, 'checkpoints', 'step-000004'));
    modelDir(path.join(running, 'checkpoints', 'step-000002'));
    fs.writeFileSync(path.join(running, 'checkpoints', 'latest'), 'step-000004\n');
    expect(findModelDir(running)).toBe(path.join(running, 'checkpoints', 'step-000004'));
    expect(findModelDir(path.join(running, 'checkpoints'))).toBe(path.join(running, 'checkpoints', 'step-000004'));
  });

  test('nothing there, or a pointer that leaves its folder, is null', () => {
    fs.mkdirSync(path.join(root, 'empty'));
    expect(findModelDir(path.join(root, 'empty'))).toBeNull();
    expect(findModelDir(path.join(root, 'missing'))).toBeNull();
    const sneaky = path.join(root, 'sneaky', 'checkpoints');
    fs.mkdirSync(sneaky, { recursive: true });
    modelDir(path.join(root, 'sneaky', 'outside'));
    fs.writeFileSync(path.join(sneaky, 'latest'), '../outside\n');
    expect(findModelDir(path.join(root, 'sneaky'))).toBeNull();
  });
});

// `--model file.gguf`: a GGUF file (written by @apertus/gguf from a checkpoint directory) serves
// the same completions as the directory it came from.
import path from 'node:path';
import { convertCheckpoint } from '@apertus/gguf';
import { generate } from '@apertus/model';
import { afterAll, describe, expect, test } from 'vitest';
import { loadServedModel } from './load';
import { createServer } from './server';
import { tempDir, writeRandomCheckpoint } from './testing';

const tmp = tempDir();
afterAll(() => tmp.remove());

describe('serving a GGUF file', () => {
  test('loads weights, tokenizer and eos from the file and answers like the HF directory', async () => {
    const dir = writeRandomCheckpoint(tmp.dir, 'tiny', 11, { hidden_size: 64, head_dim: 16 });
    const file = path.join(tmp.dir, 'tiny.F32.gguf');
    convertCheckpoint(dir, file, 'F32');
    // The event loop keeps turning while the file is read (the server answers /health meanwhile).
    let turns = 0;
    let next = setImmediate(function turn() { turns++; next = setImmediate(turn); });
    const loading = loadServedModel(file);
    const turnsBefore = turns;
    const fromGguf = await loading;
    clearImmediate(next);
    expect(turns).toBeGreaterThan(turnsBefore);
    const fromDir = await loadServedModel(dir);
    expect(fromGguf.name).toBe('tiny.F32');
    // The file's EOS is the tokenizer's (tokenizer_config.json: <|assistant_end|>), as llama.cpp's converter writes it.
    expect(fromGguf.generationConfig?.eos_token_id).toBe(68);
    const prompt = fromDir.tokenizer.encodeIds('Hello world');
    expect(fromGguf.tokenizer.encodeIds('Hello world')).toEqual(prompt);
    const a = generate(fromDir.model, prompt, { temperature: 0, maxTokens: 12 }).tokens;
    expect(generate(fromGguf.model, prompt, { temperature: 0, maxTokens: 12 }).tokens).toEqual(a);

    const server = createServer({ model: Promise.resolve(fromGguf), maxBatch: 2, maxQueue: 2 });
    await server.listen(0);
    try {
      const res = await fetch(`${server.url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'tiny.F32', prompt: 'Hello world', max_tokens: 12, temperature: 0 }) });
      const body = await res.json() as { choices: { text: string }[] };
      expect(res.status).toBe(200);
      expect(body.choices[0]!.text).toBe(fromDir.tokenizer.decode(a, { skipSpecialTokens: true }));
    } finally {
      await server.close();
    }
  }, 60_000);
});

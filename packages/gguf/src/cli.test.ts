// `apertus-quantize`: converts a checkpoint directory, reports what it wrote, rejects bad types.
import path from 'node:path';
import { CommanderError } from 'commander';
import { afterAll, describe, expect, it } from 'vitest';
import { runQuantizeCli } from './cli';
import { openGgufFile } from './open';
import { tempDir, writeFixtureCheckpoint } from './fixture.test-helper';

const tmp = tempDir();
afterAll(() => tmp.remove());

describe('apertus-quantize', () => {
  const dir = path.join(tmp.dir, 'hf');
  writeFixtureCheckpoint(dir);

  it('writes the requested mix and reports the tensor counts', async () => {
    const lines: string[] = [];
    const out = await runQuantizeCli([dir, path.join(tmp.dir, 'm.gguf'), '--type', 'q4_k_m'], (l) => lines.push(l));
    const f = openGgufFile(out);
    expect(f.metadata.get('general.file_type')).toBe(15);
    expect(f.info('blk.0.ffn_down.weight').type.name).toBe('Q4_K');
    expect(f.info('blk.1.ffn_down.weight').type.name).toBe('Q6_K');
    expect(f.info('blk.1.ffn_norm.weight').type.name).toBe('F32');
    f.close();
    // rope_freqs + 9 norms F32; the head and layer 1's attn_v and ffn_down Q6_K (use_more_bits: the last eighth of 2 layers), the rest Q4_K.
    expect(lines.join('\n')).toMatch(/m\.gguf: [\d.]+ MiB, 24 tensors \(10 F32, 11 Q4_K, 3 Q6_K\) in [\d.]+ s/);
  });

  it('rejects an unknown type before writing anything', async () => {
    await expect(runQuantizeCli([dir, path.join(tmp.dir, 'x.gguf'), '--type', 'Q3_K'], () => {})).rejects.toThrow(CommanderError);
    expect(() => openGgufFile(path.join(tmp.dir, 'x.gguf'))).toThrow(/cannot open/);
  });
});

// `apertus-quantize`: converts a checkpoint directory, reports what it wrote, rejects bad types.
import path from 'node:path';
import { CliError } from '@apertus/cli';
import { afterAll, describe, expect, it } from 'vitest';
import { runQuantizeCli } from './cli';
import { openGgufFile } from './open';
import { tempDir, writeFixtureCheckpoint } from './fixture.test-helper';

const tmp = tempDir();
afterAll(() => tmp.remove());

describe('apertus-quantize', () => {
  const dir = path.join(tmp.dir, 'hf');
  writeFixtureCheckpoint(dir);

  it('writes the requested type and reports the tensor counts', async () => {
    const lines: string[] = [];
    const out = await runQuantizeCli(['--model', dir, '--out', path.join(tmp.dir, 'm.gguf'), '--type', 'q4_k'], (l) => lines.push(l));
    const f = openGgufFile(out!);
    expect(f.metadata.get('general.file_type')).toBe(14);
    expect(f.info('blk.1.ffn_down.weight').type.name).toBe('Q4_K');
    expect(f.info('blk.1.ffn_norm.weight').type.name).toBe('F32');
    f.close();
    // rope_freqs + 9 norms as F32; embedding, head and 6 matrices per layer as Q4_K.
    expect(lines.join('\n')).toMatch(/m\.gguf: [\d.]+ MiB, 24 tensors \(10 F32, 14 Q4_K\) in [\d.]+ s/);
  });

  it('rejects an unknown type, or a missing --model or --out, before writing anything', async () => {
    await expect(runQuantizeCli(['-m', dir, '-o', path.join(tmp.dir, 'x.gguf'), '--type', 'Q3_K'], () => {})).rejects.toMatchObject({ option: '--type' });
    await expect(runQuantizeCli(['-o', path.join(tmp.dir, 'x.gguf')], () => {})).rejects.toMatchObject({ option: '--model' });
    await expect(runQuantizeCli(['-m', dir], () => {})).rejects.toBeInstanceOf(CliError);
    expect(() => openGgufFile(path.join(tmp.dir, 'x.gguf'))).toThrow(/cannot open/);
  });

  it('still takes the deprecated positional form, with a warning', async () => {
    const warnings: string[] = [];
    const out = await runQuantizeCli([dir, path.join(tmp.dir, 'p.gguf')], () => {}, (w) => warnings.push(w));
    expect(openGgufFile(out!).info('blk.0.attn_q.weight').type.name).toBe('Q8_0');
    expect(warnings).toEqual(['apertus-quantize: warning: positional <model-dir> <out> are deprecated; use --model DIR --out FILE']);
    await expect(runQuantizeCli([dir, path.join(tmp.dir, 'q.gguf'), '--out', 'y.gguf'], () => {}, () => {})).rejects.toMatchObject({ option: '--model' });
  });
});

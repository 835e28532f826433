// `apertus-quantize`: converts a checkpoint directory, reports what it wrote, rejects bad types.
import fs from 'node:fs';
import path from 'node:path';
import { startHubServer } from '@apertus/hub/testing';
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

  it('takes --model forms like the apps: a run directory, a Hub id (downloaded into HF_HUB_CACHE); a GGUF file is refused', async () => {
    const run = path.join(tmp.dir, 'run');
    fs.cpSync(dir, path.join(run, 'tiny'), { recursive: true }); // a checkpoints folder's pointer names it
    fs.writeFileSync(path.join(run, 'latest'), 'tiny');
    const fromRun = await runQuantizeCli([run, path.join(tmp.dir, 'run.gguf'), '--type', 'F32'], () => {});
    const files = Object.fromEntries(fs.readdirSync(dir).map((f) => [f, new Uint8Array(fs.readFileSync(path.join(dir, f)))]));
    const hub = await startHubServer({ repos: { 'acme/tiny': { files } } });
    const saved = { ...process.env };
    process.env.HF_ENDPOINT = hub.url;
    process.env.HF_HUB_CACHE = path.join(tmp.dir, 'hf-cache');
    for (const k of ['HF_TOKEN', 'HUGGING_FACE_HUB_TOKEN', 'HF_TOKEN_PATH', 'HF_HOME', 'HF_HUB_OFFLINE']) delete process.env[k];
    try {
      const fromHub = await runQuantizeCli(['acme/tiny', path.join(tmp.dir, 'hub.gguf'), '--type', 'F32'], () => {});
      // The same file but for general.name: the checkpoint's name (tiny) or the Hub id.
      const [a, b] = [openGgufFile(fromRun), openGgufFile(fromHub)];
      expect([a.metadata.get('general.name'), b.metadata.get('general.name')]).toEqual(['tiny', 'acme/tiny']);
      expect(a.tensors.map((t) => t.name)).toEqual(b.tensors.map((t) => t.name));
      for (const { name } of a.tensors) expect(Buffer.compare(a.read(name), b.read(name)), name).toBe(0);
      a.close();
      b.close();
      await expect(runQuantizeCli([fromHub, path.join(tmp.dir, 'again.gguf')], () => {})).rejects.toThrow(`${fromHub}: is a GGUF file already`);
    } finally {
      process.env = saved;
      await hub.close();
    }
  });

  it('rejects an unknown type before writing anything', async () => {
    await expect(runQuantizeCli([dir, path.join(tmp.dir, 'x.gguf'), '--type', 'Q3_K'], () => {})).rejects.toThrow(CommanderError);
    expect(() => openGgufFile(path.join(tmp.dir, 'x.gguf'))).toThrow(/cannot open/);
  });
});

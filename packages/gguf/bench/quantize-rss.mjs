// Peak RSS of `apertus-quantize` on an 8B-shaped bf16 checkpoint (hidden 4096, FFN 21504, 32/8
// heads, vocabulary 131072; `--layers` of its 32 layers, random weights), written to a temporary
// folder first. The converter streams each tensor from the safetensors files in 16 MiB row blocks,
// so its peak does not grow with the layers: run two layer counts to see it.
//
//   npx turbo run build --filter=@apertus/gguf && node packages/gguf/bench/quantize-rss.mjs [--layers 2,4] [--type Q4_K_M]
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parameterShapes, presetConfig, toHfConfig } from '@apertus/model';
import { writeCheckpoint } from '@apertus/safetensors';
import { Rng, f32ToBf16Bits } from '@apertus/tensor';

const here = path.dirname(fileURLToPath(import.meta.url));
const argv = process.argv.slice(2);
const opt = (name, d) => { const i = argv.indexOf(`--${name}`); return i >= 0 ? argv[i + 1] : d; };
const layerCounts = opt('layers', '2,4').split(',').map(Number);
const type = opt('type', 'Q4_K_M');
const cli = path.join(here, '../bin/apertus-quantize.js');

// A pool of 2^20 bf16 values of N(0, 0.02²), repeated to fill each tensor (fast, no NaN; the converter's memory does not depend on the values).
const rng = new Rng(5), pool = Uint16Array.from({ length: 1 << 20 }, () => f32ToBf16Bits(0.02 * rng.normal()));
function randomBf16(n) {
  const out = new Uint16Array(n);
  for (let i = 0; i < n; i += pool.length) out.set(pool.subarray(0, Math.min(pool.length, n - i)), i);
  return out;
}

for (const L of layerCounts) {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'apertus-quantize-rss-'));
  try {
    const c = presetConfig('apertus-8b', { num_hidden_layers: L }), dir = path.join(tmp, 'model');
    const entries = [...parameterShapes(c)].map(([name, shape]) => [name, shape.length === 2
      ? { dtype: 'BF16', shape, data: randomBf16(shape[0] * shape[1]) }
      : { dtype: 'F32', shape, data: new Float32Array(shape.reduce((a, b) => a * b, 1)).fill(name.includes('norm') ? 1 : 0.5) }]);
    writeCheckpoint(dir, entries, { metadata: { format: 'pt' } });
    fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify(toHfConfig(c), null, 2));
    const bytes = fs.readdirSync(dir).reduce((a, f) => a + fs.statSync(path.join(dir, f)).size, 0);
    const out = path.join(tmp, `m.${type}.gguf`);
    const t0 = performance.now();
    const r = spawnSync('/usr/bin/time', ['-v', process.execPath, cli, '--model', dir, '--out', out, '--type', type], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`apertus-quantize failed: ${r.stderr.slice(-2000)}`);
    const rss = Number(/Maximum resident set size \(kbytes\): (\d+)/.exec(r.stderr)?.[1]) * 1024;
    console.log(JSON.stringify({ case: `8B-shaped, ${L} layers, bf16 → ${type}`, checkpointGB: +(bytes / 1e9).toFixed(2), ggufGB: +(fs.statSync(out).size / 1e9).toFixed(2), peakRssGiB: +(rss / 2 ** 30).toFixed(2), seconds: +((performance.now() - t0) / 1000).toFixed(1) }));
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

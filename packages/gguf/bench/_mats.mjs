import fs from 'node:fs'; import os from 'node:os'; import path from 'node:path';
import { ApertusModel, presetConfig } from '@apertus/model';
import { loadGguf, writeModelGguf, QuantMatrix } from '@apertus/gguf';
const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1e3; };
const type = process.argv[2] ?? 'Q4_K';
const config = presetConfig('small'); const file = path.join(os.tmpdir(), `mats-${type}.gguf`);
writeModelGguf(ApertusModel.init(config, 0), file, { type });
const { model } = loadGguf(file, { tokenizer: false }); fs.rmSync(file);
const seen = new Map();
const matmulT = QuantMatrix.prototype.matmulT;
QuantMatrix.prototype.matmulT = function (x, M, y) { if (!seen.has(this)) seen.set(this, 0); seen.set(this, seen.get(this) + 1); return matmulT.call(this, x, M, y); };
import { KVCache, step } from '@apertus/model';
const cache = new KVCache(config, 64);
step(model, [{ cache, tokens: [5] }]);
QuantMatrix.prototype.matmulT = matmulT;
const byShape = new Map();
for (const [m, c] of seen) {
  const [N, K] = m.shape, x = Float32Array.from({ length: K }, (_, k) => Math.sin(k)), y = new Float32Array(N);
  const R = Math.max(5, Math.ceil(2e7 / (N * K)));
  m.matmulT(x, 1, y); const t = cpu(); for (let r = 0; r < R; r++) m.matmulT(x, 1, y);
  const ms = (cpu() - t) / R, key = `${m.format} [${N}, ${K}]`;
  const e = byShape.get(key) ?? { n: 0, ms: 0, nsPer32: 0 }; e.n += c; e.ms += ms * c; e.nsPer32 = ms * 1e6 / (N * K / 32); byShape.set(key, e);
}
for (const [k, e] of byShape) console.log(k, 'calls', e.n, 'ms/token', e.ms.toFixed(3), 'ns/32', e.nsPer32.toFixed(2));

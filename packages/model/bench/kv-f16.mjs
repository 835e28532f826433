// Decode attention of one token at a long context over an f32 and an f16 KV cache (the `small`
// shapes: 12 layers, 12 query / 4 kv heads of 64), alternating rounds, CPU time: what the f16
// cache saves of a decoding step's attention. `node packages/model/bench/kv-f16.mjs [context] [rounds]`
import { execSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { KVBlockPool, KVCache, presetConfig } from '@apertus/model';
import { Tensor, pagedAttention } from '@apertus/tensor';

const S = Number(process.argv[2] ?? 2048), rounds = Number(process.argv[3] ?? 5);
const config = presetConfig('small');
const { num_hidden_layers: L, num_attention_heads: nh, num_key_value_heads: nkv, head_dim: d } = config;
const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1e6; };
function cacheOf(dtype) {
  const cache = new KVCache(config, S + 1, new KVBlockPool(config, { dtype }));
  const rows = Float32Array.from({ length: S * nkv * d }, (_, i) => Math.sin(i * 0.37));
  for (let l = 0; l < L; l++) cache.update(l, rows, rows);
  cache.advance(S - 1);
  return cache;
}
const caches = { f32: cacheOf('f32'), f16: cacheOf('f16') };
const q = Tensor.from(Float32Array.from({ length: nh * d }, (_, i) => Math.cos(i)), [1, 1, nh, d]);
function stepMs(cache) {
  const t0 = cpu();
  let n = 0;
  while (cpu() - t0 < 1) {
    for (let l = 0; l < L; l++) {
      const kv = cache.update(l, new Float32Array(0), new Float32Array(0));
      pagedAttention(q, { ...kv, length: S }, { qOffset: S - 1 }).dispose();
    }
    n++;
  }
  return ((cpu() - t0) / n) * 1000;
}
const times = { f32: [], f16: [] };
for (let r = 0; r < rounds; r++) for (const k of ['f32', 'f16']) times[k].push(stepMs(caches[k]));
const med = (a) => [...a].sort((x, y) => x - y)[a.length >> 1];
const model = execSync("lscpu | grep 'Model name' | sed 's/.*: *//'").toString().trim();
console.log(`attention of one decoding step, small, context ${S}, 12 layers (CPU ms, medians of ${rounds}): f32 cache ${med(times.f32).toFixed(2)} (${caches.f32.bytes / 2 ** 20} MiB), f16 cache ${med(times.f16).toFixed(2)} (${caches.f16.bytes / 2 ** 20} MiB): ${(med(times.f32) / med(times.f16)).toFixed(2)}×; ${model}; load ${loadavg()[0].toFixed(1)}`);

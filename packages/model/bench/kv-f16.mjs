// Decode attention of one token at a long context over an f32 and an f16 KV cache (the `small`
// shapes: 12 layers, 12 query / 4 kv heads of 64), alternating rounds, CPU time: what the f16
// cache saves of a decoding step's attention. `node packages/model/bench/kv-f16.mjs [context] [rounds]`
import { loadavg } from 'node:os';
import { cpuDescription, writeRecords } from '@apertus/bench';
import { KVBlockPool, KVCache, presetConfig } from '@apertus/model';
import { Tensor, pagedAttention } from '@apertus/tensor';

const pos = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const S = Number(pos[0] ?? 2048), rounds = Number(pos[1] ?? 5);
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
const times = { f32: [], f16: [] }, load = [];
for (let r = 0; r < rounds; r++) { load.push(loadavg()[0]); for (const k of ['f32', 'f16']) times[k].push(stepMs(caches[k])); }
const med = (a) => [...a].sort((x, y) => x - y)[a.length >> 1];
const f32 = med(times.f32), f16 = med(times.f16), MiB = (c) => c.bytes / 2 ** 20;
const figure = `attention of one decoding step, ${L} layers: f32 cache ${f32.toFixed(2)} ms (${MiB(caches.f32)} MiB), f16 cache ${f16.toFixed(2)} ms (${MiB(caches.f16)} MiB) (CPU time, medians of ${rounds})`;
console.log(`${figure}: f16 speed ${(f32 / f16).toFixed(2)}× the f32 cache's; ${cpuDescription()}; load ${Math.min(...load).toFixed(1)}–${Math.max(...load).toFixed(1)}`);
if (process.argv.includes('--write')) {
  console.log(`wrote ${writeRecords('kv-f16', [{
    id: `kv-f16-small-${S}`, target: `f16 KV cache, small, context ${S}: half the memory, decoding attention at least as fast as over the f32 cache (#29)`, status: f16 <= f32 ? 'met' : 'not met',
    figure, ratio: `${(f32 / f16).toFixed(2)}× the f32 cache's speed`, machine: cpuDescription(),
    load: `${Math.min(...load).toFixed(1)}–${Math.max(...load).toFixed(1)}`, command: `node packages/model/bench/kv-f16.mjs ${S} ${rounds} --write`, date: new Date().toISOString().slice(0, 10),
  }])}`);
}

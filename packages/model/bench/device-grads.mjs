// Per-parameter gradients of the tiny architecture, one forward and backward on backend cpu (with
// xIELU's forward in WebAssembly SIMD, and with the float64 reference) and on backend webgpu:
// prints, per parameter, max |g − g_cpu| / max |g_cpu|. Needs the built packages (`npm run build`)
// and, without a GPU, VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json.
//
//   node packages/model/bench/device-grads.mjs [--layers 4] [--batch 2] [--seq 32]
import { ApertusModel, presetConfig } from '@apertus/model';
import { backward, resetKernels, Rng, selectKernels, Tensor, useDevice } from '@apertus/tensor';

const arg = (name, dflt) => { const i = process.argv.indexOf(`--${name}`); return i < 0 ? dflt : Number(process.argv[i + 1]); };
const layers = arg('layers', 4), B = arg('batch', 2), T = arg('seq', 32);
const config = presetConfig('tiny', { vocab_size: 1400, num_hidden_layers: layers });
const r = new Rng(7);
const ids = Tensor.ints(Array.from({ length: B * T }, () => Math.floor(r.uniform() * config.vocab_size)), [B, T]);
const targets = Tensor.ints(Array.from({ length: B * T }, () => Math.floor(r.uniform() * config.vocab_size)), [B, T]);

function grads() {
  const model = ApertusModel.init(config, 28);
  const loss = model.loss(ids, targets);
  backward(loss);
  return { loss: loss.item(), grads: new Map(model.parameters().map(([n, t]) => [n, Float32Array.from(t.grad.data)])) };
}

const runs = {};
await useDevice('cpu');
runs['cpu (SIMD xIELU)'] = grads();
selectKernels('reference', ['xielu', 'xieluBackward']);
runs['cpu (reference xIELU)'] = grads();
resetKernels();
await useDevice('webgpu');
runs.webgpu = grads();
await useDevice('cpu');

const base = runs['cpu (SIMD xIELU)'];
const names = Object.keys(runs).slice(1);
console.log(`tiny, ${layers} layers, batch ${B}×${T}; loss ${Object.entries(runs).map(([k, v]) => `${k} ${v.loss}`).join(', ')}`);
console.log(['parameter', ...names].join('\t'));
let worst = Object.fromEntries(names.map((k) => [k, 0]));
for (const [name, g0] of base.grads) {
  let m0 = 0;
  for (const v of g0) m0 = Math.max(m0, Math.abs(v));
  const cols = names.map((k) => {
    const g = runs[k].grads.get(name);
    let d = 0;
    for (let i = 0; i < g.length; i++) d = Math.max(d, Math.abs(g[i] - g0[i]));
    const rel = m0 > 0 ? d / m0 : d;
    worst[k] = Math.max(worst[k], rel);
    return rel.toExponential(2);
  });
  console.log([name, ...cols].join('\t'));
}
console.log(['worst', ...names.map((k) => worst[k].toExponential(2))].join('\t'));

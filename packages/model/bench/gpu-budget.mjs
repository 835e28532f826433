// The webgpu decode budgets from the device's counters, one JSON line per case, on whatever adapter
// the device finds (SwiftShader on a machine without a GPU: its times are never GPU figures, so
// none are printed). The counters count what the host asks of the device — uploads, readbacks,
// dispatches, pipeline builds — and hold on any adapter; webgpu-decode.test.ts asserts them.
//
//   node tooling/bench/src/run.mjs gpu-budget [--write]   (or: node packages/model/bench/gpu-budget.mjs; npm run bench:gpu)
//
// Steady state: the mean over decode steps 3…N (the prefill and the first single-token step build
// their pipelines and upload the weights).
import os from 'node:os';
import { ApertusModel, KVCache, presetConfig, stepLogits } from '@apertus/model';
import { loadRange, writeRecords } from '@apertus/bench';
import { SWIFTSHADER_ICD, sampleTokens, traceWebgpu, useDevice } from '@apertus/tensor';

process.env.VK_ICD_FILENAMES ??= SWIFTSHADER_ICD;
const loadBefore = os.loadavg()[0], records = [];
const GREEDY = [{ temperature: 0, topK: 0, topP: 1, minP: 0, u: 0 }];

const cases = [
  { name: 'tiny decode', config: presetConfig('tiny'), steps: 12 },
  { name: 'small decode', config: presetConfig('small'), steps: 8 },
];

const { adapter } = await useDevice('webgpu');
for (const c of cases) {
  const model = ApertusModel.init(c.config, 1);
  const cache = new KVCache(c.config, c.steps + 8);
  const steady = [];
  let input = [1, 2, 3, 4];
  for (let i = 0; i < c.steps; i++) {
    const { result, counters } = traceWebgpu(() => {
      const logits = stepLogits(model, [{ cache, tokens: input }]);
      try { return sampleTokens(logits, GREEDY)[0]; } finally { logits.dispose(); }
    });
    if (i >= 2) steady.push(counters);
    input = [result];
  }
  const mean = (k) => steady.reduce((a, s) => a + s[k], 0) / steady.length;
  const line = {
    case: c.name, layers: c.config.num_hidden_layers, uploadBytesPerToken: mean('uploadBytes'), uploadsPerToken: mean('uploads'),
    readbacksPerToken: mean('readbacks'), readbackBytesPerToken: mean('readbackBytes'), dispatchesPerToken: mean('dispatches'),
    pipelineBuildsSteady: steady.reduce((a, s) => a + s.pipelineBuilds, 0), adapter,
    ...(/swiftshader/i.test(String(adapter)) ? { note: 'SwiftShader: a correctness-only adapter, counters only (no speed figure)' } : {}),
  };
  console.log(JSON.stringify(line));
  records.push({
    id: `gpu-budget-${c.name.split(' ')[0]}`,
    target: `${c.name} on webgpu, steady state: uploads only token ids, positions, parameters (no weight, no KV), one readback, no pipeline build (#28)`,
    status: line.readbacksPerToken === 1 && line.pipelineBuildsSteady === 0 && line.uploadBytesPerToken < 1024 ? 'met' : 'not met',
    figure: `${line.uploadBytesPerToken.toFixed(0)} B up (${line.uploadsPerToken.toFixed(1)} writes), ${line.readbacksPerToken} readback of ${line.readbackBytesPerToken} B, ${line.dispatchesPerToken.toFixed(0)} dispatches (${c.config.num_hidden_layers} layers), ${line.pipelineBuildsSteady} pipeline builds per token; adapter ${adapter}`,
    ratio: null,
    load: loadRange(loadBefore),
  });
}
if (process.argv.includes('--write')) console.log(`wrote ${writeRecords('gpu-budget', records)}`);
process.exit(0);

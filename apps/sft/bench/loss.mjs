// SFT step cost: the fused LM-head loss (`model.loss`, what apertus-sft uses) against the peer
// `forward` + `crossEntropy` (`@apertus/trainer`'s causalLmLoss), on the same left-padded micro-batch
// of the bundled task: forward + backward time per step, and the two loss values (must agree).
// Run after a build:  node apps/sft/bench/loss.mjs [--quick] [--write] [--model runs/udhr-tiny]
// --write puts the figure into tooling/bench/results/sft.json (then `npm run bench:page`).
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { loadAverage, loadRange, writeRecords } from '@apertus/bench';
import { ApertusModel, loadCheckpoint, presetConfig } from '@apertus/model';
import { buildUdhrTranslationTask, collateSft, tokenizeSftDataset } from '@apertus/posttrain';
import { backward } from '@apertus/tensor';
import { createApertusTokenizer, loadTokenizerFromDirectory } from '@apertus/tokenizer';
import { lmBatchOfSft, sftLoss } from '@apertus/recipes';
import { causalLmLoss, resolveModelDir } from '@apertus/trainer';

const args = process.argv.slice(2);
const loadStart = loadAverage();
const quick = args.includes('--quick');
const modelArg = args.includes('--model') ? args[args.indexOf('--model') + 1] : 'runs/udhr-tiny';
let model, tokenizer, source;
try {
  const dir = resolveModelDir(modelArg);
  model = loadCheckpoint(dir, { precision: 'f32' }).model;
  tokenizer = loadTokenizerFromDirectory(dir);
  source = dir;
} catch {
  tokenizer = createApertusTokenizer();
  model = ApertusModel.init(presetConfig('tiny', { vocab_size: tokenizer.vocabSize }), 1);
  source = `tiny preset, random weights, vocab ${tokenizer.vocabSize}`;
}
const task = await buildUdhrTranslationTask({ languages: ['deu_1996', 'gsw1', 'ita', 'roh_rumgr'], maxExamples: 8, seed: 0 });
const { examples } = await tokenizeSftDataset(tokenizer, task.train, { maxLength: 512, date: '2025-09-01' });
const batch = lmBatchOfSft(collateSft(examples.slice(0, 8), { padId: 3 }));
const params = model.parameters();
const variants = {
  'fused model.loss (apertus-sft)': (b) => sftLoss(model, b, b.keptTokens),
  'forward + crossEntropy (peer)': (b) => causalLmLoss(model, b, { normalizer: b.keptTokens }),
};
const reps = quick ? 2 : 6;
const rows = [];
for (const [name, loss] of Object.entries(variants)) {
  const step = () => {
    for (const [, p] of params) p.zeroGrad();
    const l = loss(batch);
    backward(l);
    return l.item();
  };
  step(); // warm-up
  let value = 0;
  const t0 = performance.now();
  for (let i = 0; i < reps; i++) value = step();
  const ms = (performance.now() - t0) / reps;
  rows.push({ name, ms, value });
}
const tokens = batch.batchSize * batch.seqLength;
const lines = [
  `SFT micro-batch: ${batch.batchSize} × ${batch.seqLength} tokens (${batch.keptTokens} supervised), model ${source}, ${model.config.num_hidden_layers} layers × ${model.config.hidden_size}, vocab ${model.config.vocab_size}; ${reps} steps each, ${os.cpus().length} cores, load average ${os.loadavg()[0].toFixed(1)}`,
  '',
  '| loss | ms / step (fwd+bwd) | tokens/s | loss value |',
  '|---|---:|---:|---:|',
  ...rows.map((r) => `| ${r.name} | ${r.ms.toFixed(0)} | ${(tokens / (r.ms / 1000)).toFixed(0)} | ${r.value.toFixed(6)} |`),
  '',
  `fused / peer time ratio: ${(rows[0].ms / rows[1].ms).toFixed(2)}`,
];
console.log(lines.join('\n'));
if (args.includes('--write')) {
  const [fused, peer] = rows;
  console.log(`wrote ${writeRecords('sft', [{
    id: 'sft-fused-loss',
    target: `SFT micro-batch (${batch.batchSize} × ${batch.seqLength} tokens, ${source}): fused LM-head loss (apertus-sft) against forward + cross-entropy`,
    figure: `${fused.ms.toFixed(0)} ms a step (forward + backward) against ${peer.ms.toFixed(0)} ms; loss values ${fused.value.toFixed(6)} and ${peer.value.toFixed(6)}`,
    ratio: `${(peer.ms / fused.ms).toFixed(2)}×`,
    load: loadRange(loadStart),
  }])}`);
}

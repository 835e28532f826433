// apertus-pretrain: the command line. `apertus-pretrain [options]` trains (or resumes) a model;
// `apertus-pretrain goldfish [options]` runs the Goldfish memorization experiment;
// `apertus-pretrain ablate [options]` the paper's ablations in miniature.

import { writeFileAtomic } from '@apertus/atomic-file';
import { PRETRAIN_DEFAULTS, PRETRAIN_SCHEMA, resolvePretrainConfig, runGoldfishExperiment, runPretraining, type RecallSummary } from '@apertus/recipes';
import { runTrainingCli } from '@apertus/trainer';
import { ablateCommand } from './ablate';

async function goldfish(opts: Record<string, string | undefined>): Promise<number> {
  const num = (k: string): { [key: string]: number } => (opts[k] === undefined ? {} : { [k === 'k' ? 'goldfishK' : k === 'h' ? 'goldfishH' : k]: Number(opts[k]) });
  const t0 = performance.now();
  const result = await runGoldfishExperiment({
    ...num('documents'),
    ...num('steps'),
    ...num('k'),
    ...num('h'),
    ...num('seed'),
    ...num('lr'),
    ...(opts.language !== undefined ? { language: opts.language } : {}),
    ...(opts.out !== undefined ? { out: opts.out } : {}),
  });
  const s = result.settings;
  const row = (name: string, r: RecallSummary): string =>
    `| ${name} | ${r.exactMatches}/${s.documents} (${(100 * r.exactMatchRate).toFixed(0)}%) | ${r.meanLcsNorm.toFixed(3)} | ${r.meanRougeL.toFixed(3)} | ${r.finalLoss.toFixed(4)} | ${(100 * r.droppedFraction).toFixed(1)}% |`;
  const lines = [
    `Goldfish experiment: ${s.documents} UDHR "${s.language}" documents (≤ ${s.maxTokens} tokens), ${s.steps} epochs, ` +
      `${s.model.num_hidden_layers} layers × hidden ${s.model.hidden_size}, vocab ${s.model.vocab_size}; Goldfish k=${s.goldfishK}, h=${s.goldfishH}; ` +
      `greedy recall of the last ${s.holdout} tokens`,
    '',
    '| loss | exact match | mean LCS / 50 | Rouge-L | final train loss | targets dropped |',
    '|---|---|---|---|---|---|',
    row('standard', result.standard),
    row(`goldfish k=${s.goldfishK}`, result.goldfish),
    '',
    `(${((performance.now() - t0) / 1000).toFixed(0)} s)`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  if (opts.json !== undefined) writeFileAtomic(opts.json, `${JSON.stringify(result, null, 2)}\n`);
  return 0;
}

void runTrainingCli({
  name: 'apertus-pretrain',
  description: 'Pretrain an Apertus model: tokenizer, compliant packed data, Goldfish loss, AdEMAMix, WSD, resumable checkpoints.\nDefaults train the tiny preset on the bundled UDHR corpus in a few minutes.',
  schema: PRETRAIN_SCHEMA,
  defaults: PRETRAIN_DEFAULTS,
  resolve: (layers) => resolvePretrainConfig(layers).config,
  run: (config, control) => runPretraining(config, control),
  commands: (program, exit) => {
    program
      .command('goldfish')
      .description('Goldfish memorization experiment: standard vs Goldfish loss on a handful of UDHR documents, many epochs, verbatim recall of the last 50 tokens')
      .option('--documents <n>', 'documents to memorise (default 8)')
      .option('--steps <n>', 'epochs (default 160)')
      .option('--k <n>', 'Goldfish k (default 4)')
      .option('--h <n>', 'Goldfish h (default 13)')
      .option('--lr <x>', 'learning rate (default 3e-3)')
      .option('--seed <n>', 'seed (default 28)')
      .option('--language <code>', 'UDHR declaration (default eng)')
      .option('--out <dir>', 'run directories of the two trainings (default runs/goldfish)')
      .option('--json <file>', 'also write the full results as JSON')
      .action(async (opts: Record<string, string | undefined>) => exit(await goldfish(opts)));
    program.addCommand(ablateCommand(exit));
  },
});

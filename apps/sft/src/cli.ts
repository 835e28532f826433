// apertus-sft: the command line. `apertus-sft [options]` fine-tunes (or resumes) a model.

import { PosttrainError } from '@apertus/posttrain';
import { chrfSummary, runTrainingCli } from '@apertus/trainer';
import { DEFAULT_CONFIG, SCHEMA, resolveConfig } from './config';
import { runSft } from './sft';

void runTrainingCli({
  name: 'apertus-sft',
  description:
    'Supervised fine-tuning of an Apertus checkpoint on chat conversations: Apertus chat template, loss on assistant tokens only, left padding, AdEMAMix, linear decay, resumable checkpoints.\n' +
    'Defaults fine-tune the apertus-pretrain run in runs/udhr-tiny on the bundled UDHR translation task (German → Romansh held out) in a few minutes.',
  schema: SCHEMA,
  defaults: DEFAULT_CONFIG,
  resolve: (layers) => resolveConfig(layers).config,
  run: (config, control) => runSft(config, control),
  summary: (result) => chrfSummary(result.metrics),
  usageError: (e) => e instanceof PosttrainError && e.code === 'MissingLanguage',
});

// apertus-sft: the command line. `apertus-sft [options]` fine-tunes (or resumes) a model.

import { PosttrainError } from '@apertus/posttrain';
import { SFT_DEFAULTS, SFT_SCHEMA, chrfSummary, resolveSftConfig, runSft } from '@apertus/recipes';
import { runTrainingCli } from '@apertus/trainer';

void runTrainingCli({
  name: 'apertus-sft',
  description:
    'Supervised fine-tuning of an Apertus checkpoint on chat conversations: Apertus chat template, loss on assistant tokens only, left padding, AdEMAMix, linear decay, resumable checkpoints.\n' +
    'Defaults fine-tune the apertus-pretrain run in runs/udhr-tiny on the bundled UDHR translation task (German → Romansh held out) in a few minutes.',
  schema: SFT_SCHEMA,
  defaults: SFT_DEFAULTS,
  resolve: (layers) => resolveSftConfig(layers).config,
  run: (config, control) => runSft(config, control),
  summary: (result) => chrfSummary(result.metrics),
  usageError: (e) => e instanceof PosttrainError && e.code === 'MissingLanguage',
});

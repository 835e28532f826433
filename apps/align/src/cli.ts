// apertus-align: the command line. `apertus-align [options]` aligns (or resumes aligning) an SFT model.

import { PosttrainError, dataFiles } from '@apertus/posttrain';
import { ALIGN_DEFAULTS, ALIGN_SCHEMA, chrfSummary, resolveAlignConfig, runAlignment } from '@apertus/recipes';
import { runTrainingCli } from '@apertus/trainer';

void runTrainingCli({
  name: 'apertus-align',
  description:
    'Offline alignment of an SFT checkpoint: sample reference completions, score them with a reward, quantile rewards, chosen/rejected pairs, precomputed reference log-probs, then QRPO (Apertus length-normalised by default, CLAIRE form available) or DPO.\n' +
    'Defaults align the apertus-sft run in runs/sft-udhr with QRPO and the chrF reward on the bundled UDHR translation prompts in a few minutes.',
  schema: ALIGN_SCHEMA,
  defaults: ALIGN_DEFAULTS,
  resolve: (layers) => resolveAlignConfig(layers).config,
  run: async (config, control) => Object.assign(await runAlignment(config, control), { pairs: dataFiles(config.out).pairs }),
  summary: (result) => [...chrfSummary(result.metrics), `  pairs       ${result.pairs}`],
  usageError: (e) => e instanceof PosttrainError && e.code === 'MissingLanguage',
});

// `apertus-pretrain ablate`: the flags of @apertus/recipes' runAblation.

import { Command } from 'commander';
import { DEFAULT_GOLDFISH, ablationMarkdown, runAblation } from '@apertus/recipes';
import { ConfigField, readConfigLayer } from '@apertus/trainer';

/**
 * The `apertus-pretrain ablate` subcommand; `done` receives the exit status. Prints progress to
 * stderr and the Markdown table to stdout.
 */
export function ablateCommand(done: (code: number) => void): Command {
  return new Command('ablate')
    .description("The paper's ablations in miniature: SwiGLU vs xIELU MLP × AdamW vs AdEMAMix, matched runs over several seeds on the bundled corpus, plus the Goldfish experiment; writes ablation.md, ablation.json and ablation.html")
    .option('--out <dir>', 'output directory (default runs/ablation)')
    .option('--seeds <list>', 'comma-separated seeds (default 1,2,3)')
    .option('--steps <n>', 'optimizer steps per run (default 100)')
    .option('--eval-interval <n>', 'validation every n steps (default 20)')
    .option('--config <file>', 'pretraining settings shared by every run (a pretraining JSON config file)')
    .option('--goldfish-result <file>', "reuse a result of 'apertus-pretrain goldfish --json' instead of running the experiment")
    .option('--no-goldfish', 'leave the Goldfish experiment out')
    .option('--keep-runs', "keep every run's checkpoints and final model")
    .action(async (opts: Record<string, unknown>) => {
      const field = (key: string) => new ConfigField(key, 'flags');
      const seeds = opts.seeds === undefined ? undefined : field('seeds').list(opts.seeds).map((x) => field('seeds').int(x, 0, 2 ** 32 - 1));
      const result = await runAblation({
        ...(typeof opts.out === 'string' ? { out: opts.out } : {}),
        ...(seeds ? { seeds } : {}),
        ...(opts.steps !== undefined ? { steps: field('steps').int(opts.steps, 1) } : {}),
        ...(opts.evalInterval !== undefined ? { evalInterval: field('evalInterval').int(opts.evalInterval, 1) } : {}),
        ...(typeof opts.config === 'string' ? { base: readConfigLayer(opts.config).values } : {}),
        goldfish: opts.goldfish === false ? false : typeof opts.goldfishResult === 'string' ? { resultFile: opts.goldfishResult } : DEFAULT_GOLDFISH,
        keepRuns: opts.keepRuns === true,
        log: (m) => process.stderr.write(`${m}\n`),
      });
      process.stdout.write(`${ablationMarkdown(result)}\n  table  ${result.files.markdown}\n  json   ${result.files.json}\n  plot   ${result.files.plot}\n`);
      done(0);
    });
}

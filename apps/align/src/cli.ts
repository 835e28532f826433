// apertus-align: the command line. `apertus-align [options]` aligns (or resumes aligning) an SFT model.

import { Command, Option } from 'commander';
import { DataError } from '@apertus/data';
import { ModelError } from '@apertus/model';
import { PosttrainError } from '@apertus/posttrain';
import { TokenizerError } from '@apertus/tokenizer';
import { TrainerError } from '@apertus/trainer';
import { readConfigFile, resolveConfig, type ConfigLayer, type RawConfig } from './config';
import { AlignConfigError, AlignError, AlignInterruptedError } from './errors';
import { checkpointConfig, runAlignment } from './align';

function program(): Command {
  return new Command('apertus-align')
    .description(
      'Offline alignment of an SFT checkpoint: sample reference completions, score them with a reward, quantile rewards, chosen/rejected pairs, precomputed reference log-probs, then QRPO (Apertus length-normalised by default, CLAIRE form available) or DPO.\n' +
        'Defaults align the apertus-sft run in runs/sft-udhr with QRPO and the chrF reward on the bundled UDHR translation prompts in a few minutes.',
    )
    .option('--config <file>', 'JSON config file (keys as below in camelCase); flags override it')
    .option('--out <dir>', 'output directory (default runs/align-udhr)')
    .option('--resume', 'continue from the latest checkpoint in --out')
    .option('--overwrite', 'discard checkpoints already in --out and start again (prepared data is reused when it matches)')
    .option('--model <dir>', 'SFT model (policy init and frozen reference): HF model dir, checkpoints dir, or run dir (default runs/sft-udhr)')
    .addOption(new Option('--loss <name>', 'qrpo (default) or dpo').choices(['qrpo', 'dpo']))
    .addOption(new Option('--qrpo-variant <form>', 'apertus (length-normalised β, default) or claire').choices(['apertus', 'claire']))
    .option('--beta <x>', 'β (default 5 for the Apertus forms, 0.1 for CLAIRE QRPO and plain DPO)')
    .addOption(new Option('--transform <f>', 'CLAIRE QRPO reward transform (default identity)').choices(['identity', 'log', 'normal-icdf']))
    .addOption(new Option('--loss-type <t>', 'QRPO regression loss (default mse)').choices(['mse', 'mae']))
    .option('--normalize-by-length', 'divide each completion loss by its length')
    .option('--no-normalize-by-length', 'do not (default)')
    .option('--dpo-length-normalized', 'DPO with β_w = β/|y_w|, β_l = β/|y_l| (Apertus baseline, default)')
    .option('--no-dpo-length-normalized', 'DPO with a fixed β')
    .option('--prompts <source>', '"udhr" (bundled translation prompts, default) or a .jsonl file of {"prompt"|"messages", "reference"?, "completions"?}')
    .option('--languages <list>', 'UDHR declarations of the translation prompts, comma-separated')
    .option('--num-prompts <n>', 'prompts used (default 96)')
    .option('--max-chars <n>', 'longest UDHR article used, in characters (default 400)')
    .option('--seed <n>', 'seed of the prompts, samples, pair selection and data order (default 1)')
    .option('--num-references <n>', 'reference completions sampled per prompt (default 6)')
    .option('--sample-temperature <x>', 'temperature of the reference completions (default 1)')
    .option('--sample-max-tokens <n>', 'most tokens per reference completion (default 160)')
    .option('--sample-batch-size <n>', 'prompts generated together (default 16)')
    .option('--include-offline', "add the dataset's own completion to the candidates (default)")
    .option('--no-include-offline', 'candidates are the sampled completions only')
    .option('--reward <spec>', 'chrf (default), an http(s):// URL, model:<dir> or js:<module file>')
    .option('--num-pairs <n>', 'pairs selected per prompt (default 1)')
    .option('--max-length <n>', 'longest prompt + completion in tokens (default 512)')
    .option('--date <YYYY-MM-DD>', 'date in the default system prompt (default 2025-09-01)')
    .option('--micro-batch-size <n>', 'pairs per micro-batch (default 4)')
    .option('--grad-accumulation <n>', 'micro-batches per optimizer step (default 2)')
    .option('--epochs <n>', 'passes over the pairs when --steps is "none" (default 1)')
    .option('--steps <n>', 'optimizer steps, or "none" for --epochs passes (default)')
    .addOption(new Option('--optimizer <name>', 'adamw (default) or ademamix').choices(['adamw', 'ademamix']))
    .option('--lr <x>', 'peak learning rate (default 3e-4)')
    .option('--warmup-ratio <x>', 'linear warm-up as a fraction of the steps (default 0.1)')
    .option('--betas <b1,b2,b3>', 'optimizer betas (default 0.9,0.999,0.9999)')
    .option('--alpha <x>', 'AdEMAMix alpha (default 5)')
    .option('--weight-decay <x>', 'decoupled weight decay (default 0)')
    .option('--eps <x>', 'optimizer epsilon (default 1e-8)')
    .option('--clip <x>', 'global gradient-norm clipping, 0 = off (default 20)')
    .option('--eval-interval <n>', 'held-out reference loss every n steps, 0 = start and end only (default 0)')
    .option('--eval-translation', 'held-out chrF/BLEU at the start and the end (default)')
    .option('--no-eval-translation', 'skip the held-out translations')
    .option('--eval-max-tokens <n>', 'most tokens per held-out translation (default 160)')
    .option('--checkpoint-interval <n>', 'checkpoint every n steps, 0 = end only (default 4)')
    .option('--keep-checkpoints <n>', 'checkpoints kept on disk, 0 = all (default 3)')
    .addOption(new Option('--save-dtype <dtype>', 'weights of the final model/ (default f32)').choices(['f32', 'bf16']))
    .option('--threads <n>', 'GEMM threads (default: all cores)')
    .addOption(new Option('--progress <mode>', 'progress display (default auto)').choices(['auto', 'bar', 'lines', 'off']))
    .option('--lora <json>', 'LoRA on the policy (reference = base without the adapter): PEFT LoraConfig fields, e.g. \'{"r":8,"lora_alpha":16,"target_modules":"all-linear"}\' (default none)');
}

/** Config-layer values from parsed flags (commander's camelCase names are the config keys). */
function flagLayer(opts: Record<string, unknown>): ConfigLayer {
  const { config: _file, resume: _resume, overwrite: _overwrite, ...rest } = opts;
  return { source: 'flags', values: rest as RawConfig };
}

async function train(opts: Record<string, unknown>): Promise<number> {
  const fileLayer = typeof opts.config === 'string' ? readConfigFile(opts.config) : null;
  const flags = flagLayer(opts);
  const layers: ConfigLayer[] = [];
  if (opts.resume) {
    const out = (flags.values.out ?? fileLayer?.values.out ?? resolveConfig([]).config.out) as string;
    const saved = checkpointConfig(out);
    if (saved) layers.push({ source: `${saved.dir}/trainer_state.json`, values: saved.config });
  }
  if (fileLayer) layers.push(fileLayer);
  layers.push(flags);
  const { config } = resolveConfig(layers);
  const controller = new AbortController();
  const onSigint = (): void => {
    if (controller.signal.aborted) process.exit(130);
    process.stderr.write('\ninterrupt: finishing the current step and saving a checkpoint (press Ctrl-C again to quit now)\n');
    controller.abort();
  };
  process.on('SIGINT', onSigint);
  try {
    const result = await runAlignment(config, { resume: opts.resume === true, overwrite: opts.overwrite === true, signal: controller.signal });
    const evals = result.metrics.filter((r) => r.type === 'eval');
    const t = result.translation;
    const summary = [
      `done: ${result.step}/${result.totalSteps} steps` + (evals.length > 1 ? `, validation loss ${(evals[0]!.valLoss as number).toFixed(4)} → ${(evals[evals.length - 1]!.valLoss as number).toFixed(4)}` : ''),
      ...(t.length > 0 ? [`  held-out German → Romansh chrF ${t.map((x) => `${x.chrf.toFixed(2)} (step ${x.step})`).join(' → ')}`] : []),
      `  pairs       ${result.files.pairs}`,
      `  metrics     ${result.files.metrics}`,
      `  loss curve  ${result.files.plot}`,
      `  checkpoint  ${result.checkpoint ?? '(none)'}`,
      ...(result.modelDir ? [`  model       ${result.modelDir}`] : []),
    ];
    process.stdout.write(`${summary.join('\n')}\n`);
    return result.interrupted ? 130 : 0;
  } finally {
    process.off('SIGINT', onSigint);
  }
}

function report(e: unknown): number {
  if (e instanceof AlignInterruptedError) {
    process.stderr.write(`apertus-align: interrupted: ${e.message}\n`);
    return 130;
  }
  const known = e instanceof AlignError || e instanceof TrainerError || e instanceof DataError || e instanceof ModelError || e instanceof TokenizerError || e instanceof PosttrainError;
  process.stderr.write(`apertus-align: error: ${(e as Error)?.message ?? String(e)}\n`);
  if (!known && e instanceof Error && e.stack) process.stderr.write(`${e.stack}\n`);
  return e instanceof AlignConfigError || (e instanceof PosttrainError && e.code === 'MissingLanguage') ? 2 : 1;
}

async function main(argv: string[]): Promise<number> {
  const p = program();
  let code = 0;
  p.action(async (opts: Record<string, unknown>) => {
    code = await train(opts);
  });
  try {
    await p.parseAsync(argv);
  } catch (e) {
    return report(e);
  }
  return code;
}

main(process.argv).then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    process.exitCode = report(e);
  },
);

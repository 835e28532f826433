// apertus-sft: the command line. `apertus-sft [options]` fine-tunes (or resumes) a model.

import { Command, Option } from 'commander';
import { DataError } from '@apertus/data';
import { ModelError } from '@apertus/model';
import { PosttrainError } from '@apertus/posttrain';
import { TokenizerError } from '@apertus/tokenizer';
import { TrainerError } from '@apertus/trainer';
import { readConfigFile, resolveConfig, type ConfigLayer, type RawConfig } from './config';
import { SftConfigError, SftError } from './errors';
import { checkpointConfig, runSft } from './sft';

function program(): Command {
  return new Command('apertus-sft')
    .description(
      'Supervised fine-tuning of an Apertus checkpoint on chat conversations: Apertus chat template, loss on assistant tokens only, left padding, AdEMAMix, linear decay, resumable checkpoints.\n' +
        'Defaults fine-tune the apertus-pretrain run in runs/udhr-tiny on the bundled UDHR translation task (German → Romansh held out) in a few minutes.',
    )
    .option('--config <file>', 'JSON config file (keys as below in camelCase); flags override it')
    .option('--out <dir>', 'output directory (default runs/sft-udhr)')
    .option('--resume', 'continue from the latest checkpoint in --out')
    .option('--overwrite', 'discard checkpoints already in --out and start again')
    .option('--model <dir>', 'base model: HF model dir, checkpoints dir, or run dir (default runs/udhr-tiny)')
    .option('--data <source>', '"udhr" (bundled translation task, default) or a .jsonl file of {"messages": [...]} conversations')
    .option('--validation <file>', '.jsonl conversations for the validation loss (default: the held-out German → Romansh articles)')
    .option('--languages <list>', 'UDHR declarations of the translation task, comma-separated')
    .option('--max-examples <n>', 'translation conversations drawn (default 2000)')
    .option('--max-chars <n>', 'longest UDHR article used, in characters (default 400)')
    .option('--max-length <n>', 'longest conversation in tokens; longer ones are truncated and counted (default 512)')
    .option('--date <YYYY-MM-DD>', 'date in the default system prompt (default 2025-09-01)')
    .option('--micro-batch-size <n>', 'conversations per micro-batch (default 8)')
    .option('--grad-accumulation <n>', 'micro-batches per optimizer step (default 1)')
    .option('--epochs <n>', 'passes over the data when --steps is "none" (default 3)')
    .option('--steps <n>', 'optimizer steps, or "none" for --epochs passes (default)')
    .addOption(new Option('--optimizer <name>', 'ademamix (default) or adamw').choices(['ademamix', 'adamw']))
    .option('--lr <x>', 'peak learning rate (default 6e-3)')
    .option('--warmup-ratio <x>', 'linear warm-up as a fraction of the steps (default 0.03)')
    .option('--betas <b1,b2,b3>', 'optimizer betas (default 0.9,0.999,0.9999)')
    .option('--alpha <x>', 'AdEMAMix alpha (default 5)')
    .option('--weight-decay <x>', 'decoupled weight decay (default 0)')
    .option('--eps <x>', 'optimizer epsilon (default 1e-8)')
    .option('--clip <x>', 'global gradient-norm clipping, 0 = off (default 1)')
    .option('--seed <n>', 'seed of the task sampler and the data order (default 0)')
    .option('--eval-interval <n>', 'validation loss every n steps, 0 = start and end only (default 25)')
    .option('--eval-translation', 'held-out chrF/BLEU at the start and the end (default)')
    .option('--no-eval-translation', 'skip the held-out translations')
    .option('--eval-max-tokens <n>', 'most tokens per held-out translation (default 160)')
    .option('--checkpoint-interval <n>', 'checkpoint every n steps, 0 = end only (default 25)')
    .option('--keep-checkpoints <n>', 'checkpoints kept on disk, 0 = all (default 3)')
    .addOption(new Option('--save-dtype <dtype>', 'weights of the final model/ (default f32)').choices(['f32', 'bf16']))
    .option('--threads <n>', 'GEMM threads (default: all cores)')
    .addOption(new Option('--progress <mode>', 'progress display (default auto)').choices(['auto', 'bar', 'lines', 'off']))
    .option('--lora <json>', 'LoRA instead of full fine-tuning: PEFT LoraConfig fields, e.g. \'{"r":8,"lora_alpha":16,"target_modules":"all-linear"}\' (default none)');
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
    const result = await runSft(config, { resume: opts.resume === true, overwrite: opts.overwrite === true, signal: controller.signal });
    const evals = result.metrics.filter((r) => r.type === 'eval');
    const t = result.translation;
    const summary = [
      `done: ${result.step}/${result.totalSteps} steps` + (evals.length > 1 ? `, validation loss ${(evals[0]!.valLoss as number).toFixed(4)} → ${(evals[evals.length - 1]!.valLoss as number).toFixed(4)}` : ''),
      ...(t.length > 0 ? [`  held-out German → Romansh chrF ${t.map((x) => `${x.chrf.toFixed(2)} (step ${x.step})`).join(' → ')}`] : []),
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
  const known = e instanceof SftError || e instanceof TrainerError || e instanceof DataError || e instanceof ModelError || e instanceof TokenizerError || e instanceof PosttrainError;
  process.stderr.write(`apertus-sft: error: ${(e as Error)?.message ?? String(e)}\n`);
  if (!known && e instanceof Error && e.stack) process.stderr.write(`${e.stack}\n`);
  return e instanceof SftConfigError || (e instanceof PosttrainError && e.code === 'MissingLanguage') ? 2 : 1;
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

// apertus-pretrain: the command line. `apertus-pretrain [options]` trains (or resumes) a model;
// `apertus-pretrain goldfish [options]` runs the Goldfish memorization experiment;
// `apertus-pretrain ablate [options]` the paper's ablations in miniature.

import { Command, CommanderError, Option } from 'commander';
import { DataError } from '@apertus/data';
import { ModelError } from '@apertus/model';
import { TokenizerError } from '@apertus/tokenizer';
import { TrainerError } from '@apertus/trainer';
import { readConfigFile, resolveConfig, type ConfigLayer, type RawConfig } from './config';
import { ablateCommand } from './ablate';
import { PretrainConfigError, PretrainError } from './errors';
import { runGoldfishExperiment } from './goldfish-experiment';
import { checkpointConfig, runPretraining } from './pretrain';

const collect = (value: string, previous: string[] | undefined): string[] => [...(previous ?? []), value];

/** Flags of the training command; each maps to the config key commander derives from its name. */
function trainingProgram(): Command {
  return new Command('apertus-pretrain')
    .description('Pretrain an Apertus model: tokenizer, compliant packed data, Goldfish loss, AdEMAMix, WSD, resumable checkpoints.\nDefaults train the tiny preset on the bundled UDHR corpus in a few minutes.')
    .option('--config <file>', 'JSON config file (keys as below in camelCase); flags override it')
    .option('--out <dir>', 'output directory (default runs/udhr-tiny)')
    .option('--resume', 'continue from the latest checkpoint in --out')
    .option('--overwrite', 'discard checkpoints already in --out and start again')
    .option('--preset <name>', 'model preset: tiny (default), small, apertus-8b, apertus-70b')
    .option('--model-config <file>', 'Hugging Face config.json for the architecture (overrides --preset)')
    .option('--data <source>', '"udhr" (default), a .jsonl file with {"text": ...} lines, or a folder of .txt/.md files')
    .option('--languages <list>', 'UDHR declarations to read, comma-separated (default: eng,deu_1996,gsw1,fra,ita,roh_rumgr)')
    .option('--validation-fraction <x>', 'fraction of documents held out for validation (default 0.1)')
    .option('--tokenizer <dir>', 'use the tokenizer.json in this folder instead of training one')
    .option('--vocab-size <n>', 'vocabulary of the trained BPE tokenizer (default 2048)')
    .option('--tokenizer-sample-chars <n>', 'characters of training text used to train the tokenizer')
    .option('--max-document-chars <n>', 'longest accepted document, in characters')
    .option('--robots <dir>', 'folder of <host>.txt robots.txt files for the opt-out filter')
    .option('--seq-length <n>', 'tokens per sequence (default 128)')
    .option('--micro-batch-size <n>', 'sequences per micro-batch (default 8)')
    .option('--grad-accumulation <n>', 'micro-batches per optimizer step (default 1)')
    .option('--steps <n>', 'optimizer steps (default 150)')
    .addOption(new Option('--optimizer <name>', 'ademamix (default) or adamw').choices(['ademamix', 'adamw']))
    .option('--lr <x>', 'peak learning rate (default 3e-3)')
    .option('--min-lr <x>', 'learning rate at the end of the cooldown (default 3e-4)')
    .option('--betas <b1,b2,b3>', 'optimizer betas (default 0.9,0.999,0.9999)')
    .option('--alpha <x>', 'AdEMAMix alpha (default 8)')
    .option('--alpha-warmup <n>', 'AdEMAMix alpha warm-up steps (default: the run length; 0 = none)')
    .option('--beta3-warmup <n>', 'AdEMAMix beta3 warm-up steps (default: the run length; 0 = none)')
    .option('--weight-decay <x>', 'decoupled weight decay (default 0.1)')
    .option('--eps <x>', 'optimizer epsilon (default 1e-8)')
    .option('--warmup-fraction <x>', 'WSD warm-up, fraction of the steps (default 0.1)')
    .option('--cooldown-fraction <x>', 'WSD cooldown, fraction of the steps (default 0.2)')
    .addOption(new Option('--cooldown-style <style>', 'WSD cooldown shape (default 1-sqrt)').choices(['1-sqrt', 'linear', 'cosine', 'exponential']))
    .option('--clip <x>', 'global gradient-norm clipping, 0 = off (default 0.1, as Apertus)')
    .option('--goldfish', 'Goldfish loss on (default)')
    .option('--no-goldfish', 'Goldfish loss off (standard loss)')
    .option('--goldfish-k <n>', 'Goldfish k: drop about 1 in k targets (default 50, as Apertus)')
    .option('--goldfish-h <n>', 'Goldfish h: hashed context width (default 50, as Apertus)')
    .option('--seed <n>', 'seed of initialisation, data order and split (default 28)')
    .option('--eval-interval <n>', 'evaluate every n steps, 0 = start and end only (default 25)')
    .option('--eval-samples <n>', 'validation sequences per evaluation (default 32)')
    .option('--checkpoint-interval <n>', 'checkpoint every n steps, 0 = end only (default 50)')
    .option('--keep-checkpoints <n>', 'checkpoints kept on disk, 0 = all (default 3)')
    .option('--prompt <text>', 'prompt for the sample generations (repeatable; "" = from <s>)', collect)
    .option('--sample-tokens <n>', 'tokens generated per prompt at each evaluation, 0 = none (default 32)')
    .option('--sample-temperature <x>', 'sampling temperature, 0 = greedy (default 0.7)')
    .option('--threads <n>', 'GEMM threads (default: all cores)')
    .addOption(new Option('--progress <mode>', 'progress display (default auto)').choices(['auto', 'bar', 'lines', 'off']));
}

/** Config-layer values from parsed flags (commander's camelCase names are the config keys). */
function flagLayer(opts: Record<string, unknown>): ConfigLayer {
  const { config: _file, resume: _resume, overwrite: _overwrite, prompt, ...rest } = opts;
  const values: Record<string, unknown> = { ...rest };
  if (prompt !== undefined) values.prompts = prompt;
  return { source: 'flags', values: values as RawConfig };
}

async function train(opts: Record<string, unknown>): Promise<number> {
  const fileLayer = typeof opts.config === 'string' ? readConfigFile(opts.config) : null;
  const flags = flagLayer(opts);
  const layers: ConfigLayer[] = [];
  if (opts.resume) {
    // The checkpoint's settings are the base; the file and flags may only repeat them (checked in
    // runPretraining) or change output/evaluation/display settings.
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
    const result = await runPretraining(config, { resume: opts.resume === true, overwrite: opts.overwrite === true, signal: controller.signal });
    const evals = result.metrics.filter((r) => r.type === 'eval');
    const summary = [
      `${result.interrupted ? 'interrupted' : 'done'}: ${result.step} of ${config.steps} steps` + (evals.length > 1 ? `, validation loss ${(evals[0]!.valLoss as number).toFixed(4)} → ${(evals[evals.length - 1]!.valLoss as number).toFixed(4)}` : ''),
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

async function goldfish(opts: Record<string, string | undefined>): Promise<number> {
  const num = (k: string): number | undefined => (opts[k] === undefined ? undefined : Number(opts[k]));
  const t0 = performance.now();
  const result = await runGoldfishExperiment({
    ...(num('documents') !== undefined ? { documents: num('documents')! } : {}),
    ...(num('steps') !== undefined ? { steps: num('steps')! } : {}),
    ...(num('k') !== undefined ? { goldfishK: num('k')! } : {}),
    ...(num('h') !== undefined ? { goldfishH: num('h')! } : {}),
    ...(num('seed') !== undefined ? { seed: num('seed')! } : {}),
    ...(num('lr') !== undefined ? { lr: num('lr')! } : {}),
    ...(opts.language !== undefined ? { language: opts.language } : {}),
    onStep: (run, step, loss) => {
      if (step % 20 === 0) process.stderr.write(`${run} step ${step}: loss ${loss.toFixed(4)}\n`);
    },
  });
  const s = result.settings;
  const row = (name: string, r: typeof result.standard) =>
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
  if (typeof opts.json === 'string') {
    const fs = await import('node:fs');
    fs.writeFileSync(opts.json, `${JSON.stringify(result, null, 2)}\n`);
  }
  return 0;
}

function report(e: unknown): number {
  const known = e instanceof PretrainError || e instanceof TrainerError || e instanceof DataError || e instanceof ModelError || e instanceof TokenizerError;
  process.stderr.write(`apertus-pretrain: error: ${(e as Error)?.message ?? String(e)}\n`);
  if (!known && e instanceof Error && e.stack) process.stderr.write(`${e.stack}\n`);
  return e instanceof PretrainConfigError ? 2 : 1;
}

async function main(argv: string[]): Promise<number> {
  // Positional options: flags after a subcommand belong to it (`ablate --steps 50`), not to training.
  const program = trainingProgram().exitOverride().enablePositionalOptions();
  let code = 0;
  program.action(async (opts: Record<string, unknown>) => {
    code = await train(opts);
  });
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
    .option('--json <file>', 'also write the full results as JSON')
    .action(async (opts: Record<string, string | undefined>) => {
      code = await goldfish(opts);
    });
  program.addCommand(ablateCommand((c) => { code = c; }));
  try {
    await program.parseAsync(argv);
  } catch (e) {
    // Commander has printed its own message (unknown option, invalid choice) or the help.
    if (e instanceof CommanderError) return e.exitCode === 0 ? 0 : 2;
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

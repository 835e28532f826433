// apertus-eval: the command line. `apertus-eval [--model name=dir]…` evaluates each model on the
// same suite (@apertus/recipes' evaluation suite) and prints the side-by-side table (base → SFT →
// aligned).

import { Command, Option } from 'commander';
import { writeFileAtomic } from '@apertus/atomic-file';
import { DEVICES, DEVICE_HELP, describeDevice, setGemmThreads, useDevice, type Device } from '@apertus/tensor';
import { resolveModel, withDownloadDisplay } from '@apertus/hub';
import { evaluateStage, formatStages, loadSuiteTexts, parseEvalFlags, type RawEvalFlags, type StageResult } from '@apertus/recipes';
import { TrainerOptionError, reportError } from '@apertus/trainer';

const collect = (value: string, previous: string[] | undefined): string[] => [...(previous ?? []), value];

const program = new Command('apertus-eval')
  .description(
    'Evaluate Apertus checkpoints side by side: perplexity on held-out text, chrF/chrF++/BLEU of greedy German → Romansh translations (the held-out UDHR direction), and Goldfish-style memorization probes.\n' +
      'Default models: base=runs/udhr-tiny, SFT=runs/sft-udhr, aligned=runs/align-udhr (those that exist).',
  )
  .option('--model <name=dir>', 'a model to evaluate (repeatable, in column order): HF model dir, checkpoints dir or run dir', collect)
  .option('--held-out <source>', '"udhr" (the pretraining validation split, default), a .jsonl ({"text"}) or .txt file, or "none"')
  .option('--languages <list>', 'declarations of the pretraining corpus (default: apertus-pretrain\'s 28)')
  .option('--split-fraction <x>', 'validation fraction of the pretraining split (default 0.1)')
  .option('--split-seed <n>', 'seed of the pretraining split (default 28)')
  .option('--context-length <n>', 'tokens per perplexity window (default 512)')
  .option('--max-chars <n>', 'longest held-out UDHR article in characters, 0 = no translations (default 400)')
  .option('--max-tokens <n>', 'most tokens per translation (default 160)')
  .option('--date <YYYY-MM-DD>', 'date in the default system prompt (default 2025-09-01)')
  .option('--probes <n>', 'memorization probes, 0 = none (default 16)')
  .option('--probe-language <code>', 'UDHR declaration of the probes (default eng)')
  .option('--suffix-length <n>', 'tokens compared per probe (default 50)')
  .option('--min-prefix <n>', 'shortest probe prompt in tokens (default 16)')
  .option('--probe-tokens <n>', 'probe documents are cut to this many tokens (default 128)')
  .option('--out <file>', 'also write the table to this markdown file')
  .option('--json <file>', 'also write every number and translation as JSON')
  .option('--threads <n>', 'GEMM threads (default: all cores)')
  .addOption(new Option('--device <device>', DEVICE_HELP).choices(DEVICES).default('cpu'));

type EvalFlags = RawEvalFlags & { out?: string; json?: string; threads?: string; device: Device };

program.action(async (opts: EvalFlags) => {
  const { stages, suite, skipped } = parseEvalFlags(opts);
  process.stderr.write(`device: ${describeDevice(await useDevice(opts.device))}\n`);
  if (opts.threads !== undefined) {
    const n = Number(opts.threads);
    if (!Number.isInteger(n) || n < 1 || n > 64) throw new TrainerOptionError('--threads', `expected an integer in [1, 64], got ${JSON.stringify(opts.threads)}`);
    setGemmThreads(n);
  }
  for (const s of skipped) process.stderr.write(`note: ${s.location} does not exist; the "${s.name}" column is left out\n`);
  // Fail early on a wrong path or Hub id (and download Hub models before the first stage runs).
  for (const s of stages) await withDownloadDisplay(process.stderr, (onProgress) => resolveModel(s.location, { onProgress }));
  const texts = await loadSuiteTexts(suite);
  const results: StageResult[] = [];
  for (const stage of stages) {
    const r = await evaluateStage(stage, texts, suite);
    process.stderr.write(`${stage.name}: ${r.modelDir} evaluated in ${r.seconds.toFixed(1)} s` + (r.translations[0] ? `; article 1 → ${JSON.stringify(r.translations[0].hypothesis.slice(0, 100))}` : '') + '\n');
    results.push(r);
  }
  const table = formatStages(results, texts, suite);
  process.stdout.write(table);
  if (opts.out !== undefined) writeFileAtomic(opts.out, table);
  if (opts.json !== undefined) writeFileAtomic(opts.json, `${JSON.stringify({ suite, results }, null, 2)}\n`);
});

program.parseAsync(process.argv).catch((e: unknown) => {
  process.exitCode = reportError('apertus-eval', e, (x) => x instanceof TrainerOptionError);
});

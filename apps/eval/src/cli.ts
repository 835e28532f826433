// apertus-eval: the command line. `apertus-eval [--model name=dir]…` evaluates each model on the
// same suite (@apertus/recipes' evaluation suite) and prints the side-by-side table (base → SFT →
// aligned).

import { writeFileAtomic } from '@apertus/atomic-file';
import { applyThreads, collectValues, flag, helpShown, reportFailure } from '@apertus/cli';
import { resolveModel, withDownloadDisplay } from '@apertus/hub';
import { PRETRAIN_UDHR_LANGUAGES, evaluateStage, formatStages, loadSuiteTexts, parseEvalFlags, type RawEvalFlags, type StageResult } from '@apertus/recipes';
import { describeDevice, useDevice, type Device } from '@apertus/tensor';
import { TrainerOptionError } from '@apertus/trainer';
import { Command } from 'commander';

const program = new Command('apertus-eval')
  .description(
    'Evaluate Apertus checkpoints side by side: perplexity on held-out text, chrF/chrF++/BLEU of greedy German → Romansh translations (the held-out UDHR direction), and Goldfish-style memorization probes.\n' +
      'Default models: base=runs/udhr-tiny, SFT=runs/sft-udhr, aligned=runs/align-udhr (those that exist).',
  )
  .addOption(flag('model', { help: 'a model to evaluate, [name=]model (repeatable, in column order): a model directory, a checkpoints folder, a run directory, a .gguf file or a Hub id owner/name[@revision][:QUANT]' }).argParser(collectValues))
  .option('--held-out <source>', '"udhr" (the pretraining validation split, default), a .jsonl ({"text"}) or .txt file, or "none"')
  .option('--languages <list>', `UDHR declarations of the pretraining corpus, comma-separated (default: apertus-pretrain's ${PRETRAIN_UDHR_LANGUAGES.join(',')})`)
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
  .addOption(flag('out', { help: 'also write the table to this markdown file' }))
  .option('--json-out <file>', 'also write every number and translation as JSON')
  .addOption(flag('threads'))
  .addOption(flag('device', { defaultValue: 'cpu' }));

type EvalFlags = RawEvalFlags & { out?: string; jsonOut?: string; threads?: number; device: Device };

program.action(async (opts: EvalFlags) => {
  const { stages, suite, skipped } = parseEvalFlags(opts);
  process.stderr.write(`device: ${describeDevice(await useDevice(opts.device))}\n`);
  applyThreads(opts.threads);
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
  if (opts.jsonOut !== undefined) writeFileAtomic(opts.jsonOut, `${JSON.stringify({ suite, results }, null, 2)}\n`);
});

program.exitOverride().configureOutput({ outputError: () => {} }).parseAsync(process.argv).catch((e: unknown) => {
  process.exitCode = helpShown(e) ? 0 : reportFailure('apertus-eval', e, undefined, (x) => x instanceof TrainerOptionError);
});

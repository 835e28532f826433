// The paper's ablations in miniature. Apertus justifies its recipe with matched ablations of a
// 1.5B model: the SwiGLU + AdamW baseline reaches loss 2.037; xIELU instead of SwiGLU 1.997;
// AdEMAMix instead of AdamW 2.002; the Goldfish loss stops verbatim recall (84/100 documents
// memorised by the standard loss over 100 epochs, 0/100 with Goldfish). Here each arm is a
// pretraining run on the bundled corpus with identical settings except the MLP and the optimizer,
// repeated over seeds; the table reports final validation loss with its spread across seeds and
// the paired difference to the baseline, the plot shows the validation curves.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { writeFileAtomic } from '@apertus/atomic-file';
import { parameterCount, parseConfig, swigluMatched, toHfConfig, type ApertusConfig } from '@apertus/model';
import { ConfigError, escapeXml, svgLineChart, type Series, type RawConfig } from '@apertus/trainer';
import { resolvePretrainConfig, type PretrainConfig } from './config';
import { runGoldfishExperiment, type GoldfishExperimentOptions, type GoldfishExperimentResult } from './goldfish-experiment';
import { runPretraining } from './pretrain';
import { buildModelConfig } from './setup';

/** One configuration of the ablation: an MLP and an optimizer. */
export interface AblationArm {
  /** Short id (run directory names, JSON). */
  readonly id: string;
  /** Label in the table and the plot. */
  readonly label: string;
  readonly mlp: ApertusConfig['hidden_act'];
  readonly optimizer: PretrainConfig['optimizer'];
  /** The paper's final loss for this configuration (1.5B model), when it reports one. */
  readonly paperLoss: number | null;
}

/** The four arms: the paper's baseline, each change alone, and both (the Apertus recipe). */
export const ABLATION_ARMS: readonly AblationArm[] = Object.freeze([
  { id: 'swiglu-adamw', label: 'SwiGLU + AdamW (baseline)', mlp: 'swiglu', optimizer: 'adamw', paperLoss: 2.037 },
  { id: 'xielu-adamw', label: 'xIELU + AdamW', mlp: 'xielu', optimizer: 'adamw', paperLoss: 1.997 },
  { id: 'swiglu-ademamix', label: 'SwiGLU + AdEMAMix', mlp: 'swiglu', optimizer: 'ademamix', paperLoss: 2.002 },
  { id: 'xielu-ademamix', label: 'xIELU + AdEMAMix (Apertus)', mlp: 'xielu', optimizer: 'ademamix', paperLoss: null },
] satisfies AblationArm[]);

/** The paper's Goldfish figures (extreme setting: 100 documents, 100 epochs). */
export const PAPER_GOLDFISH = Object.freeze({ documents: 100, standard: 84, goldfish: 0 });

/**
 * The architecture and data shape of the ablation runs unless `base` says otherwise: 2 layers,
 * hidden 64, GQA 4/2 heads, xIELU intermediate 256 (SwiGLU 171), 8 sequences of 64 tokens per
 * step — about a tenth of the `tiny` preset's step cost, so 12 runs of 100 steps fit the time box.
 */
export const ABLATION_BASE: RawConfig = Object.freeze({
  model: { hidden_size: 64, intermediate_size: 256, num_hidden_layers: 2, num_attention_heads: 4, num_key_value_heads: 2 },
  seqLength: 64,
});

/** The Goldfish experiment as the ablation runs it: 5 documents (≤ 96 tokens), 70 epochs, lr 4e-3 (k = 4, h = 13). */
export const DEFAULT_GOLDFISH: GoldfishExperimentOptions = Object.freeze({ documents: 5, maxTokens: 96, steps: 70, lr: 4e-3 });

/** Settings of {@link runAblation}. */
export interface AblationOptions {
  /** Output directory: ablation.md, ablation.json, ablation.html, runs/. Default `runs/ablation`. */
  readonly out?: string;
  /** Seeds (initialisation, data order and validation split of every arm). Default [1, 2, 3]. */
  readonly seeds?: readonly number[];
  /** Optimizer steps per run. Default 100. */
  readonly steps?: number;
  /** Validation every this many steps. Default 20. */
  readonly evalInterval?: number;
  /**
   * Pretraining settings shared by every run (config keys, as a config file), over
   * {@link ABLATION_BASE} and the pretraining defaults. The ablation sets `out`, `seed`, `steps`,
   * `evalInterval`, `optimizer` and the MLP.
   */
  readonly base?: RawConfig;
  /** The Goldfish experiment: run it with these options (default {@link DEFAULT_GOLDFISH}; its run directories under `<out>/goldfish` unless `out` is given), reuse a saved result (`apertus-pretrain goldfish --json`), or leave it out (`false`). */
  readonly goldfish?: GoldfishExperimentOptions | { readonly resultFile: string } | false;
  /** Keep each run's checkpoints and final model (default: only metrics.jsonl, loss.html, config.json). */
  readonly keepRuns?: boolean;
  /** Progress messages. */
  readonly log?: (message: string) => void;
}

/** One run: an arm trained with one seed. */
export interface ArmRun {
  readonly seed: number;
  /** Validation loss after each evaluation, step 0 included. */
  readonly curve: readonly { readonly step: number; readonly valLoss: number }[];
  /** Validation loss at the last step. */
  readonly finalLoss: number;
  /** Wall-clock seconds of the run. */
  readonly seconds: number;
  /** Parameters of the trained model (checkpoint tensors, vocabulary of the run's tokenizer). */
  readonly parameters: number;
}

/** Mean and sample standard deviation (n − 1; 0 for one value). */
export interface Spread { readonly mean: number; readonly sd: number; readonly n: number }

/** The results of one arm. */
export interface ArmResult extends AblationArm {
  readonly runs: readonly ArmRun[];
  /** Final validation loss over seeds. */
  readonly final: Spread;
  /** Per-seed difference to the baseline's final validation loss (same seed, same data), over seeds. */
  readonly deltaVsBaseline: Spread;
}

/** Everything {@link runAblation} measured. */
export interface AblationResult {
  readonly settings: {
    readonly seeds: readonly number[];
    readonly steps: number;
    readonly evalInterval: number;
    readonly tokensPerStep: number;
    readonly model: { readonly xielu: ApertusConfig; readonly swiglu: ApertusConfig };
    readonly pretraining: Omit<PretrainConfig, 'out' | 'seed' | 'optimizer' | 'steps' | 'evalInterval' | 'modelConfig' | 'model'>;
  };
  readonly arms: readonly ArmResult[];
  readonly goldfish: GoldfishExperimentResult | null;
  /** Where the Goldfish result came from: 'run', a file, or null. */
  readonly goldfishSource: string | null;
  /** Wall-clock seconds and the 1-minute load average at the end (the machine may be shared). */
  readonly seconds: number;
  readonly loadAverage: number;
  /** Written files. */
  readonly files: { readonly markdown: string; readonly json: string; readonly plot: string };
}

function spread(xs: readonly number[]): Spread {
  const n = xs.length, mean = xs.reduce((s, x) => s + x, 0) / n;
  const sd = n > 1 ? Math.sqrt(xs.reduce((s, x) => s + (x - mean) ** 2, 0) / (n - 1)) : 0;
  return { mean, sd, n };
}

/** The shared pretraining settings with the ablation's own keys applied (validated once). */
function sharedConfig(o: Required<Pick<AblationOptions, 'out' | 'steps' | 'evalInterval' | 'base'>>): PretrainConfig {
  return resolvePretrainConfig([
    { source: 'ablation defaults', values: { ...ABLATION_BASE, sampleTokens: 0, checkpointInterval: 0, keepCheckpoints: 1, progress: 'off' } },
    { source: 'ablation base', values: o.base },
    { source: 'ablation', values: { out: o.out, steps: o.steps, evalInterval: o.evalInterval } },
  ]).config;
}

/**
 * Train one configuration with one seed and return its validation-loss curve. The architecture
 * is written as a Hugging Face config.json and passed as `modelConfig`, so the run is an ordinary
 * pretraining run (its directory holds config.json, metrics.jsonl and loss.html).
 */
export async function trainArm(shared: PretrainConfig, arch: ApertusConfig, optimizer: PretrainConfig['optimizer'], seed: number, dir: string): Promise<ArmRun> {
  fs.mkdirSync(dir, { recursive: true });
  const modelConfig = path.join(dir, 'model-config.json');
  writeFileAtomic(modelConfig, `${JSON.stringify(toHfConfig(arch), null, 2)}\n`);
  const cfg: PretrainConfig = { ...shared, out: dir, seed, optimizer, modelConfig, model: {} };
  const t0 = performance.now();
  const result = await runPretraining(cfg, { overwrite: true, log: () => {} });
  const seconds = (performance.now() - t0) / 1000;
  const curve = result.metrics.filter((r) => r.type === 'eval').map((r) => ({ step: r.step, valLoss: r.valLoss as number }));
  if (curve.length === 0) throw new ConfigError('base', 'the runs have no validation split (validationFraction 0 or evalSamples 0): nothing to compare');
  const trained = parseConfig(JSON.parse(fs.readFileSync(path.join(result.modelDir!, 'config.json'), 'utf8')));
  return { seed, curve, finalLoss: curve[curve.length - 1]!.valLoss, seconds, parameters: parameterCount(trained) };
}

/** A saved Goldfish result, read and checked before any training. */
function readGoldfishResult(goldfish: AblationOptions['goldfish']): { result: GoldfishExperimentResult; source: string } | null {
  if (goldfish && 'resultFile' in goldfish) {
    let json: unknown;
    try {
      json = JSON.parse(fs.readFileSync(goldfish.resultFile, 'utf8'));
    } catch (e) {
      throw new ConfigError('goldfish', `cannot read the Goldfish result ${goldfish.resultFile} (${(e as Error).message})`);
    }
    const r = json as Partial<GoldfishExperimentResult>;
    if (typeof r?.standard?.exactMatches !== 'number' || typeof r?.goldfish?.exactMatches !== 'number' || typeof r?.settings?.documents !== 'number') {
      throw new ConfigError('goldfish', `${goldfish.resultFile} is not a result of 'apertus-pretrain goldfish --json'`);
    }
    return { result: json as GoldfishExperimentResult, source: goldfish.resultFile };
  }
  return null;
}

const fmt = (x: number, d = 4): string => x.toFixed(d);
const signed = (x: number, d = 4): string => `${x >= 0 ? '+' : '−'}${Math.abs(x).toFixed(d)}`;

/** The Markdown table of an ablation (also printed by `apertus-pretrain ablate`). */
export function ablationMarkdown(r: AblationResult): string {
  const s = r.settings, x = s.model.xielu, base = r.arms[0]!;
  const lines = [
    `Ablation: ${x.num_hidden_layers} layers, hidden ${x.hidden_size}, vocab ${x.vocab_size}; MLP xIELU (intermediate ${x.intermediate_size}) or SwiGLU (intermediate ${s.model.swiglu.intermediate_size}, matched parameters and FLOPs); ` +
      `${s.steps} steps × ${s.tokensPerStep} tokens, lr ${s.pretraining.lr} (WSD), Goldfish ${s.pretraining.goldfish ? `k=${s.pretraining.goldfishK}` : 'off'}; seeds ${s.seeds.join(', ')}`,
    '',
    `| configuration | parameters | final validation loss (mean ± sd, ${s.seeds.length} seeds) | Δ vs baseline, paired (mean ± sd) | paper, 1.5B (Δ) |`,
    '|---|---|---|---|---|',
    ...r.arms.map((a) => {
      const paper = a.paperLoss === null ? '—' : a === base ? fmt(a.paperLoss, 3) : `${fmt(a.paperLoss, 3)} (${signed(a.paperLoss - base.paperLoss!, 3)})`;
      const delta = a === base ? '—' : `${signed(a.deltaVsBaseline.mean)} ± ${fmt(a.deltaVsBaseline.sd)}`;
      return `| ${a.label} | ${(a.runs[0]!.parameters / 1e6).toFixed(3)}M | ${fmt(a.final.mean)} ± ${fmt(a.final.sd)} | ${delta} | ${paper} |`;
    }),
  ];
  if (r.goldfish) {
    const g = r.goldfish, d = g.settings.documents;
    lines.push(
      '',
      `Goldfish (${r.goldfishSource === 'run' ? 'run now' : `from ${r.goldfishSource}`}): ${d} documents, ${g.settings.steps} epochs, k=${g.settings.goldfishK}; memorised = greedy recall of the last ${g.settings.holdout} tokens exact`,
      '',
      `| loss | memorised here | paper (${PAPER_GOLDFISH.documents} documents, 100 epochs) |`,
      '|---|---|---|',
      `| standard | ${g.standard.exactMatches}/${d} | ${PAPER_GOLDFISH.standard}/${PAPER_GOLDFISH.documents} |`,
      `| Goldfish | ${g.goldfish.exactMatches}/${d} | ${PAPER_GOLDFISH.goldfish}/${PAPER_GOLDFISH.documents} |`,
    );
  }
  lines.push('', `(${Math.round(r.seconds)} s, load average ${r.loadAverage.toFixed(1)} at the end)`);
  return `${lines.join('\n')}\n`;
}

const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd'];

/** The plot: the validation curve of each arm, averaged over seeds (step 0, ≈ log V for all, left out so the ends stay readable). */
function ablationHtml(r: AblationResult): string {
  const series: Series[] = r.arms.map((a, i) => ({
    name: a.label,
    color: COLORS[i % COLORS.length]!,
    markers: true,
    points: a.runs[0]!.curve.map((p, k) => [p.step, a.runs.reduce((s, run) => s + run.curve[k]!.valLoss, 0) / a.runs.length] as const).filter(([st]) => st > 0),
  }));
  const chart = svgLineChart(series, { title: `Validation loss, mean over ${r.settings.seeds.length} seeds`, xLabel: 'step', yLabel: 'validation loss', width: 880, height: 440 });
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Apertus ablations in miniature</title>
<style>body{font-family:system-ui,sans-serif;margin:24px;color:#222}pre{background:#f6f6f6;padding:8px;white-space:pre-wrap}</style></head>
<body>
<h1>Apertus ablations in miniature</h1>
<pre>${escapeXml(ablationMarkdown(r))}</pre>
${chart}
</body>
</html>
`;
}

/**
 * Train every arm with every seed on the same data and settings, optionally run (or read) the
 * Goldfish experiment, and write `ablation.md`, `ablation.json` and `ablation.html` under `out`.
 */
export async function runAblation(options: AblationOptions = {}): Promise<AblationResult> {
  const o = {
    out: options.out ?? 'runs/ablation',
    seeds: [...(options.seeds ?? [1, 2, 3])],
    steps: options.steps ?? 100,
    evalInterval: options.evalInterval ?? 20,
    base: options.base ?? {},
  };
  if (o.seeds.length === 0 || o.seeds.some((s) => !Number.isInteger(s) || s < 0) || new Set(o.seeds).size !== o.seeds.length) {
    throw new ConfigError('seeds', `expected distinct non-negative integers, got ${JSON.stringify(o.seeds)}`);
  }
  const log = options.log ?? (() => {});
  const t0 = performance.now();
  const saved = readGoldfishResult(options.goldfish);
  const shared = sharedConfig(o);
  // The xIELU architecture as pretraining would build it (vocab_size is set by the tokenizer of each run).
  const xielu = buildModelConfig(shared, shared.vocabSize);
  const arch = { xielu, swiglu: swigluMatched(xielu) };
  const goldfishOptions = options.goldfish ?? DEFAULT_GOLDFISH;
  // The experiment's two run directories go under this ablation's directory unless told otherwise.
  const gf = saved ?? (goldfishOptions === false || 'resultFile' in goldfishOptions ? null : { result: await runGoldfishExperiment({ out: path.join(o.out, 'goldfish'), ...goldfishOptions }), source: 'run' });
  if (gf) log(`goldfish: standard loss ${gf.result.standard.exactMatches}/${gf.result.settings.documents}, Goldfish ${gf.result.goldfish.exactMatches}/${gf.result.settings.documents} documents memorised`);
  const { out: _out, seed: _seed, optimizer: _opt, steps: _steps, evalInterval: _ei, modelConfig: _mc, model: _m, ...pretraining } = shared;
  const files = { markdown: path.join(o.out, 'ablation.md'), json: path.join(o.out, 'ablation.json'), plot: path.join(o.out, 'ablation.html') };
  const results = new Map<string, ArmRun[]>(ABLATION_ARMS.map((a) => [a.id, []]));
  const summarize = (seeds: readonly number[]): AblationResult => {
    const baseline = results.get(ABLATION_ARMS[0]!.id)!;
    return {
      settings: { seeds, steps: o.steps, evalInterval: o.evalInterval, tokensPerStep: shared.microBatchSize * shared.gradAccumulation * shared.seqLength, model: arch, pretraining },
      arms: ABLATION_ARMS.map((a) => {
        const runs = results.get(a.id)!;
        return { ...a, runs, final: spread(runs.map((r) => r.finalLoss)), deltaVsBaseline: spread(runs.map((r, i) => r.finalLoss - baseline[i]!.finalLoss)) };
      }),
      goldfish: gf?.result ?? null,
      goldfishSource: gf?.source ?? null,
      seconds: (performance.now() - t0) / 1000,
      loadAverage: os.loadavg()[0]!,
      files,
    };
  };
  const total = ABLATION_ARMS.length * o.seeds.length;
  let done = 0;
  let result: AblationResult | null = null;
  // Seeds outermost, and the files rewritten after each seed: an interrupted ablation leaves the
  // table of its complete matched sets.
  for (const [k, seed] of o.seeds.entries()) {
    for (const arm of ABLATION_ARMS) {
      const dir = path.join(o.out, 'runs', `${arm.id}-seed${seed}`);
      const run = await trainArm(shared, arch[arm.mlp], arm.optimizer, seed, dir);
      if (!options.keepRuns) for (const sub of ['checkpoints', 'model']) fs.rmSync(path.join(dir, sub), { recursive: true, force: true });
      results.get(arm.id)!.push(run);
      done++;
      const elapsed = (performance.now() - t0) / 1000;
      log(`[${done}/${total}] ${arm.label}, seed ${seed}: validation loss ${fmt(run.curve[0]!.valLoss)} → ${fmt(run.finalLoss)} (${run.seconds.toFixed(0)} s; ETA ${Math.round((elapsed / done) * (total - done))} s)`);
    }
    result = summarize(o.seeds.slice(0, k + 1));
    writeFileAtomic(files.markdown, ablationMarkdown(result));
    writeFileAtomic(files.json, `${JSON.stringify(result, null, 2)}\n`);
    writeFileAtomic(files.plot, ablationHtml(result));
  }
  return result!;
}

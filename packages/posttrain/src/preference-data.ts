// The offline QRPO / DPO data pipeline (training-recipe §3.3, §3.5), run once before training
// with the reference policy π_ref (the SFT model):
//
//   1. sample n reference completions per prompt from π_ref (batched generation, seeded)
//                                                               → <out>/data/samples.jsonl
//   2. score every candidate (offline completions + samples) with the reward
//                                                               → <out>/data/rewards.jsonl
//   3. quantile rewards R_q = #{ref rewards ≤ r}/n and the §3.5 chosen/rejected selection
//   4. render prompt + completion with the chat template (variant B: the completion and its
//      <|assistant_end|> are the scored tokens, |y| = their number) and precompute
//      log π_ref(y|x) (summed, no autograd)                     → <out>/data/pairs.jsonl
//
// Stages 1 and 2 append one line per prompt group / prompt, so a killed preparation continues where
// it stopped; each file starts with a header holding the fingerprint of everything the data depends
// on (settings and model files), and a file with another fingerprint is discarded. The generation
// batches are fixed (prompt groups of `sampleBatchSize`), so a continued preparation computes
// exactly what an uninterrupted one would.

import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { writeFileAtomic } from '@apertus/atomic-file';
import { Xoshiro128 } from '@apertus/data';
import { generateBatch, type ApertusModel } from '@apertus/model';
import { sequenceLogProbs } from '@apertus/qrpo';
import { noGrad, Tensor } from '@apertus/tensor';
import { APERTUS_PAD_ID, APERTUS_STOP_IDS, applyApertusChatTemplate, type ChatMessage, type Tokenizer } from '@apertus/tokenizer';
import { PosttrainError } from './errors';
import { buildPreferencePairs, type PreferencePrompt } from './preference';
import { scoreCompletions, type RewardFunction } from './rewards';
import { collateSft } from './sft-batch';

/** A prompt of the alignment data. */
export interface AlignPrompt {
  /** Conversation so far (ends with a user message), rendered with a generation prompt. */
  readonly messages: ChatMessage[];
  /** Text handed to the reward as the prompt (the last user message). */
  readonly text: string;
  /** Reference answer handed to the reward, when known. */
  readonly reference?: string;
  /** Offline completions (candidates besides the sampled ones). */
  readonly offline: readonly string[];
}

/** The settings the preparation reads (an alignment run's configuration has them all). */
export interface PreferenceDataConfig {
  /** Run directory: the files go to `<out>/data`. */
  readonly out: string;
  /** The prompts file, named by errors. */
  readonly prompts: string;
  /** Seed of the sampling and of the pair selection. */
  readonly seed: number;
  /** n: reference completions sampled per prompt. */
  readonly numReferences: number;
  /** Sampling temperature of the reference completions. */
  readonly sampleTemperature: number;
  /** Largest reference completion, in tokens. */
  readonly sampleMaxTokens: number;
  /** Prompts sampled together (a prompt group). */
  readonly sampleBatchSize: number;
  /** Pairs kept per prompt. */
  readonly numPairs: number;
  /** Longest prompt + completion, in tokens (longer sides are truncated). */
  readonly maxLength: number;
  /** Rows per batch of the reference log-probs (twice this). */
  readonly microBatchSize: number;
  /** The chat template's date. */
  readonly date: string;
}

/** One side (chosen or rejected) of a training pair, ready for the loss. */
export interface PairSide {
  /** The completion text. */
  readonly text: string;
  /** `sample` (from π_ref) or `offline` (the dataset's own). */
  readonly source: 'sample' | 'offline';
  /** Its reward R(x, y). */
  readonly reward: number;
  /** Its quantile reward R_q. */
  readonly quantileReward: number;
  /** Prompt + completion token ids (chat template, variant B). */
  readonly ids: number[];
  /** 1 on the completion tokens (content and `<|assistant_end|>`), aligned with `ids`. */
  readonly mask: number[];
  /** |y|: completion tokens (Σ mask). */
  readonly length: number;
  /** log π_ref(y|x), summed over the completion tokens. */
  readonly refLogp: number;
}

/** A training pair. */
export interface PairRecord {
  /** Index of the prompt. */
  readonly promptIndex: number;
  /** The chosen completion (higher R_q). */
  readonly chosen: PairSide;
  /** The rejected completion. */
  readonly rejected: PairSide;
  /** The prompt's n reference rewards. */
  readonly refRewards: readonly number[];
}

/** Counters of the preparation. */
export interface AlignDataStats {
  /** Prompts used. */
  readonly prompts: number;
  /** Reference completions sampled. */
  readonly samples: number;
  /** Sampled completions that hit `sampleMaxTokens` without a stop token. */
  readonly samplesCut: number;
  /** Mean reward of the sampled completions. */
  readonly meanSampleReward: number;
  /** Mean reward of the offline completions (NaN without any). */
  readonly meanOfflineReward: number;
  /** Pairs kept. */
  readonly pairs: number;
  /** Prompts dropped by the selection (too few references or candidates). */
  readonly droppedPrompts: number;
  /** Pairs dropped because truncation to `maxLength` left a side without completion tokens. */
  readonly droppedTruncated: number;
  /** Pair sides truncated to `maxLength`. */
  readonly truncated: number;
  /** Mean R_q of the chosen and of the rejected sides. */
  readonly meanQuantileReward: { readonly chosen: number; readonly rejected: number };
}

/** The prepared data. */
export interface AlignData {
  /** Training pairs, in prompt order. */
  readonly pairs: PairRecord[];
  /** Counters. */
  readonly stats: AlignDataStats;
  /** sha256 of `pairs.jsonl`: a resumed run must train on the same pairs. */
  readonly fingerprint: string;
  /** Padding id for collation. */
  readonly padId: number;
}

/** Files of the preparation under `<out>/data`. */
export function dataFiles(out: string): { dir: string; samples: string; rewards: string; pairs: string; prepared: string } {
  const dir = path.join(out, 'data');
  return { dir, samples: path.join(dir, 'samples.jsonl'), rewards: path.join(dir, 'rewards.jsonl'), pairs: path.join(dir, 'pairs.jsonl'), prepared: path.join(dir, 'prepared.json') };
}

/**
 * Fingerprint of what the preference data depends on: the data settings (`settings`, any JSON
 * value) and the reference model's files (names, sizes, modification times).
 */
export function sourceFingerprint(settings: unknown, modelDir: string): string {
  const h = createHash('sha256');
  h.update(JSON.stringify(settings));
  for (const name of fs.readdirSync(modelDir).sort()) {
    const st = fs.statSync(path.join(modelDir, name));
    if (st.isFile()) h.update(`${name}\0${st.size}\0${st.mtimeMs}\n`);
  }
  return h.digest('hex');
}

/** True when `<out>/data` holds pairs prepared for these settings and this reference model (nothing to redo). */
export function preparedFor(out: string, settings: unknown, modelDir: string): boolean {
  const files = dataFiles(out);
  try {
    const prepared = JSON.parse(fs.readFileSync(files.prepared, 'utf8')) as { fingerprint?: string; pairsHash?: string };
    return prepared.fingerprint === sourceFingerprint(settings, modelDir) && prepared.pairsHash === fileHash(files.pairs);
  } catch {
    return false;
  }
}

/** Seeds of the n sampling passes over prompt group `group` (independent streams per group). */
export function sampleSeeds(seed: number, group: number, n: number): number[] {
  const rng = new Xoshiro128(seed, group);
  return Array.from({ length: n }, () => rng.nextUint32());
}

/** Lines of a header-guarded JSONL stage file with the right fingerprint (a torn last line is dropped). */
function readStage<T>(file: string, fingerprint: string): T[] {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  const lines = text.split('\n');
  lines.pop(); // text after the last newline is an incomplete line (or empty)
  if (lines.length === 0) return [];
  try {
    if ((JSON.parse(lines[0]!) as { fingerprint?: unknown }).fingerprint !== fingerprint) return [];
    return lines.slice(1).map((l) => JSON.parse(l) as T);
  } catch {
    return [];
  }
}

/** Start (or continue) a stage file: rewrite it with its header and the `kept` lines. */
function openStage<T>(file: string, fingerprint: string, kept: readonly T[]): (line: T) => void {
  writeFileAtomic(file, [JSON.stringify({ fingerprint }), ...kept.map((x) => JSON.stringify(x))].map((l) => `${l}\n`).join(''));
  return (line) => fs.appendFileSync(file, `${JSON.stringify(line)}\n`);
}

function fileHash(file: string): string {
  return createHash('sha256').update(fs.readFileSync(file)).digest('hex');
}

/** π_ref and its tokenizer. */
export interface ReferenceModel {
  readonly model: ApertusModel;
  readonly tokenizer: Tokenizer;
}

/** Inputs of {@link prepareAlignData}. */
export interface PrepareOptions {
  /** The settings. */
  readonly cfg: PreferenceDataConfig;
  /** Everything the data depends on (JSON), fingerprinted with the reference model's files. */
  readonly settings: unknown;
  /** The prompts. */
  readonly prompts: readonly AlignPrompt[];
  /** The reference model's directory (for the fingerprint). */
  readonly modelDir: string;
  /** Loads π_ref and its tokenizer when a stage has to run (not needed when everything is cached). */
  readonly reference: () => ReferenceModel | Promise<ReferenceModel>;
  /** The reward. */
  readonly reward: RewardFunction;
  /** Progress messages. */
  readonly log: (message: string) => void;
  /** Stop after the current prompt group (what is done so far is kept for the next run). */
  readonly signal?: AbortSignal;
}

interface SampleLine {
  readonly group: number;
  readonly completions: string[][];
  readonly cut: number;
}
interface RewardLine {
  readonly prompt: number;
  readonly offline: number[];
  readonly samples: number[];
}

/**
 * Prepare (or load) the preference pairs of a run: sampling, rewards, quantile rewards, pair
 * selection and reference log-probs, with the intermediate files described in the file header.
 * @throws PosttrainError: `InvalidPreference` naming the prompts file when a prompt does not fit
 *   `maxLength` or no pair survives; `Interrupted` when `signal` fires during the sampling
 */
export async function prepareAlignData(o: PrepareOptions): Promise<AlignData> {
  const { cfg, prompts, log } = o;
  const files = dataFiles(cfg.out);
  fs.mkdirSync(files.dir, { recursive: true });
  const fingerprint = sourceFingerprint(o.settings, o.modelDir);
  const padOf = (t: Tokenizer): number => t.padTokenId ?? APERTUS_PAD_ID;
  try {
    const prepared = JSON.parse(fs.readFileSync(files.prepared, 'utf8')) as { fingerprint?: string; pairsHash?: string; stats?: AlignDataStats; padId?: number };
    if (prepared.fingerprint === fingerprint && prepared.pairsHash === fileHash(files.pairs)) {
      const pairs = fs.readFileSync(files.pairs, 'utf8').split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as PairRecord);
      log(`data: reusing ${files.pairs} (${pairs.length} pairs from ${prepared.stats!.prompts} prompts)`);
      return { pairs, stats: prepared.stats!, fingerprint: prepared.pairsHash!, padId: prepared.padId ?? APERTUS_PAD_ID };
    }
  } catch {
    // not prepared yet (or unreadable): prepare below
  }
  const { model, tokenizer } = await o.reference();
  const render = (messages: AlignPrompt['messages'], completion?: string) =>
    applyApertusChatTemplate(tokenizer, completion === undefined ? messages : [...messages, { role: 'assistant', content: completion }], {
      ...(completion === undefined ? { addGenerationPrompt: true } : { variant: 'B' as const }),
      date: cfg.date,
    });
  const promptIds = prompts.map((p, i) => {
    const ids = render(p.messages).ids;
    if (ids.length >= cfg.maxLength) throw new PosttrainError('InvalidPreference', `prompt ${i} has ${ids.length} tokens, leaving no room for a completion within maxLength ${cfg.maxLength}`, { file: cfg.prompts, field: `prompt ${i}` });
    return ids;
  });

  // 1. Reference completions, group by group.
  const t0 = performance.now();
  const groups = Math.ceil(prompts.length / cfg.sampleBatchSize);
  const doneSamples = readStage<SampleLine>(files.samples, fingerprint).filter((l, i) => l.group === i);
  const appendSamples = openStage(files.samples, fingerprint, doneSamples);
  if (doneSamples.length > 0 && doneSamples.length < groups) log(`data: continuing the reference sampling at prompt group ${doneSamples.length + 1}/${groups}`);
  const samples: string[][] = doneSamples.flatMap((l) => l.completions);
  let cut = doneSamples.reduce((s, l) => s + l.cut, 0);
  const maxTokens = (ids: number[]) => Math.max(1, Math.min(cfg.sampleMaxTokens, cfg.maxLength - ids.length));
  for (let g = doneSamples.length; g < groups; g++) {
    const idx = Array.from({ length: Math.min(cfg.sampleBatchSize, prompts.length - g * cfg.sampleBatchSize) }, (_, k) => g * cfg.sampleBatchSize + k);
    const out: string[][] = idx.map(() => []);
    let groupCut = 0;
    for (const seed of sampleSeeds(cfg.seed, g, cfg.numReferences)) {
      const gens = generateBatch(model, idx.map((i) => promptIds[i]!), {
        temperature: cfg.sampleTemperature,
        maxTokens: Math.min(...idx.map((i) => maxTokens(promptIds[i]!))),
        stopTokenIds: APERTUS_STOP_IDS,
        seed,
      });
      gens.forEach((gen, k) => {
        out[k]!.push(tokenizer.decode(gen.tokens, { skipSpecialTokens: true }));
        if (gen.finishReason === 'length') groupCut++;
      });
    }
    appendSamples({ group: g, completions: out, cut: groupCut });
    samples.push(...out);
    cut += groupCut;
    log(`data: sampled ${cfg.numReferences} reference completions for prompts ${idx[0]! + 1}–${idx[idx.length - 1]! + 1} of ${prompts.length} (${((performance.now() - t0) / 1000).toFixed(0)} s)`);
    if (o.signal?.aborted && g + 1 < groups) throw new PosttrainError('Interrupted', `stopped the reference sampling after prompt group ${g + 1}/${groups}; run again (or with --resume) to continue`);
    await new Promise((resolve) => setImmediate(resolve)); // let a SIGINT handler run
  }

  // 2. Rewards of every candidate.
  const t1 = performance.now();
  const doneRewards = readStage<RewardLine>(files.rewards, fingerprint).filter((l, i) => l.prompt === i);
  const appendRewards = openStage(files.rewards, fingerprint, doneRewards);
  const rewards: RewardLine[] = [...doneRewards];
  for (let i = doneRewards.length; i < prompts.length; i++) {
    const p = prompts[i]!;
    const line: RewardLine = {
      prompt: i,
      offline: await scoreCompletions(o.reward, p.text, p.offline, p.reference),
      samples: await scoreCompletions(o.reward, p.text, samples[i]!, p.reference),
    };
    appendRewards(line);
    rewards.push(line);
  }
  if (rewards.length > doneRewards.length) log(`data: scored ${prompts.length} prompts × ${cfg.numReferences + (prompts[0]?.offline.length ?? 0)} candidates (${((performance.now() - t1) / 1000).toFixed(1)} s)`);

  // 3. Quantile rewards and pair selection (§3.5).
  type Candidate = { text: string; source: 'sample' | 'offline' };
  const selection: PreferencePrompt<Candidate, number>[] = prompts.map((p, i) => ({
    prompt: i,
    branches: [
      ...p.offline.map((text, k) => ({ completion: { text, source: 'offline' as const }, reward: rewards[i]!.offline[k]!, isReference: false })),
      ...samples[i]!.map((text, k) => ({ completion: { text, source: 'sample' as const }, reward: rewards[i]!.samples[k]!, isReference: true })),
    ],
  }));
  const selected = buildPreferencePairs(selection, { numPairs: cfg.numPairs, seed: cfg.seed });

  // 4. Tokens and reference log-probs.
  let truncated = 0;
  let droppedTruncated = 0;
  const side = (p: AlignPrompt, b: (typeof selected.pairs)[number]['chosen']) => {
    const chat = render(p.messages, b.completion.text);
    const cutHere = chat.ids.length > cfg.maxLength;
    if (cutHere) truncated++;
    const ids = cutHere ? chat.ids.slice(0, cfg.maxLength) : chat.ids;
    const mask = cutHere ? chat.assistantMask.slice(0, cfg.maxLength) : chat.assistantMask;
    return { text: b.completion.text, source: b.completion.source, reward: b.reward, quantileReward: b.quantileReward, ids, mask, length: mask.reduce((s, m) => s + m, 0) };
  };
  const unscored = selected.pairs.flatMap((pair) => {
    const p = prompts[pair.promptIndex]!;
    const chosen = side(p, pair.chosen);
    const rejected = side(p, pair.rejected);
    if (chosen.length === 0 || rejected.length === 0) {
      droppedTruncated++;
      return [];
    }
    return [{ promptIndex: pair.promptIndex, chosen, rejected, refRewards: [...pair.refRewards] }];
  });
  if (unscored.length === 0) throw new PosttrainError('InvalidPreference', `no preference pair: ${selected.droppedFewReferences + selected.droppedFewBranches} prompt(s) dropped by the selection, ${droppedTruncated} pair(s) by truncation`, { file: cfg.prompts });
  const padId = padOf(tokenizer);
  const rows = unscored.flatMap((p) => [p.chosen, p.rejected]);
  const refLogps = referenceLogProbs(model, rows, padId, Math.max(2, 2 * cfg.microBatchSize));
  const pairs: PairRecord[] = unscored.map((p, i) => ({
    promptIndex: p.promptIndex,
    chosen: { ...p.chosen, refLogp: refLogps[2 * i]! },
    rejected: { ...p.rejected, refLogp: refLogps[2 * i + 1]! },
    refRewards: p.refRewards,
  }));
  writeFileAtomic(files.pairs, pairs.map((p) => `${JSON.stringify(p)}\n`).join(''));

  const mean = (xs: readonly number[]): number => (xs.length === 0 ? Number.NaN : xs.reduce((a, b) => a + b, 0) / xs.length);
  const stats: AlignDataStats = {
    prompts: prompts.length,
    samples: samples.reduce((s, c) => s + c.length, 0),
    samplesCut: cut,
    meanSampleReward: mean(rewards.flatMap((r) => r.samples)),
    meanOfflineReward: mean(rewards.flatMap((r) => r.offline)),
    pairs: pairs.length,
    droppedPrompts: selected.droppedFewReferences + selected.droppedFewBranches,
    droppedTruncated,
    truncated,
    meanQuantileReward: { chosen: mean(pairs.map((p) => p.chosen.quantileReward)), rejected: mean(pairs.map((p) => p.rejected.quantileReward)) },
  };
  const pairsHash = fileHash(files.pairs);
  writeFileAtomic(files.prepared, `${JSON.stringify({ fingerprint, pairsHash, padId, stats }, null, 2)}\n`);
  log(
    `data: ${pairs.length} pairs from ${prompts.length} prompts (${stats.samples} samples, ${cut} cut at ${cfg.sampleMaxTokens} tokens); mean reward: samples ${stats.meanSampleReward.toFixed(4)}` +
      (Number.isNaN(stats.meanOfflineReward) ? '' : `, offline ${stats.meanOfflineReward.toFixed(4)}`) +
      `; mean R_q chosen ${stats.meanQuantileReward.chosen.toFixed(3)}, rejected ${stats.meanQuantileReward.rejected.toFixed(3)}` +
      (truncated > 0 ? `; warning: ${truncated} sides truncated to maxLength ${cfg.maxLength}` : '') +
      (stats.droppedPrompts > 0 ? `; ${stats.droppedPrompts} prompts dropped by the selection` : ''),
  );
  return { pairs, stats, fingerprint: pairsHash, padId };
}

/** A row to score: prompt + completion ids and the completion mask. */
export interface ScoredRow {
  /** Token ids. */
  readonly ids: readonly number[];
  /** 1 on completion tokens. */
  readonly mask: readonly number[];
}

/**
 * log π(y|x) of each row (summed over its completion tokens) in left-padded batches of
 * `batchSize`, without autograd.
 */
export function referenceLogProbs(model: ApertusModel, rows: readonly ScoredRow[], padId: number, batchSize: number): number[] {
  const out: number[] = [];
  noGrad(() => {
    for (let i = 0; i < rows.length; i += batchSize) {
      const b = collateSft(rows.slice(i, i + batchSize).map((r) => ({ ids: r.ids, assistantMask: r.mask })), { padId });
      const shape = [b.batchSize, b.length];
      const logits = model.forward(Tensor.ints(b.inputs, shape), { positions: Tensor.ints(b.positions, shape), docIds: Tensor.ints(b.docIds, shape) });
      const lp = sequenceLogProbs(logits, Tensor.ints(b.targets, shape), b.lossMask).toFloat32();
      for (const x of lp) out.push(x);
    }
  });
  return out;
}

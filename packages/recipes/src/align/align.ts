// Alignment on @apertus/trainer's loop (training-recipe §3, §6), offline:
//   SFT checkpoint = policy initialisation and frozen reference π_ref
//   → preference data (reference sampling, rewards, quantile rewards, §3.5 pairs, log π_ref)
//   → micro-batches of pairs (chosen and rejected rows left-padded together)
//   → summed completion log-probs log π_θ(y|x) → QRPO (Apertus length-normalised β or CLAIRE form)
//     or DPO, mean over the prompts of the global batch
//   → clipping → AdamW / AdEMAMix with linear warm-up and decay → validation loss on the held-out
//     references and held-out chrF/BLEU.

import { warmupStepsFromRatio } from '@apertus/ademamix';
import { resolveModel, withDownloadDisplay } from '@apertus/hub';
import { LoraAdapter, type ApertusModel } from '@apertus/model';
import { collateSft, loadPrompts, loadReward, preparedFor, prepareAlignData, tokenizeSftDataset, type PairRecord, type SftBatch } from '@apertus/posttrain';
import { checkpointTokenizer, loadPretrained } from '@apertus/pretrained';
import { dpoLoss, qrpoLoss, sequenceLogProbs } from '@apertus/qrpo';
import { Tensor, narrow, scale, sum } from '@apertus/tensor';
import { ConfigError, EpochOrder, ResumeError, buildOptimizer, chatGenerationConfig, epochSteps, globalBatchSize, linearDecaySchedule, runTraining, type SetupContext, type TrainingResult, type TrainingSetup } from '@apertus/trainer';
import { chrfTrend, translationRecord } from '../eval/translation';
import { sftBatches } from '../sft/batches';
import { ALIGN_TRAINING_KEYS, dataSettings, effectiveBeta, resolveAlignConfig, type AlignConfig } from './config';

/** Options of {@link runAlignment} besides the configuration. */
export interface AlignRunOptions {
  /** Continue from the latest checkpoint in `<out>/checkpoints` (a fresh start when there is none). */
  readonly resume?: boolean;
  /** Delete earlier checkpoints and the final model in `out` and start again (prepared data is reused when it matches). */
  readonly overwrite?: boolean;
  /** Messages. Default: through the progress display. */
  readonly log?: (message: string) => void;
  /** Stop (during sampling, or after the current step with a checkpoint) and return. */
  readonly signal?: AbortSignal;
}

/** A micro-batch of pairs: chosen rows 0…B−1 and rejected rows B…2B−1 of one left-padded batch. */
export interface PairBatch {
  /** Pairs B. */
  readonly pairs: number;
  /** The collated rows (2B). */
  readonly rows: SftBatch;
  /** Chosen / rejected: log π_ref, |y|, R_q. */
  readonly chosen: { readonly refLogps: Float64Array; readonly lengths: Float64Array; readonly quantiles: Float64Array };
  /** See `chosen`. */
  readonly rejected: { readonly refLogps: Float64Array; readonly lengths: Float64Array; readonly quantiles: Float64Array };
}

/** Collate pairs into a {@link PairBatch}. */
export function collatePairs(pairs: readonly PairRecord[], padId: number): PairBatch {
  const rows = collateSft([...pairs.map((p) => ({ ids: p.chosen.ids, assistantMask: p.chosen.mask })), ...pairs.map((p) => ({ ids: p.rejected.ids, assistantMask: p.rejected.mask }))], { padId });
  const side = (k: 'chosen' | 'rejected') => ({
    refLogps: Float64Array.from(pairs, (p) => p[k].refLogp),
    lengths: Float64Array.from(pairs, (p) => p[k].length),
    quantiles: Float64Array.from(pairs, (p) => p[k].quantileReward),
  });
  return { pairs: pairs.length, rows, chosen: side('chosen'), rejected: side('rejected') };
}

/** Per-step statistics of the policy against the reference (for the metrics log). */
export interface PairStats {
  /** Σ over pairs of log π_θ(y_w) − log π_ref(y_w). */
  logRatioChosen: number;
  /** Σ over pairs of log π_θ(y_l) − log π_ref(y_l). */
  logRatioRejected: number;
  /** Pairs whose chosen log-ratio per token exceeds the rejected one. */
  correct: number;
  /** Pairs counted. */
  pairs: number;
}

/**
 * The objective on one micro-batch: the per-prompt QRPO or DPO losses summed and divided by
 * `normalizer` (the pairs of the whole optimizer step), so micro-batches add up to the mean over
 * the prompts of the global batch. Policy log-probs are summed over the completion tokens.
 */
export function pairLoss(model: ApertusModel, b: PairBatch, cfg: AlignConfig, normalizer: number, stats?: PairStats): Tensor {
  const r = b.rows;
  const shape = [r.batchSize, r.length];
  const logits = model.forward(Tensor.ints(r.inputs, shape), { positions: Tensor.ints(r.positions, shape), docIds: Tensor.ints(r.docIds, shape) });
  const logps = sequenceLogProbs(logits, Tensor.ints(r.targets, shape), r.lossMask);
  const chosen = { policyLogps: narrow(logps, 0, 0, b.pairs), refLogps: b.chosen.refLogps, lengths: b.chosen.lengths };
  const rejected = { policyLogps: narrow(logps, 0, b.pairs, b.pairs), refLogps: b.rejected.refLogps, lengths: b.rejected.lengths };
  const beta = effectiveBeta(cfg);
  const { perPrompt } =
    cfg.loss === 'qrpo'
      ? qrpoLoss(chosen, rejected, { chosen: b.chosen.quantiles, rejected: b.rejected.quantiles }, {
          beta,
          variant: cfg.qrpoVariant,
          transform: cfg.transform,
          numRefRewards: cfg.numReferences,
          lossType: cfg.lossType,
          normalizeByLength: cfg.normalizeByLength,
        })
      : dpoLoss(chosen, rejected, { beta, lengthNormalized: cfg.dpoLengthNormalized, normalizeByLength: cfg.normalizeByLength });
  if (stats) {
    const lp = logps.toFloat32();
    for (let i = 0; i < b.pairs; i++) {
      const w = lp[i]! - b.chosen.refLogps[i]!;
      const l = lp[b.pairs + i]! - b.rejected.refLogps[i]!;
      stats.logRatioChosen += w;
      stats.logRatioRejected += l;
      if (w / b.chosen.lengths[i]! > l / b.rejected.lengths[i]!) stats.correct++;
      stats.pairs++;
    }
  }
  return scale(sum(perPrompt), 1 / normalizer);
}

/** The SFT model (policy and π_ref), preference pairs, optimizer and schedule of an alignment run. */
async function setup(cfg: AlignConfig, options: AlignRunOptions, ctx: SetupContext<AlignConfig>): Promise<TrainingSetup<PairBatch>> {
  // π_ref: a model directory, a run folder or a Hub id (downloaded first), loaded as float32 when needed.
  const ref = await withDownloadDisplay(process.stderr, (onProgress) => resolveModel(cfg.model, { onProgress }));
  const refDir = ref.path;
  const loadModel = async (spec: string) => (await loadPretrained(spec, { precision: 'f32', trainable: true })).model;
  // The preference data depends on the reference model: a resume must find it prepared as before.
  if (ctx.resume !== null && !preparedFor(cfg.out, dataSettings(cfg), refDir)) throw new ResumeError(ctx.resume.dir, 'the reference model or the prepared preference data changed since the checkpoint was written');
  if (ref.format === 'gguf') throw new ConfigError('model', `${cfg.model} is a GGUF file: alignment trains the weights, start from the Hugging Face checkpoint`);
  const { tokenizer, tokenizerFiles } = checkpointTokenizer(refDir);
  const reward = await loadReward(cfg.reward, {
    date: cfg.date,
    loadModel: async (location) => {
      const p = await withDownloadDisplay(process.stderr, (onProgress) => loadPretrained(location, { precision: 'f32', onProgress }));
      return { dir: p.source.path, model: p.model, tokenizer: p.tokenizer };
    },
  });
  const { prompts, heldOut } = await loadPrompts(cfg);
  if (ctx.resume === null) ctx.log(`reference model: ${refDir}; ${prompts.length} prompts; reward: ${reward.description}`);
  // π_ref is only needed to prepare the data; on a fresh run the policy starts as the same weights.
  let reference: ApertusModel | null = null;
  const data = await prepareAlignData({
    cfg,
    settings: dataSettings(cfg),
    prompts,
    modelDir: refDir,
    reward: reward.fn,
    log: ctx.log,
    ...(options.signal ? { signal: options.signal } : {}),
    reference: async () => {
      // A resumed LoRA policy is π_ref with its adapter switched off: the weights are held once.
      const policy = ctx.resume?.model;
      if (policy?.adapter) { policy.adapter.enabled = false; return { model: policy, tokenizer }; }
      reference ??= await loadModel(refDir);
      return { model: reference, tokenizer };
    },
  });
  if (ctx.resume?.model.adapter) ctx.resume.model.adapter.enabled = true;
  ctx.checkData(data.fingerprint);
  const total = epochSteps(cfg, data.pairs.length);
  const model: ApertusModel = ctx.resume?.model ?? reference ?? (await loadModel(refDir));
  // LoRA: the fresh policy is π_ref plus a zero-initialised adapter (log π_ref above was computed without it).
  if (ctx.resume === null && cfg.lora) LoraAdapter.init(model, cfg.lora, cfg.seed).attach(model);
  if (cfg.maxLength > model.config.max_position_embeddings) throw new ConfigError('maxLength', `${cfg.maxLength} exceeds the model's max_position_embeddings (${model.config.max_position_embeddings})`);
  const order = ctx.resume ? new EpochOrder(data.pairs.length, { state: ctx.resume.state.loader }) : new EpochOrder(data.pairs.length, { seed: cfg.seed });
  const refRows = heldOut.map((e) => ({ messages: [...e.messages, { role: 'assistant' as const, content: e.reference }] }));
  const validation = sftBatches((await tokenizeSftDataset(tokenizer, refRows, { maxLength: cfg.maxLength, date: cfg.date })).examples, 8, data.padId);
  const gbs = globalBatchSize(cfg);
  const beta = effectiveBeta(cfg);
  const objective = cfg.loss === 'qrpo' ? `QRPO (${cfg.qrpoVariant}${cfg.qrpoVariant === 'claire' ? `, ${cfg.transform}` : ', length-normalised'}, β ${beta})` : `DPO (β ${beta}${cfg.dpoLengthNormalized ? '/|y|' : ''})`;
  let stats: PairStats = { logRatioChosen: 0, logRatioRejected: 0, correct: 0, pairs: 0 };
  return {
    model,
    optimizer: buildOptimizer(cfg, model.parameters()),
    schedule: linearDecaySchedule(cfg, total),
    schedulerIncrement: 1,
    globalBatch: gbs,
    totalSteps: total,
    clip: cfg.clip,
    fingerprint: data.fingerprint,
    files: { ...tokenizerFiles, 'generation_config.json': chatGenerationConfig(model.config.bos_token_id, data.padId) },
    baseModel: ref.hub ? ref.hub.repo : refDir,
    data: {
      next: () => {
        stats = { logRatioChosen: 0, logRatioRejected: 0, correct: 0, pairs: 0 };
        const pairs = Array.from({ length: cfg.gradAccumulation }, () => order.next(cfg.microBatchSize).map((i) => data.pairs[i]!));
        return { microBatches: pairs.map((p) => collatePairs(p, data.padId)), tokens: pairs.flat().reduce((n, p) => n + p.chosen.ids.length + p.rejected.ids.length - 2, 0) };
      },
      get state() {
        return { ...order.state };
      },
    },
    weightOf: (b) => b.pairs,
    loss: (b, normalizer) => pairLoss(model, b, cfg, normalizer, stats),
    trainRecord: () => ({ logRatioChosen: stats.logRatioChosen / stats.pairs, logRatioRejected: stats.logRatioRejected / stats.pairs, accuracy: stats.correct / stats.pairs }),
    validation,
    evaluate: (step, last) =>
      (step === 0 || last) && cfg.evalTranslation && heldOut.length > 0 ? [translationRecord(model, tokenizer, heldOut, { maxTokens: cfg.evalMaxTokens, date: cfg.date }, step, ctx.log)] : [],
    summary: `training: ${objective} on ${data.pairs.length} pairs, ${total} steps × ${gbs} pairs, ${cfg.optimizer}, lr ${cfg.lr} (warm-up ${warmupStepsFromRatio(cfg.warmupRatio, total)} steps, linear decay), clip ${cfg.clip}`,
    plotNote: `${objective}; ${data.pairs.length} pairs from ${data.stats.prompts} prompts × ${cfg.numReferences} reference completions; reward ${cfg.reward}; ${cfg.optimizer}, lr ${cfg.lr}`,
    plotDetails: (metrics) => [chrfTrend(metrics), 'validation = held-out reference loss'].filter((x) => x !== '').join('; '),
  };
}

/**
 * Run (or resume) an alignment run as configured. Writes under `cfg.out`: `config.json`,
 * `data/` (samples, rewards, pairs), `checkpoints/`, `metrics.jsonl`, `loss.html`, and at the end
 * `model/`.
 */
export function runAlignment(cfg: AlignConfig, options: AlignRunOptions = {}): Promise<TrainingResult> {
  return runTraining({
    ...options,
    config: cfg,
    name: 'apertus-align',
    saveDtype: cfg.saveDtype,
    trainingKeys: ALIGN_TRAINING_KEYS,
    parseConfig: (values, source) => resolveAlignConfig([{ source, values }]).config,
    setup: (ctx) => setup(cfg, options, ctx),
  });
}

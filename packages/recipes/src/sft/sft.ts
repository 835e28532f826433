// SFT on @apertus/trainer's loop (training-recipe §5):
//   base checkpoint → chat rows (one conversation per row, or packed with a per-document mask)
//   → left-padded micro-batches
//   → assistant-only cross-entropy, token-averaged over the whole global batch (Σ mask·CE / Σ mask)
//   → global-norm clipping → AdEMAMix (α = 5, β3 = 0.9999, no warm-ups) or AdamW with a linear
//   warm-up / linear decay schedule → validation loss and held-out chrF/BLEU.

import fs from 'node:fs';
import path from 'node:path';
import { writeFileAtomic } from '@apertus/atomic-file';
import { warmupStepsFromRatio } from '@apertus/ademamix';
import { resolveModel, withDownloadDisplay } from '@apertus/hub';
import { LoraAdapter, parameterCount, type ApertusModel } from '@apertus/model';
import { collateSft, packSft, prepareSftData } from '@apertus/posttrain';
import { checkpointTokenizer, loadPretrained } from '@apertus/pretrained';
import type { Tensor } from '@apertus/tensor';
import { ConfigError, EpochOrder, buildOptimizer, chatGenerationConfig, epochSteps, globalBatchSize, linearDecaySchedule, runTraining, type LmBatch, type SetupContext, type TrainingResult, type TrainingSetup } from '@apertus/trainer';
import { chrfTrend, translationRecord } from '../eval/translation';
import { lmBatchOfSft, sftBatches } from './batches';
import { SFT_TRAINING_KEYS, resolveSftConfig, type SftConfig } from './config';

/** Options of {@link runSft} besides the configuration. */
export interface SftRunOptions {
  /** Continue from the latest checkpoint in `<out>/checkpoints` (a fresh start when there is none). */
  readonly resume?: boolean;
  /** Delete earlier checkpoints and the final model in `out` and start again. */
  readonly overwrite?: boolean;
  /** Messages (data summary, evaluations, checkpoints). Default: through the progress display. */
  readonly log?: (message: string) => void;
  /** Stop after the current step, save a checkpoint and return (SIGINT / SIGTERM in the CLI). */
  readonly signal?: AbortSignal;
}

/**
 * The SFT loss of one micro-batch: Σ mask·CE over its assistant tokens divided by `normalizer`
 * (the supervised tokens of the whole optimizer step), with the LM head fused into the loss.
 */
export function sftLoss(model: ApertusModel, batch: LmBatch, normalizer: number): Tensor {
  return model.loss(batch.ids, batch.targets, {
    mask: batch.mask,
    normalizer,
    ...(batch.positions ? { positions: batch.positions } : {}),
    ...(batch.docIds ? { docIds: batch.docIds } : {}),
  });
}

/** The base a LoRA adapter names (`base_model_name_or_path`): the Hub id of a Hub model (as PEFT expects it), else the model directory. */
async function baseModelName(spec: string): Promise<string> {
  const at = await resolveModel(spec);
  return at.hub ? at.hub.repo : at.path;
}

/** Base model (or checkpoint), tokenized conversations, optimizer and schedule of an SFT run. */
async function setup(cfg: SftConfig, ctx: SetupContext<SftConfig>): Promise<TrainingSetup<LmBatch>> {
  // The base model (a model directory, a run folder or a Hub id), or the checkpoint a resumed run continues.
  const base = ctx.resume === null ? await withDownloadDisplay(process.stderr, (onProgress) => loadPretrained(cfg.model, { precision: 'f32', trainable: true, onProgress })) : null;
  const model = ctx.resume?.model ?? base!.model;
  // LoRA: a frozen base and a fresh adapter (a resumed model has its adapter attached already).
  if (ctx.resume === null && cfg.lora) LoraAdapter.init(model, cfg.lora, cfg.seed).attach(model);
  if (base !== null) ctx.log(`base model: ${base.source.hub ? `${base.name} (${base.source.path})` : base.source.path}`);
  const { tokenizer, tokenizerFiles } = base ?? checkpointTokenizer(ctx.resume!.dir);
  const c = model.config;
  if (cfg.maxLength > c.max_position_embeddings) throw new ConfigError('maxLength', `${cfg.maxLength} exceeds the model's max_position_embeddings (${c.max_position_embeddings})`);
  const data = await prepareSftData(cfg, tokenizer, ctx.log);
  ctx.checkData(data.fingerprint);
  if (data.conversationsJsonl !== null) {
    const file = path.join(cfg.out, 'data', 'train.jsonl');
    fs.mkdirSync(path.dirname(file), { recursive: true });
    writeFileAtomic(file, data.conversationsJsonl);
  }
  // Packing: several conversations per row, each attending only to itself (positions restart).
  const rows = cfg.packing ? packSft(data.examples, { maxLength: cfg.maxLength }) : data.examples;
  if (cfg.packing && ctx.resume === null) ctx.log(`packing: ${data.examples.length} conversations in ${rows.length} rows of at most ${cfg.maxLength} tokens`);
  const total = epochSteps(cfg, rows.length);
  const order = ctx.resume ? new EpochOrder(rows.length, { state: ctx.resume.state.loader }) : new EpochOrder(rows.length, { seed: cfg.seed });
  const gbs = globalBatchSize(cfg);
  const nParams = model.parameters().reduce((s, [, p]) => s + p.size, 0), nBase = parameterCount(c), a = model.adapter?.config;
  const trained = a ? `LoRA r ${a.r}, α ${a.lora_alpha} on ${a.target_modules.toString()}: ${nParams} trainable parameters (${((100 * nParams) / nBase).toFixed(2)}% of ${(nBase / 1e6).toFixed(2)}M)` : `${(nParams / 1e6).toFixed(2)}M parameters`;
  const schedule = linearDecaySchedule(cfg, total);
  return {
    model,
    optimizer: buildOptimizer(cfg, model.parameters()),
    schedule,
    schedulerIncrement: 1,
    globalBatch: gbs,
    totalSteps: total,
    clip: cfg.clip,
    fingerprint: data.fingerprint,
    files: { ...tokenizerFiles, 'generation_config.json': chatGenerationConfig(c.bos_token_id, data.padId) },
    ...(model.adapter ? { baseModel: await baseModelName(cfg.model) } : {}),
    data: {
      next: () => {
        const step = Array.from({ length: cfg.gradAccumulation }, () => order.next(cfg.microBatchSize).map((i) => rows[i]!));
        return { microBatches: step.map((r) => lmBatchOfSft(collateSft(r, { padId: data.padId }))), tokens: step.flat().reduce((n, r) => n + r.ids.length - 1, 0) };
      },
      get state() {
        return { ...order.state };
      },
    },
    weightOf: (b) => b.keptTokens,
    loss: (b, normalizer) => sftLoss(model, b, normalizer),
    trainRecord: (r) => ({ lossTokens: r.weight }),
    validation: sftBatches(data.validation, cfg.microBatchSize, data.padId),
    evaluate: (step, last) =>
      (step === 0 || last) && cfg.evalTranslation && data.heldOut.length > 0 ? [translationRecord(model, tokenizer, data.heldOut, { maxTokens: cfg.evalMaxTokens, date: cfg.date }, step, ctx.log)] : [],
    summary: `model: ${c.num_hidden_layers} layers, hidden ${c.hidden_size}, vocab ${c.vocab_size}: ${trained}; ${total} steps × ${gbs} conversations, ${cfg.optimizer}, lr ${cfg.lr} (warm-up ${warmupStepsFromRatio(cfg.warmupRatio, total)} steps, linear decay)`,
    plotNote: `${c.num_hidden_layers} layers, hidden ${c.hidden_size}, vocab ${c.vocab_size}; data ${cfg.data} (${data.examples.length} conversations); ${cfg.optimizer}, lr ${cfg.lr}, linear decay`,
    plotDetails: chrfTrend,
  };
}

/**
 * Run (or resume) SFT as configured. Writes under `cfg.out`: `config.json`, `data/train.jsonl`
 * (bundled task), `checkpoints/step-NNNNNN/` + `checkpoints/latest`, `metrics.jsonl`, `loss.html`,
 * and at the end `model/` (Hugging Face checkpoint with the tokenizer and a chat
 * `generation_config.json`).
 */
export function runSft(cfg: SftConfig, options: SftRunOptions = {}): Promise<TrainingResult> {
  return runTraining({
    ...options,
    config: cfg,
    name: 'apertus-sft',
    saveDtype: cfg.saveDtype,
    trainingKeys: SFT_TRAINING_KEYS,
    parseConfig: (values, source) => resolveSftConfig([{ source, values }]).config,
    setup: (ctx) => setup(cfg, ctx),
  });
}

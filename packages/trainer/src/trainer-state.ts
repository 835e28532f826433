// trainer_state.json: everything besides weights and optimizer moments that a run needs to
// continue bit-exactly — step and token counters, the schedule count, the data-loader position,
// and the metrics logged so far.

import { CheckpointReadError } from './errors';

/** A JSON value (what `JSON.stringify` / `JSON.parse` round-trip exactly). */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** One line of the metrics log: a `type` (`train`, `eval`, `sample`, …), the step, and JSON fields. */
export interface MetricRecord {
  /** Kind of record: `train` (per step), `eval` (validation), `sample` (a generation), … */
  readonly type: string;
  /** Optimizer step the record belongs to (0 = before training). */
  readonly step: number;
  /** Other fields (`loss`, `lr`, `gradNorm`, `valLoss`, `text`, …). */
  readonly [field: string]: Json;
}

/** Contents of `trainer_state.json`; `C` is the run's configuration type (plain JSON as read back). */
export interface TrainerState<C = Json> {
  /** Format marker. */
  readonly format: 'apertus-trainer-state';
  /** Format version. */
  readonly version: 1;
  /** Optimizer steps completed. */
  readonly step: number;
  /** Input tokens consumed (padding included). */
  readonly tokens: number;
  /** Samples consumed. */
  readonly samples: number;
  /** Learning-rate scheduler count (`LrScheduler.stateDict()`). */
  readonly scheduler: { readonly count: number };
  /** Data-loader position (opaque JSON, e.g. `{ epoch, cursor, seed }`). */
  readonly loader: Json;
  /** Every metric record logged up to this step (the metrics log is rebuilt from it on resume). */
  readonly metrics: readonly MetricRecord[];
  /** The run's resolved configuration, so a resume can check it continues the same run. */
  readonly config: C;
  /** Anything else the app needs (RNG states, best validation loss, …). */
  readonly extra: { readonly [key: string]: Json };
}

function nonNegativeInt(v: unknown, file: string, field: string): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) throw new CheckpointReadError(file, `expected a non-negative integer, got ${JSON.stringify(v)}`, field);
  return v;
}

/**
 * Validate an untrusted `trainer_state.json` document (already parsed), throwing
 * {@link CheckpointReadError} naming the file and the first bad field.
 */
export function parseTrainerState(value: unknown, file: string): TrainerState {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new CheckpointReadError(file, 'expected a JSON object');
  const v = value as Record<string, unknown>;
  if (v.format !== 'apertus-trainer-state') throw new CheckpointReadError(file, `unknown format ${JSON.stringify(v.format)}`, 'format');
  if (v.version !== 1) throw new CheckpointReadError(file, `unsupported version ${JSON.stringify(v.version)}`, 'version');
  const step = nonNegativeInt(v.step, file, 'step');
  const tokens = nonNegativeInt(v.tokens, file, 'tokens');
  const samples = nonNegativeInt(v.samples, file, 'samples');
  const sched = v.scheduler as { count?: unknown } | null;
  if (typeof sched !== 'object' || sched === null) throw new CheckpointReadError(file, 'expected an object', 'scheduler');
  if (typeof sched.count !== 'number' || !Number.isFinite(sched.count) || sched.count < 0) throw new CheckpointReadError(file, `expected a number ≥ 0, got ${JSON.stringify(sched.count)}`, 'scheduler.count');
  if (!Array.isArray(v.metrics)) throw new CheckpointReadError(file, 'expected an array', 'metrics');
  v.metrics.forEach((m, i) => {
    if (typeof m !== 'object' || m === null || typeof (m as MetricRecord).type !== 'string' || typeof (m as MetricRecord).step !== 'number') {
      throw new CheckpointReadError(file, 'expected an object with a string "type" and a numeric "step"', `metrics[${i}]`);
    }
  });
  if (typeof v.extra !== 'object' || v.extra === null || Array.isArray(v.extra)) throw new CheckpointReadError(file, 'expected an object', 'extra');
  if (!('loader' in v)) throw new CheckpointReadError(file, 'missing', 'loader');
  return {
    format: 'apertus-trainer-state',
    version: 1,
    step,
    tokens,
    samples,
    scheduler: { count: sched.count },
    loader: v.loader as Json,
    metrics: v.metrics as MetricRecord[],
    config: (v.config ?? null) as Json,
    extra: v.extra as Record<string, Json>,
  };
}

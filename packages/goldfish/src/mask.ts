// The Goldfish keep-mask (training-recipe.md §2.2–2.5).
//
// hash-table (Apertus / Megatron, goldfish-loss "hash-table"): for each target position i ≥ h−1 of
// a row, key = (labels[i−h+1] · … · labels[i] as int64, wrapping) mod 1,000,003 (non-negative);
// the target is dropped iff table[key] < 1/k (compared in float32, as torch compares a float32
// tensor with a Python scalar). Positions 0 … h−2 are never dropped. The window ends at and
// includes the target itself.
// static: drop positions start, start+k, start+2k, … of every row.
// Rows are independent (one packed sample each); windows never cross rows.

import { GoldfishError } from './errors';
import { goldfishHashTable } from './hash-table';
import { windowKeys } from './int64';

/** Mask strategy: `hash-table` (what Apertus uses) or `static` (every k-th position). */
export type GoldfishStrategy = 'hash-table' | 'static';

/** One row of labels, or a batch of rows. */
export type GoldfishLabels = Int32Array | readonly number[] | ReadonlyArray<Int32Array | readonly number[]>;

/** Options of {@link goldfishMask}; names follow Megatron's `--goldfish-k` / `--goldfish-h`. */
export interface GoldfishOptions {
  /** k: drop rate 1/k (integer ≥ 1). Apertus: 50. Default 50. */
  readonly goldfishK?: number;
  /** h: hash context width — the number of labels, target included, whose product is hashed (integer ≥ 1). Apertus: 50. Default 50. */
  readonly goldfishH?: number;
  /** Strategy (default `hash-table`). */
  readonly strategy?: GoldfishStrategy;
  /** `static` only: first dropped position (goldfish-loss `goldfish_start_position`, default 0). */
  readonly goldfishStart?: number;
  /**
   * Label value that is already excluded from the loss (e.g. −1 in goldfish-loss, −100 in HF).
   * Such positions get keep = 0; their raw value still enters the window products, as in the
   * reference. Default: none (Megatron maps padding to label 0 and uses a separate loss mask).
   */
  readonly ignoreIndex?: number;
  /** `[B, L]` when `labels` is one flat array holding B rows of L labels. Default: one row. */
  readonly shape?: readonly [number, number];
}

/** The settings of every Apertus pretraining and long-context stage (§2.4): k = 50, h = 50, hash-table. */
export const APERTUS_GOLDFISH: Readonly<Required<Pick<GoldfishOptions, 'goldfishK' | 'goldfishH' | 'strategy'>>> = Object.freeze({
  goldfishK: 50,
  goldfishH: 50,
  strategy: 'hash-table',
});

function positiveInt(v: unknown, field: string): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) {
    throw new GoldfishError('InvalidOption', `${field} must be a positive integer, got ${String(v)}`, { field });
  }
  return v;
}

/** Flatten the labels into one array, returning it with the row length. */
function rowsOf(labels: GoldfishLabels, shape: readonly [number, number] | undefined): { flat: ArrayLike<number>; rows: number; len: number } {
  const first: unknown = (labels as ArrayLike<unknown>).length > 0 ? (labels as ArrayLike<unknown>)[0] : undefined;
  const nested = typeof first === 'object' && first !== null;
  if (nested) {
    if (shape !== undefined) throw new GoldfishError('InvalidOption', 'shape is only for flat label arrays', { field: 'shape' });
    const rows = labels as ReadonlyArray<Int32Array | readonly number[]>;
    const len = rows[0]!.length;
    const flat = new Float64Array(rows.length * len);
    rows.forEach((r, b) => {
      if (r.length !== len) throw new GoldfishError('LengthMismatch', `row ${b} has ${r.length} labels, row 0 has ${len}`, { field: 'labels', index: b });
      for (let i = 0; i < len; i++) flat[b * len + i] = r[i]!;
    });
    return { flat, rows: rows.length, len };
  }
  const flat = labels as Int32Array | readonly number[];
  if (shape === undefined) return { flat, rows: flat.length > 0 ? 1 : 0, len: flat.length };
  const [B, L] = shape;
  if (!Number.isInteger(B) || !Number.isInteger(L) || B < 0 || L < 0 || B * L !== flat.length) {
    throw new GoldfishError('InvalidOption', `shape [${String(B)}, ${String(L)}] does not match ${flat.length} labels`, { field: 'shape' });
  }
  return { flat, rows: B, len: L };
}

function checkLabels(flat: ArrayLike<number>): void {
  if (flat instanceof Int32Array) return;
  for (let i = 0; i < flat.length; i++) {
    if (!Number.isSafeInteger(flat[i])) throw new GoldfishError('InvalidLabel', `label ${i} is ${String(flat[i])}, not a safe integer`, { field: 'labels', index: i });
  }
}

/**
 * Goldfish keep-mask of a row or a batch of rows of target labels: `1` = the token is trained on,
 * `0` = dropped (or equal to `ignoreIndex`). The result is flat, row-major, one byte per label.
 * AND it with the document loss mask ({@link combineMasks}) and normalise the loss by the number
 * of kept tokens ({@link keptCount}).
 * @throws GoldfishError `InvalidOption`, `InvalidLabel`, `LengthMismatch`
 */
export function goldfishMask(labels: GoldfishLabels, options: GoldfishOptions = {}): Uint8Array {
  const k = positiveInt(options.goldfishK ?? 50, 'goldfishK');
  const h = positiveInt(options.goldfishH ?? 50, 'goldfishH');
  const strategy = options.strategy ?? 'hash-table';
  if (strategy !== 'hash-table' && strategy !== 'static') {
    throw new GoldfishError('InvalidOption', `strategy must be "hash-table" or "static", got ${String(strategy)}`, { field: 'strategy' });
  }
  const start = options.goldfishStart ?? 0;
  if (!Number.isInteger(start) || start < 0) throw new GoldfishError('InvalidOption', `goldfishStart must be an integer ≥ 0, got ${String(start)}`, { field: 'goldfishStart' });
  const ignore = options.ignoreIndex;
  if (ignore !== undefined && !Number.isSafeInteger(ignore)) throw new GoldfishError('InvalidOption', `ignoreIndex must be an integer, got ${String(ignore)}`, { field: 'ignoreIndex' });

  const { flat, rows, len } = rowsOf(labels, options.shape);
  checkLabels(flat);
  const keep = new Uint8Array(rows * len).fill(1);

  if (strategy === 'static') {
    for (let b = 0; b < rows; b++) for (let i = start; i < len; i += k) keep[b * len + i] = 0;
  } else if (len >= h) {
    const table = goldfishHashTable();
    const threshold = Math.fround(1 / k);
    const keys = new Int32Array(len);
    for (let b = 0; b < rows; b++) {
      const n = windowKeys(flat, b * len, len, h, keys);
      const base = b * len + h - 1;
      for (let j = 0; j < n; j++) if (table[keys[j]!]! < threshold) keep[base + j] = 0;
    }
  }
  if (ignore !== undefined) for (let i = 0; i < keep.length; i++) if (flat[i] === ignore) keep[i] = 0;
  return keep;
}

/** A 0/1 mask: bytes, floats (e.g. Megatron's float loss mask) or numbers; nonzero = keep. */
export type MaskLike = Uint8Array | Float32Array | Float64Array | readonly number[] | readonly boolean[];

/**
 * Element-wise AND of two masks of equal length (nonzero = keep) — e.g. the Goldfish mask and the
 * end-of-document loss mask of §4.4.
 * @throws GoldfishError `LengthMismatch`
 */
export function combineMasks(a: MaskLike, b: MaskLike): Uint8Array {
  if (a.length !== b.length) throw new GoldfishError('LengthMismatch', `masks have ${a.length} and ${b.length} elements`, { field: 'b' });
  const out = new Uint8Array(a.length);
  for (let i = 0; i < a.length; i++) out[i] = a[i] && b[i] ? 1 : 0;
  return out;
}

/** Number of kept (nonzero) entries: the denominator of the Goldfish loss Σ G_i·ℓ_i / Σ G_i. */
export function keptCount(mask: MaskLike): number {
  let n = 0;
  for (let i = 0; i < mask.length; i++) if (mask[i]) n++;
  return n;
}

/** The mask as float32 0/1 values, the form a masked cross-entropy takes. */
export function toFloatMask(mask: MaskLike): Float32Array {
  const out = new Float32Array(mask.length);
  for (let i = 0; i < mask.length; i++) out[i] = mask[i] ? 1 : 0;
  return out;
}

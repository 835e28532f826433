// Collation of SFT rows into micro-batches (training-recipe.md §5): one conversation per row (no
// packing), LEFT padding, next-token targets.
//
// For a row of ids x_0 … x_{n−1} with assistant mask a_0 … a_{n−1}, the model reads
// x_0 … x_{n−2} and predicts targets x_1 … x_{n−1}; the loss mask of target t is a_{t+1}, so the
// mask is aligned with the targets. Rows are padded on the left to the longest row of the batch:
// pad positions read `padId`, have target `padId` and loss mask 0. `positions` count 0, 1, … from
// each row's first real token (pads 0) and `docIds` put pads in document 0 and the row in
// document 1, so with @apertus/model's `forward(ids, { positions, docIds })` no token attends to
// padding and every row computes exactly what it would alone.
//
// The SFT loss is token-level over the whole global batch, Σ(mask·CE)/Σ mask
// (`average_tokens_across_devices`): pass the summed `lossTokens` of all micro-batches of one
// optimizer step as the cross-entropy normaliser.

import { checkOption, PosttrainError } from './errors';

/** A row to collate: ids and the assistant mask aligned with them (e.g. an {@link SftExample}). */
export interface SftRow {
  /** Token ids. */
  readonly ids: ArrayLike<number>;
  /** 1 on supervised tokens, aligned with `ids`. */
  readonly assistantMask: ArrayLike<number>;
}

/** Options of {@link collateSft}: the padding id, given directly or taken from the tokenizer. */
export interface CollateOptions {
  /** Padding id (Apertus `<pad>` = 3). Default: `tokenizer.padTokenId`. */
  readonly padId?: number;
  /** Tokenizer whose `padTokenId` pads when `padId` is not given. */
  readonly tokenizer?: { readonly padTokenId: number | null };
  /** Round the padded length up to a multiple of this. Default 1. */
  readonly padToMultipleOf?: number;
}

/** A left-padded micro-batch, row-major `[batchSize, length]`. */
export interface SftBatch {
  /** Rows. */
  readonly batchSize: number;
  /** Padded input length T (longest row minus one, rounded up). */
  readonly length: number;
  /** Input ids [B, T]. */
  readonly inputs: Int32Array;
  /** Target ids [B, T]: `targets[b, t]` is the token after `inputs[b, t]`. */
  readonly targets: Int32Array;
  /** Loss mask [B, T] aligned with the targets: 1 on supervised targets, 0 on prompt and padding. */
  readonly lossMask: Float32Array;
  /** Position ids [B, T]: 0, 1, … from each row's first real token; 0 on padding. */
  readonly positions: Int32Array;
  /** Document ids [B, T]: 0 on padding, 1 on the row (keeps attention off the padding). */
  readonly docIds: Int32Array;
  /** Number of left pads of each row. */
  readonly padding: readonly number[];
  /** Σ lossMask: supervised tokens of this micro-batch. */
  readonly lossTokens: number;
}

/**
 * Collate rows into one left-padded micro-batch with shifted targets and the aligned loss mask.
 * Throws {@link PosttrainError} on an empty batch, a row shorter than 2 tokens or a mask whose
 * length differs from its row.
 */
export function collateSft(rows: readonly SftRow[], options: CollateOptions): SftBatch {
  const padId = options.padId ?? options.tokenizer?.padTokenId ?? undefined;
  const multiple = options.padToMultipleOf ?? 1;
  if (padId === undefined) throw new PosttrainError('InvalidOption', 'no padding id: pass padId or a tokenizer with a pad token', { field: 'padId' });
  checkOption(Number.isInteger(padId) && padId >= 0, 'padId', `expected a non-negative integer, got ${padId}`);
  checkOption(Number.isInteger(multiple) && multiple >= 1, 'padToMultipleOf', `expected a positive integer, got ${multiple}`);
  if (rows.length === 0) throw new PosttrainError('LengthMismatch', 'no rows to collate', { field: 'rows' });
  let longest = 0;
  rows.forEach((r, b) => {
    if (r.ids.length < 2) throw new PosttrainError('LengthMismatch', `row has ${r.ids.length} token(s); at least 2 are needed for one target`, { field: `rows[${b}].ids` });
    if (r.assistantMask.length !== r.ids.length) {
      throw new PosttrainError('LengthMismatch', `assistantMask has ${r.assistantMask.length} entries for ${r.ids.length} ids`, { field: `rows[${b}].assistantMask` });
    }
    longest = Math.max(longest, r.ids.length - 1);
  });
  const T = Math.ceil(longest / multiple) * multiple;
  const B = rows.length;
  const inputs = new Int32Array(B * T).fill(padId);
  const targets = new Int32Array(B * T).fill(padId);
  const lossMask = new Float32Array(B * T);
  const positions = new Int32Array(B * T);
  const docIds = new Int32Array(B * T);
  const padding: number[] = [];
  let lossTokens = 0;
  rows.forEach((r, b) => {
    const n = r.ids.length - 1;
    const pad = T - n;
    padding.push(pad);
    for (let t = 0; t < n; t++) {
      const i = b * T + pad + t;
      inputs[i] = r.ids[t]!;
      targets[i] = r.ids[t + 1]!;
      const m = r.assistantMask[t + 1]! ? 1 : 0;
      lossMask[i] = m;
      lossTokens += m;
      positions[i] = t;
      docIds[i] = 1;
    }
  });
  return { batchSize: B, length: T, inputs, targets, lossMask, positions, docIds, padding, lossTokens };
}

/** Σ `lossTokens` over the micro-batches of one optimizer step: the token-level loss normaliser. */
export function countLossTokens(batches: Iterable<Pick<SftBatch, 'lossTokens'>>): number {
  let n = 0;
  for (const b of batches) n += b.lossTokens;
  return n;
}

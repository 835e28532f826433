// Collation of SFT rows into micro-batches (training-recipe.md §5): one conversation per row, or
// several packed into one row (`packSft`), LEFT padding, next-token targets.
//
// For a row of ids x_0 … x_{n−1} with assistant mask a_0 … a_{n−1}, the model reads
// x_0 … x_{n−2} and predicts targets x_1 … x_{n−1}; the loss mask of target t is a_{t+1}, so the
// mask is aligned with the targets. Rows are padded on the left to the longest row of the batch:
// pad positions read `padId`, have target `padId` and loss mask 0. `positions` count 0, 1, … from
// each row's first real token (pads 0) and `docIds` put pads in document 0 and the row in
// document 1, so with @apertus/model's `forward(ids, { positions, docIds })` no token attends to
// padding and every row computes exactly what it would alone.
//
// A packed row holds several documents back to back (`docLengths`): positions restart at 0 and
// `docIds` count 1, 2, … per document, so attention never crosses documents (the packing document
// mask of the pretraining loader), and the last token of a document predicts nothing (mask 0).
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
  /** Lengths of the documents packed into this row, in order (sum = ids.length); absent = one document. */
  readonly docLengths?: readonly number[];
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
  /** Position ids [B, T]: 0, 1, … from each document's first token; 0 on padding. */
  readonly positions: Int32Array;
  /** Document ids [B, T]: 0 on padding, 1, 2, … on the row's documents (keeps attention off the padding and other documents). */
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
    if (r.docLengths !== undefined && (r.docLengths.some((n) => !Number.isInteger(n) || n < 1) || r.docLengths.reduce((a, n) => a + n, 0) !== r.ids.length)) {
      throw new PosttrainError('LengthMismatch', `docLengths [${r.docLengths.join(', ')}] do not split the row's ${r.ids.length} ids`, { field: `rows[${b}].docLengths` });
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
    const lengths = r.docLengths ?? [r.ids.length];
    let doc = 0, start = 0;
    for (let t = 0; t < n; t++) {
      if (t === start + lengths[doc]!) { start = t; doc++; }
      const i = b * T + pad + t;
      inputs[i] = r.ids[t]!;
      targets[i] = r.ids[t + 1]!;
      const m = r.assistantMask[t + 1]! && t + 1 < start + lengths[doc]! ? 1 : 0;
      lossMask[i] = m;
      lossTokens += m;
      positions[i] = t - start;
      docIds[i] = doc + 1;
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

/**
 * Pack rows into rows of at most `maxLength` tokens, best-fit decreasing (as TRL's `bfd` packing):
 * longest first, each into the fullest row it still fits in. Each packed row lists its documents'
 * lengths for {@link collateSft}. Deterministic; rows already longer than `maxLength` are refused.
 */
export function packSft(rows: readonly SftRow[], options: { readonly maxLength: number }): SftRow[] {
  const L = options.maxLength;
  checkOption(Number.isInteger(L) && L >= 2, 'maxLength', `expected an integer ≥ 2, got ${L}`);
  const order = rows.map((r, i) => {
    if (r.ids.length > L) throw new PosttrainError('LengthMismatch', `row has ${r.ids.length} tokens, more than maxLength ${L}`, { field: `rows[${i}].ids` });
    return i;
  }).sort((a, b) => rows[b]!.ids.length - rows[a]!.ids.length || a - b);
  const bins: { members: number[]; used: number }[] = [];
  for (const i of order) {
    const n = rows[i]!.ids.length;
    let best = -1;
    for (let k = 0; k < bins.length; k++) if (bins[k]!.used + n <= L && (best < 0 || bins[k]!.used > bins[best]!.used)) best = k;
    if (best < 0) bins.push({ members: [i], used: n });
    else { bins[best]!.members.push(i); bins[best]!.used += n; }
  }
  return bins.map(({ members }) => ({
    ids: members.flatMap((i) => Array.from(rows[i]!.ids)),
    assistantMask: members.flatMap((i) => Array.from(rows[i]!.assistantMask)),
    docLengths: members.flatMap((i) => rows[i]!.docLengths ?? [rows[i]!.ids.length]),
  }));
}

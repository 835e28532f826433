/**
 * One training sample cut from the packed token stream (training-recipe §4.4):
 * a window of `seqLength + 1` tokens gives inputs `tokens = window[:-1]` and
 * targets `labels = window[1:]`, plus the Megatron cross-document tensors.
 */
export interface PackedSample {
  /** Input ids, length `seqLength`. */
  readonly tokens: Int32Array;
  /** Target ids (inputs shifted by one), length `seqLength`. */
  readonly labels: Int32Array;
  /**
   * 1 where the loss is taken. With `eodMaskLoss` it is 0 where the *input* is EoD
   * (predicting the next document's BoD); predicting EoD itself is trained.
   * Always 0 where the label is padding.
   */
  readonly lossMask: Uint8Array;
  /** Positions; with `resetPositionIds` they restart at 0 right after each EoD input. */
  readonly positionIds: Int32Array;
  /** Corpus-wide document ordinal of each input token (-1 for padding). */
  readonly documentIds: Float64Array;
}

/** Megatron switches for cross-document handling (all on in Apertus pretraining). */
export interface SampleOptions {
  /** `--reset-position-ids` (default true). */
  readonly resetPositionIds?: boolean;
  /** `--eod-mask-loss` (default true). */
  readonly eodMaskLoss?: boolean;
}

/**
 * Build a sample from a window of `seqLength + 1` token ids and the document
 * ordinal of each. Entries at index ≥ `validLength` are padding: their labels get
 * loss mask 0 and document id -1.
 */
export function buildSample(
  window: ArrayLike<number>,
  windowDocumentIds: ArrayLike<number>,
  eodId: number,
  options: SampleOptions = {},
  validLength: number = window.length,
): PackedSample {
  const L = window.length - 1;
  const resetPositionIds = options.resetPositionIds ?? true;
  const eodMaskLoss = options.eodMaskLoss ?? true;
  const tokens = new Int32Array(L);
  const labels = new Int32Array(L);
  const lossMask = new Uint8Array(L);
  const positionIds = new Int32Array(L);
  const documentIds = new Float64Array(L);
  let pos = 0;
  for (let t = 0; t < L; t++) {
    const tok = window[t]!;
    tokens[t] = tok;
    labels[t] = window[t + 1]!;
    documentIds[t] = t < validLength ? windowDocumentIds[t]! : -1;
    lossMask[t] = t + 1 >= validLength || (eodMaskLoss && tok === eodId) ? 0 : 1;
    positionIds[t] = resetPositionIds ? pos : t;
    pos = tok === eodId ? 0 : pos + 1;
  }
  return { tokens, labels, lossMask, positionIds, documentIds };
}

/**
 * Dense attention mask (row = query, column = key; 1 = may attend), `L × L`
 * row-major. Causal; with `resetAttentionMask` (default true, Megatron
 * `--reset-attention-mask`) a token after an EoD input cannot attend to anything
 * at or before that EoD, i.e. block-diagonal causal over documents.
 */
export function buildAttentionMask(tokens: ArrayLike<number>, eodId: number, resetAttentionMask = true): Uint8Array {
  const L = tokens.length;
  const mask = new Uint8Array(L * L);
  let blockStart = 0;
  for (let q = 0; q < L; q++) {
    const from = resetAttentionMask ? blockStart : 0;
    mask.fill(1, q * L + from, q * L + q + 1);
    if (tokens[q] === eodId) blockStart = q + 1;
  }
  return mask;
}

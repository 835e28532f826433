// Chat (SFT) rows as causal-LM micro-batches: `@apertus/posttrain`'s left-padded batches turned into
// the tensors of an LmBatch.

import { collateSft, type SftBatch, type SftExample } from '@apertus/posttrain';
import { Tensor } from '@apertus/tensor';
import type { LmBatch } from '@apertus/trainer';

/** The tensors of a left-padded chat batch (`@apertus/posttrain`'s {@link SftBatch}) as an {@link LmBatch}. */
export function lmBatchOfSft(b: SftBatch): LmBatch {
  const shape = [b.batchSize, b.length];
  return {
    batchSize: b.batchSize,
    seqLength: b.length,
    ids: Tensor.ints(b.inputs, shape),
    targets: Tensor.ints(b.targets, [b.batchSize * b.length]),
    positions: Tensor.ints(b.positions, shape),
    docIds: Tensor.ints(b.docIds, shape),
    mask: b.lossMask,
    keptTokens: b.lossTokens,
    goldfishDropped: 0,
  };
}

/** Chat rows cut into left-padded batches of `size` (validation sets, held-out references). */
export function sftBatches(rows: readonly SftExample[], size: number, padId: number): LmBatch[] {
  const out: LmBatch[] = [];
  for (let i = 0; i < rows.length; i += size) out.push(lmBatchOfSft(collateSft(rows.slice(i, i + size), { padId })));
  return out;
}


import { record } from '../../autograd';
import { bf16ArrayToF32, f16ArrayToF32 } from '../../dtype';
import { embeddingBackwardKernel, embeddingKernel } from './kernel';
import { ShapeError } from '../../errors';
import type { Tensor } from '../../tensor';
import { packedRowsKernel } from '../linear/quant/kernel';
import { storedWeight } from '../linear/quant/weight';
import { i32, kernelF32, out } from '../util';

/**
 * Rows of `table` [V, H] picked by integer `ids` (any shape) → [...ids.shape, H]; the backward is
 * a scatter-add. A stored or quantized table is read by the registry's `packedRows` kernels on the
 * current device; a bf16/f16 table (no gradient) is converted row by row, never whole.
 */
export function embedding(ids: Tensor, table: Tensor): Tensor {
  if (table.rank !== 2) throw new ShapeError(`embedding: table must be [V, H], got [${table.shape}]`);
  const [V, H] = table.shape as [number, number];
  const idx = i32(ids, 'embedding');
  for (let i = 0; i < idx.length; i++) {
    if (idx[i]! < 0 || idx[i]! >= V) throw new ShapeError(`embedding: id ${idx[i]} at position ${i} is outside [0, ${V}) of ${table}`);
  }
  const res = out([...ids.shape, H]);
  const stored = storedWeight(table);
  if (stored !== null) {
    packedRowsKernel.run(stored, idx, res.data);
    return res;
  }
  if (table.dtype === 'bf16' || table.dtype === 'f16') {
    const t = table.materialize(), bits = t.storage as Uint16Array, y = res.data;
    for (let i = 0; i < idx.length; i++) {
      const row = bits.subarray(t.offset + idx[i]! * H, t.offset + (idx[i]! + 1) * H), into = y.subarray(i * H, (i + 1) * H);
      if (table.dtype === 'bf16') bf16ArrayToF32(row, into); else into.set(f16ArrayToF32(row));
    }
    return res;
  }
  embeddingKernel.run(idx, kernelF32(table, 'embedding'), H, res.data);
  return record(res, 'embedding', [table], (g) => {
    const gt = out(table.shape);
    embeddingBackwardKernel.run(idx, kernelF32(g, 'embedding'), H, gt.data);
    return [gt];
  });
}

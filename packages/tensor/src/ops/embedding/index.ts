import { record } from '../../autograd';
import { embeddingBackwardKernel, embeddingKernel } from './kernel';
import { ShapeError } from '../../errors';
import type { Tensor } from '../../tensor';
import { i32, kernelF32, out } from '../util';

/** Rows of `table` [V, H] picked by integer `ids` (any shape) → [...ids.shape, H]; the backward is a scatter-add. */
export function embedding(ids: Tensor, table: Tensor): Tensor {
  if (table.rank !== 2) throw new ShapeError(`embedding: table must be [V, H], got [${table.shape}]`);
  const [V, H] = table.shape as [number, number];
  const idx = i32(ids, 'embedding');
  for (let i = 0; i < idx.length; i++) {
    if (idx[i]! < 0 || idx[i]! >= V) throw new ShapeError(`embedding: id ${idx[i]} at position ${i} is outside [0, ${V}) of ${table}`);
  }
  const res = out([...ids.shape, H]);
  embeddingKernel.run(idx, kernelF32(table, 'embedding'), H, res.data);
  return record(res, 'embedding', [table], (g) => {
    const gt = out(table.shape);
    embeddingBackwardKernel.run(idx, kernelF32(g, 'embedding'), H, gt.data);
    return [gt];
  });
}

import { record } from '../../autograd';
import { ropeKernel } from './kernel';
import { ShapeError } from '../../errors';
import type { Tensor } from '../../tensor';
import { i32, kernelF32, out } from '../util';

/**
 * Rotary position embedding (rotate_half form) on x [..., N, heads, d] — one position per row
 * of the flattened leading axes — with frequencies `invFreq` [d/2] and integer `positions` [N·…].
 */
export function rope(x: Tensor, positions: Tensor, invFreq: Float32Array): Tensor {
  const d = x.shape[x.rank - 1]!, heads = x.shape[x.rank - 2]!;
  const N = x.size / (d * heads);
  if (d % 2 !== 0 || invFreq.length !== d / 2) throw new ShapeError(`rope: head dim ${d} needs ${d / 2} frequencies, got ${invFreq.length}`);
  if (positions.size !== N) throw new ShapeError(`rope: ${positions.size} positions for ${N} rows of [${x.shape}]`);
  const pos = i32(positions, 'rope');
  const res = out(x.shape);
  ropeKernel.run(kernelF32(x, 'rope'), N, heads, d, pos, invFreq, false, res.data);
  return record(res, 'rope', [x], (g) => {
    const gx = out(x.shape);
    ropeKernel.run(kernelF32(g, 'rope'), N, heads, d, pos, invFreq, true, gx.data);
    return [gx];
  });
}

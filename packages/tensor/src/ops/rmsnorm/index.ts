import { record } from '../../autograd';
import { rmsnormBackwardKernel, rmsnormKernel } from './kernel';
import { ShapeError } from '../../errors';
import type { Tensor } from '../../tensor';
import { kernelF32, out, zerosF32 } from '../util';

/** RMSNorm over the last axis: y = w ⊙ x / sqrt(mean(x²) + eps) (Llama/Apertus style, no bias). */
export function rmsnorm(x: Tensor, w: Tensor, eps: number): Tensor {
  const n = x.shape[x.rank - 1]!;
  if (w.rank !== 1 || w.shape[0] !== n) throw new ShapeError(`rmsnorm: weight ${w} does not match the last axis of [${x.shape}]`);
  const rows = x.size / n;
  const xs = kernelF32(x, 'rmsnorm'), ws = kernelF32(w, 'rmsnorm');
  const res = out(x.shape);
  const rstd = zerosF32(rows);
  rmsnormKernel.run(xs, ws, rows, n, eps, res.data, rstd);
  return record(res, 'rmsnorm', [x, w], (g) => {
    const gx = out(x.shape), gw = out(w.shape);
    rmsnormBackwardKernel.run(xs, ws, rstd, kernelF32(g, 'rmsnorm'), rows, n, gx.data, gw.data);
    return [gx, gw];
  });
}

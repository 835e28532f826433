import { isGradEnabled, record } from '../autograd';
import { heapRelease, scratchF32 } from '../kernels/cpu/heap';
import { kernel } from '../backend';
import { ShapeError } from '../errors';
import type { Tensor } from '../tensor';
import { kernelF32, out, zerosF32 } from './util';

/** RMSNorm over the last axis: y = w ⊙ x / sqrt(mean(x²) + eps) (Llama/Apertus style, no bias). */
export function rmsnorm(x: Tensor, w: Tensor, eps: number): Tensor {
  const n = x.shape[x.rank - 1]!;
  if (w.rank !== 1 || w.shape[0] !== n) throw new ShapeError(`rmsnorm: weight ${w} does not match the last axis of [${x.shape}]`);
  const rows = x.size / n;
  const xs = kernelF32(x, 'rmsnorm'), ws = kernelF32(w, 'rmsnorm');
  const res = out(x.shape);
  // 1/rms per row, for the backward: kernel scratch, given back at once, where nothing is recorded (inference).
  const saved = isGradEnabled() && (x.requiresGrad || w.requiresGrad);
  const rstd = saved ? zerosF32(rows) : scratchF32(rows);
  kernel('rmsnorm')(xs, ws, rows, n, eps, res.data, rstd);
  if (!saved) heapRelease(rstd);
  return record(res, 'rmsnorm', [x, w], (g) => {
    const gx = out(x.shape), gw = out(w.shape);
    kernel('rmsnormBackward')(xs, ws, rstd, kernelF32(g, 'rmsnorm'), rows, n, gx.data, gw.data);
    return [gx, gw];
  });
}

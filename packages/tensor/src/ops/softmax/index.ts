import { record } from '../../autograd';
import { logSoftmaxBackwardKernel, logSoftmaxKernel, softmaxBackwardKernel, softmaxKernel } from './kernel';
import { ShapeError } from '../../errors';
import type { Tensor } from '../../tensor';
import { kernelF32, out } from '../util';

function lastAxis(x: Tensor, axis: number, op: string): number {
  if (axis !== -1 && axis !== x.rank - 1) throw new ShapeError(`${op}: only the last axis is supported (got ${axis}); transpose first`);
  return x.shape[x.rank - 1]!;
}

/** Softmax over the last axis. */
export function softmax(x: Tensor, axis = -1): Tensor {
  const n = lastAxis(x, axis, 'softmax');
  const rows = x.size / n;
  const res = out(x.shape);
  softmaxKernel.run(kernelF32(x, 'softmax'), rows, n, res.data);
  return record(res, 'softmax', [x], (g) => {
    const gx = out(x.shape);
    softmaxBackwardKernel.run(kernelF32(res, 'softmax'), kernelF32(g, 'softmax'), rows, n, gx.data);
    return [gx];
  });
}

/** Log-softmax over the last axis. */
export function logSoftmax(x: Tensor, axis = -1): Tensor {
  const n = lastAxis(x, axis, 'logSoftmax');
  const rows = x.size / n;
  const res = out(x.shape);
  logSoftmaxKernel.run(kernelF32(x, 'logSoftmax'), rows, n, res.data);
  return record(res, 'logSoftmax', [x], (g) => {
    const gx = out(x.shape);
    logSoftmaxBackwardKernel.run(kernelF32(res, 'logSoftmax'), kernelF32(g, 'logSoftmax'), rows, n, gx.data);
    return [gx];
  });
}

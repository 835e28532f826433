import type { F32, I32 } from '../../arrays';
import { onWebgpu } from '../../device-hooks';
import { defineKernel, kernelOp } from '../../registry';
import * as reference from './reference';
import { max, sum, sumSquares } from './webgpu';

/** out[o, i] = Σ_j x[o, j, i] for x viewed as [outer, n, inner]. */
export const sumKernel = kernelOp<(x: F32, outer: number, n: number, inner: number, out: F32) => void>('sum');
/** out[o, i] = max_j x[o, j, i]; arg[o, i] = the first j attaining it. */
export const maxKernel = kernelOp<(x: F32, outer: number, n: number, inner: number, out: F32, arg: I32) => void>('max');
/** out[0] = acc[0] + Σ_i x[i]² (acc null: 0); `out` may be `acc` (the squared global norm of clipping, parameter by parameter). */
export const sumSquaresKernel = kernelOp<(x: F32, acc: F32 | null, out: F32) => void>('sumSquares');

defineKernel(sumKernel, { device: 'cpu', impl: 'reference', run: reference.sum });
defineKernel(maxKernel, { device: 'cpu', impl: 'reference', run: reference.max });
defineKernel(sumSquaresKernel, { device: 'cpu', impl: 'reference', run: reference.sumSquares });
onWebgpu((gpu) => {
  defineKernel(sumKernel, { device: 'webgpu', impl: 'wgsl', run: gpu.record(sum) });
  defineKernel(maxKernel, { device: 'webgpu', impl: 'wgsl', run: gpu.record(max) });
  defineKernel(sumSquaresKernel, { device: 'webgpu', impl: 'wgsl', run: gpu.record(sumSquares) });
});

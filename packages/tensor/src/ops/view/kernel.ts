import type { F32 } from '../../arrays';
import { onWebgpu } from '../../device-hooks';
import { defineKernel, kernelOp } from '../../registry';
import * as reference from './reference';
import { copyStrided } from './webgpu';

/**
 * The strided view of `x` (element `offset`, `shape`, `strides`) copied into `out` in row-major
 * order: out[i] = x[offset + Σ_k idx_k(i)·strides[k]]. Materialises non-contiguous views
 * (transpose, permute, narrow).
 */
export const copyStridedKernel = kernelOp<(x: F32, offset: number, shape: readonly number[], strides: readonly number[], out: F32) => void>('copyStrided');

defineKernel(copyStridedKernel, { device: 'cpu', impl: 'reference', run: reference.copyStrided });
onWebgpu((gpu) => {
  defineKernel(copyStridedKernel, { device: 'webgpu', impl: 'wgsl', run: gpu.record(copyStrided) });
});

import type { F32, I32 } from '../../arrays';
import { onWebgpu } from '../../device-hooks';
import { defineKernel, kernelOp } from '../../registry';
import * as reference from './reference';
import { rope } from './webgpu';

/**
 * Rotary embedding, rotate_half (NeoX) form, on x [N, heads, d] with one position per row:
 * for i < d/2, angle = pos·invFreq[i]; (x1, x2) = (x[i], x[i + d/2]);
 * out[i] = x1·cos − x2·sin, out[i + d/2] = x2·cos + x1·sin. `inverse` rotates by −angle (the backward pass).
 */
export const ropeKernel = kernelOp<(x: F32, N: number, heads: number, d: number, positions: I32, invFreq: F32, inverse: boolean, out: F32) => void>('rope');

defineKernel(ropeKernel, { device: 'cpu', impl: 'reference', run: reference.rope });
onWebgpu((gpu) => {
  defineKernel(ropeKernel, { device: 'webgpu', impl: 'wgsl', run: gpu.record(rope) });
});

import type { F32 } from '../../arrays';
import { onWebgpu } from '../../device-hooks';
import { defineKernel, kernelOp } from '../../registry';
import * as reference from './reference';
import { copyWgsl } from './webgpu';

/** dst ← src (same length): writing new keys and values into their KV block, on the device that holds them. */
export const copyKernel = kernelOp<(src: F32, dst: F32) => void>('copy');

defineKernel(copyKernel, { device: 'cpu', impl: 'reference', run: reference.copy });
onWebgpu((gpu) => {
  defineKernel(copyKernel, { device: 'webgpu', impl: 'wgsl', run: gpu.record(copyWgsl) });
});

import type { F32 } from '../../arrays';
import { onWebgpu } from '../../device-hooks';
import { defineKernel, kernelOp } from '../../registry';
import * as reference from './reference';
import { geluBackwardWgsl, geluWgsl } from './webgpu';

/** out[i] = gelu(x[i]) (tanh form). */
export const geluKernel = kernelOp<(x: F32, out: F32) => void>('gelu');
/** gx[i] = gy[i]·gelu'(x[i]). */
export const geluBackwardKernel = kernelOp<(x: F32, gy: F32, gx: F32) => void>('geluBackward');

defineKernel(geluKernel, { device: 'cpu', impl: 'reference', run: reference.gelu });
defineKernel(geluBackwardKernel, { device: 'cpu', impl: 'reference', run: reference.geluBackward });
onWebgpu((gpu) => {
  defineKernel(geluKernel, { device: 'webgpu', impl: 'wgsl', run: gpu.record(geluWgsl) });
  defineKernel(geluBackwardKernel, { device: 'webgpu', impl: 'wgsl', run: gpu.record(geluBackwardWgsl) });
});

/**
 * GELU (tanh form) as gpu.js kernels for the webgpu device, one thread per element, the same
 * formulas as reference.ts in float32.
 */
import { call, into, type KernelOp } from '../../kernels/gpujs/ops';
import type { F32 } from '../../arrays';

const forward = `function (x) {
  const v = x[this.thread.x];
  return 0.5 * v * (1 + Math.tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
}`;

const backward = `function (x, gy) {
  const v = x[this.thread.x];
  const t = Math.tanh(0.7978845608028654 * (v + 0.044715 * v * v * v));
  return gy[this.thread.x] * (0.5 * (1 + t) + 0.5 * v * (1 - t * t) * 0.7978845608028654 * (1 + 0.134145 * v * v));
}`;

/** out = gelu(x). */
export function* geluGpujs(x: F32, out: F32): KernelOp {
  const n = x.length;
  if (n > 0) yield* into(out, call('gelu', `${n}`, () => ({ source: forward, output: [n], argumentTypes: { x: 'Array' } }), [x]));
}

/** gx = gy·gelu'(x). */
export function* geluBackwardGpujs(x: F32, gy: F32, gx: F32): KernelOp {
  const n = x.length;
  if (n > 0) yield* into(gx, call('geluBackward', `${n}`, () => ({ source: backward, output: [n], argumentTypes: { x: 'Array', gy: 'Array' } }), [x, gy]));
}

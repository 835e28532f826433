/**
 * GELU (tanh form) as WGSL kernels of the webgpu device, one thread per element: the formulas of
 * reference.ts in float32, tanh as the device's `tanh_` (Cephes' algorithm).
 */
import type { F32 } from '../../arrays';
import type { WebgpuContext } from '../../webgpu/kernel';
import { MAIN_1D, MATH, params, wgsl } from '../../webgpu/wgsl';

const N = params(['n', 'u32']);

/** out = gelu(x). */
export function geluWgsl(ctx: WebgpuContext, x: F32, out: F32): void {
  const n = x.length;
  if (n === 0) return;
  const k = ctx.kernel('gelu', '', () => wgsl(N, [['x', 'r', 'f32'], ['y', 'w', 'f32']], `${MATH}${MAIN_1D}  let v = x[i];
  y[i] = 0.5 * v * (1.0 + tanh_(0.7978845608028654 * (v + 0.044715 * v * v * v)));
}
`));
  ctx.run(k, N.pack({ n }), [ctx.st.input(x, 'gelu input'), ctx.st.output(out, 'gelu')], ctx.grid(Math.ceil(n / 256)));
}

/** gx = gy·gelu'(x). */
export function geluBackwardWgsl(ctx: WebgpuContext, x: F32, gy: F32, gx: F32): void {
  const n = x.length;
  if (n === 0) return;
  const k = ctx.kernel('geluBackward', '', () => wgsl(N, [['x', 'r', 'f32'], ['gy', 'r', 'f32'], ['gx', 'w', 'f32']], `${MATH}${MAIN_1D}  let v = x[i];
  let t = tanh_(0.7978845608028654 * (v + 0.044715 * v * v * v));
  gx[i] = gy[i] * (0.5 * (1.0 + t) + 0.5 * v * (1.0 - t * t) * 0.7978845608028654 * (1.0 + 0.134145 * v * v));
}
`));
  ctx.run(k, N.pack({ n }), [ctx.st.input(x, 'gelu input'), ctx.st.input(gy, 'gradient'), ctx.st.output(gx, 'gradient')], ctx.grid(Math.ceil(n / 256)));
}

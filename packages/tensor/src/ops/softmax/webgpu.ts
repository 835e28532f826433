/**
 * Softmax and log-softmax (forward and backward) as WGSL kernels of the webgpu device: one
 * 256-thread workgroup per row, the row's max and sums reduced across it (`wg_max`, `wg_sum`).
 */
import { ShapeError } from '../../errors';
import type { F32 } from '../../arrays';
import type { WebgpuContext } from '../../webgpu/kernel';
import { MATH, params, REDUCE, ROW_EXP_SUM, ROW_MAIN, ROW_MAX, wgsl } from '../../webgpu/wgsl';

const RN = params(['rows', 'u32'], ['n', 'u32']);

function check(op: string, rows: number, n: number, arrays: Record<string, ArrayLike<number>>): void {
  for (const [name, a] of Object.entries(arrays)) {
    if (a.length !== rows * n) throw new ShapeError(`${op}: ${name} has ${a.length} elements, [${rows}, ${n}] needs ${rows * n}`);
  }
}

/** Row softmax: y = exp(x − m)·(1/Σ exp(x − m)). */
export function softmax(ctx: WebgpuContext, x: F32, rows: number, n: number, out: F32): void {
  check('softmax', rows, n, { x, out });
  if (rows * n === 0) return;
  const k = ctx.kernel('softmax', '', () => wgsl(RN, [['x', 'r', 'f32'], ['y', 'w', 'f32']],
    `${MATH}${REDUCE}${ROW_MAIN}${ROW_MAX}${ROW_EXP_SUM}  let inv = 1.0 / s;
  for (var j = li; j < p.n; j = j + 256u) { y[o + j] = exp_(x[o + j] - m) * inv; }
}
`));
  ctx.run(k, RN.pack({ rows, n }), [ctx.st.input(x, 'softmax input'), ctx.st.output(out, 'softmax')], ctx.grid(rows));
}

/** Row log-softmax: y = x − (m + log Σ exp(x − m)). */
export function logSoftmax(ctx: WebgpuContext, x: F32, rows: number, n: number, out: F32): void {
  check('logSoftmax', rows, n, { x, out });
  if (rows * n === 0) return;
  const k = ctx.kernel('logSoftmax', '', () => wgsl(RN, [['x', 'r', 'f32'], ['y', 'w', 'f32']],
    `${MATH}${REDUCE}${ROW_MAIN}${ROW_MAX}${ROW_EXP_SUM}  let lse = m + log_(s);
  for (var j = li; j < p.n; j = j + 256u) { y[o + j] = x[o + j] - lse; }
}
`));
  ctx.run(k, RN.pack({ rows, n }), [ctx.st.input(x, 'logSoftmax input'), ctx.st.output(out, 'logSoftmax')], ctx.grid(rows));
}

/** gx = y·(gy − Σ gy·y) per row. */
export function softmaxBackward(ctx: WebgpuContext, y: F32, gy: F32, rows: number, n: number, gx: F32): void {
  check('softmaxBackward', rows, n, { y, gy, gx });
  if (rows * n === 0) return;
  const k = ctx.kernel('softmaxBackward', '', () => wgsl(RN, [['y', 'r', 'f32'], ['gy', 'r', 'f32'], ['gx', 'w', 'f32']],
    `${REDUCE}${ROW_MAIN}  var d = 0.0;
  for (var j = li; j < p.n; j = j + 256u) { d = d + gy[o + j] * y[o + j]; }
  d = wg_sum(d, li);
  for (var j = li; j < p.n; j = j + 256u) { gx[o + j] = y[o + j] * (gy[o + j] - d); }
}
`));
  ctx.run(k, RN.pack({ rows, n }), [ctx.st.input(y, 'softmax output'), ctx.st.input(gy, 'gradient'), ctx.st.output(gx, 'gradient')], ctx.grid(rows));
}

/** gx = gy − exp(y)·Σ gy per row. */
export function logSoftmaxBackward(ctx: WebgpuContext, y: F32, gy: F32, rows: number, n: number, gx: F32): void {
  check('logSoftmaxBackward', rows, n, { y, gy, gx });
  if (rows * n === 0) return;
  const k = ctx.kernel('logSoftmaxBackward', '', () => wgsl(RN, [['y', 'r', 'f32'], ['gy', 'r', 'f32'], ['gx', 'w', 'f32']],
    `${MATH}${REDUCE}${ROW_MAIN}  var s = 0.0;
  for (var j = li; j < p.n; j = j + 256u) { s = s + gy[o + j]; }
  s = wg_sum(s, li);
  for (var j = li; j < p.n; j = j + 256u) { gx[o + j] = gy[o + j] - exp_(y[o + j]) * s; }
}
`));
  ctx.run(k, RN.pack({ rows, n }), [ctx.st.input(y, 'logSoftmax output'), ctx.st.input(gy, 'gradient'), ctx.st.output(gx, 'gradient')], ctx.grid(rows));
}


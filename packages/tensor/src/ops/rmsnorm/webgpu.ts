/**
 * RMSNorm (forward: one workgroup per row; backward: a workgroup per row for gx, one thread per
 * column for gw, summing the rows in order) as WGSL kernels of the webgpu device.
 */
import { ShapeError } from '../../errors';
import type { F32 } from '../../arrays';
import type { WebgpuContext } from '../../webgpu/kernel';
import { GROUP_INDEX, params, REDUCE, ROW_MAIN, wgsl } from '../../webgpu/wgsl';

const RN = params(['rows', 'u32'], ['n', 'u32']);

function check(op: string, rows: number, n: number, arrays: Record<string, ArrayLike<number>>): void {
  for (const [name, a] of Object.entries(arrays)) {
    if (a.length !== rows * n) throw new ShapeError(`${op}: ${name} has ${a.length} elements, [${rows}, ${n}] needs ${rows * n}`);
  }
}

const NORM = params(['rows', 'u32'], ['n', 'u32'], ['eps', 'f32']);

/** out = w·(x·rstd), rstd = 1/sqrt(mean(x²) + eps) per row. */
export function rmsnorm(ctx: WebgpuContext, x: F32, w: F32, rows: number, n: number, eps: number, out: F32, rstd: F32): void {
  check('rmsnorm', rows, n, { x, out });
  if (w.length !== n || rstd.length !== rows) throw new ShapeError(`rmsnorm: w needs ${n} and rstd ${rows} entries`);
  if (rows * n === 0) return;
  const k = ctx.kernel('rmsnorm', '', () => wgsl(NORM, [['x', 'r', 'f32'], ['w', 'r', 'f32'], ['y', 'w', 'f32'], ['rstd', 'w', 'f32']],
    `${REDUCE}${ROW_MAIN}  var ss = 0.0;
  for (var j = li; j < p.n; j = j + 256u) { let v = x[o + j]; ss = ss + v * v; }
  ss = wg_sum(ss, li);
  let rs = inverseSqrt(ss / f32(p.n) + p.eps);
  if (li == 0u) { rstd[row] = rs; }
  for (var j = li; j < p.n; j = j + 256u) { y[o + j] = w[j] * (x[o + j] * rs); }
}
`));
  ctx.run(k, NORM.pack({ rows, n, eps }), [ctx.st.input(x, 'rmsnorm input'), ctx.st.input(w, 'rmsnorm weight'), ctx.st.output(out, 'rmsnorm'), ctx.st.output(rstd, 'rstd')], ctx.grid(rows));
}

/** gx = rstd·w·gy − x·c, c = rstd³/n·Σ w·gy·x per row; gw[j] = Σ_r gy·x·rstd (rows in order, one thread per column). */
export function rmsnormBackward(ctx: WebgpuContext, x: F32, w: F32, rstd: F32, gy: F32, rows: number, n: number, gx: F32, gw: F32): void {
  check('rmsnormBackward', rows, n, { x, gy, gx });
  if (w.length !== n || gw.length !== n || rstd.length !== rows) throw new ShapeError(`rmsnormBackward: w and gw need ${n}, rstd ${rows} entries`);
  if (n === 0) return;
  const bx = ctx.st.input(x, 'rmsnorm input'), bw = ctx.st.input(w, 'rmsnorm weight'), br = ctx.st.input(rstd, 'rstd'), bg = ctx.st.input(gy, 'gradient');
  if (rows > 0) {
    const k = ctx.kernel('rmsnormBackward.gx', '', () => wgsl(RN, [['x', 'r', 'f32'], ['w', 'r', 'f32'], ['rstd', 'r', 'f32'], ['gy', 'r', 'f32'], ['gx', 'w', 'f32']],
      `${REDUCE}${ROW_MAIN}  let rs = rstd[row];
  var d = 0.0;
  for (var j = li; j < p.n; j = j + 256u) { d = d + w[j] * gy[o + j] * x[o + j]; }
  d = wg_sum(d, li);
  let c = d * rs * rs * rs / f32(p.n);
  for (var j = li; j < p.n; j = j + 256u) { gx[o + j] = rs * w[j] * gy[o + j] - x[o + j] * c; }
}
`));
    ctx.run(k, RN.pack({ rows, n }), [bx, bw, br, bg, ctx.st.output(gx, 'gradient')], ctx.grid(rows));
  }
  const kw = ctx.kernel('rmsnormBackward.gw', '', () => wgsl(RN, [['x', 'r', 'f32'], ['rstd', 'r', 'f32'], ['gy', 'r', 'f32'], ['gw', 'w', 'f32']],
    `${GROUP_INDEX}
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let j = group_index(wid, nwg) * 256u + li;
  if (j >= p.n) { return; }
  var s = 0.0;
  for (var r = 0u; r < p.rows; r = r + 1u) { s = s + gy[r * p.n + j] * x[r * p.n + j] * rstd[r]; }
  gw[j] = s;
}
`));
  ctx.run(kw, RN.pack({ rows, n }), [bx, br, bg, ctx.st.output(gw, 'gradient')], ctx.grid(Math.ceil(n / 256)));
}


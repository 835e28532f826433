/**
 * Reductions as WGSL kernels of the webgpu device: sum and max over an axis (a workgroup per row
 * when the axis is the last one, else one thread per output, the axis in order), and the squared
 * norm of clipping (device-wide: chunk partials, then their sum in one workgroup).
 */
import { ShapeError } from '../../errors';
import type { F32, I32 } from '../../arrays';
import type { WebgpuContext } from '../../webgpu/kernel';
import { partialGroups, sumPartials } from '../../webgpu/partials';
import { GROUP_INDEX, MATH, params, REDUCE, ROW_MAIN, wgsl } from '../../webgpu/wgsl';
import { checkSumSquares } from './reference';

const RN = params(['rows', 'u32'], ['n', 'u32']);

const RED = params(['outer', 'u32'], ['n', 'u32'], ['inner', 'u32']);

/** out[o, i] = Σ_j x[o, j, i]: a workgroup per row when inner = 1, else one thread per output (j in order). */
export function sum(ctx: WebgpuContext, x: F32, outer: number, n: number, inner: number, out: F32): void {
  if (x.length !== outer * n * inner || out.length !== outer * inner) throw new ShapeError(`sum: x [${outer}, ${n}, ${inner}] and out [${outer}, ${inner}] do not match ${x.length} and ${out.length} elements`);
  if (outer * inner === 0) return;
  const bx = ctx.st.input(x, 'sum input'), bo = ctx.st.output(out, 'sum');
  if (inner === 1) {
    const k = ctx.kernel('sum.rows', '', () => wgsl(RN, [['x', 'r', 'f32'], ['y', 'w', 'f32']],
      `${REDUCE}${ROW_MAIN}  var s = 0.0;
  for (var j = li; j < p.n; j = j + 256u) { s = s + x[o + j]; }
  s = wg_sum(s, li);
  if (li == 0u) { y[row] = s; }
}
`));
    ctx.run(k, RN.pack({ rows: outer, n }), [bx, bo], ctx.grid(outer));
    return;
  }
  const k = ctx.kernel('sum.cols', '', () => wgsl(RED, [['x', 'r', 'f32'], ['y', 'w', 'f32']],
    `${GROUP_INDEX}
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let t = group_index(wid, nwg) * 256u + li;
  if (t >= p.outer * p.inner) { return; }
  let o = t / p.inner;
  let i = t - o * p.inner;
  var s = 0.0;
  for (var j = 0u; j < p.n; j = j + 1u) { s = s + x[(o * p.n + j) * p.inner + i]; }
  y[t] = s;
}
`));
  ctx.run(k, RED.pack({ outer, n, inner }), [bx, bo], ctx.grid(Math.ceil((outer * inner) / 256)));
}

/**
 * out[o, i] = max_j x[o, j, i], arg = the first j attaining it (a NaN at j = 0 wins, as in the
 * reference: no value compares greater than it); one thread per output, j in order.
 */
export function max(ctx: WebgpuContext, x: F32, outer: number, n: number, inner: number, out: F32, arg: I32): void {
  if (x.length !== outer * n * inner || out.length !== outer * inner || arg.length !== outer * inner) {
    throw new ShapeError(`max: x [${outer}, ${n}, ${inner}], out and arg [${outer}, ${inner}] do not match`);
  }
  if (outer * inner === 0) return;
  const k = ctx.kernel('max', '', () => wgsl(RED, [['x', 'r', 'f32'], ['y', 'w', 'f32'], ['arg', 'w', 'i32']],
    `${MATH}${GROUP_INDEX}
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let t = group_index(wid, nwg) * 256u + li;
  if (t >= p.outer * p.inner) { return; }
  let o = t / p.inner;
  let i = t - o * p.inner;
  var best = ninf_();
  var bi = 0u;
  for (var j = 0u; j < p.n; j = j + 1u) {
    let v = x[(o * p.n + j) * p.inner + i];
    if (v > best || (j == 0u && isnan_(v))) { best = v; bi = j; }
  }
  y[t] = best;
  arg[t] = i32(bi);
}
`));
  ctx.run(k, RED.pack({ outer, n, inner }), [ctx.st.input(x, 'max input'), ctx.st.output(out, 'max'), ctx.st.output(arg, 'argmax')], ctx.grid(Math.ceil((outer * inner) / 256)));
  // The ops use the arg indices on the host (max's backward, argmax): they come back.
  ctx.st.hostRead(arg);
}

const SQ = params(['n', 'u32'], ['chunk', 'u32']);

/** out[0] = acc[0] + Σ x² (acc null: 0); `out` may be `acc`. Two passes: chunk partials, then their tree sum. */
export function sumSquares(ctx: WebgpuContext, x: F32, acc: F32 | null, out: F32): void {
  checkSumSquares(acc, out);
  const st = ctx.st, n = x.length;
  const ob = acc !== null && acc !== out ? st.output(out, 'sum of squares') : acc === null ? st.output(out, 'sum of squares') : st.inout(out, 'sum of squares');
  if (acc !== null && acc !== out) {
    const ab = st.input(acc, 'accumulator');
    ctx.rt.copy(ab.id, ab.offset, ob.id, ob.offset, 4);
  }
  if (n === 0) {
    if (acc === null) ctx.rt.clear(ob.id, ob.offset, 4);
    return;
  }
  const groups = partialGroups(n), chunk = Math.ceil(n / groups);
  const parts = st.temp(4 * groups, 'partial sums');
  const k = ctx.kernel('sumSquares.parts', '', () => wgsl(SQ, [['x', 'r', 'f32'], ['parts', 'w', 'f32']],
    `${REDUCE}
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let start = wid.x * p.chunk;
  let end = min(start + p.chunk, p.n);
  var s = 0.0;
  for (var j = start + li; j < end; j = j + 256u) { let v = x[j]; s = s + v * v; }
  s = wg_sum(s, li);
  if (li == 0u) { parts[wid.x] = s; }
}
`));
  ctx.run(k, SQ.pack({ n, chunk }), [st.input(x, 'values'), parts], [groups, 1, 1]);
  sumPartials(ctx, parts, groups, 1, 0, ob, 0, acc !== null);
}


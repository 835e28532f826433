/**
 * Row kernels: one 256-thread workgroup per row, each thread striding over the row (so that
 * neighbouring threads read neighbouring elements) and the row's statistics reduced across the
 * workgroup in a fixed tree. softmax, log-softmax and their backward passes, cross-entropy,
 * RMSNorm, and the sum and max reductions.
 */
import { ShapeError } from '../../errors';
import type { F32, I32 } from '../../kernels/types';
import { GROUP_INDEX, params, wgsl, type WebgpuContext } from '../kernel';
import { MATH } from '../wgsl-math';

/** Threads per row. */
export const ROW_THREADS = 256;

/**
 * Workgroup reductions of one f32 per thread, in two levels (16 threads each add 16 values in
 * order, then every thread adds those 16 sums in order): the same order on every run, and three
 * barriers where a tree takes nine (barriers are what a CPU implementation such as SwiftShader
 * pays most for).
 */
export const REDUCE = /* wgsl */ `
var<workgroup> red_: array<f32, 256>;
var<workgroup> red2_: array<f32, 16>;
fn wg_sum(v: f32, li: u32) -> f32 {
  red_[li] = v;
  workgroupBarrier();
  if (li < 16u) {
    var s = 0.0;
    for (var j = 0u; j < 16u; j = j + 1u) { s = s + red_[li * 16u + j]; }
    red2_[li] = s;
  }
  workgroupBarrier();
  var r = 0.0;
  for (var j = 0u; j < 16u; j = j + 1u) { r = r + red2_[j]; }
  workgroupBarrier();
  return r;
}
fn wg_max(v: f32, li: u32) -> f32 {
  red_[li] = v;
  workgroupBarrier();
  if (li < 16u) {
    var s = red_[li * 16u];
    for (var j = 1u; j < 16u; j = j + 1u) { s = max(s, red_[li * 16u + j]); }
    red2_[li] = s;
  }
  workgroupBarrier();
  var r = red2_[0];
  for (var j = 1u; j < 16u; j = j + 1u) { r = max(r, red2_[j]); }
  workgroupBarrier();
  return r;
}
`;

/** The row of this workgroup (`row`), its thread (`li`), for a grid of `rows` workgroups. */
const ROW_MAIN = `${GROUP_INDEX}
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let row = group_index(wid, nwg);
  if (row >= p.rows) { return; }
  let o = row * p.n;
`;

const RN = params(['rows', 'u32'], ['n', 'u32']);

function check(op: string, rows: number, n: number, arrays: Record<string, ArrayLike<number>>): void {
  for (const [name, a] of Object.entries(arrays)) {
    if (a.length !== rows * n) throw new ShapeError(`${op}: ${name} has ${a.length} elements, [${rows}, ${n}] needs ${rows * n}`);
  }
}

const MAX_OF_ROW = `  var m = ninf_();
  for (var j = li; j < p.n; j = j + 256u) { m = max(m, x[o + j]); }
  m = wg_max(m, li);
`;
const EXP_SUM = `  var s = 0.0;
  for (var j = li; j < p.n; j = j + 256u) { s = s + exp_(x[o + j] - m); }
  s = wg_sum(s, li);
`;

/** Row softmax: y = exp(x − m)·(1/Σ exp(x − m)). */
export function softmax(ctx: WebgpuContext, x: F32, rows: number, n: number, out: F32): void {
  check('softmax', rows, n, { x, out });
  if (rows * n === 0) return;
  const k = ctx.kernel('softmax', '', () => wgsl(RN, [['x', 'r', 'f32'], ['y', 'w', 'f32']],
    `${MATH}${REDUCE}${ROW_MAIN}${MAX_OF_ROW}${EXP_SUM}  let inv = 1.0 / s;
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
    `${MATH}${REDUCE}${ROW_MAIN}${MAX_OF_ROW}${EXP_SUM}  let lse = m + log_(s);
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

/** The row weights of an unweighted call (never read). */
const NO_WEIGHTS = new Float32Array(1);

const CE = params(['rows', 'u32'], ['n', 'u32'], ['weighted', 'u32']);

/** loss[r] = w[r]·(lse[r] − logits[r, t]) (0 where t < 0 or w = 0), lse written for the backward. */
export function crossEntropy(ctx: WebgpuContext, logits: F32, targets: I32, weights: F32 | null, rows: number, V: number, loss: F32, lse: F32): void {
  check('crossEntropy', rows, V, { logits });
  if (targets.length !== rows || loss.length !== rows || lse.length !== rows || (weights !== null && weights.length !== rows)) {
    throw new ShapeError(`crossEntropy: targets, weights, loss and lse need ${rows} entries`);
  }
  for (let r = 0; r < rows; r++) if (targets[r]! >= V) throw new ShapeError(`crossEntropy: target ${targets[r]} at row ${r} outside [0, ${V})`);
  if (rows === 0) return;
  const k = ctx.kernel('crossEntropy', '', () => wgsl(CE, [['x', 'r', 'f32'], ['tg', 'r', 'i32'], ['wt', 'r', 'f32'], ['loss', 'w', 'f32'], ['lse', 'w', 'f32']],
    `${MATH}${REDUCE}${ROW_MAIN}${MAX_OF_ROW}${EXP_SUM}  if (li == 0u) {
    let L = m + log_(s);
    lse[row] = L;
    let t = tg[row];
    let w = select(1.0, wt[row], p.weighted == 1u);
    loss[row] = select(w * (L - x[o + u32(max(t, 0))]), 0.0, t < 0 || w == 0.0);
  }
}
`));
  const w = weights ?? NO_WEIGHTS;
  ctx.run(k, CE.pack({ rows, n: V, weighted: weights === null ? 0 : 1 }), [
    ctx.st.input(logits, 'logits'), ctx.st.input(targets, 'targets'), ctx.st.input(w, 'row weights'),
    ctx.st.output(loss, 'losses'), ctx.st.output(lse, 'log-sum-exp'),
  ], ctx.grid(rows));
}

const CEB = params(['total', 'u32'], ['n', 'u32'], ['weighted', 'u32']);

/** glogits[r, :] = g[r]·w[r]·(softmax(logits[r]) − onehot(t)); one thread per logit. */
export function crossEntropyBackward(ctx: WebgpuContext, logits: F32, targets: I32, weights: F32 | null, lse: F32, g: F32, rows: number, V: number, glogits: F32): void {
  check('crossEntropyBackward', rows, V, { logits, glogits });
  if (targets.length !== rows || lse.length !== rows || g.length !== rows || (weights !== null && weights.length !== rows)) {
    throw new ShapeError(`crossEntropyBackward: targets, weights, lse and g need ${rows} entries`);
  }
  if (rows * V === 0) return;
  const k = ctx.kernel('crossEntropyBackward', '', () => wgsl(CEB, [['x', 'r', 'f32'], ['tg', 'r', 'i32'], ['wt', 'r', 'f32'], ['lse', 'r', 'f32'], ['g', 'r', 'f32'], ['gx', 'w', 'f32']],
    `${MATH}${GROUP_INDEX}
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let i = group_index(wid, nwg) * 256u + li;
  if (i >= p.total) { return; }
  let r = i / p.n;
  let j = i - r * p.n;
  let t = tg[r];
  let w = select(select(1.0, wt[r], p.weighted == 1u) * g[r], 0.0, t < 0);
  if (w == 0.0) { gx[i] = 0.0; return; }
  var v = w * exp_(x[i] - lse[r]);
  if (i32(j) == t) { v = v - w; }
  gx[i] = v;
}
`));
  const w = weights ?? NO_WEIGHTS;
  ctx.run(k, CEB.pack({ total: rows * V, n: V, weighted: weights === null ? 0 : 1 }), [
    ctx.st.input(logits, 'logits'), ctx.st.input(targets, 'targets'), ctx.st.input(w, 'row weights'), ctx.st.input(lse, 'log-sum-exp'),
    ctx.st.input(g, 'gradient'), ctx.st.output(glogits, 'gradient'),
  ], ctx.grid(Math.ceil((rows * V) / 256)));
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
}

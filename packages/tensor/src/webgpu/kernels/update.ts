/**
 * In-place updates and the reductions that go with them: AdEMAMix and AdamW steps (parameter and
 * state updated where they live), the squared norm of clipping, scaling, and xIELU with its
 * parameter sums. Element counts come from the bindings (`arrayLength`), so the uniform block of
 * an update holds only the step's scalars: one block per step, whatever the parameter.
 */
import { checkScaleBy, checkSumSquares, checkUpdateLengths } from '../../kernels/js/optimizer';
import { checkXielu } from '../../kernels/js/xielu';
import type { AdamwUpdateArgs, AdemamixUpdateArgs, F32 } from '../../kernels/types';
import { GROUP_INDEX, params, wgsl, type WebgpuContext } from '../kernel';
import type { Binding } from '../runtime';
import { MATH } from '../wgsl-math';
import { REDUCE } from './rows';

/** One thread per element `i < n` of a grid of 256-thread workgroups (n from the first binding's length). */
const MAIN_N = (first: string) => `${GROUP_INDEX}
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let i = group_index(wid, nwg) * 256u + li;
  if (i >= arrayLength(&${first})) { return; }
`;

const ADEMAMIX = params(['beta1', 'f32'], ['beta2', 'f32'], ['beta3', 'f32'], ['alpha', 'f32'], ['bc1', 'f32'], ['sbc2', 'f32'], ['eps', 'f32'], ['wd', 'f32'], ['lr', 'f32'], ['fast', 'u32']);

/** One AdEMAMix update in place (see `AdemamixUpdateArgs`); the step's scalars are rounded to float32. */
export function ademamixUpdate(ctx: WebgpuContext, a: AdemamixUpdateArgs): void {
  checkUpdateLengths('ademamixUpdate', a.param, { grad: a.grad, m1: a.m1, m2: a.m2, nu: a.nu });
  if (a.param.length === 0) return;
  const fast = a.m1 !== null;
  const k = ctx.kernel('ademamixUpdate', String(fast), () => wgsl(ADEMAMIX, [['param', 'w', 'f32'], ['grad', 'r', 'f32'], ['m1', 'w', 'f32'], ['m2', 'w', 'f32'], ['nu', 'w', 'f32']],
    `${MAIN_N('param')}  let g = grad[i];
  var f = g;
  if (p.fast == 1u) { let m = m1[i] * p.beta1 + g * (1.0 - p.beta1); m1[i] = m; f = m; }
  let s = m2[i] * p.beta3 + g * (1.0 - p.beta3);
  m2[i] = s;
  let v = nu[i] * p.beta2 + (1.0 - p.beta2) * g * g;
  nu[i] = v;
  let w = param[i];
  let u = (f / p.bc1 + p.alpha * s) / (sqrt(v) / p.sbc2 + p.eps) + w * p.wd;
  param[i] = w - p.lr * u;
}
`));
  const st = ctx.st;
  const m1 = fast ? st.inout(a.m1!, 'AdEMAMix m1') : ctx.st.temp(4, 'no m1');
  ctx.run(k, ADEMAMIX.pack({ beta1: a.beta1, beta2: a.beta2, beta3: a.beta3, alpha: a.alpha, bc1: a.bc1, sbc2: Math.sqrt(a.bc2), eps: a.eps, wd: a.weightDecay, lr: a.lr, fast: fast ? 1 : 0 }),
    [st.inout(a.param, 'parameter'), st.input(a.grad, 'gradient'), m1, st.inout(a.m2, 'AdEMAMix m2'), st.inout(a.nu, 'AdEMAMix nu')], ctx.grid(Math.ceil(a.param.length / 256)));
}

const ADAMW = params(['beta1', 'f32'], ['beta2', 'f32'], ['sbc2', 'f32'], ['eps', 'f32'], ['decay', 'f32'], ['nstep', 'f32']);

/** One AdamW update in place (see `AdamwUpdateArgs`). */
export function adamwUpdate(ctx: WebgpuContext, a: AdamwUpdateArgs): void {
  checkUpdateLengths('adamwUpdate', a.param, { grad: a.grad, m: a.m, v: a.v });
  if (a.param.length === 0) return;
  const k = ctx.kernel('adamwUpdate', '', () => wgsl(ADAMW, [['param', 'w', 'f32'], ['grad', 'r', 'f32'], ['m', 'w', 'f32'], ['v', 'w', 'f32']],
    `${MAIN_N('param')}  let g = grad[i];
  let mm = m[i] * p.beta1 + g * (1.0 - p.beta1);
  m[i] = mm;
  let vv = v[i] * p.beta2 + (1.0 - p.beta2) * g * g;
  v[i] = vv;
  param[i] = param[i] * p.decay + (p.nstep * mm) / (sqrt(vv) / p.sbc2 + p.eps);
}
`));
  const st = ctx.st;
  ctx.run(k, ADAMW.pack({ beta1: a.beta1, beta2: a.beta2, sbc2: Math.sqrt(a.bc2), eps: a.eps, decay: 1 - a.lr * a.weightDecay, nstep: -a.lr / a.bc1 }),
    [st.inout(a.param, 'parameter'), st.input(a.grad, 'gradient'), st.inout(a.m, 'AdamW m'), st.inout(a.v, 'AdamW v')], ctx.grid(Math.ceil(a.param.length / 256)));
}

/** Workgroups of the first pass of a device-wide sum: each sums a contiguous chunk of at least 4096 elements. */
export function partialGroups(n: number): number {
  return Math.max(1, Math.min(1024, Math.ceil(n / 4096)));
}

/** Second pass: slot `at` of `out` (+ its old value when `add`) ← Σ of the partials, one workgroup. */
const TOTAL = params(['count', 'u32'], ['at', 'u32'], ['add', 'u32'], ['stride', 'u32'], ['first', 'u32']);
function total(ctx: WebgpuContext, parts: Binding, count: number, stride: number, first: number, out: Binding, at: number, add: boolean): void {
  const k = ctx.kernel('sum.partials', '', () => wgsl(TOTAL, [['parts', 'r', 'f32'], ['out', 'w', 'f32']],
    `${REDUCE}
@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) li: u32) {
  var s = 0.0;
  for (var j = li; j < p.count; j = j + 256u) { s = s + parts[j * p.stride + p.first]; }
  s = wg_sum(s, li);
  if (li == 0u) { out[p.at] = select(0.0, out[p.at], p.add == 1u) + s; }
}
`));
  ctx.run(k, TOTAL.pack({ count, at, add: add ? 1 : 0, stride, first }), [parts, out], [1, 1, 1]);
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
  total(ctx, parts, groups, 1, 0, ob, 0, acc !== null);
}

const SCALE = params(['s', 'f32']);

/** out[i] = x[i]·s; `out` may be `x` (in place). */
export function scaleBy(ctx: WebgpuContext, x: F32, s: number, out: F32): void {
  checkScaleBy(x, out);
  if (x.length === 0) return;
  const st = ctx.st;
  if (out === x || (out.buffer === x.buffer && out.byteOffset === x.byteOffset)) {
    const k = ctx.kernel('scaleBy.inplace', '', () => wgsl(SCALE, [['y', 'w', 'f32']], `${MAIN_N('y')}  y[i] = y[i] * p.s;\n}\n`));
    ctx.run(k, SCALE.pack({ s }), [st.inout(x, 'scaled values')], ctx.grid(Math.ceil(x.length / 256)));
    return;
  }
  const k = ctx.kernel('scaleBy', '', () => wgsl(SCALE, [['x', 'r', 'f32'], ['y', 'w', 'f32']], `${MAIN_N('x')}  y[i] = x[i] * p.s;\n}\n`));
  ctx.run(k, SCALE.pack({ s }), [st.input(x, 'values'), st.output(out, 'scaled values')], ctx.grid(Math.ceil(x.length / 256)));
}

const XIELU = params(['beta', 'f32'], ['eps', 'f32']);

/** out = xIELU(x) with αp = alpha_p[0], αn = β + softplus_n[0] (both read on the device). */
export function xielu(ctx: WebgpuContext, x: F32, alpha_p: F32, softplus_n: F32, beta: number, eps: number, out: F32): void {
  checkXielu('xielu', x, alpha_p, softplus_n, { out });
  if (x.length === 0) return;
  const k = ctx.kernel('xielu', '', () => wgsl(XIELU, [['x', 'r', 'f32'], ['ap', 'r', 'f32'], ['spn', 'r', 'f32'], ['y', 'w', 'f32']],
    `${MATH}${MAIN_N('x')}  let v = x[i];
  if (v > 0.0) { y[i] = v * (ap[0] * v + p.beta); return; }
  y[i] = (p.beta + spn[0]) * (expm1_(min(v, p.eps)) - v) + p.beta * v;
}
`));
  const st = ctx.st;
  ctx.run(k, XIELU.pack({ beta, eps }), [st.input(x, 'xielu input'), st.input(alpha_p, 'alpha_p'), st.input(softplus_n, 'softplus(alpha_n)'), st.output(out, 'xielu')],
    ctx.grid(Math.ceil(x.length / 256)));
}

const XIELUB = params(['beta', 'f32'], ['eps', 'f32'], ['n', 'u32'], ['chunk', 'u32']);

/** gx = gy·xIELU′(x); sumP[0] = Σ_{x>0} gy·x², sumN[0] = Σ_{x≤0} gy·(expm1(min(x, ε)) − x): chunk partials, then tree sums. */
export function xieluBackward(ctx: WebgpuContext, x: F32, gy: F32, alpha_p: F32, softplus_n: F32, beta: number, eps: number, gx: F32, sumP: F32, sumN: F32): void {
  checkXielu('xieluBackward', x, alpha_p, softplus_n, { gy, gx, sumP, sumN });
  const st = ctx.st, n = x.length;
  const bp = st.output(sumP, 'xielu sum'), bn = st.output(sumN, 'xielu sum');
  if (n === 0) {
    ctx.rt.clear(bp.id, bp.offset, 4);
    ctx.rt.clear(bn.id, bn.offset, 4);
    return;
  }
  const groups = partialGroups(n), chunk = Math.ceil(n / groups);
  const parts = st.temp(8 * groups, 'xielu partial sums');
  const k = ctx.kernel('xieluBackward', '', () => wgsl(XIELUB, [['x', 'r', 'f32'], ['gy', 'r', 'f32'], ['ap', 'r', 'f32'], ['spn', 'r', 'f32'], ['gx', 'w', 'f32'], ['parts', 'w', 'f32']],
    `${MATH}${REDUCE}
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let start = wid.x * p.chunk;
  let end = min(start + p.chunk, p.n);
  let an = p.beta + spn[0];
  var sp = 0.0;
  var sn = 0.0;
  for (var i = start + li; i < end; i = i + 256u) {
    let v = x[i];
    let g = gy[i];
    if (v > 0.0) {
      gx[i] = g * (2.0 * ap[0] * v + p.beta);
      sp = sp + g * v * v;
    } else {
      let e = expm1_(min(v, p.eps));
      gx[i] = select(g * (an * e + p.beta), g * (p.beta - an), v > p.eps);
      sn = sn + g * (e - v);
    }
  }
  sp = wg_sum(sp, li);
  sn = wg_sum(sn, li);
  if (li == 0u) { parts[2u * wid.x] = sp; parts[2u * wid.x + 1u] = sn; }
}
`));
  ctx.run(k, XIELUB.pack({ beta, eps, n, chunk }), [st.input(x, 'xielu input'), st.input(gy, 'gradient'), st.input(alpha_p, 'alpha_p'),
    st.input(softplus_n, 'softplus(alpha_n)'), st.output(gx, 'gradient'), parts], [groups, 1, 1]);
  total(ctx, parts, groups, 2, 0, bp, 0, false);
  total(ctx, parts, groups, 2, 1, bn, 0, false);
}

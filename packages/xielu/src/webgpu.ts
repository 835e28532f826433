/**
 * xIELU as WGSL kernels of the webgpu device: one thread per element for y and gx, and the two
 * parameter sums reduced on the device in two passes (workgroup sums of contiguous chunks, then
 * their sum in one workgroup). αp and softplus(a_n) are read on the device (one-element arrays);
 * expm1 near ε is the device's `expm1_` (x + x²·P(x) below ln2/2: no cancellation at x ≈ −10⁻⁶).
 */
import { wgsl as W, type WebgpuKernelApi as WebgpuContext } from '@apertus/tensor/kernels';
import { checkXielu } from './reference';

const { GROUP_INDEX, MATH, params, partialGroups, REDUCE, sumPartials, wgsl } = W;
type F32 = Float32Array;

/** One thread per element `i < n` of a grid of 256-thread workgroups (n from the first binding's length). */
const MAIN_N = (first: string) => `${GROUP_INDEX}
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let i = group_index(wid, nwg) * 256u + li;
  if (i >= arrayLength(&${first})) { return; }
`;

const XIELU = params(['beta', 'f32'], ['eps', 'f32']);

/** out = xIELU(x) with αp = alpha_p[0], αn = β + softplus_n[0] (both read on the device). */
export function xieluWgsl(ctx: WebgpuContext, x: F32, alpha_p: F32, softplus_n: F32, beta: number, eps: number, out: F32): void {
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
export function xieluBackwardWgsl(ctx: WebgpuContext, x: F32, gy: F32, alpha_p: F32, softplus_n: F32, beta: number, eps: number, gx: F32, sumP: F32, sumN: F32): void {
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
  sumPartials(ctx, parts, groups, 2, 0, bp, 0, false);
  sumPartials(ctx, parts, groups, 2, 1, bn, 0, false);
}

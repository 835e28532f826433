/**
 * The AdEMAMix and AdamW updates as WGSL kernels of the webgpu device: one thread per element
 * updates the state and the parameter in place, where they live (one kernel per update). The
 * step-dependent scalars, computed by the optimizer on the host in float64, are the kernel's
 * uniform block (rounded to float32), and element counts come from the bindings: every parameter
 * of a step shares the one block. Registered when the device starts (`onWebgpu`).
 */
import { wgsl as W, type WebgpuKernelApi as WebgpuContext } from '@apertus/tensor/kernels';
import { checkUpdateLengths, type AdamwUpdateArgs, type AdemamixUpdateArgs } from './kernel';

const { GROUP_INDEX, params, wgsl } = W;
type F32 = Float32Array;

/** One thread per element `i < n` of a grid of 256-thread workgroups (n from the first binding's length). */
const MAIN_N = (first: string) => `${GROUP_INDEX}
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let i = group_index(wid, nwg) * 256u + li;
  if (i >= arrayLength(&${first})) { return; }
`;

const ADEMAMIX = params(['beta1', 'f32'], ['beta2', 'f32'], ['beta3', 'f32'], ['alpha', 'f32'], ['bc1', 'f32'], ['sbc2', 'f32'], ['eps', 'f32'], ['wd', 'f32'], ['lr', 'f32'], ['fast', 'u32']);

/** One AdEMAMix update in place (see `AdemamixUpdateArgs`): m1, m2, nu and θ in one kernel; the step's scalars rounded to float32. */
export function ademamixUpdateWgsl(ctx: WebgpuContext, a: AdemamixUpdateArgs): void {
  checkUpdateLengths('ademamixUpdate', a.param, { grad: a.grad, m1: a.m1, m2: a.m2, nu: a.nu });
  const param = a.param as F32, grad = a.grad as F32, m2 = a.m2 as F32, nu = a.nu as F32, m1v = a.m1 as F32 | null;
  if (param.length === 0) return;
  const fast = m1v !== null;
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
  const m1 = fast ? st.inout(m1v, 'AdEMAMix m1') : ctx.st.temp(4, 'no m1');
  ctx.run(k, ADEMAMIX.pack({ beta1: a.beta1, beta2: a.beta2, beta3: a.beta3, alpha: a.alpha, bc1: a.bc1, sbc2: Math.sqrt(a.bc2), eps: a.eps, wd: a.weightDecay, lr: a.lr, fast: fast ? 1 : 0 }),
    [st.inout(param, 'parameter'), st.input(grad, 'gradient'), m1, st.inout(m2, 'AdEMAMix m2'), st.inout(nu, 'AdEMAMix nu')], ctx.grid(Math.ceil(param.length / 256)));
}

const ADAMW = params(['beta1', 'f32'], ['beta2', 'f32'], ['sbc2', 'f32'], ['eps', 'f32'], ['decay', 'f32'], ['nstep', 'f32']);

/** One AdamW update in place (see `AdamwUpdateArgs`). */
export function adamwUpdateWgsl(ctx: WebgpuContext, a: AdamwUpdateArgs): void {
  checkUpdateLengths('adamwUpdate', a.param, { grad: a.grad, m: a.m, v: a.v });
  const param = a.param as F32, grad = a.grad as F32, m = a.m as F32, v = a.v as F32;
  if (param.length === 0) return;
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
    [st.inout(param, 'parameter'), st.input(grad, 'gradient'), st.inout(m, 'AdamW m'), st.inout(v, 'AdamW v')], ctx.grid(Math.ceil(param.length / 256)));
}


/**
 * The elementwise ops as WGSL kernels of the webgpu device: unary functions and their
 * derivatives, broadcast binary ops and scaling, one thread per element (256 to a workgroup).
 */
import { ShapeError } from '../../errors';
import { coalesce } from '../../shape';
import type { F32 } from '../../arrays';
import type { WebgpuContext } from '../../webgpu/kernel';
import { GROUP_INDEX, MAIN_1D, MATH, params, wgsl } from '../../webgpu/wgsl';
import type { BinaryOp, UnaryOp } from './args';
import { checkScaleBy } from './reference';

/** y = f(v) as a WGSL expression of v. */
const UNARY: Record<UnaryOp, string> = {
  neg: '-v', exp: 'exp_(v)', log: 'log_(v)', expm1: 'expm1_(v)', log1p: 'log1p_(v)', softplus: 'softplus_(v)',
  sigmoid: 'sigmoid_(v)', silu: 'v * sigmoid_(v)', tanh: 'tanh_(v)', sqrt: 'sqrt(v)', rsqrt: 'inverseSqrt(v)',
  square: 'v * v', abs: 'abs(v)', relu: 'select(0.0, v, v > 0.0)',
};

/** gx = g·f'(·) as a WGSL expression of g (= gy) and v (x or y, as `uses` says), written like the reference. */
const BACKWARD: Record<UnaryOp, { uses: 'x' | 'y' | 'none'; expr: string }> = {
  neg: { uses: 'none', expr: '-g' },
  exp: { uses: 'y', expr: 'g * v' },
  log: { uses: 'x', expr: 'g * (1.0 / v)' },
  expm1: { uses: 'y', expr: 'g * (v + 1.0)' },
  log1p: { uses: 'x', expr: 'g * (1.0 / (1.0 + v))' },
  softplus: { uses: 'x', expr: 'g * sigmoid_(v)' },
  sigmoid: { uses: 'y', expr: 'g * (v * (1.0 - v))' },
  silu: { uses: 'x', expr: 'g * silu_d(v)' },
  tanh: { uses: 'y', expr: 'g * (1.0 - v * v)' },
  sqrt: { uses: 'y', expr: 'g * (0.5 / v)' },
  rsqrt: { uses: 'y', expr: 'g * (-0.5 * v * v * v)' },
  square: { uses: 'x', expr: 'g * (2.0 * v)' },
  abs: { uses: 'x', expr: 'g * select(select(0.0, -1.0, v < 0.0), 1.0, v > 0.0)' },
  relu: { uses: 'x', expr: 'g * select(0.0, 1.0, v > 0.0)' },
};

const SILU_D = 'fn silu_d(v: f32) -> f32 { let s = sigmoid_(v); return s * (1.0 + v * (1.0 - s)); }\n';

const N = params(['n', 'u32']);

function unaryOf(op: string): UnaryOp {
  if (!(op in UNARY)) throw new ShapeError(`unary: unknown op '${op}'`);
  return op as UnaryOp;
}

/** out[i] = f(x[i]). */
export function unary(ctx: WebgpuContext, op: UnaryOp, x: F32, out: F32): void {
  const o = unaryOf(op), n = x.length;
  if (out.length !== n) throw new ShapeError(`unary ${o}: out has ${out.length} elements, x has ${n}`);
  if (n === 0) return;
  const k = ctx.kernel(`unary.${o}`, '', () => wgsl(N, [['x', 'r', 'f32'], ['y', 'w', 'f32']],
    `${MATH}${MAIN_1D}  let v = x[i];\n  y[i] = ${UNARY[o]};\n}\n`));
  ctx.run(k, N.pack({ n }), [ctx.st.input(x, 'unary input'), ctx.st.output(out, 'unary output')], ctx.grid(Math.ceil(n / 256)));
}

/** gx[i] = gy[i]·f'(x[i]), using y = f(x) where the reference does. */
export function unaryBackward(ctx: WebgpuContext, op: UnaryOp, x: F32, y: F32, gy: F32, gx: F32): void {
  const o = unaryOf(op), n = x.length;
  for (const [name, a] of [['y', y], ['gy', gy], ['gx', gx]] as const) {
    if (a.length !== n) throw new ShapeError(`unaryBackward ${o}: ${name} has ${a.length} elements, x has ${n}`);
  }
  if (n === 0) return;
  const { uses, expr } = BACKWARD[o];
  if (uses === 'none') {
    const k = ctx.kernel(`unaryBackward.${o}`, '', () => wgsl(N, [['gy', 'r', 'f32'], ['gx', 'w', 'f32']],
      `${MAIN_1D}  let g = gy[i];\n  gx[i] = ${expr};\n}\n`));
    ctx.run(k, N.pack({ n }), [ctx.st.input(gy, 'gradient'), ctx.st.output(gx, 'gradient')], ctx.grid(Math.ceil(n / 256)));
    return;
  }
  const k = ctx.kernel(`unaryBackward.${o}`, '', () => wgsl(N, [['a', 'r', 'f32'], ['gy', 'r', 'f32'], ['gx', 'w', 'f32']],
    `${MATH}${SILU_D}${MAIN_1D}  let v = a[i];\n  let g = gy[i];\n  gx[i] = ${expr};\n}\n`));
  ctx.run(k, N.pack({ n }), [ctx.st.input(uses === 'x' ? x : y, 'unary input'), ctx.st.input(gy, 'gradient'), ctx.st.output(gx, 'gradient')],
    ctx.grid(Math.ceil(n / 256)));
}

/** out = a (op) b as a WGSL expression of u (from a) and w (from b). pow as exp2(w·log2(u)) would be inexact: the reference's Math.pow is matched by pow() within its bound. */
const BINARY: Record<BinaryOp, string> = {
  add: 'u + w', sub: 'u - w', mul: 'u * w', div: 'u / w',
  maximum: 'select(w, u, u >= w)', minimum: 'select(w, u, u <= w)', pow: 'pow_(u, w)',
};

/** Math.pow for the cases the models use (integer exponents exactly by squaring, else via exp_/log_ of |u| with the sign rule). */
const POW = `fn pow_(u: f32, w: f32) -> f32 {
  if (w == 0.0) { return 1.0; }
  if (w == round(w) && abs(w) <= 64.0) {
    var e = u32(abs(w));
    var b = u;
    var r = 1.0;
    loop { if ((e & 1u) == 1u) { r = r * b; } e = e >> 1u; if (e == 0u) { break; } b = b * b; }
    return select(r, 1.0 / r, w < 0.0);
  }
  if (u < 0.0) { return nan_(); }
  return exp_(w * log_(u));
}
`;

/** Most axes a broadcast or a strided copy may have after coalescing. */
const MAX_AXES = 6;
const AXES = Array.from({ length: MAX_AXES }, (_, i) => i);
const BINARY_P = params(['n', 'u32'], ['rank', 'u32'], ...AXES.flatMap((i) => [[`d${i}`, 'u32'], [`a${i}`, 'u32'], [`b${i}`, 'u32']] as const));

/** out = a (op) b with broadcasting (strides 0 on broadcast axes), one thread per output element. */
export function binary(ctx: WebgpuContext, op: BinaryOp, a: F32, aStrides: readonly number[], b: F32, bStrides: readonly number[], outShape: readonly number[], out: F32): void {
  if (!(op in BINARY)) throw new ShapeError(`binary: unknown op '${op}'`);
  const n = outShape.reduce((p, d) => p * d, 1);
  if (out.length !== n) throw new ShapeError(`binary ${op}: out has ${out.length} elements, shape [${outShape}] needs ${n}`);
  if (n === 0) return;
  const axes = coalesce(outShape, aStrides, bStrides);
  if (axes.length > MAX_AXES) throw new ShapeError(`binary ${op}: [${outShape}] has ${axes.length} axes after merging, more than ${MAX_AXES}`);
  const v: Record<string, number> = { n, rank: axes.length };
  for (const i of AXES) {
    const ax = axes[axes.length - 1 - i];
    v[`d${i}`] = ax?.n ?? 1; v[`a${i}`] = ax?.sa ?? 0; v[`b${i}`] = ax?.sb ?? 0;
  }
  const walk = AXES.map((i) => `  if (${i}u < p.rank) { let c = r % p.d${i}; r = r / p.d${i}; ia = ia + c * p.a${i}; ib = ib + c * p.b${i}; }`).join('\n');
  const k = ctx.kernel(`binary.${op}`, '', () => wgsl(BINARY_P, [['A', 'r', 'f32'], ['B', 'r', 'f32'], ['y', 'w', 'f32']],
    `${MATH}${POW}${MAIN_1D}  var r = i;\n  var ia = 0u;\n  var ib = 0u;\n${walk}\n  let u = A[ia];\n  let w = B[ib];\n  y[i] = ${BINARY[op]};\n}\n`));
  const same = a === b || (a.buffer === b.buffer && a.byteOffset === b.byteOffset && a.length === b.length);
  const ab = ctx.st.input(a, 'binary operand');
  ctx.run(k, BINARY_P.pack(v as never), [ab, same ? ab : ctx.st.input(b, 'binary operand'), ctx.st.output(out, 'binary output')], ctx.grid(Math.ceil(n / 256)));
}

/** One thread per element `i < n` of a grid of 256-thread workgroups (n from the first binding's length). */
const MAIN_N = (first: string) => `${GROUP_INDEX}
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let i = group_index(wid, nwg) * 256u + li;
  if (i >= arrayLength(&${first})) { return; }
`;

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


/**
 * Elementwise gpu.js kernels: unary functions, their derivatives, and broadcast binary ops.
 * One thread per output element; the op is spliced into the kernel text, so each op compiles to
 * its own kernel (per size).
 */
import { ShapeError } from '../../errors';
import type { BinaryOp, F32, UnaryOp } from '../types';
import { call, into, type KernelOp } from './runtime';

/** sigmoid(v) without overflow: 1/(1+e^-v) for v >= 0, e^v/(1+e^v) otherwise. */
const SIGMOID = '(v >= 0 ? 1 / (1 + Math.exp(-v)) : Math.exp(v) / (1 + Math.exp(v)))';

/** y = f(v), as a kernel expression of the input value `v` (softplus: statements, below). */
const UNARY: Record<Exclude<UnaryOp, 'softplus'>, string> = {
  neg: '-v',
  exp: 'Math.exp(v)',
  log: 'Math.log(v)',
  expm1: 'Math.expm1(v)',
  log1p: 'Math.log1p(v)',
  sigmoid: SIGMOID,
  silu: `v * ${SIGMOID}`,
  tanh: 'Math.tanh(v)',
  sqrt: 'Math.sqrt(v)',
  rsqrt: '1 / Math.sqrt(v)',
  square: 'v * v',
  abs: 'Math.abs(v)',
  relu: '(v > 0 ? v : 0)',
};

/**
 * softplus(v) = max(v, 0) + log1p(u) with u = e^(−|v|) ∈ (0, 1] (no overflow), and
 * log1p(u) = 2·atanh(s) = 2s·Σ_k s^(2k)/(2k + 1), s = u/(2 + u) ≤ 1/3, summed to k = 7 (the next
 * term is below 2^-26 of the sum): arithmetic only, a few float32 roundings in every mode. WGSL's
 * `log` is only 2^-21-accurate in absolute terms near 1, which would leave xIELU's αp = softplus(a_p)
 * ~10 ulp off on the GPU.
 */
const SOFTPLUS = `const u = Math.exp(-Math.abs(v));
  const s = u / (2 + u);
  const s2 = s * s;
  const p = ((((((s2 / 15 + 1 / 13) * s2 + 1 / 11) * s2 + 1 / 9) * s2 + 1 / 7) * s2 + 1 / 5) * s2 + 1 / 3) * s2 + 1;
  return Math.max(v, 0) + 2 * s * p;`;

/**
 * gx = g * f'(.), as kernel statements over `v` (= x or y, as `uses` says) and `g` (= gy).
 * Written like the reference (g times the derivative) so results round the same way.
 */
const UNARY_BACKWARD: Record<UnaryOp, { uses: 'x' | 'y' | 'none'; body: string }> = {
  neg: { uses: 'none', body: 'return -g;' },
  exp: { uses: 'y', body: 'return g * v;' },
  log: { uses: 'x', body: 'return g * (1 / v);' },
  expm1: { uses: 'y', body: 'return g * (v + 1);' },
  log1p: { uses: 'x', body: 'return g * (1 / (1 + v));' },
  softplus: { uses: 'x', body: `return g * ${SIGMOID};` },
  sigmoid: { uses: 'y', body: 'return g * (v * (1 - v));' },
  silu: { uses: 'x', body: `const s = ${SIGMOID};\n  return g * (s * (1 + v * (1 - s)));` },
  tanh: { uses: 'y', body: 'return g * (1 - v * v);' },
  sqrt: { uses: 'y', body: 'return g * (0.5 / v);' },
  rsqrt: { uses: 'y', body: 'return g * (-0.5 * v * v * v);' },
  square: { uses: 'x', body: 'return g * (2 * v);' },
  abs: { uses: 'x', body: 'let d = 0;\n  if (v > 0) { d = 1; }\n  if (v < 0) { d = -1; }\n  return g * d;' },
  relu: { uses: 'x', body: 'let d = 0;\n  if (v > 0) { d = 1; }\n  return g * d;' },
};

/** out = a (op) b, as a kernel expression of `u` (from a) and `w` (from b). */
const BINARY: Record<BinaryOp, string> = {
  add: 'u + w',
  sub: 'u - w',
  mul: 'u * w',
  div: 'u / w',
  maximum: '(u >= w ? u : w)',
  minimum: '(u <= w ? u : w)',
  pow: 'Math.pow(u, w)',
};

function unaryOpOf(op: string): UnaryOp {
  if (!(op in UNARY) && op !== 'softplus') throw new ShapeError(`unary: unknown op '${op}'`);
  return op as UnaryOp;
}

/** out[i] = f(x[i]). */
export function* unary(op: UnaryOp, x: F32, out: F32): KernelOp {
  const o = unaryOpOf(op);
  const n = x.length;
  if (out.length !== n) throw new ShapeError(`unary ${o}: out has ${out.length} elements, x has ${n}`);
  if (n === 0) return;
  yield* into(out, call(`unary.${o}`, `${n}`, () => ({
    source: `function (x) {\n  const v = x[this.thread.x];\n  ${o === 'softplus' ? SOFTPLUS : `return ${UNARY[o]};`}\n}`,
    output: [n],
    argumentTypes: { x: 'Array' },
  }), [x]));
}

/** gx[i] = gy[i] * f'(x[i]), using y = f(x) where that is cheaper. */
export function* unaryBackward(op: UnaryOp, x: F32, y: F32, gy: F32, gx: F32): KernelOp {
  const o = unaryOpOf(op);
  const n = x.length;
  for (const [name, a] of [['y', y], ['gy', gy], ['gx', gx]] as const) {
    if (a.length !== n) throw new ShapeError(`unaryBackward ${o}: ${name} has ${a.length} elements, x has ${n}`);
  }
  if (n === 0) return;
  const { uses, body } = UNARY_BACKWARD[o];
  if (uses === 'none') {
    yield* into(gx, call(`unaryBackward.${o}`, `${n}`, () => ({
      source: `function (gy) {\n  const g = gy[this.thread.x];\n  ${body}\n}`,
      output: [n],
      argumentTypes: { gy: 'Array' },
    }), [gy]));
    return;
  }
  yield* into(gx, call(`unaryBackward.${o}`, `${n}`, () => ({
    source: `function (a, gy) {\n  const v = a[this.thread.x];\n  const g = gy[this.thread.x];\n  ${body}\n}`,
    output: [n],
    argumentTypes: { a: 'Array', gy: 'Array' },
  }), [uses === 'x' ? x : y, gy]));
}

export { coalesce } from '../../shape';
import { coalesce } from '../../shape';

/**
 * out = a (op) b with broadcasting. The (coalesced) innermost three axes map to the gpu.js threads
 * x, y, z; any further leading axes are walked here, one kernel call per leading index, with the
 * operands' base offsets passed as Integer arguments.
 */
export function* binary(
  op: BinaryOp,
  a: F32, aStrides: readonly number[], b: F32, bStrides: readonly number[],
  outShape: readonly number[], out: F32,
): KernelOp {
  if (!(op in BINARY)) throw new ShapeError(`binary: unknown op '${op}'`);
  const r = outShape.length;
  if (aStrides.length !== r || bStrides.length !== r) {
    throw new ShapeError(`binary ${op}: strides [${aStrides}] / [${bStrides}] do not match the rank of [${outShape}]`);
  }
  let n = 1;
  let aMax = 0;
  let bMax = 0;
  for (let i = 0; i < r; i++) {
    const d = outShape[i]!;
    if (!Number.isInteger(d) || d < 0) throw new ShapeError(`binary ${op}: bad output shape [${outShape}]`);
    n *= d;
    aMax += (d - 1) * aStrides[i]!;
    bMax += (d - 1) * bStrides[i]!;
  }
  if (out.length !== n) throw new ShapeError(`binary ${op}: out has ${out.length} elements, shape [${outShape}] needs ${n}`);
  if (n === 0) return;
  if (aMax >= a.length || bMax >= b.length) {
    throw new ShapeError(`binary ${op}: strides reach past a (${aMax} >= ${a.length}) or b (${bMax} >= ${b.length}) for shape [${outShape}]`);
  }
  const axes = coalesce(outShape, aStrides, bStrides);
  if (axes.length === 0) axes.push({ n: 1, sa: 0, sb: 0 });
  const inner = axes.slice(-3);
  const outer = axes.slice(0, -3);
  const rank = inner.length;
  const chunk = inner.reduce((p, ax) => p * ax.n, 1);
  const names = ['x', 'y', 'z'];
  // inner[rank - 1] is the fastest axis -> thread.x.
  const terms = (c: 'a' | 'b') => inner.map((_ax, i) => `this.thread.${names[rank - 1 - i]} * this.constants.${c}${rank - 1 - i}`).join(' + ');
  const constants: Record<string, number> = {};
  inner.forEach((ax, i) => {
    constants[`a${rank - 1 - i}`] = ax.sa;
    constants[`b${rank - 1 - i}`] = ax.sb;
  });
  const output = inner.map((ax) => ax.n).reverse();
  const key = `${a.length},${b.length}|${inner.map((ax) => `${ax.n}:${ax.sa}:${ax.sb}`).join(',')}`;
  const spec = () => ({
    source: `function (a, b, aOff, bOff) {\n  const u = a[aOff + ${terms('a')}];\n  const w = b[bOff + ${terms('b')}];\n  return ${BINARY[op]};\n}`,
    output,
    constants,
    argumentTypes: { a: 'Array', b: 'Array', aOff: 'Integer', bOff: 'Integer' } as const,
  });
  if (outer.length === 0) {
    yield* into(out, call(`binary.${op}`, key, spec, [a, b, 0, 0]));
    return;
  }
  // Odometer over the leading axes.
  const idx = new Array<number>(outer.length).fill(0);
  let aOff = 0;
  let bOff = 0;
  for (let o = 0; o < n; o += chunk) {
    yield* into(out, call(`binary.${op}`, key, spec, [a, b, aOff, bOff]), o);
    for (let ax = outer.length - 1; ax >= 0; ax--) {
      const { n: size, sa, sb } = outer[ax]!;
      idx[ax]!++;
      aOff += sa;
      bOff += sb;
      if (idx[ax]! < size) break;
      aOff -= sa * size;
      bOff -= sb * size;
      idx[ax] = 0;
    }
  }
}

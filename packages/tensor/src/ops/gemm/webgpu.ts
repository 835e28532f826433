/**
 * C = alpha·op(A)·op(B) + beta·C on the device.
 *
 * - Tiled (prefill, training): a 256-thread workgroup computes a 64×64 tile of C, each thread a
 *   4×4 register tile; per step of 16 along K the workgroup stages a 64×16 tile of A and a 16×64
 *   tile of B in workgroup memory, loading four consecutive elements (a vec4) per thread where
 *   the operand's contiguous axis is a multiple of 4. Each C element sums its K products in order.
 * - Matrix-vector (decode, M ≤ 8 with B = Wᵀ): 64 threads per row of W, four rows per workgroup,
 *   each thread striding over K with vec4 loads (neighbouring threads, neighbouring bytes), every
 *   row of A multiplied with the same loaded weights; the 64 partial sums of a row (or, where the
 *   adapter has subgroups, the subgroup sums) added in order by its first lane, after one barrier.
 * B may hold bf16 (two per u32) or, for matrix-vector products, f16 bits.
 */
import { ShapeError } from '../../errors';
import type { WebgpuContext } from '../../webgpu/kernel';
import type { Binding } from '../../webgpu/runtime';
import { FLOAT_BITS, GROUP_INDEX, params, wgsl } from '../../webgpu/wgsl';
import { checkGemmArgs, type GemmArgs, type GemmBf16Args } from './args';

/** Largest M the matrix-vector kernel takes. */
export const MATVEC_MAX_ROWS = 8;

const GEMM = params(['M', 'u32'], ['N', 'u32'], ['K', 'u32'], ['alpha', 'f32'], ['beta', 'f32']);

/** How an operand is read: element (row r, col c) of op(X), which is X[r, c] or X[c, r]. */
interface Layout { trans: boolean; vec: boolean; bf16: boolean }

/** WGSL: `loadA(m, k)` → vec4 of op(A)[m, k..k+3]·(k < K) when !trans, op(A)[m..m+3, k] when trans (see the tile loads). */
function loader(name: 'A' | 'B', l: Layout, rows: string, cols: string): string {
  // Element (r, c) of the stored matrix X [R, C] (R = rows, C = cols as stored).
  const elem = l.bf16
    ? `fn ${name}e(i: u32) -> f32 { return bf16_((${name}[i >> 1u] >> ((i & 1u) * 16u)) & 0xffffu); }`
    : l.vec ? '' : `fn ${name}e(i: u32) -> f32 { return ${name}[i]; }`;
  // Four consecutive stored elements at flat index i (a multiple of 4 in the vec path).
  const four = l.vec
    ? l.bf16
      ? `fn ${name}4(i: u32) -> vec4<f32> { let w0 = ${name}[i >> 1u]; let w1 = ${name}[(i >> 1u) + 1u]; return vec4<f32>(bf16_(w0 & 0xffffu), bf16_(w0 >> 16u), bf16_(w1 & 0xffffu), bf16_(w1 >> 16u)); }`
      : `fn ${name}4(i: u32) -> vec4<f32> { return ${name}v[i >> 2u]; }`
    : `fn ${name}4(i: u32) -> vec4<f32> { return vec4<f32>(${name}e(i), ${name}e(i + 1u), ${name}e(i + 2u), ${name}e(i + 3u)); }`;
  // Stored rows × cols; (r, c0..c0+3) along the stored row, zero past the ends.
  const row = `fn ${name}row(r: u32, c0: u32) -> vec4<f32> {
  if (r >= ${rows}) { return vec4<f32>(0.0); }
  ${l.vec ? `if (c0 >= ${cols}) { return vec4<f32>(0.0); }\n  return ${name}4(r * ${cols} + c0);` : `var v = vec4<f32>(0.0);
  for (var i = 0u; i < 4u; i = i + 1u) { if (c0 + i < ${cols}) { v[i] = ${name}e(r * ${cols} + c0 + i); } }
  return v;`}
}`;
  return `${elem}\n${four}\n${row}\n`;
}

function tiledSource(a: Layout, b: Layout): string {
  // A stored [M, K] (or [K, M] when trans); B stored [K, N] (or [N, K] when trans).
  const loadA = a.trans
    ? `  { let k = t / 16u; let m4 = (t % 16u) * 4u; As[k * 16u + m4 / 4u] = Arow(k0 + k, m0 + m4); }`
    : `  { let m = t / 4u; let k4 = (t % 4u) * 4u; let v = Arow(m0 + m, k0 + k4);
    for (var i = 0u; i < 4u; i = i + 1u) { As[(k4 + i) * 16u + m / 4u][m % 4u] = v[i]; } }`;
  const loadB = b.trans
    ? `  { let n = t / 4u; let k4 = (t % 4u) * 4u; let v = Brow(n0 + n, k0 + k4);
    for (var i = 0u; i < 4u; i = i + 1u) { Bs[(k4 + i) * 16u + n / 4u][n % 4u] = v[i]; } }`
    : `  { let k = t / 16u; let n4 = (t % 16u) * 4u; Bs[k * 16u + n4 / 4u] = Brow(k0 + k, n0 + n4); }`;
  return `${FLOAT_BITS}
${loader('A', a, a.trans ? 'p.K' : 'p.M', a.trans ? 'p.M' : 'p.K')}
${loader('B', b, b.trans ? 'p.N' : 'p.K', b.trans ? 'p.K' : 'p.N')}
var<workgroup> As: array<vec4<f32>, 256>;
var<workgroup> Bs: array<vec4<f32>, 256>;
@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
  let tx = lid.x;
  let ty = lid.y;
  let t = ty * 16u + tx;
  let m0 = wid.y * 64u;
  let n0 = wid.x * 64u;
  var acc = array<vec4<f32>, 4>(vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0));
  for (var k0 = 0u; k0 < p.K; k0 = k0 + 16u) {
${loadA}
${loadB}
    workgroupBarrier();
    for (var k = 0u; k < 16u; k = k + 1u) {
      let av = As[k * 16u + ty];
      let bv = Bs[k * 16u + tx];
      acc[0] = acc[0] + av.x * bv;
      acc[1] = acc[1] + av.y * bv;
      acc[2] = acc[2] + av.z * bv;
      acc[3] = acc[3] + av.w * bv;
    }
    workgroupBarrier();
  }
  for (var r = 0u; r < 4u; r = r + 1u) {
    let m = m0 + ty * 4u + r;
    if (m >= p.M) { break; }
    for (var c = 0u; c < 4u; c = c + 1u) {
      let n = n0 + tx * 4u + c;
      if (n >= p.N) { break; }
      let i = m * p.N + n;
      if (p.beta != 0.0) { C[i] = p.alpha * acc[r][c] + p.beta * C[i]; } else { C[i] = p.alpha * acc[r][c]; }
    }
  }
}
`;
}

/** Bind an operand as vec4 when `vec` (f32), else as scalars (f32, or u32 words of bf16). */
function operand(name: 'A' | 'B', l: Layout): readonly [string, 'r', string] {
  return l.bf16 ? [name, 'r', 'u32'] : l.vec ? [`${name}v`, 'r', 'vec4<f32>'] : [name, 'r', 'f32'];
}

/** The tiled kernel: C [M, N] (op(A) [M, K], op(B) [K, N]); C is read only when beta ≠ 0. */
function tiled(ctx: WebgpuContext, M: number, N: number, K: number, a: Layout, b: Layout, A: Binding, B: Binding, C: Binding, alpha: number, beta: number): void {
  const key = `${+a.trans}${+a.vec}${+b.trans}${+b.vec}${+b.bf16}`;
  const k = ctx.kernel('gemm', key, () => wgsl(GEMM, [operand('A', a), operand('B', b), ['C', 'w', 'f32']], tiledSource(a, b)));
  ctx.run(k, GEMM.pack({ M, N, K, alpha, beta }), [A, B, C], [Math.ceil(N / 64), Math.ceil(M / 64), 1]);
}

const MATVEC = params(['M', 'u32'], ['N', 'u32'], ['K', 'u32'], ['alpha', 'f32'], ['beta', 'f32'], ['roundA', 'u32']);

/** Weight formats of the matrix-vector kernel. */
export type MatvecWeights = 'f32' | 'bf16' | 'f16';

/**
 * `rows_sum(m)`: after `row_parts(acc, count)`, the sum of acc[m] over the 64 lanes of this row,
 * for every m < count, with one barrier: each lane stores its partial (or, with subgroups, each
 * subgroup its subgroup sum) and lane 0 adds them in order.
 */
export function rowReduce(subgroups: boolean, count: number): string {
  return `var<workgroup> part_: array<f32, ${256 * count}>;
fn row_parts(acc: ptr<function, array<f32, ${count}>>, n: u32, li: u32, sg: u32, sgi: u32) {
  for (var m = 0u; m < n; m = m + 1u) {
    ${subgroups ? `if (sg <= 64u) {
      let s = subgroupAdd((*acc)[m]);
      if (sgi == 0u) { part_[m * 256u + li / sg] = s; }
      continue;
    }
    ` : ''}part_[m * 256u + li] = (*acc)[m];
  }
  workgroupBarrier();
}
fn row_total(m: u32, li: u32, lane: u32, sg: u32) -> f32 {
  ${subgroups ? `if (sg <= 64u) {
    var r = 0.0;
    for (var i = 0u; i < 64u / sg; i = i + 1u) { r = r + part_[m * 256u + (li - lane) / sg + i]; }
    return r;
  }
  ` : ''}var r = 0.0;
  for (var i = 0u; i < 64u; i = i + 1u) { r = r + part_[m * 256u + li - lane + i]; }
  return r;
}
`;
}

/** The entry point of a kernel with 64 lanes per row, four rows per workgroup (`n` the row, `lane` its lane). */
export function rowsMain(subgroups: boolean): string {
  return `${GROUP_INDEX}
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32${subgroups ? ', @builtin(subgroup_size) sg: u32, @builtin(subgroup_invocation_id) sgi: u32' : ''}) {
  ${subgroups ? '' : 'let sg = 64u;\n  let sgi = 0u;\n  '}let lane = li % 64u;
  let n = group_index(wid, nwg) * 4u + li / 64u;
  let live = n < p.N;
`;
}

function matvecSource(w: MatvecWeights, vec: boolean, subgroups: boolean): string {
  const M = MATVEC_MAX_ROWS;
  const w4 = !vec ? ''
    : w === 'f32' ? 'fn w4(i: u32) -> vec4<f32> { return Wv[i >> 2u]; }'
    : `fn w4(i: u32) -> vec4<f32> { let a = W[i >> 1u]; let b = W[(i >> 1u) + 1u]; return vec4<f32>(${w === 'bf16' ? 'bf16_(a & 0xffffu), bf16_(a >> 16u), bf16_(b & 0xffffu), bf16_(b >> 16u)' : 'f16_(a & 0xffffu), f16_(a >> 16u), f16_(b & 0xffffu), f16_(b >> 16u)'}); }`;
  const w1 = w === 'f32' ? (vec ? 'fn w1(i: u32) -> f32 { return Wv[i >> 2u][i & 3u]; }' : 'fn w1(i: u32) -> f32 { return Wv[i]; }')
    : `fn w1(i: u32) -> f32 { let h = (W[i >> 1u] >> ((i & 1u) * 16u)) & 0xffffu; return ${w === 'bf16' ? 'bf16_(h)' : 'f16_(h)'}; }`;
  const xr = 'fn xr(i: u32) -> f32 { let v = X[i]; if (p.roundA == 1u) { return bf16_round_(v); } if (p.roundA == 2u) { return f16_(f16_bits_(v)); } return v; }';
  const body = vec
    ? `  for (var k = lane * 4u; live && k < p.K; k = k + 256u) {
    let wv = w4(n * p.K + k);
    for (var m = 0u; m < p.M; m = m + 1u) {
      let xo = m * p.K + k;
      acc[m] = acc[m] + dot(wv, vec4<f32>(xr(xo), xr(xo + 1u), xr(xo + 2u), xr(xo + 3u)));
    }
  }`
    : `  for (var k = lane; live && k < p.K; k = k + 64u) {
    let wv = w1(n * p.K + k);
    for (var m = 0u; m < p.M; m = m + 1u) { acc[m] = acc[m] + wv * xr(m * p.K + k); }
  }`;
  return `${FLOAT_BITS}${w4}\n${w1}\n${xr}\n${rowReduce(subgroups, M)}${rowsMain(subgroups)}  var acc: array<f32, ${M}>;
${body}
  row_parts(&acc, p.M, li, sg, sgi);
  if (!live || lane != 0u) { return; }
  for (var m = 0u; m < p.M; m = m + 1u) {
    let s = row_total(m, li, lane, sg);
    let i = m * p.N + n;
    if (p.beta != 0.0) { Y[i] = p.alpha * s + p.beta * Y[i]; } else { Y[i] = p.alpha * s; }
  }
}
`;
}

/**
 * y [M, N] = alpha·x [M, K]·Wᵀ (+ beta·y), W [N, K] as f32, bf16 or f16; M ≤ 8. `roundA` rounds
 * x to bf16 (1) or f16 (2) first, as llama.cpp multiplies BF16 and F16 weights.
 */
export function matvec(ctx: WebgpuContext, M: number, N: number, K: number, w: MatvecWeights, W: Binding, X: Binding, Y: Binding, alpha = 1, beta = 0, roundA: 0 | 1 | 2 = 0): void {
  if (M > MATVEC_MAX_ROWS) throw new ShapeError(`matvec: ${M} rows, at most ${MATVEC_MAX_ROWS}`);
  const vec = K % 4 === 0, sub = ctx.subgroups;
  const k = ctx.kernel('matvec', `${w}${+vec}${+sub}`, () => wgsl(MATVEC,
    [w === 'f32' ? ['Wv', 'r', vec ? 'vec4<f32>' : 'f32'] : ['W', 'r', 'u32'], ['X', 'r', 'f32'], ['Y', 'w', 'f32']],
    matvecSource(w, vec, sub), sub ? ['subgroups'] : []));
  ctx.run(k, MATVEC.pack({ M, N, K, alpha, beta, roundA }), [W, X, Y], ctx.grid(Math.ceil(N / 4)));
}

/** A GEMM on device buffers (what `gemm` and fused kernels such as the LM-head loss record). */
export interface GemmOn {
  readonly transA: boolean;
  readonly transB: boolean;
  readonly M: number;
  readonly N: number;
  readonly K: number;
  readonly A: Binding;
  readonly B: Binding;
  /** Whether B holds bf16 bits. */
  readonly bf16: boolean;
  readonly C: Binding;
  readonly alpha: number;
  readonly beta: number;
}

/** C = alpha·op(A)·op(B) + beta·C on bindings: the matrix-vector kernel for M ≤ 8 with B = Wᵀ, else the tiled one. */
export function gemmOn(ctx: WebgpuContext, g: GemmOn): void {
  const { M, N, K, alpha, beta } = g;
  if (M * N === 0) return;
  if (alpha === 0 || K === 0) {
    if (beta === 0) ctx.rt.clear(g.C.id, g.C.offset, 4 * M * N);
    else {
      const S = params(['n', 'u32'], ['s', 'f32']);
      const k = ctx.kernel('gemm.scale', '', () => wgsl(S, [['C', 'w', 'f32']],
        `${GROUP_INDEX}\n@compute @workgroup_size(256)\nfn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {\n  let i = group_index(wid, nwg) * 256u + li;\n  if (i < p.n) { C[i] = p.s * C[i]; }\n}\n`));
      ctx.run(k, S.pack({ n: M * N, s: beta }), [g.C], ctx.grid(Math.ceil((M * N) / 256)));
    }
    return;
  }
  if (M <= MATVEC_MAX_ROWS && g.transB && !g.transA) {
    matvec(ctx, M, N, K, g.bf16 ? 'bf16' : 'f32', g.B, g.A, g.C, alpha, beta);
    return;
  }
  const a: Layout = { trans: g.transA, vec: (g.transA ? M : K) % 4 === 0, bf16: false };
  const b: Layout = { trans: g.transB, vec: (g.transB ? K : N) % 4 === 0, bf16: g.bf16 };
  tiled(ctx, M, N, K, a, b, g.A, g.B, g.C, alpha, beta);
}

/** The registry's gemm on the device (see `GemmArgs`). */
export function gemm(ctx: WebgpuContext, args: GemmArgs | GemmBf16Args): void {
  const bf16 = args.B instanceof Uint16Array;
  const g = checkGemmArgs(args, bf16);
  const { M, N, K } = g;
  if (M * N === 0) return;
  const st = ctx.st;
  const C = g.C.subarray(0, M * N);
  const out = g.beta === 0 ? st.output(C, 'gemm output') : st.inout(C, 'gemm output');
  const read = g.alpha !== 0 && K > 0;
  gemmOn(ctx, {
    transA: g.transA, transB: g.transB, M, N, K, bf16, alpha: g.alpha, beta: g.beta, C: out,
    A: read ? st.input(g.A.subarray(0, M * K), 'gemm A') : out, B: read ? st.input((g.B as Float32Array).subarray(0, K * N), 'gemm B') : out,
  });
}

/**
 * Products and row lookups of weights held as GGUF blocks (or f32/bf16/f16) on the webgpu device.
 * The block bytes go up once, as they are (`array<u32>`), and are decoded in registers.
 *
 * - Decode (M ≤ 8): the input rows are quantized on the device as llama.cpp quantizes them (Q8_0,
 *   Q8_1 or Q8_K blocks, with a correctly rounded division and f16 rounding on the bits, so the
 *   integers are the CPU's), then 64 lanes per weight row stride over its blocks (a block of 32,
 *   or a quarter of a 256-value super-block, per lane and step: neighbouring lanes read
 *   neighbouring bytes), each unit an exact integer dot product scaled once; the lanes' sums are
 *   added by the row's first lane.
 * - Prefill (M > 8): the quantized input as floats (d·q, exact) and the weight rows dequantized
 *   chunk by chunk into float32 (as `dtypes/` dequantizes: the same bits) meet in the tiled GEMM.
 * - Rows (an embedding table stored quantized): one thread per value, dequantized.
 * F32/BF16/F16 weights: the matrix-vector or tiled GEMM, the input rounded to bf16 / f16 first as
 * llama.cpp does.
 */
import { ShapeError } from '../../../errors';
import type { F32, I32 } from '../../../arrays';
import type { QuantDType } from '../../../dtypes/index';
import type { WebgpuContext } from '../../../webgpu/kernel';
import type { Binding } from '../../../webgpu/runtime';
import { DIV_RN, FLOAT_BITS, GROUP_INDEX, MAIN_1D, params, wgsl } from '../../../webgpu/wgsl';
import { gemmOn, matvec, MATVEC_MAX_ROWS, rowReduce, rowsMain } from '../../gemm/webgpu';
import type { PackedWeight, WeightDType } from './product';
import { weightRowBytes } from './product';
import { BYTES_WGSL, WGSL_FORMATS, type WgslFormat } from './webgpu-formats';

/** The bytes of a weight as one array whose identity stays (the device keeps its copy by it). */
const views = new WeakMap<PackedWeight, Uint8Array>();
function bytesOf(w: PackedWeight): Uint8Array {
  let v = views.get(w);
  if (v === undefined) {
    v = new Uint8Array(w.memory.buffer, w.byteOffset, w.N * weightRowBytes(w.dtype, w.K));
    views.set(w, v);
  }
  return v;
}

/** The device copy of a weight's bytes (uploaded on first use, kept). */
export function weightBinding(ctx: WebgpuContext, w: PackedWeight): Binding {
  return ctx.st.input(bytesOf(w), `${w.dtype} weights [${w.N}, ${w.K}]`);
}

/** The bytes a weight's device copy takes (to check a model against the device's budget before placing it). */
export function weightDeviceArray(w: PackedWeight): Uint8Array {
  return bytesOf(w);
}

const QA = params(['M', 'u32'], ['K', 'u32'], ['blocks', 'u32']);

/**
 * Quantized activations of x [M, K]: q as packed int8 ([M, K/4] u32), d per block ([M, K/bv]),
 * s = f16(d·Σq) per 32 (Q8_1 only). One thread per block, the CPU's rounding throughout.
 */
const QUANTIZE: Record<'q8_0' | 'q8_1' | 'q8_k', string> = {
  q8_0: q8Blocks(false),
  q8_1: q8Blocks(true),
  q8_k: `${FLOAT_BITS}${DIV_RN}${GROUP_INDEX}
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let b = group_index(wid, nwg) * 64u + li;
  if (b >= p.blocks) { return; }
  let o = b * 256u;
  var amax = 0.0;
  var mx = 0.0;
  for (var j = 0u; j < 256u; j = j + 1u) { let v = x[o + j]; if (abs(v) > amax) { amax = abs(v); mx = v; } }
  var iscale = 0.0;
  if (amax > 0.0) { let r = div_rn(127.0, amax); iscale = select(-r, r, mx < 0.0); }
  d[b] = select(0.0, select(-div_rn(1.0, abs(iscale)), div_rn(1.0, abs(iscale)), iscale > 0.0), amax > 0.0);
  for (var j = 0u; j < 256u; j = j + 4u) {
    var w = 0u;
    for (var k = 0u; k < 4u; k = k + 1u) { let q = i32(min(127.0, round(iscale * x[o + j + k]))); w = w | ((u32(q) & 0xffu) << (8u * k)); }
    q[(o + j) / 4u] = w;
  }
}
`,
};

function q8Blocks(sums: boolean): string {
  return `${FLOAT_BITS}${DIV_RN}${GROUP_INDEX}
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let b = group_index(wid, nwg) * 64u + li;
  if (b >= p.blocks) { return; }
  let o = b * 32u;
  var amax = 0.0;
  for (var j = 0u; j < 32u; j = j + 1u) { amax = max(amax, abs(x[o + j])); }
  let id = select(0.0, div_rn(127.0, amax), amax > 0.0);
  let dr = select(0.0, div_rn(amax, 127.0), amax > 0.0);
  d[b] = f16_(f16_bits_(dr));
  var sum = 0;
  for (var j = 0u; j < 32u; j = j + 4u) {
    var w = 0u;
    for (var k = 0u; k < 4u; k = k + 1u) { let q = i32(round(x[o + j + k] * id)); sum = sum + q; w = w | ((u32(q) & 0xffu) << (8u * k)); }
    q[(o + j) / 4u] = w;
  }
  ${sums ? 's[b] = f16_(f16_bits_(dr * f32(sum)));' : ''}
}
`;
}

/** Quantized activations on the device: packed int8 quants, block scales, Q8_1's s (temporary buffers of the op). */
export interface Activations { readonly q: Binding; readonly d: Binding; readonly s: Binding }

/** Quantize x [M, K] (a binding) for products with `fmt` (temporary buffers of the op). */
export function quantizeInput(ctx: WebgpuContext, fmt: WgslFormat, x: Binding, M: number, K: number): Activations {
  const st = ctx.st, bv = fmt.activation === 'q8_k' ? 256 : 32, blocks = (M * K) / bv;
  const q = st.temp(M * K, 'quantized activations'), d = st.temp(4 * blocks, 'activation scales');
  const s = fmt.activation === 'q8_1' ? st.temp(4 * blocks, 'activation sums') : d;
  const bufs: [string, 'r' | 'w', string][] = [['x', 'r', 'f32'], ['q', 'w', 'u32'], ['d', 'w', 'f32']];
  if (fmt.activation === 'q8_1') bufs.push(['s', 'w', 'f32']);
  const k = ctx.kernel(`quantize.${fmt.activation}`, '', () => wgsl(QA, bufs, QUANTIZE[fmt.activation]));
  ctx.run(k, QA.pack({ M, K, blocks }), fmt.activation === 'q8_1' ? [x, q, d, s] : [x, q, d], ctx.grid(Math.ceil(blocks / 64)));
  return { q, d, s };
}

/** WGSL: the float contribution of unit u of a weight row (a block of 32, or 64 values of a super-block) against activation row m. */
function unitDot(f: WgslFormat): string {
  const get = `fn w4_(o: u32, ib: u32) -> vec4<i32> { return ${f.w4}; }
fn sc_(o: u32, g: u32) -> i32 { return ${f.sc}; }
fn mn_(o: u32, g: u32) -> i32 { return ${f.mn}; }
fn d_(o: u32) -> f32 { return ${f.d}; }
fn m_(o: u32) -> f32 { return ${f.m}; }
fn a4(i: u32) -> vec4<i32> { return i8x4(qa[i >> 2u]); }
`;
  if (f.bv === 32) {
    return `${get}fn unit_dot(rb: u32, u: u32, m: u32) -> f32 {
  let o = rb + u * ${f.bb}u;
  let ab = m * p.K + u * 32u;
  var I = 0;
  for (var ib = 0u; ib < 32u; ib = ib + 4u) { I = I + dot(w4_(o, ib), a4(ab + ib)); }
  let ai = m * (p.K / 32u) + u;
  ${f.mins === 'add' ? 'return f32(I) * (d_(o) * da[ai]) + m_(o) * sa[ai];' : 'return f32(I) * (d_(o) * da[ai]);'}
}
`;
  }
  const groups = 64 / f.gv;
  return `${get}fn unit_dot(rb: u32, u: u32, m: u32) -> f32 {
  let sb = u / 4u;
  let base = (u % 4u) * 64u;
  let o = rb + sb * ${f.bb}u;
  let ab = m * p.K + sb * 256u;
  var I = 0;
  var Mi = 0;
  for (var gi = 0u; gi < ${groups}u; gi = gi + 1u) {
    let g0 = base + gi * ${f.gv}u;
    var s = 0;
    var t = 0;
    for (var k = 0u; k < ${f.gv}u; k = k + 4u) {
      let av = a4(ab + g0 + k);
      s = s + dot(w4_(o, g0 + k), av);
      t = t + av.x + av.y + av.z + av.w;
    }
    let g = g0 / ${f.gv}u;
    I = I + sc_(o, g) * s;
    Mi = Mi + mn_(o, g) * t;
  }
  let da_ = da[m * (p.K / 256u) + sb];
  ${f.mins === 'sub' ? 'return f32(I) * (d_(o) * da_) - f32(Mi) * (m_(o) * da_);' : 'return f32(I) * (d_(o) * da_);'}
}
`;
}

const QMV = params(['M', 'u32'], ['N', 'u32'], ['K', 'u32'], ['units', 'u32'], ['rowBytes', 'u32']);

/** y [M, N] = x · Wᵀ for M ≤ 8 from quantized activations: 64 lanes per row over its units. */
function quantMatvec(ctx: WebgpuContext, dtype: QuantDType, N: number, K: number, W: Binding, a: Activations, M: number, Y: Binding): void {
  const f = WGSL_FORMATS[dtype], sub = ctx.subgroups, units = f.bv === 32 ? K / 32 : K / 64;
  const bufs: [string, 'r' | 'w', string][] = [['W', 'r', 'u32'], ['qa', 'r', 'u32'], ['da', 'r', 'f32']];
  if (f.mins === 'add') bufs.push(['sa', 'r', 'f32']);
  bufs.push(['Y', 'w', 'f32']);
  const k = ctx.kernel(`linear.${dtype}`, String(+sub), () => wgsl(QMV, bufs, `${FLOAT_BITS}${BYTES_WGSL}${unitDot(f)}${rowReduce(sub, MATVEC_MAX_ROWS)}${rowsMain(sub)}  var acc: array<f32, ${MATVEC_MAX_ROWS}>;
  let rb = n * p.rowBytes;
  for (var u = lane; live && u < p.units; u = u + 64u) {
    for (var m = 0u; m < p.M; m = m + 1u) { acc[m] = acc[m] + unit_dot(rb, u, m); }
  }
  row_parts(&acc, p.M, li, sg, sgi);
  if (!live || lane != 0u) { return; }
  for (var m = 0u; m < p.M; m = m + 1u) { Y[m * p.N + n] = row_total(m, li, lane, sg); }
}
`, sub ? ['subgroups'] : []));
  const bound = f.mins === 'add' ? [W, a.q, a.d, a.s, Y] : [W, a.q, a.d, Y];
  ctx.run(k, QMV.pack({ M, N, K, units, rowBytes: weightRowBytes(dtype, K) }), bound, ctx.grid(Math.ceil(N / 4)));
}

const DEQ = params(['n', 'u32'], ['K', 'u32'], ['rowBytes', 'u32'], ['row0', 'u32'], ['ids', 'u32']);

/**
 * WGSL: `deq(rb, i)`, value i of the row at byte rb, dequantized as `dtypes/` does it, or (`noMin`,
 * for Q4_1/Q5_1) without the block's min: a prefill adds m·s of the Q8_1 input apart, as llama.cpp's
 * dot product does.
 */
function deqFn(f: WgslFormat, noMin: boolean): string {
  return `fn deq(rb: u32, i: u32) -> f32 {
  let blk = i / ${f.bv}u;
  let ib = i % ${f.bv}u;
  let o = rb + blk * ${f.bb}u;
  let w = w4_(o, ib & ~3u)[ib & 3u];
  let g = ib / ${f.gv}u;
  let sc = ${f.sc};
  let mn = ${f.mn};
  let d = ${f.d};
  let m = ${f.m};
  return ${noMin ? 'd * f32(w)' : f.value};
}
fn w4_(o: u32, ib: u32) -> vec4<i32> { return ${f.w4}; }
`;
}

/** mins [rows, K/32] = the block mins m of weight rows row0 … (Q4_1, Q5_1). */
function blockMins(ctx: WebgpuContext, f: WgslFormat, K: number, rowBytes: number, W: Binding, rows: number, row0: number, out: Binding): void {
  const nb = K / 32, n = rows * nb;
  const k = ctx.kernel('linear.mins', `${f.bb}`, () => wgsl(DEQ, [['W', 'r', 'u32'], ['y', 'w', 'f32']], `${FLOAT_BITS}${BYTES_WGSL}${MAIN_1D}  let r = i / p.K;
  let o = (p.row0 + r) * p.rowBytes + (i - r * p.K) * ${f.bb}u;
  y[i] = ${f.m};
}
`));
  ctx.run(k, DEQ.pack({ n, K: nb, rowBytes, row0, ids: 0 }), [W, out], ctx.grid(Math.ceil(n / 256)));
}

/** WGSL per element of a float weight: f32, bf16 or f16 bits. */
function deqFloat(dtype: 'f32' | 'bf16' | 'f16'): string {
  if (dtype === 'f32') return 'fn deq(rb: u32, i: u32) -> f32 { return bitcast<f32>(W[rb / 4u + i]); }\n';
  const conv = dtype === 'bf16' ? 'bf16_' : 'f16_';
  return `fn deq(rb: u32, i: u32) -> f32 { let e = rb / 2u + i; return ${conv}((W[e >> 1u] >> ((e & 1u) * 16u)) & 0xffffu); }\n`;
}

/**
 * out [rows, K] = the dequantized rows of W: `ids` (the rows, one per output row) or, without,
 * rows row0, row0 + 1, …. One thread per value.
 */
function dequantRows(ctx: WebgpuContext, dtype: WeightDType, K: number, W: Binding, rows: number, row0: number, ids: Binding | null, out: Binding, noMin = false): void {
  const n = rows * K;
  if (n === 0) return;
  const k = ctx.kernel(`dequantize.${dtype}`, String(noMin), () => wgsl(DEQ, [['W', 'r', 'u32'], ['rowIds', 'r', 'i32'], ['y', 'w', 'f32']],
    `${FLOAT_BITS}${BYTES_WGSL}${dtype === 'f32' || dtype === 'bf16' || dtype === 'f16' ? deqFloat(dtype) : deqFn(WGSL_FORMATS[dtype], noMin)}${MAIN_1D}  let r = i / p.K;
  let row = select(p.row0 + r, u32(rowIds[r]), p.ids == 1u);
  y[i] = deq(row * p.rowBytes, i - r * p.K);
}
`));
  ctx.run(k, DEQ.pack({ n, K, rowBytes: weightRowBytes(dtype, K), row0, ids: ids === null ? 0 : 1 }), [W, ids ?? W, out], ctx.grid(Math.ceil(n / 256)));
}

const ROUND = params(['n', 'u32'], ['mode', 'u32']);

/** x̃ = x rounded to bf16 (mode 1) or f16 (mode 2), or the quantized activations as floats (mode 3: d·q of `a`). */
function roundedInput(ctx: WebgpuContext, mode: 1 | 2 | 3, x: Binding, n: number, a: Activations | null, bv: number): Binding {
  const y = ctx.st.temp(4 * n, 'rounded input');
  const k = ctx.kernel('linear.input', String(bv), () => wgsl(ROUND, [['x', 'r', 'f32'], ['q', 'r', 'u32'], ['d', 'r', 'f32'], ['y', 'w', 'f32']],
    `${FLOAT_BITS}${MAIN_1D}  if (p.mode == 1u) { y[i] = bf16_round_(x[i]); return; }
  if (p.mode == 2u) { y[i] = f16_(f16_bits_(x[i])); return; }
  let qv = i32(q[i >> 2u] << (24u - 8u * (i & 3u))) >> 24u;
  y[i] = f32(qv) * d[i / ${bv}u];
}
`));
  ctx.run(k, ROUND.pack({ n, mode }), [x, a?.q ?? x, a?.d ?? x, y], ctx.grid(Math.ceil(n / 256)));
  return y;
}

const COLS = params(['M', 'u32'], ['nc', 'u32'], ['N', 'u32'], ['n0', 'u32']);

/** y[m, n0 + j] = c[m, j] for the columns of one chunk of weight rows. */
function copyColumns(ctx: WebgpuContext, c: Binding, M: number, nc: number, Y: Binding, N: number, n0: number): void {
  const k = ctx.kernel('linear.columns', '', () => wgsl(COLS, [['c', 'r', 'f32'], ['Y', 'w', 'f32']],
    `${GROUP_INDEX}
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let i = group_index(wid, nwg) * 256u + li;
  if (i >= p.M * p.nc) { return; }
  let m = i / p.nc;
  Y[m * p.N + p.n0 + i - m * p.nc] = c[i];
}
`));
  ctx.run(k, COLS.pack({ M, nc, N, n0 }), [c, Y], ctx.grid(Math.ceil((M * nc) / 256)));
}

/** Floats of dequantized weight rows per prefill chunk (64 MiB). */
const CHUNK_FLOATS = 16 << 20;

/** y [M, N] = x [M, K] · Wᵀ for a weight of any storage dtype (see the file comment). */
export function packedLinearWgsl(ctx: WebgpuContext, w: PackedWeight, x: F32, M: number, y: F32): void {
  const { N, K, dtype } = w;
  if (x.length < M * K || y.length < M * N) throw new ShapeError(`linear: input of ${x.length} floats or output of ${y.length} for [${M}, ${K}] · [${N}, ${K}]ᵀ`);
  const f = dtype === 'f32' || dtype === 'bf16' || dtype === 'f16' ? null : WGSL_FORMATS[dtype];
  if (f !== null && K % f.bv !== 0) throw new ShapeError(`linear: rows of ${K} values are not whole ${dtype} blocks of ${f.bv}`);
  if (M === 0 || N === 0) return;
  const st = ctx.st, W = weightBinding(ctx, w), X = st.input(x.subarray(0, M * K), 'linear input'), Y = st.output(y.subarray(0, M * N), 'linear output');
  if (f === null) {
    const fw = dtype as 'f32' | 'bf16' | 'f16';
    if (M <= MATVEC_MAX_ROWS) { matvec(ctx, M, N, K, fw, W, X, Y, 1, 0, fw === 'f32' ? 0 : fw === 'bf16' ? 1 : 2); return; }
    const Xr = fw === 'f32' ? X : roundedInput(ctx, fw === 'bf16' ? 1 : 2, X, M * K, null, 32);
    if (fw !== 'f16') { gemmOn(ctx, { transA: false, transB: true, M, N, K, A: Xr, B: W, bf16: fw === 'bf16', C: Y, alpha: 1, beta: 0 }); return; }
    chunked(ctx, fw, N, K, W, Xr, M, Y);
    return;
  }
  const a = quantizeInput(ctx, f, X, M, K);
  if (M <= MATVEC_MAX_ROWS) { quantMatvec(ctx, dtype as QuantDType, N, K, W, a, M, Y); return; }
  chunked(ctx, dtype, N, K, W, roundedInput(ctx, 3, X, M * K, a, f.activation === 'q8_k' ? 256 : 32), M, Y, f.mins === 'add' ? a.s : null);
}

/**
 * A prefill product by chunks of weight rows: dequantized into float32, the tiled GEMM, the chunk's
 * columns into y. With `s` (Q4_1/Q5_1) the weights go without their mins, which meet the Q8_1
 * input's s = f16(d·Σq) in a second, small product (K/32 terms): llama.cpp's m·s.
 */
function chunked(ctx: WebgpuContext, dtype: WeightDType, N: number, K: number, W: Binding, X: Binding, M: number, Y: Binding, s: Binding | null = null): void {
  const st = ctx.st, nc = Math.max(1, Math.min(N, Math.floor(CHUNK_FLOATS / K)));
  const Wc = st.temp(4 * nc * K, 'dequantized weight rows'), C = nc === N ? Y : st.temp(4 * M * nc, 'product of a chunk');
  const mins = s === null ? null : st.temp(4 * nc * (K / 32), 'block mins');
  for (let n0 = 0; n0 < N; n0 += nc) {
    const n = Math.min(nc, N - n0);
    dequantRows(ctx, dtype, K, W, n, n0, null, Wc, s !== null);
    gemmOn(ctx, { transA: false, transB: true, M, N: n, K, A: X, B: Wc, bf16: false, C, alpha: 1, beta: 0 });
    if (s !== null && mins !== null) {
      blockMins(ctx, WGSL_FORMATS[dtype as QuantDType], K, weightRowBytes(dtype, K), W, n, n0, mins);
      gemmOn(ctx, { transA: false, transB: true, M, N: n, K: K / 32, A: s, B: mins, bf16: false, C, alpha: 1, beta: 1 });
    }
    if (C !== Y) copyColumns(ctx, C, M, n, Y, N, n0);
  }
}

/** out [ids.length, K] = rows `ids` of W dequantized (an embedding lookup in a quantized table). */
export function packedRowsWgsl(ctx: WebgpuContext, w: PackedWeight, ids: I32, out: F32): void {
  const { N, K } = w;
  if (out.length !== ids.length * K) throw new ShapeError(`rows: out of ${out.length} floats for ${ids.length} rows of ${K}`);
  ctx.st.hostRead(ids);
  for (const id of ids) if (!(id >= 0 && id < N)) throw new ShapeError(`rows: id ${id} outside [0, ${N})`);
  if (ids.length === 0) return;
  dequantRows(ctx, w.dtype, K, weightBinding(ctx, w), ids.length, 0, ctx.st.input(ids, 'row ids'), ctx.st.output(out, 'rows'));
}

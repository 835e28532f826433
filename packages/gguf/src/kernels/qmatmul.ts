// Host side of the matrix kernels (kernels.wat.mjs). A matrix's stored bytes are copied once, when
// it is loaded, into the memory of a module instance (a `WeightArena`) and stay there: a product
// copies only its activations in and its outputs out. The activations are quantized as llama.cpp
// quantizes them (Q8_0 blocks for Q8_0 weights, Q8_K super-blocks for the k-quants) by the module
// itself (quant_q8_0, quant_q8_k: the same float32 operations as quant/activations.ts); float
// activations go in as float32 (rounded to bf16 as they are copied in, for BF16 weights).

import { relaxedSimdAvailable } from '@apertus/tensor';
import { wasm } from '@apertus/tensor/kernels';
import { roundBf16Into } from '../quant/activations';
import { GGML_TYPES, rowBytes, type GgmlType } from '../types';
import { QUANT_KERNELS_WASM, QUANT_KERNELS_WASM_RELAXED } from './module.generated';

/** The parts of the WebAssembly JS API used here (the tsconfig has no DOM/WebAssembly lib). */
interface Wasm {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { exports: unknown };
}

/**
 * A matrix-vector kernel: y[m·ldy + r] = x[m] · W[r] for r < nr, m < M (quantized: activation
 * scales at xd, k-quant per-32 sums at xs, scratch at sc for the relaxed kernels).
 */
type Kernel = (w: number, rs: number, nr: number, n: number, x: number, M: number, y: number, ldy: number, xd?: number, xs?: number, sc?: number) => void;

/** Scratch of the relaxed matrix-vector kernels for rows of n blocks: two Q8_0 rows' block scales (4 bytes each), two Q4_K rows' scales, d and dmin (24 bytes a super-block) or a Q6_K super-block's scales as i16 (32 bytes). */
const DECODE_SCRATCH_BYTES = (n: number) => Math.max(48 * n, 32);

interface Instance { memory: { buffer: ArrayBuffer; grow(pages: number): number }; [kernel: string]: unknown }

/**
 * The two builds of the kernels: `simd` (SIMD128) and `relaxed` (relaxed SIMD: fused multiply-add
 * for F32/BF16, int8 dot products for Q4_K/Q6_K; same results up to the order and fusing of float
 * additions, the integer sums being exact in both).
 */
export type KernelVariant = 'simd' | 'relaxed';

const compiled: Partial<Record<KernelVariant, object | null>> = {};

/** The compiled module of `variant`, or null where this runtime cannot run it. */
function module(variant: KernelVariant): object | null {
  if (compiled[variant] !== undefined) return compiled[variant];
  const wasmApi = (globalThis as unknown as { WebAssembly?: Wasm }).WebAssembly;
  try {
    if (!wasmApi) throw new Error('no WebAssembly');
    if (variant === 'relaxed' && (module('simd') === null || !relaxedSimdAvailable())) throw new Error('no relaxed SIMD');
    const bytes = Uint8Array.from(atob(variant === 'relaxed' ? QUANT_KERNELS_WASM_RELAXED : QUANT_KERNELS_WASM), (c) => c.charCodeAt(0));
    compiled[variant] = wasm.compileOptimized(() => new wasmApi.Module(bytes));
  } catch {
    compiled[variant] = null;
  }
  return compiled[variant];
}

/** The variant new arenas use: `relaxed` where relaxed SIMD runs (Node >= 22, Chrome, Firefox), else `simd`. */
export function defaultKernelVariant(): KernelVariant {
  return module('relaxed') !== null ? 'relaxed' : 'simd';
}

/** Whether `variant` runs in this runtime. */
export function kernelVariantAvailable(variant: KernelVariant): boolean {
  return module(variant) !== null;
}

/** Kernel names by type: the stored types the module multiplies directly. */
const KERNELS: Readonly<Record<string, string>> = { F32: 'f32', BF16: 'bf16', Q8_0: 'q8_0', Q4_K: 'q4_k', Q6_K: 'q6_k' };

/** The stored type of each quantized kernel. */
const GGML_BY_KERNEL: Readonly<Record<string, GgmlType>> = { q8_0: GGML_TYPES.Q8_0, q4_k: GGML_TYPES.Q4_K, q6_k: GGML_TYPES.Q6_K };

/** Whether `type` (with rows of K values) has a kernel here. */
export function hasKernel(type: GgmlType, K = type.blockSize * 8): boolean {
  return type.name in KERNELS && K % 8 === 0 && module('simd') !== null;
}

/** Weight bytes per module instance (a 32-bit memory holds 4 GiB; the rest is room for activations). */
const INSTANCE_WEIGHT_BYTES = 2 ** 31;
const PAGE = 65536;
const align = (n: number) => (n + 15) & ~15;

/** One module instance: resident weights in [0, top), scratch for a product above. */
class Slab {
  readonly exports: Instance;
  top = 0;
  constructor(mod: object, readonly variant: KernelVariant) {
    const wasm = (globalThis as unknown as { WebAssembly: Wasm }).WebAssembly;
    this.exports = new wasm.Instance(mod, {}).exports as Instance;
  }
  /** Make the memory at least `end` bytes long. */
  reserve(end: number): void {
    const mem = this.exports.memory;
    if (end > mem.buffer.byteLength) mem.grow(Math.ceil((end - mem.buffer.byteLength) / PAGE));
  }
  kernel(name: string): Kernel {
    return this.exports[name] as Kernel;
  }
}

/** Where a matrix's bytes live: in an instance's memory (offset) or, without WebAssembly, in a plain array. */
export interface Resident {
  readonly slab: Slab | null;
  readonly offset: number;
  readonly byteLength: number;
  readonly plain: Uint8Array | null;
}

/**
 * The memory that a model's matrices are loaded into, once: one or more instances of the kernel
 * module. It lives as long as the matrices that reference it (a model's arena is freed with it).
 */
export class WeightArena {
  private readonly slabs: Slab[] = [];

  /** An arena whose products run in the kernels of `variant` (where it runs; else plain SIMD). */
  constructor(readonly variant: KernelVariant = defaultKernelVariant()) {
    if (!kernelVariantAvailable(variant)) this.variant = 'simd';
  }

  /** Copy `bytes` in; the matrix multiplies them where they now are. */
  store(bytes: Uint8Array): Resident {
    const mod = module(this.variant);
    if (mod === null) return { slab: null, offset: 0, byteLength: bytes.byteLength, plain: bytes.slice() };
    let slab = this.slabs.at(-1);
    if (!slab || (slab.top > 0 && slab.top + bytes.byteLength > INSTANCE_WEIGHT_BYTES)) this.slabs.push(slab = new Slab(mod, this.variant));
    const offset = slab.top;
    slab.reserve(offset + bytes.byteLength);
    new Uint8Array(slab.exports.memory.buffer, offset, bytes.byteLength).set(bytes);
    slab.top = align(offset + bytes.byteLength);
    return { slab, offset, byteLength: bytes.byteLength, plain: null };
  }
}

/** The stored bytes (a view: valid until the next product or load grows the memory). */
export function residentBytes(r: Resident): Uint8Array {
  return r.plain ?? new Uint8Array(r.slab!.exports.memory.buffer, r.offset, r.byteLength);
}

/** Lay out scratch regions above the weights of `slab`: returns their offsets, memory grown to hold them. */
function scratch(slab: Slab, sizes: readonly number[]): number[] {
  let at = slab.top;
  const out = sizes.map((s) => { const o = at; at = align(at + s); return o; });
  slab.reserve(at);
  return out;
}

/**
 * y [M, N] = x [M, K] · Wᵀ for W [N, K] of `type` resident in its arena (`hasKernel(type, K)`).
 * The activations are rounded as llama.cpp rounds them: to bf16 for BF16 (as they are copied in),
 * quantized for the quantized types; F32 uses them as given.
 */
export function residentMatmulT(type: GgmlType, w: Resident, N: number, K: number, x: Float32Array, M: number, y: Float32Array): void {
  const slab = w.slab!, name = KERNELS[type.name]!, rs = rowBytes(type, K);
  const f32 = () => new Float32Array(slab.exports.memory.buffer);
  if (name === 'f32' || name === 'bf16') {
    const [xo, yo] = scratch(slab, [4 * M * K, 4 * M * N]);
    if (name === 'bf16') roundBf16Into(x.subarray(0, M * K), f32().subarray(xo! / 4, xo! / 4 + M * K));
    else f32().set(x.subarray(0, M * K), xo! / 4);
    if (name === 'bf16') (slab.exports.split_pairs as (x: number, n: number) => void)(xo!, M * K);
    slab.kernel(`${name}_1`)(w.offset, rs, N, K, xo!, M, yo!, N);
    y.set(f32().subarray(yo! / 4, yo! / 4 + M * N));
    return;
  }
  const isK = name !== 'q8_0', B = isK ? 256 : 32, many = M >= MANY_ROWS_FROM;
  // The relaxed Q8_0 kernels take the quants split by sign (two bytes per value).
  const split = !isK && slab.variant === 'relaxed' ? 1 : 0;
  const ch = Math.max(2, Math.floor(CHUNK_BYTES / (2 * K)) & ~1), nb = K / B, nsub = K / 32;
  const rows = many && name in RECORD_BYTES && slab.variant === 'relaxed';
  const rowsScratch = rows ? [packedBytes(name, M, nb), 16 + (isK ? 0 : 4 * nb * rowsChunk(rowBytes(type, K)))] : [0, DECODE_SCRATCH_BYTES(nb)];
  const [xf, xq, xd, xs, xsf, yo, w16, sw, mw, xp, sc] = scratch(slab, [4 * M * K, (1 + split) * M * K, 4 * M * nb, 4 * M * nsub, 4 * M * nsub, 4 * M * N,
    ...(many && !rows ? [2 * ch * K, 4 * ch * nb, 4 * ch * nsub] : [0, 0, 0]), ...rowsScratch]);
  f32().set(x.subarray(0, M * K), xf! / 4);
  if (isK) (slab.exports.quant_q8_k as QuantKernel)(xf!, M * K, xq!, xd!, xs!, xsf!);
  else (slab.exports.quant_q8_0 as QuantKernel)(xf!, M * K, xq!, xd!, split);
  if (rows) rowsProduct(slab, name, w, N, K, M, { xq: xq!, xd: xd!, xs: xs!, xp: xp!, sc: sc!, yo: yo! });
  else if (many) igemm(slab, name, w, N, K, M, { xq: xq!, xd: xd!, xsf: xsf!, yo: yo!, w16: w16!, sw: sw!, mw: mw!, ch });
  else matrixVector(slab, name, w.offset, rs, N, K / type.blockSize, xq!, M, yo!, xd!, xs!, sc!);
  y.set(f32().subarray(yo! / 4, yo! / 4 + M * N));
}

/**
 * Bytes of two stored rows up to which the relaxed Q8_0 and Q4_K matrix-vector kernels take two
 * rows at a time. Each first reads both rows front to back (one stream), then multiplies them
 * from L1; past about 6.5 KiB the weights streamed from memory came slower than one row at a
 * time (AMD Zen 4, `bench/two-rows.mjs`): Q8_0 0.89× at K = 4096 (2 × 4352 bytes) and 0.66× at
 * 5120, Q4_K 0.93× at K = 6144 (2 × 3456) and 0.82× at 8192, where shorter rows gave 1.04–1.28×.
 * (Q8_0 rows of K ≥ 6144 stream slowly either way, 9–11 GB/s against 14–16: one row at a time.)
 */
const TWO_ROWS_MAX_BYTES = 6656;

/**
 * The matrix-vector kernels over N rows: the relaxed Q8_0 and Q4_K ones take two rows at a time
 * where two rows fit {@link TWO_ROWS_MAX_BYTES} (each block's activations loaded once for both:
 * 1.1–1.2× the one-row kernels on the `small` shapes), then an odd last row alone.
 */
function matrixVector(slab: Slab, name: string, w: number, rs: number, N: number, n: number, xq: number, M: number, yo: number, xd: number, xs: number, sc: number): void {
  const N2 = (name === 'q8_0' || name === 'q4_k') && slab.variant === 'relaxed' && 2 * rs <= TWO_ROWS_MAX_BYTES ? N & ~1 : 0;
  if (N2 > 0) slab.kernel(`${name}_2`)(w, rs, N2, n, xq, M, yo, N, xd, xs, sc);
  if (N > N2) slab.kernel(`${name}_1`)(w + N2 * rs, rs, N - N2, n, xq, M, yo + 4 * N2, N, xd, xs, sc);
}

/**
 * The module's activation quantizers on `x` (SIMD build), read back: Q8_0 (`split`: the sign-split
 * form of the relaxed Q8_0 kernel, 64 bytes per block) or Q8_K with the sum of every 32 quants and
 * d times it. What the products multiply, for checks against quant/activations.ts.
 */
export function moduleQuantizedActivations(kind: 'Q8_0' | 'Q8_K', x: Float32Array, split = false): { q: Int8Array; d: Float32Array; sums: Int32Array; dsums: Float32Array } {
  const slab = new Slab(module('simd')!, 'simd'), n = x.length, B = kind === 'Q8_0' ? 32 : 256, bytes = split ? 2 * n : n;
  const [xf, xq, xd, xs, xsf] = scratch(slab, [4 * n, bytes, (4 * n) / B, n / 8, n / 8]);
  new Float32Array(slab.exports.memory.buffer).set(x, xf! / 4);
  if (kind === 'Q8_K') (slab.exports.quant_q8_k as QuantKernel)(xf!, n, xq!, xd!, xs!, xsf!);
  else (slab.exports.quant_q8_0 as QuantKernel)(xf!, n, xq!, xd!, split ? 1 : 0);
  const mem = slab.exports.memory.buffer;
  return { q: new Int8Array(mem, xq!, bytes).slice(), d: new Float32Array(mem, xd!, n / B).slice(), sums: new Int32Array(mem, xs!, n / 32).slice(), dsums: new Float32Array(mem, xsf!, n / 32).slice() };
}

/** The activation quantizers of the module (quant_q8_0: x, n, q, d, split; quant_q8_k: x, n, q, d, sums, d·sums). */
type QuantKernel = (x: number, n: number, q: number, d: number, a: number, b?: number) => void;

/**
 * From this many activation rows on, a quantized product takes its many-row kernels (relaxed
 * Q8_0 and Q4_K: the row tiles of prefill.wat.mjs; else chunks of weight rows unpacked to int16
 * and reused across rows); below, the matrix-vector kernel runs on each row. Relaxed Q8_0, CPU
 * time on the `small` shapes: the row tiles against the matrix-vector kernel 1.05× at 4 rows,
 * 1.25× at 8, 0.75× at 2 (three of four rows left over would run one at a time).
 */
export const MANY_ROWS_FROM = 4;
/** Bytes of unpacked int16 weights per chunk (stays in L2 while every activation row passes). */
const CHUNK_BYTES = 1 << 18;

/** Scratch offsets of a many-row product: quantized activations, outputs, and room for `ch` unpacked weight rows. */
interface IgemmScratch { xq: number; xd: number; xsf: number; yo: number; w16: number; sw: number; mw: number; ch: number }

/**
 * The many-row product of a quantized matrix: per chunk of weight rows, unpack (kernels'
 * unpack_*), then the int16 × int8 tile kernels (igemm*) over 2 rows × 2 activation rows, with
 * the leftover rows and activation rows in narrower tiles.
 */
function igemm(slab: Slab, name: string, w: Resident, N: number, K: number, M: number, at: IgemmScratch): void {
  const B = name === 'q8_0' ? 32 : 256, mins = name === 'q4_k', nb = K / B, nsub = K / 32, rs = rowBytes(GGML_BY_KERNEL[name]!, K);
  const { xq, xd, xsf, yo, w16, sw, mw, ch } = at;
  const unpack = slab.kernel(`unpack_${name}`) as unknown as (w: number, rs: number, nr: number, nb: number, dst: number, sw: number, mw: number) => void;
  const tile = (R: number, T: number) => slab.kernel(`igemm${B}${mins ? 'm' : ''}_${R}x${T}`) as unknown as IgemmKernel;
  const m2 = M & ~1;
  for (let n0 = 0; n0 < N; n0 += ch) {
    const nr = Math.min(ch, N - n0), r2 = nr & ~1;
    unpack(w.offset + n0 * rs, rs, nr, K / GGML_BY_KERNEL[name]!.blockSize, w16, sw, mw);
    for (const [r0, rows, R] of [[0, r2, 2], [r2, nr - r2, 1]] as const) {
      if (rows === 0) continue;
      const wr = w16 + 2 * r0 * K, swr = sw + 4 * r0 * nb, mwr = mw + 4 * r0 * nsub;
      if (m2 > 0) tile(R, 2)(wr, rows, K, swr, mwr, xq, xd, xsf, m2, yo + 4 * (n0 + r0), N);
      if (M > m2) tile(R, 1)(wr, rows, K, swr, mwr, xq + m2 * K, xd + 4 * m2 * nb, xsf + 4 * m2 * nsub, 1, yo + 4 * (m2 * N + n0 + r0), N);
    }
  }
}

type IgemmKernel = (w16: number, nr: number, K: number, sw: number, mw: number, x: number, xd: number, xsf: number, M: number, y: number, ldy: number) => void;

/** Stored bytes of the weight rows that one call of a relaxed many-row kernel walks (they stay in L2 while every activation tile passes). */
const ROWS_CHUNK_BYTES = 1 << 17;
/** Weight rows of rs bytes per call of a relaxed many-row kernel. */
const rowsChunk = (rs: number) => Math.max(1, Math.floor(ROWS_CHUNK_BYTES / rs));

/** Activation rows per tile of the relaxed many-row kernels (prefill.wat.mjs; the leftover rows go one at a time). */
const TILE = 4;
/** Bytes of one packed activation record of t rows (one block or super-block of each; prefill.wat.mjs). */
const RECORD_BYTES: Readonly<Record<string, (t: number) => number>> = { q4_k: (t) => 272 * t + 16, q8_0: (t) => 64 * t + 16 * Math.ceil(t / 4) };

/** Bytes of M activation rows of nb blocks packed for a many-row kernel: tiles of TILE rows, then the leftover rows one by one. */
function packedBytes(name: string, M: number, nb: number): number {
  const record = RECORD_BYTES[name]!;
  return Math.floor(M / TILE) * nb * record(TILE) + (M % TILE) * nb * record(1);
}

/** A packing kernel (pack_q8_k: quants, scales, per-32 sums, M, nb, T, dst; pack_q8_0: the same without the sums). */
type PackKernel = (x: number, xd: number, ...rest: number[]) => void;

/**
 * The many-row product of the relaxed module (prefill.wat.mjs): the quantized activations (quants
 * at xq, scales at xd, Q8_K's per-32 sums at xs) packed at xp into records of T rows (and 1 for
 * the leftover rows), then per chunk of stored rows (Q8_0: its block scales first widened to f32
 * at sc + 16; sc itself is the kernels' 16 bytes of scratch) the tiles of T activation rows
 * against each weight row read in its blocks, and the leftover activation rows one at a time;
 * outputs at yo.
 */
function rowsProduct(slab: Slab, name: string, w: Resident, N: number, K: number, M: number, at: { xq: number; xd: number; xs: number; xp: number; sc: number; yo: number }): void {
  const { xq, xd, xs, xp, sc, yo } = at, type = GGML_BY_KERNEL[name]!, T = TILE, isK = name === 'q4_k';
  const rs = rowBytes(type, K), nb = K / type.blockSize, ch = rowsChunk(rs), mT = M - (M % T), xp1 = xp + packedBytes(name, mT, nb);
  // Q8_K: quants 1 byte a value and the per-32 sums; sign-split Q8_0: 2 bytes a value.
  const packRows = (m0: number, rows: number, t: number, dst: number) => {
    const sums = isK ? [xs + 4 * m0 * (K / 32)] : [];
    (slab.exports[isK ? 'pack_q8_k' : 'pack_q8_0'] as PackKernel)(xq + (isK ? 1 : 2) * m0 * K, xd + 4 * m0 * nb, ...sums, rows, nb, t, dst);
  };
  if (mT > 0) packRows(0, mT, T, xp);
  if (M > mT) packRows(mT, M - mT, 1, xp1);
  const tiles = slab.kernel(`${name}_rows_${T}`) as unknown as RowsKernel, ones = slab.kernel(`${name}_rows_1`) as unknown as RowsKernel;
  const scales = slab.exports.q8_0_scales as (w: number, n: number, dst: number) => void;
  for (let n0 = 0; n0 < N; n0 += ch) {
    const nr = Math.min(ch, N - n0), wr = w.offset + n0 * rs;
    if (!isK) scales(wr, nr * nb, sc + 16);
    if (mT > 0) tiles(wr, rs, nr, nb, xp, mT, yo + 4 * n0, N, sc);
    if (M > mT) ones(wr, rs, nr, nb, xp1, M - mT, yo + 4 * (mT * N + n0), N, sc);
  }
}

/** A relaxed many-row kernel: rows [0, nr) of stride rs at w × M packed activation rows at x → y[m·ldy + r] (16 bytes of scratch at sc; Q8_0: the rows' block scales as f32 from sc + 16). */
type RowsKernel = (w: number, rs: number, nr: number, nb: number, x: number, M: number, y: number, ldy: number, sc: number) => void;

// Host side of the quantized WebAssembly kernels (kernels.wat.mjs): quantize the activations to
// int8 (Q8_0 blocks as ggml's x86 kernel does, or Q8_K super-blocks with per-32 sums), copy chunks
// of weight rows into the module's memory as stored, and run the integer dot products there.

import { rint, toF16 } from '../quant/rounding';
import { GGML_TYPES, QK_K, rowBytes, type GgmlType } from '../types';
import { QUANT_KERNELS_WASM } from './module.generated';

/** The parts of the WebAssembly JS API used here (the tsconfig has no DOM/WebAssembly lib). */
interface Wasm {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { exports: unknown };
}

interface Kernels {
  memory: { buffer: ArrayBuffer; grow(pages: number): number };
  q8_0(w: number, nr: number, nb: number, xq: number, xd: number, M: number, y: number): void;
  q4_k(w: number, nr: number, nb: number, xq: number, xd: number, xs: number, M: number, y: number): void;
}

let kernels: Kernels | null | undefined;

/** The instantiated module, or null where WebAssembly SIMD is unavailable. */
function load(): Kernels | null {
  if (kernels !== undefined) return kernels;
  const wasm = (globalThis as unknown as { WebAssembly?: Wasm }).WebAssembly;
  try {
    if (!wasm) throw new Error('no WebAssembly');
    kernels = new wasm.Instance(new wasm.Module(Buffer.from(QUANT_KERNELS_WASM, 'base64')), {}).exports as Kernels;
  } catch {
    kernels = null;
  }
  return kernels;
}

/** Weight bytes copied into the module per kernel call (stays in L2 while every activation row passes). */
const CHUNK_BYTES = 1 << 18;
/** Activation rows per kernel call (their int8 quants stay in L1/L2 while the chunk's rows pass). */
const M_TILE = 16;

/** Activations quantized for the dot products: int8 quants, a scale per block, and (Q8_K) the sum of each 32 quants. */
export interface QuantizedActivations { q: Int8Array; d: Float32Array; sums: Int32Array | null }

/** Q8_0 as ggml's x86 `quantize_row_q8_0`: d = f16(max|x|/127), q = rint(x·127/max|x|). */
export function quantizeActivationsQ8_0(x: Float32Array): QuantizedActivations {
  const q = new Int8Array(x.length), d = new Float32Array(x.length / 32);
  for (let b = 0; b < x.length; b += 32) {
    let amax = 0;
    for (let j = 0; j < 32; j++) amax = Math.max(amax, Math.abs(x[b + j]!));
    const id = amax !== 0 ? Math.fround(127 / amax) : 0;
    d[b / 32] = toF16(Math.fround(amax / 127)).value;
    for (let j = 0; j < 32; j++) q[b + j] = rint(Math.fround(x[b + j]! * id));
  }
  return { q, d, sums: null };
}

/** Q8_K as ggml's `quantize_row_q8_K_ref`, with the sum of every 32 quants. */
export function quantizeActivationsQ8_K(x: Float32Array): QuantizedActivations {
  const q = new Int8Array(x.length), d = new Float32Array(x.length / QK_K), sums = new Int32Array(x.length / 32);
  for (let b = 0; b < x.length; b += QK_K) {
    let amax = 0, max = 0;
    for (let j = 0; j < QK_K; j++) { const a = Math.abs(x[b + j]!); if (a > amax) { amax = a; max = x[b + j]!; } }
    if (amax === 0) continue;
    const iscale = Math.fround(-127 / max);
    d[b / QK_K] = Math.fround(1 / iscale);
    for (let j = 0; j < QK_K; j++) q[b + j] = Math.min(127, rint(Math.fround(iscale * x[b + j]!)));
  }
  for (let s = 0; s < sums.length; s++) { let t = 0; for (let j = 0; j < 32; j++) t += q[32 * s + j]!; sums[s] = t; }
  return { q, d, sums };
}

/** Whether `type` has a WebAssembly kernel here. */
export function hasKernel(type: GgmlType): boolean {
  return (type === GGML_TYPES.Q8_0 || type === GGML_TYPES.Q4_K) && load() !== null;
}

/**
 * y [M, N] = x [M, K] · Wᵀ for W [N, K] stored as Q8_0 or Q4_K blocks (`data`), in the
 * WebAssembly kernels. The activations are quantized as llama.cpp quantizes them.
 */
export function quantMatmulT(type: GgmlType, data: Uint8Array, N: number, K: number, x: Float32Array, M: number, y: Float32Array): void {
  const k = load()!;
  const isK = type === GGML_TYPES.Q4_K;
  const act = isK ? quantizeActivationsQ8_K(x.subarray(0, M * K)) : quantizeActivationsQ8_0(x.subarray(0, M * K));
  const rb = rowBytes(type, K), nb = K / type.blockSize;
  const rows = Math.max(1, Math.min(N, Math.floor(CHUNK_BYTES / rb)));
  // Memory layout: [xq][xd][sums][y tile][weight chunk], 16-byte aligned.
  const al = (n: number) => (n + 15) & ~15;
  const xq = 0, xd = al(act.q.length), xs = xd + al(act.d.byteLength), yt = xs + al(act.sums?.byteLength ?? 0);
  const wt = yt + al(Math.min(M, M_TILE) * rows * 4), end = wt + rows * rb;
  const mem = k.memory;
  if (end > mem.buffer.byteLength) mem.grow(Math.ceil((end - mem.buffer.byteLength) / 65536));
  const u8 = new Uint8Array(mem.buffer), f32 = new Float32Array(mem.buffer);
  u8.set(new Uint8Array(act.q.buffer), xq);
  f32.set(act.d, xd / 4);
  if (act.sums) new Int32Array(mem.buffer).set(act.sums, xs / 4);
  for (let n0 = 0; n0 < N; n0 += rows) {
    const nr = Math.min(rows, N - n0);
    u8.set(data.subarray(n0 * rb, (n0 + nr) * rb), wt);
    for (let m0 = 0; m0 < M; m0 += M_TILE) {
      const mt = Math.min(M_TILE, M - m0);
      if (isK) k.q4_k(wt, nr, nb, xq + m0 * K, xd + m0 * nb * 4, xs + m0 * (K / 32) * 4, mt, yt);
      else k.q8_0(wt, nr, nb, xq + m0 * K, xd + m0 * nb * 4, mt, yt);
      for (let m = 0; m < mt; m++) y.set(f32.subarray(yt / 4 + m * nr, yt / 4 + (m + 1) * nr), (m0 + m) * N + n0);
    }
  }
}

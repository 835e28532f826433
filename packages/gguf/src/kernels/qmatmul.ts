// Host side of the quantized WebAssembly kernels (kernels.wat.mjs): quantize the activations to
// int8 (Q8_0 blocks as ggml's x86 kernel does, or Q8_K super-blocks with per-32 sums), copy chunks
// of weight rows into the module's memory as stored, and run the integer dot products there.

import { quantizeActivationsQ8_0, quantizeActivationsQ8_K } from '../quant/activations';
import { GGML_TYPES, rowBytes, type GgmlType } from '../types';
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

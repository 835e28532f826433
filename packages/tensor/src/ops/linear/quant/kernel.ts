/**
 * Products and row lookups of weights held as GGUF blocks (or f32/bf16/f16) as kernel ops of the
 * registry, dtype key the weight's dtype: on the cpu device the WebAssembly kernels of product.ts
 * (and the TypeScript reference), on the webgpu device the WGSL kernels of webgpu.ts on the
 * device's copy of the block bytes.
 */
import type { F32, I32 } from '../../../arrays';
import { QUANT_FORMATS, type QuantDType } from '../../../dtypes/index';
import { bf16ArrayToF32, f16ArrayToF32 } from '../../../dtype';
import { roundBf16Into } from '../../../dtypes/bf16';
import { roundF16Into } from '../../../dtypes/f16';
import { onWebgpu } from '../../../device-hooks';
import { ShapeError } from '../../../errors';
import { defineKernel, kernelOp } from '../../../registry';
import { jsGemm } from '../../gemm/cpu';
import { WeightStore } from './memory';
import { packedLinear as packedLinearCpu, packedLinearAvailable, weightRowBytes, type PackedWeight } from './product';
import { quantMatmulReference } from './reference';
import { packedLinearWgsl, packedRowsWgsl } from './webgpu';

/** y [M, N] = x [M, K] · Wᵀ for a packed weight W [N, K]. */
export const packedLinearKernel = kernelOp<(w: PackedWeight, x: F32, M: number, y: F32) => void>('packedLinear', (w) => w.dtype);
/** out [ids.length, K] = rows `ids` of a packed weight, as float32 (an embedding lookup). */
export const packedRowsKernel = kernelOp<(w: PackedWeight, ids: I32, out: F32) => void>('packedRows', (w) => w.dtype);

/** The bytes of rows [r0, r1) of a weight. */
function rowsOf(w: PackedWeight, r0: number, r1: number): Uint8Array {
  const rb = weightRowBytes(w.dtype, w.K);
  return new Uint8Array(w.memory.buffer, w.byteOffset + r0 * rb, (r1 - r0) * rb);
}

/** Rows [r0, r1) of a weight as float32 into `out` (the formats' own dequantization). */
function dequantizeRows(w: PackedWeight, r0: number, r1: number, out: F32): void {
  const b = rowsOf(w, r0, r1), n = (r1 - r0) * w.K;
  if (w.dtype === 'f32') out.set(new Float32Array(b.slice().buffer, 0, n));
  else if (w.dtype === 'bf16') out.set(bf16ArrayToF32(new Uint16Array(b.slice().buffer, 0, n)));
  else if (w.dtype === 'f16') out.set(f16ArrayToF32(new Uint16Array(b.slice().buffer, 0, n)));
  else QUANT_FORMATS[w.dtype].dequantize(b, out.subarray(0, n));
}

/** The reference product: quantized weights as reference.ts (the integer block sums and their float order), float weights dequantized into the TypeScript GEMM with the input rounded to their precision. */
function packedLinearReference(w: PackedWeight, x: F32, M: number, y: F32): void {
  const { N, K, dtype } = w;
  if (dtype !== 'f32' && dtype !== 'bf16' && dtype !== 'f16') {
    y.set(quantMatmulReference(dtype as QuantDType, rowsOf(w, 0, N), N, K, x.subarray(0, M * K), M));
    return;
  }
  const W = new Float32Array(N * K), X = x.slice(0, M * K);
  dequantizeRows(w, 0, N, W);
  // The input rounded to the weight's precision, as the cpu kernels (and llama.cpp) round it.
  if (dtype === 'bf16') roundBf16Into(X, X); else if (dtype === 'f16') roundF16Into(X, X);
  jsGemm({ transA: false, transB: true, M, N, K, A: X, B: W, C: y.subarray(0, M * N) });
}

function packedRowsReference(w: PackedWeight, ids: I32, out: F32): void {
  if (out.length !== ids.length * w.K) throw new ShapeError(`rows: out of ${out.length} floats for ${ids.length} rows of ${w.K}`);
  ids.forEach((id, i) => {
    if (!(id >= 0 && id < w.N)) throw new ShapeError(`rows: id ${id} outside [0, ${w.N})`);
    dequantizeRows(w, id, id + 1, out.subarray(i * w.K, (i + 1) * w.K));
  });
}

defineKernel(packedLinearKernel, { device: 'cpu', impl: 'reference', run: packedLinearReference });
// The WebAssembly kernels run on weights in a shared memory (memory.ts): without one, the reference.
defineKernel(packedLinearKernel, { device: 'cpu', impl: 'wasm', available: () => WeightStore.available() && packedLinearAvailable('q8_0', 32), run: packedLinearCpu });
defineKernel(packedRowsKernel, { device: 'cpu', impl: 'reference', run: packedRowsReference });
onWebgpu((gpu) => {
  defineKernel(packedLinearKernel, { device: 'webgpu', impl: 'wgsl', run: gpu.record(packedLinearWgsl) });
  defineKernel(packedRowsKernel, { device: 'webgpu', impl: 'wgsl', run: gpu.record(packedRowsWgsl) });
});

/** y [M, N] = x [M, K] · Wᵀ for a packed weight, on the current device (see `packedLinearKernel`). */
export function packedProduct(w: PackedWeight, x: F32, M: number, y: F32): void {
  packedLinearKernel.run(w, x, M, y);
}

/** Rows `ids` of a packed weight as float32 into `out`, on the current device. */
export function packedRows(w: PackedWeight, ids: I32, out: F32): void {
  packedRowsKernel.run(w, ids, out);
}

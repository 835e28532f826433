// Conversion between float32 values and the bytes of every supported ggml type: the block
// formats of @apertus/tensor's dtypes, plus the float types.
import { bf16ArrayToF32, f16ArrayToF32, f32ArrayToBf16, f32ArrayToF16, quantFormat, QUANTIZERS, quantizeQ4_0, quantizeQ4_K, quantizeQ5_0, quantizeQ5_1, quantizeQ5_K, quantizeQ6_K, quantizeQ8_0, type QuantDType } from '@apertus/tensor';
import { GgufWriteError } from '../errors';
import type { GgmlType, GgmlTypeName } from '../types';

function u16(bytes: Uint8Array, n: number): Uint16Array {
  // Copy to an aligned buffer (tensor data in a file read need not be 2-byte aligned in memory).
  return new Uint16Array(bytes.slice(0, 2 * n).buffer);
}

/** Float32 values of `n` elements stored as `type`. */
export function dequantize(type: GgmlType, bytes: Uint8Array, n: number): Float32Array {
  const out = new Float32Array(n);
  dequantizeInto(type, bytes, out);
  return out;
}

/** Fill `out` with the float32 values of its length's worth of elements stored as `type`. */
export function dequantizeInto(type: GgmlType, bytes: Uint8Array, out: Float32Array): void {
  const n = out.length;
  switch (type.name) {
    case 'F32': out.set(new Float32Array(bytes.slice(0, 4 * n).buffer)); return;
    case 'F16': out.set(f16ArrayToF32(u16(bytes, n))); return;
    case 'BF16': out.set(bf16ArrayToF32(u16(bytes, n))); return;
    default: quantFormat(type.name.toLowerCase())!.dequantize(bytes, out);
  }
}

/** The types `quantize` can write. */
export type WritableType = Extract<GgmlTypeName, 'F32' | 'F16' | 'BF16' | 'Q4_0' | 'Q5_0' | 'Q5_1' | 'Q8_0' | 'Q4_K' | 'Q5_K' | 'Q6_K'>;

/** Bytes of `x` stored as `type` (round to nearest even for F16/BF16; the block quantizers of @apertus/tensor, llama.cpp's reference ones byte for byte). */
export function quantize(type: GgmlTypeName, x: Float32Array, tensor?: string): Uint8Array {
  switch (type) {
    case 'F32': return new Uint8Array(x.slice().buffer);
    case 'F16': return new Uint8Array(f32ArrayToF16(x).buffer);
    case 'BF16': return new Uint8Array(f32ArrayToBf16(x).buffer);
    default: {
      const quantizeBlocks = QUANTIZERS[type.toLowerCase() as QuantDType];
      if (quantizeBlocks === undefined) throw new GgufWriteError(`cannot write ${type}`, tensor !== undefined ? { tensor } : {});
      return quantizeBlocks(x);
    }
  }
}

const dequantizer = (name: string) => (bytes: Uint8Array, out: Float32Array): void => quantFormat(name)!.dequantize(bytes, out);
/** Dequantize Q8_0 blocks into `out`. */
export const dequantizeQ8_0 = dequantizer('q8_0');
/** Dequantize Q4_0 blocks into `out`. */
export const dequantizeQ4_0 = dequantizer('q4_0');
/** Dequantize Q4_K super-blocks into `out`. */
export const dequantizeQ4_K = dequantizer('q4_k');
/** Dequantize Q6_K super-blocks into `out`. */
export const dequantizeQ6_K = dequantizer('q6_k');
export { quantizeQ8_0, quantizeQ4_0, quantizeQ4_K, quantizeQ5_0, quantizeQ5_1, quantizeQ5_K, quantizeQ6_K };

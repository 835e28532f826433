/**
 * Data types. Compute is float32; bf16 and f16 are storage formats (raw 16-bit patterns in a
 * Uint16Array) converted with round-to-nearest-even; i32 holds token ids and positions; the
 * quantized dtypes (`dtypes/`) are GGUF block bytes in a Uint8Array.
 */
import type { QuantDType } from './dtypes/format';
import { heapF32, heapU16 } from './memory/heap';

/** The element dtypes with one array element per tensor element. */
export type ElementDType = 'f32' | 'bf16' | 'f16' | 'i32';

/** Every storage dtype of a tensor. */
export type DType = ElementDType | QuantDType;

/** The typed array a dtype is stored in. */
export type Storage = Float32Array | Uint16Array | Int32Array | Uint8Array;

/** Storage typed array for each dtype. */
export type StorageOf = {
  f32: Float32Array;
  bf16: Uint16Array;
  f16: Uint16Array;
  i32: Int32Array;
} & { [Q in QuantDType]: Uint8Array };

/** Allocate zeroed storage of `n` elements: float formats in the cpu device memory (`kernels/cpu/heap.ts`). */
export function allocStorage<D extends ElementDType>(dtype: D, n: number): StorageOf[D] {
  switch (dtype) {
    case 'f32': return heapF32(n) as StorageOf[D];
    case 'bf16':
    case 'f16': return heapU16(n) as StorageOf[D];
    case 'i32': return new Int32Array(n) as StorageOf[D];
  }
  throw new TypeError(`unknown dtype ${String(dtype)}`);
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** float32 → bfloat16 bits, round to nearest even; NaN becomes the quiet NaN 0x7fc0 (as torch). */
export function f32ToBf16Bits(x: number): number {
  f32[0] = x;
  const u = u32[0]!;
  if ((u & 0x7fffffff) > 0x7f800000) return ((u >>> 16) & 0x8000) | 0x7fc0;
  return ((u + 0x7fff + ((u >>> 16) & 1)) >>> 16) & 0xffff;
}

/** bfloat16 bits → float32 (exact). */
export function bf16BitsToF32(h: number): number {
  u32[0] = (h & 0xffff) << 16;
  return f32[0]!;
}

/** float32 → IEEE half bits, round to nearest even, with subnormals, overflow to ±Inf, NaN kept quiet. */
export function f32ToF16Bits(x: number): number {
  f32[0] = x;
  const u = u32[0]!;
  const sign = (u >>> 16) & 0x8000;
  const exp = (u >>> 23) & 0xff;
  let mant = u & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant !== 0 ? 0x200 | (mant >>> 13) : 0);
  let e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    // Subnormal half (or zero): shift the implicit-one mantissa right and round to nearest even.
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    const half = 1 << (shift - 1);
    const rem = mant & ((1 << shift) - 1);
    let h = mant >>> shift;
    if (rem > half || (rem === half && (h & 1) === 1)) h++;
    return sign | h;
  }
  const rem = mant & 0x1fff;
  let h = (e << 10) | (mant >>> 13);
  if (rem > 0x1000 || (rem === 0x1000 && (h & 1) === 1)) h++; // may carry into the exponent, up to Inf: correct
  return sign | h;
}

/** IEEE half bits → float32 (exact). */
export function f16BitsToF32(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >>> 10) & 0x1f;
  const mant = h & 0x3ff;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 0x1f) return mant === 0 ? sign * Infinity : NaN;
  return sign * (1 + mant / 1024) * 2 ** (exp - 15);
}

/** Convert a whole float32 array to bf16 bits. */
export function f32ArrayToBf16(src: ArrayLike<number>, out = new Uint16Array(src.length)): Uint16Array {
  for (let i = 0; i < src.length; i++) out[i] = f32ToBf16Bits(src[i]!);
  return out;
}

/** Convert bf16 bits to float32 (a shift per element). */
export function bf16ArrayToF32(src: Uint16Array, out: Float32Array = new Float32Array(src.length)): Float32Array {
  const o = new Uint32Array(out.buffer, out.byteOffset, out.length);
  for (let i = 0; i < src.length; i++) o[i] = src[i]! << 16;
  return out;
}

/** Convert a whole float32 array to f16 bits. */
export function f32ArrayToF16(src: ArrayLike<number>, out: Uint16Array = new Uint16Array(src.length)): Uint16Array {
  for (let i = 0; i < src.length; i++) out[i] = f32ToF16Bits(src[i]!);
  return out;
}

/** Convert f16 bits to float32. */
export function f16ArrayToF32(src: Uint16Array, out = new Float32Array(src.length)): Float32Array {
  for (let i = 0; i < src.length; i++) out[i] = f16BitsToF32(src[i]!);
  return out;
}

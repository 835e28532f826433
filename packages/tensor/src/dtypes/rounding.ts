// Float32 rounding helpers shared by the block formats (all their arithmetic is float32, as in ggml).
import { f16BitsToF32, f32ToF16Bits } from '../dtype';

/** Round to the nearest integer, ties to even (ggml's `nearest_int`, numpy's `rint`). */
export function rint(x: number): number {
  const r = Math.round(x);
  return r - x === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/** Round half away from zero (C `roundf`). */
export function roundAway(x: number): number {
  return x < 0 ? -Math.floor(-x + 0.5) : Math.floor(x + 0.5);
}

/** The f16 bit pattern of a value and the float it stands for. */
export function toF16(x: number): { bits: number; value: number } {
  const bits = f32ToF16Bits(x);
  return { bits, value: f16BitsToF32(bits) };
}

/** The f16 stored little-endian at bytes[at] as a float (exact). */
export function f16At(bytes: Uint8Array, at: number): number {
  return f16BitsToF32(bytes[at]! | (bytes[at + 1]! << 8));
}

/** Write the f16 bits `bits` little-endian at bytes[at]. */
export function setF16(bytes: Uint8Array, at: number, bits: number): void {
  bytes[at] = bits & 255;
  bytes[at + 1] = bits >>> 8;
}

export { f16BitsToF32 };

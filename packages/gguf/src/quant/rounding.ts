// Float32 rounding helpers shared by the block quantizers (all arithmetic is float32, as in ggml).
import { f16BitsToF32, f32ToF16Bits } from '@apertus/tensor';

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

export { f16BitsToF32 };

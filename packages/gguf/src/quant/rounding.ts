// Re-export: the float16 helpers of @apertus/tensor's dtypes.
import { f16BitsToF32, f32ToF16Bits } from '@apertus/tensor';

/** The f16 bit pattern of a value and the float it stands for. */
export function toF16(x: number): { bits: number; value: number } {
  const bits = f32ToF16Bits(x);
  return { bits, value: f16BitsToF32(bits) };
}

export { f16BitsToF32 };

import { v128, type Code } from '../../../wasm/encoder';

/** Shape of the register-blocked micro-kernel and the instruction set it may use. */
export interface GemmCodegenOptions {
  /** Rows of the micro-tile (MR). */
  mr: number;
  /** Columns of the micro-tile (NR), a multiple of 4. */
  nr: number;
  /** How many k steps the micro-kernel loop body handles per iteration (a power of 2). */
  kUnroll: number;
  /** Use `f32x4.relaxed_madd` (fused multiply-add where the CPU has it) instead of mul + add. */
  relaxed: boolean;
}

/** `a * b + acc` with either mul + add or relaxed_madd. */
export function madd(o: GemmCodegenOptions, a: Code, b: Code, acc: Code): Code {
  return o.relaxed ? v128.f32x4_relaxed_madd(a, b, acc) : v128.f32x4_add(acc, v128.f32x4_mul(a, b));
}

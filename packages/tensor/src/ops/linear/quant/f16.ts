// f16 ↔ f32 in WebAssembly. Widening without a subnormal float operand: the magnitude bits moved
// to an f32 exponent bias (f = bits << 13 + 112 << 23) are the value of a normal f16; a subnormal
// one (f < 2⁻¹⁴, exponent field 0) comes out as 2⁻¹⁵·(1 + m/1024), and f − (2⁻¹⁴ − f) =
// 2⁻¹⁴·m/1024 is its value (both steps exact). Scaling the bits as an f32 subnormal by 2¹¹² gives
// the same numbers, but a multiply with a subnormal operand costs a Zen 5 core ≈ 100 cycles, and
// rows of small weights have f16-subnormal block scales.
import { f32, i32, select, v128, type Code } from '../../../wasm/encoder';
import type { Fn } from './fn';

/** Four f16 (the low halves of the i32 lanes of `h`, evaluated once: pass a local) → f32x4. */
export function f16x4(fn: Fn, h: Code): Code {
  const f = v128.i32x4_add(v128.i32x4_shl(v128.and(h, fn.splat32(0x7fff)), i32.const(13)), fn.splat32(0x38000000));
  return v128.or(
    v128.f32x4_sub(f, v128.f32x4_pmax(fn.splat32(0), v128.f32x4_sub(fn.splat32(0x38800000), f))),
    v128.i32x4_shl(v128.and(h, fn.splat32(0x8000)), i32.const(16)),
  );
}

/**
 * An f32 ≥ 0 rounded to the nearest f16 value (ties to even; subnormals; ≥ 65520 → ∞), as an f32:
 * what f16 storage keeps of a scale. `v` is evaluated several times (pass a local).
 */
export function roundF16(v: Code): Code {
  const bits = i32.reinterpret_f32(v);
  const normal = f32.reinterpret_i32(i32.and(i32.add(bits, i32.add(i32.const(0xfff), i32.and(i32.shr_u(bits, i32.const(13)), i32.const(1)))), i32.const(-8192)));
  return select(
    f32.mul(f32.nearest(f32.mul(v, f32.const(2 ** 24))), f32.const(2 ** -24)),
    select(f32.const(Infinity), normal, f32.ge(v, f32.const(65520))),
    f32.lt(v, f32.const(2 ** -14)),
  );
}

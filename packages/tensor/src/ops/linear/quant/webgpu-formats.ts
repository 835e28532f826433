/**
 * Every GGUF block format as WGSL over the block bytes themselves (`W: array<u32>`, read a byte,
 * two or four at a time at any offset): four integer weights at a time (`w4`, offsets removed as
 * in `BlockParts.w`), the integer group scales and mins, the float scale d and min (or min scale)
 * m of a block. The product and dequantization kernels (webgpu.ts) are written once over these.
 * The layouts are those of `dtypes/` (from gguf-py and ggml-quants.c).
 */
import type { QuantDType } from '../../../dtypes/index';

/** WGSL of one format. `o` is the byte offset of the block, `ib` a weight index in it (a multiple of 4), `g` a group. */
export interface WgslFormat {
  /** Values per block, bytes per block, values per integer scale. */
  readonly bv: number;
  readonly bb: number;
  readonly gv: number;
  /** The min term: none; 'add': + m·s of the Q8_1 activations (Q4_1, Q5_1); 'sub': − (m·da)·Σ mn·Σa (k-quants with mins). */
  readonly mins: 'none' | 'add' | 'sub';
  /** The activation blocks it is multiplied with. */
  readonly activation: 'q8_0' | 'q8_1' | 'q8_k';
  /** WGSL expressions: vec4<i32> of weights ib … ib + 3; i32 scale and min of group g; f32 d and m. */
  readonly w4: string;
  readonly sc: string;
  readonly mn: string;
  readonly d: string;
  readonly m: string;
  /** The dequantized value of weight i as `dtypes/` computes it, from `w` (i32), `sc`, `mn` (i32) and `d`, `m` (f32). */
  readonly value: string;
}

/** Byte readers over `W` and the unpacking of four values from a word. */
export const BYTES_WGSL = /* wgsl */ `
fn b8(o: u32) -> u32 { return (W[o >> 2u] >> ((o & 3u) * 8u)) & 0xffu; }
fn b16(o: u32) -> u32 { return b8(o) | (b8(o + 1u) << 8u); }
fn b32(o: u32) -> u32 {
  let s = (o & 3u) * 8u;
  let a = W[o >> 2u];
  if (s == 0u) { return a; }
  return (a >> s) | (W[(o >> 2u) + 1u] << (32u - s));
}
fn i8x4(x: u32) -> vec4<i32> { return vec4<i32>(i32(x << 24u) >> 24u, i32(x << 16u) >> 24u, i32(x << 8u) >> 24u, i32(x) >> 24u); }
fn nib4(x: u32, hi: u32) -> vec4<i32> { let s = 4u * hi; return vec4<i32>(i32((x >> s) & 15u), i32((x >> (8u + s)) & 15u), i32((x >> (16u + s)) & 15u), i32((x >> (24u + s)) & 15u)); }
fn two4(x: u32, s: u32) -> vec4<i32> { return vec4<i32>(i32((x >> s) & 3u), i32((x >> (8u + s)) & 3u), i32((x >> (16u + s)) & 3u), i32((x >> (24u + s)) & 3u)); }
fn bit4(x: u32, s: u32) -> vec4<i32> { return vec4<i32>(i32((x >> s) & 1u), i32((x >> (8u + s)) & 1u), i32((x >> (16u + s)) & 1u), i32((x >> (24u + s)) & 1u)); }
fn seq4(h: u32, b: u32) -> vec4<i32> { return vec4<i32>(i32((h >> b) & 1u), i32((h >> (b + 1u)) & 1u), i32((h >> (b + 2u)) & 1u), i32((h >> (b + 3u)) & 1u)); }
const IQ4_: array<i32, 16> = array<i32, 16>(-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113);
fn iq4(v: vec4<i32>) -> vec4<i32> { return vec4<i32>(IQ4_[v.x], IQ4_[v.y], IQ4_[v.z], IQ4_[v.w]); }
fn sm4_sc(s: u32, j: u32) -> i32 {
  if (j < 4u) { return i32(b8(s + j) & 63u); }
  return i32((b8(s + j + 4u) & 15u) | ((b8(s + j - 4u) >> 6u) << 4u));
}
fn sm4_mn(s: u32, j: u32) -> i32 {
  if (j < 4u) { return i32(b8(s + j + 4u) & 63u); }
  return i32((b8(s + j + 4u) >> 4u) | ((b8(s + j) >> 6u) << 4u));
}
fn q3_sc(s: u32, g: u32) -> i32 {
  let lo = select(b8(s + g - 8u) >> 4u, b8(s + g) & 15u, g < 8u);
  return i32(lo | (((b8(s + 8u + (g & 3u)) >> (2u * (g >> 2u))) & 3u) << 4u)) - 32;
}
fn xs_sc(o: u32, g: u32) -> i32 {
  return i32(((b8(o + 4u + (g >> 1u)) >> (4u * (g & 1u))) & 15u) | (((b16(o + 2u) >> (2u * g)) & 3u) << 4u)) - 32;
}
`;

const F16 = (at: string): string => `f16_(b16(${at}))`;
/** Q4_0-style nibbles: byte ib & 15 of the quants at `qs`, the low nibble for values 0–15, the high for 16–31. */
const NIB32 = (qs: string): string => `nib4(b32(o + ${qs}u + (ib & 15u)), ib >> 4u)`;

/** The formats, by dtype. */
export const WGSL_FORMATS: Readonly<Record<QuantDType, WgslFormat>> = {
  q8_0: { bv: 32, bb: 34, gv: 32, mins: 'none', activation: 'q8_0', w4: 'i8x4(b32(o + 2u + ib))', sc: '1', mn: '0', d: F16('o'), m: '0.0', value: 'f32(w) * d' },
  q4_0: { bv: 32, bb: 18, gv: 32, mins: 'none', activation: 'q8_0', w4: `${NIB32('2')} - vec4<i32>(8)`, sc: '1', mn: '0', d: F16('o'), m: '0.0', value: 'd * f32(w)' },
  q4_1: { bv: 32, bb: 20, gv: 32, mins: 'add', activation: 'q8_1', w4: NIB32('4'), sc: '1', mn: '0', d: F16('o'), m: F16('o + 2u'), value: 'd * f32(w) + m' },
  q5_0: { bv: 32, bb: 22, gv: 32, mins: 'none', activation: 'q8_0', w4: `(${NIB32('6')} | (seq4(b32(o + 2u), ib) << vec4<u32>(4u))) - vec4<i32>(16)`, sc: '1', mn: '0', d: F16('o'), m: '0.0', value: 'd * f32(w)' },
  q5_1: { bv: 32, bb: 24, gv: 32, mins: 'add', activation: 'q8_1', w4: `${NIB32('8')} | (seq4(b32(o + 4u), ib) << vec4<u32>(4u))`, sc: '1', mn: '0', d: F16('o'), m: F16('o + 2u'), value: 'd * f32(w) + m' },
  iq4_nl: { bv: 32, bb: 18, gv: 32, mins: 'none', activation: 'q8_0', w4: `iq4(${NIB32('2')})`, sc: '1', mn: '0', d: F16('o'), m: '0.0', value: 'd * f32(w)' },
  q4_k: {
    bv: 256, bb: 144, gv: 32, mins: 'sub', activation: 'q8_k', w4: `nib4(b32(o + 16u + 32u * (ib >> 6u) + (ib & 31u)), (ib >> 5u) & 1u)`,
    sc: 'sm4_sc(o + 4u, g)', mn: 'sm4_mn(o + 4u, g)', d: F16('o'), m: F16('o + 2u'), value: '(d * f32(sc)) * f32(w) - m * f32(mn)',
  },
  q5_k: {
    bv: 256, bb: 176, gv: 32, mins: 'sub', activation: 'q8_k',
    w4: `nib4(b32(o + 48u + 32u * (ib >> 6u) + (ib & 31u)), (ib >> 5u) & 1u) | (bit4(b32(o + 16u + (ib & 31u)), ib >> 5u) << vec4<u32>(4u))`,
    sc: 'sm4_sc(o + 4u, g)', mn: 'sm4_mn(o + 4u, g)', d: F16('o'), m: F16('o + 2u'), value: '(d * f32(sc)) * f32(w) - m * f32(mn)',
  },
  q6_k: {
    bv: 256, bb: 210, gv: 16, mins: 'none', activation: 'q8_k',
    w4: `(nib4(b32(o + 64u * (ib >> 7u) + 32u * ((ib >> 5u) & 1u) + (ib & 31u)), ((ib >> 5u) & 3u) >> 1u) | (two4(b32(o + 128u + 32u * (ib >> 7u) + (ib & 31u)), 2u * ((ib >> 5u) & 3u)) << vec4<u32>(4u))) - vec4<i32>(32)`,
    sc: 'i32(b8(o + 192u + g) << 24u) >> 24u', mn: '0', d: F16('o + 208u'), m: '0.0', value: '(d * f32(sc)) * f32(w)',
  },
  q2_k: {
    bv: 256, bb: 84, gv: 16, mins: 'sub', activation: 'q8_k', w4: `two4(b32(o + 16u + 32u * (ib >> 7u) + (ib & 31u)), 2u * ((ib >> 5u) & 3u))`,
    sc: 'i32(b8(o + g) & 15u)', mn: 'i32(b8(o + g) >> 4u)', d: F16('o + 80u'), m: F16('o + 82u'), value: '(d * f32(sc)) * f32(w) - m * f32(mn)',
  },
  q3_k: {
    bv: 256, bb: 110, gv: 16, mins: 'none', activation: 'q8_k',
    w4: `two4(b32(o + 32u + 32u * (ib >> 7u) + (ib & 31u)), 2u * ((ib >> 5u) & 3u)) - vec4<i32>(4) * (vec4<i32>(1) - bit4(b32(o + (ib & 31u)), 4u * (ib >> 7u) + ((ib >> 5u) & 3u)))`,
    sc: 'q3_sc(o + 96u, g)', mn: '0', d: F16('o + 108u'), m: '0.0', value: '(d * f32(sc)) * f32(w)',
  },
  iq4_xs: {
    bv: 256, bb: 136, gv: 32, mins: 'none', activation: 'q8_k', w4: `iq4(nib4(b32(o + 8u + 16u * (ib >> 5u) + (ib & 15u)), (ib >> 4u) & 1u))`,
    sc: 'xs_sc(o, g)', mn: '0', d: F16('o'), m: '0.0', value: '(d * f32(sc)) * f32(w)',
  },
};

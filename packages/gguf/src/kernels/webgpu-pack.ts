// The layout in which a quantized matrix goes to the webgpu kernels (`webgpu.ts`). gpu.js binds
// every kernel input as `array<f32>` and has no bitcast, so the ggml blocks are repacked once, on
// the host, into float32 values that are exact integers below 2^24 (and the f16 scales as their
// float32 values); the kernels take them apart with multiplications by powers of two and floor,
// which are exact there. Node-free.
import { ShapeError } from '@apertus/tensor';
import { GgufQuantTypeError } from '../errors';
import { QK_K, type GgmlType } from '../types';
import { scaleMinK4 } from '../quant/q4_k';
import { quantsQ6_K } from '../quant/q6_k';
import { f16BitsToF32 } from '../quant/rounding';

/** Float32 values per group of 32 bytes: three bytes per value (the 33rd byte is a zero pad). */
export const GROUP_FLOATS = 11;
/** Float32 values per packed Q8_0 block (32 weights). */
export const Q8_0_BLOCK_FLOATS = GROUP_FLOATS + 1;
/** Float32 values per packed Q4_0 block (32 weights): 16 quant bytes in 6 floats, d. */
export const Q4_0_BLOCK_FLOATS = 6 + 1;
/** Float32 values per packed Q4_K super-block (256 weights). */
export const Q4_K_BLOCK_FLOATS = 4 * GROUP_FLOATS + 2 + 4;
/** Float32 values per packed Q6_K super-block (256 weights): 64 of quants, 8 of scales, d. */
export const Q6_K_BLOCK_FLOATS = 64 + 8 + 1;

/** The types with webgpu kernels. */
export type WebgpuQuantType = 'Q8_0' | 'Q4_0' | 'Q4_K' | 'Q6_K';

const BLOCK_FLOATS: Readonly<Record<WebgpuQuantType, number>> = { Q8_0: Q8_0_BLOCK_FLOATS, Q4_0: Q4_0_BLOCK_FLOATS, Q4_K: Q4_K_BLOCK_FLOATS, Q6_K: Q6_K_BLOCK_FLOATS };

/** Whether `type` has a webgpu kernel (`packForWebgpu` and the product). */
export function hasWebgpuKernel(type: GgmlType): type is GgmlType & { name: WebgpuQuantType } {
  return type.name in BLOCK_FLOATS;
}

/** Float32 values per packed row of K weights. */
export function packedRowFloats(type: WebgpuQuantType, K: number): number {
  return (K / (type === 'Q8_0' || type === 'Q4_0' ? 32 : QK_K)) * BLOCK_FLOATS[type];
}

/** Pack `count` bytes `bytes[at ...]`, each mapped by `f`, three to a float at `out[o ...]` (a last float short of bytes is padded with zeros). */
function packBytes(bytes: Uint8Array, at: number, count: number, f: (b: number) => number, out: Float32Array, o: number): void {
  for (let t = 0; 3 * t < count; t++) {
    let v = 0;
    for (let k = Math.min(2, count - 1 - 3 * t); k >= 0; k--) v = v * 256 + f(bytes[at + 3 * t + k]!);
    out[o + t] = v;
  }
}

const asOffsetBinary = (b: number): number => b ^ 0x80; // int8 (two's complement) → value + 128
const asIs = (b: number): number => b;

/** The f16 at bytes[at], as its float32 value. */
function f16At(bytes: Uint8Array, at: number): number {
  return f16BitsToF32(bytes[at]! | (bytes[at + 1]! << 8));
}

/**
 * The ggml blocks of a [N, K] matrix (`bytes`: N rows of `rowBytes(type, K)`) in the webgpu
 * layout, row by row (`packedRowFloats(type, K)` floats per row; the kernels read `W[n][j]`).
 * Every float is an exact integer below 2^24 or a scale (an f16's value): three bytes u0, u1, u2
 * are one float u0 + 256·u1 + 65536·u2 (32 bytes are a group of 11 floats, the last holding two),
 * four 6-bit values s0..s3 one float s0 + 64·s1 + 4096·s2 + 262144·s3.
 *
 * - Q8_0, per block of 32 weights (12 floats, 48 bytes: 1.5 bytes per weight): one group of
 *   the quants in offset binary (q + 128 ∈ [0, 255]), then d.
 * - Q4_0, per block of 32 weights (7 floats, 28 bytes: 0.875 bytes per weight): the 16 quant
 *   bytes as stored (quant j in the low nibble of byte j, quant j + 16 in the high one) in 6
 *   floats, then d.
 * - Q4_K, per super-block of 256 weights (50 floats, 200 bytes: 0.78 bytes per weight): the
 *   128 quant bytes as four groups, as ggml stores them (group c holds sub-block 2c in the low
 *   nibbles and 2c + 1 in the high ones), then d and dmin, then the eight 6-bit sub-block scales
 *   and the eight 6-bit mins (decoded as `scaleMinK4`) four to a float: [sc0..3], [sc4..7],
 *   [m0..3], [m4..7].
 * - Q6_K, per super-block of 256 weights (73 floats, 292 bytes: 1.14 bytes per weight): the 256
 *   6-bit quants q ∈ [0, 63] (x = d·scale·(q − 32)) in weight order, four to a float (64
 *   floats), then the 16 int8 scales (scale j for weights 16j … 16j + 15) in offset binary, two to
 *   a float (scale 2p + 256·scale 2p+1, 8 floats), then d.
 *
 * Against float32's 4 bytes per weight: 37.5 % (Q8_0), 21.9 % (Q4_0), 19.5 % (Q4_K), 28.5 %
 * (Q6_K); against the stored blocks (1.0625, 0.5625, 0.5625, 0.8203 bytes per weight): 1.41×,
 * 1.56×, 1.39×, 1.39×.
 */
export function packForWebgpu(type: GgmlType, bytes: Uint8Array, N: number, K: number): Float32Array {
  if (!hasWebgpuKernel(type)) throw new GgufQuantTypeError(`packForWebgpu: no webgpu kernel for ${type.name}`);
  const name = type.name, per = type.blockSize, size = type.typeSize, blocks = (N * K) / per;
  if (K % per !== 0 || bytes.length < blocks * size) throw new ShapeError(`packForWebgpu: ${bytes.length} bytes are not a [${N}, ${K}] ${name} matrix`);
  const stride = BLOCK_FLOATS[name];
  const out = new Float32Array(blocks * stride);
  const q6 = new Uint8Array(QK_K);
  for (let b = 0; b < blocks; b++) {
    const at = b * size, o = b * stride;
    if (name === 'Q8_0') {
      packBytes(bytes, at + 2, 32, asOffsetBinary, out, o);
      out[o + GROUP_FLOATS] = f16At(bytes, at);
    } else if (name === 'Q4_0') {
      packBytes(bytes, at + 2, 16, asIs, out, o);
      out[o + 6] = f16At(bytes, at);
    } else if (name === 'Q4_K') {
      for (let c = 0; c < 4; c++) packBytes(bytes, at + 16 + 32 * c, 32, asIs, out, o + c * GROUP_FLOATS);
      out[o + 44] = f16At(bytes, at);
      out[o + 45] = f16At(bytes, at + 2);
      for (let h = 0; h < 2; h++) {
        let sc = 0, mn = 0;
        for (let k = 3; k >= 0; k--) {
          const [s, m] = scaleMinK4(bytes, at + 4, 4 * h + k);
          sc = sc * 64 + s;
          mn = mn * 64 + m;
        }
        out[o + 46 + h] = sc;
        out[o + 48 + h] = mn;
      }
    } else {
      quantsQ6_K(bytes, at, q6);
      for (let t = 0; t < 64; t++) out[o + t] = q6[4 * t]! + 64 * q6[4 * t + 1]! + 4096 * q6[4 * t + 2]! + 262144 * q6[4 * t + 3]!;
      for (let p = 0; p < 8; p++) out[o + 64 + p] = (bytes[at + 192 + 2 * p]! ^ 0x80) + 256 * (bytes[at + 193 + 2 * p]! ^ 0x80);
      out[o + 72] = f16At(bytes, at + 208);
    }
  }
  return out;
}


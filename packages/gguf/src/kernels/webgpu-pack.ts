// The layout in which a quantized matrix goes to the webgpu kernels (`webgpu.ts`). gpu.js binds
// every kernel input as `array<f32>` and has no bitcast, so the ggml blocks are repacked once, on
// the host, into float32 values that are exact integers below 2^24 (and the f16 scales as their
// float32 values); the kernels take them apart with multiplications by powers of two and floor,
// which are exact there. Node-free.
import { QK_K, type GgmlType } from '../types';
import { scaleMinK4 } from '../quant/q4_k';
import { f16BitsToF32 } from '../quant/rounding';

/** Float32 values per group of 32 bytes: three bytes per value (the 33rd byte is a zero pad). */
export const GROUP_FLOATS = 11;
/** Float32 values per packed Q8_0 block (32 weights). */
export const Q8_0_BLOCK_FLOATS = GROUP_FLOATS + 1;
/** Float32 values per packed Q4_K super-block (256 weights). */
export const Q4_K_BLOCK_FLOATS = 4 * GROUP_FLOATS + 2 + 4;

/** The types with webgpu kernels. */
export type WebgpuQuantType = 'Q8_0' | 'Q4_K';

/** Whether `type` has a webgpu kernel (`packForWebgpu` and the product). */
export function hasWebgpuKernel(type: GgmlType): type is GgmlType & { name: WebgpuQuantType } {
  return type.name === 'Q8_0' || type.name === 'Q4_K';
}

/** Float32 values per packed row of K weights. */
export function packedRowFloats(type: WebgpuQuantType, K: number): number {
  return type === 'Q8_0' ? (K / 32) * Q8_0_BLOCK_FLOATS : (K / QK_K) * Q4_K_BLOCK_FLOATS;
}

/** Pack 32 bytes `bytes[at ... at + 31]`, each mapped by `f`, into GROUP_FLOATS floats at `out[o]`. */
function packGroup(bytes: Uint8Array, at: number, f: (b: number) => number, out: Float32Array, o: number): void {
  for (let t = 0; t < GROUP_FLOATS; t++) {
    const j = at + 3 * t;
    out[o + t] = f(bytes[j]!) + 256 * f(bytes[j + 1]!) + (3 * t + 2 < 32 ? 65536 * f(bytes[j + 2]!) : 0);
  }
}

const asOffsetBinary = (b: number): number => b ^ 0x80; // int8 q (two's complement) → q + 128
const asIs = (b: number): number => b;

/**
 * The ggml blocks of a [N, K] matrix (`bytes`: N rows of `rowBytes(type, K)`) in the webgpu
 * layout, row by row (`packedRowFloats(type, K)` floats per row; the kernels read `W[n][j]`).
 * Three bytes u0, u1, u2 are one float u0 + 256·u1 + 65536·u2 (< 2^24, exact); 32 bytes are a
 * group of 11 floats (the last float holds two bytes).
 *
 * - Q8_0, per block of 32 weights (12 floats, 48 bytes: 1.5 bytes per weight): one group of
 *   the quants in offset binary (q + 128 ∈ [0, 255]), then the scale d (the f16's value).
 * - Q4_K, per super-block of 256 weights (50 floats, 200 bytes: 0.78 bytes per weight): the
 *   128 quant bytes as four groups, as ggml stores them (group c holds sub-block 2c in the low
 *   nibbles and 2c + 1 in the high ones), then d and dmin (the f16s' values), then the eight
 *   6-bit sub-block scales and the eight 6-bit mins (decoded as `scaleMinK4`) four to a float,
 *   s0 + 64·s1 + 4096·s2 + 262144·s3: [sc0..3], [sc4..7], [m0..3], [m4..7].
 *
 * Against float32's 4 bytes per weight: 37.5 % (Q8_0) and 19.5 % (Q4_K); against the stored
 * blocks (1.0625 and 0.5625 bytes per weight): 1.41× and 1.39×.
 */
export function packForWebgpu(type: GgmlType, bytes: Uint8Array, N: number, K: number): Float32Array {
  if (!hasWebgpuKernel(type)) throw new Error(`packForWebgpu: no webgpu kernel for ${type.name}`);
  const name = type.name, per = type.blockSize, size = type.typeSize, blocks = (N * K) / per;
  if (K % per !== 0 || bytes.length < blocks * size) throw new Error(`packForWebgpu: ${bytes.length} bytes are not a [${N}, ${K}] ${name} matrix`);
  const stride = name === 'Q8_0' ? Q8_0_BLOCK_FLOATS : Q4_K_BLOCK_FLOATS;
  const out = new Float32Array(blocks * stride);
  for (let b = 0; b < blocks; b++) {
    const at = b * size, o = b * stride, d = f16BitsToF32(bytes[at]! | (bytes[at + 1]! << 8));
    if (name === 'Q8_0') {
      packGroup(bytes, at + 2, asOffsetBinary, out, o);
      out[o + GROUP_FLOATS] = d;
      continue;
    }
    for (let c = 0; c < 4; c++) packGroup(bytes, at + 16 + 32 * c, asIs, out, o + c * GROUP_FLOATS);
    out[o + 44] = d;
    out[o + 45] = f16BitsToF32(bytes[at + 2]! | (bytes[at + 3]! << 8));
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
  }
  return out;
}

// What every GGUF block format of this folder describes: its geometry, the integer parts of a
// block (what the product kernels multiply), its dequantization as gguf-py computes it, and the
// activation format llama.cpp pairs with it (the `vec_dot_type` of ggml's CPU type traits).
import { ShapeError } from '../errors';

/** The quantized storage dtypes: GGUF block bytes, shape [N, K] in elements, K a multiple of the block size. */
export type QuantDType = 'q4_0' | 'q4_1' | 'q5_0' | 'q5_1' | 'q8_0' | 'q2_k' | 'q3_k' | 'q4_k' | 'q5_k' | 'q6_k' | 'iq4_nl' | 'iq4_xs';

/** The activation blocks a product with weights of a format quantizes its input to (ggml's vec_dot_type). */
export type ActivationFormat = 'q8_0' | 'q8_1' | 'q8_k';

/**
 * The integer parts of a block: weight i of the block is, in exact integers and two floats,
 * - `blockValues === 32` (one group): d·w_i, plus m for the formats with a min (Q4_1, Q5_1);
 * - super-blocks of 256: d·sc_j·w_i − m·mn_j for i in group j (mn only for Q2_K, Q4_K, Q5_K),
 * where w are the signed integer weights (offsets already removed: Q4_0's q − 8, Q6_K's q − 32,
 * IQ4's table values). The float combination of these parts is the format's own (`dequantize`).
 */
export interface BlockParts {
  /** Integer weights, `blockValues` of them. */
  readonly w: Int8Array;
  /** Integer scale of each group (1 for 32-value blocks). */
  readonly sc: Int32Array;
  /** Integer min of each group (0 where the format has none). */
  readonly mn: Int32Array;
  /** [d, m]: the block's float scale and its min (Q4_1/Q5_1) or min scale dmin (k-quants); m = 0 where there is none. */
  readonly f: Float32Array;
}

/** A GGUF block format. */
export interface QuantFormat {
  /** The dtype name. */
  readonly name: QuantDType;
  /** ggml's name of the type. */
  readonly ggml: string;
  /** ggml's enum value of the type. */
  readonly ggmlId: number;
  /** Values per block (32, or 256 for a k-quant super-block). */
  readonly blockValues: number;
  /** Bytes per block. */
  readonly blockBytes: number;
  /** Values per integer scale (equal to blockValues for the 32-value formats). */
  readonly groupValues: number;
  /** Whether a min term exists (Q4_1/Q5_1: m·Σx; Q2_K/Q4_K/Q5_K: dmin·Σ mn_j·Σx_j). */
  readonly mins: boolean;
  /** The activation blocks llama.cpp multiplies it with. */
  readonly activation: ActivationFormat;
  /** Float32 values of `out.length` elements stored at `bytes` (bit-exact with gguf-py's `dequantize`). */
  dequantize(bytes: Uint8Array, out: Float32Array): void;
  /** The integer parts of the block at bytes[at] into `parts` (see {@link BlockParts}). */
  unpack(bytes: Uint8Array, at: number, parts: BlockParts): void;
}

/**
 * The output bytes of a quantizer: `x.length / blockValues` blocks of `blockBytes` each, zeroed.
 * @throws ShapeError naming the quantizer when `x.length` is not a whole number of blocks
 */
export function quantizedBlocks(x: Float32Array, blockValues: number, blockBytes: number, quantizer: string): Uint8Array {
  if (x.length % blockValues !== 0) throw new ShapeError(`${quantizer}: ${x.length} values are not a whole number of ${blockValues}-value blocks`);
  return new Uint8Array((x.length / blockValues) * blockBytes);
}

/** Scratch for {@link QuantFormat.unpack} of one block of `f`. */
export function blockParts(f: QuantFormat): BlockParts {
  const groups = f.blockValues / f.groupValues;
  return { w: new Int8Array(f.blockValues), sc: new Int32Array(groups).fill(1), mn: new Int32Array(groups), f: new Float32Array(2) };
}

/** Dequantize block by block through `value(parts, i)` (the format's float combination of weight i). */
export function dequantizeBlocks(f: QuantFormat, bytes: Uint8Array, out: Float32Array, value: (p: BlockParts, i: number) => number): void {
  const p = blockParts(f), n = f.blockValues;
  for (let b = 0, o = 0; b < out.length; b += n, o += f.blockBytes) {
    f.unpack(bytes, o, p);
    for (let i = 0; i < n; i++) out[b + i] = value(p, i);
  }
}

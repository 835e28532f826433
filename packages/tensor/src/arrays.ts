/**
 * The array types of kernel contracts: contiguous, row-major storage of the device memory.
 * `F32` holds float32 values, `I32` token ids or positions, `U16` bf16/f16 bit patterns, `U8`
 * the block bytes of a quantized matrix.
 */

/** Float32 buffer. */
export type F32 = Float32Array;
/** Int32 buffer. */
export type I32 = Int32Array;
/** bf16 or f16 bit patterns. */
export type U16 = Uint16Array;
/** Bytes (quantized blocks). */
export type U8 = Uint8Array;

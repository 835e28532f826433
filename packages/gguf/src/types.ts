// The ggml tensor types this package reads, with their block geometry (ggml's type traits):
// a row of `blockSize` values is stored in `typeSize` bytes.

/** Names of the supported ggml tensor types. */
export type GgmlTypeName = 'F32' | 'F16' | 'BF16' | 'Q4_0' | 'Q5_0' | 'Q5_1' | 'Q8_0' | 'Q4_K' | 'Q5_K' | 'Q6_K';

/** Block geometry of one ggml type. */
export interface GgmlType {
  /** ggml's enum value, as stored in the tensor table. */
  readonly id: number;
  /** ggml's name. */
  readonly name: GgmlTypeName;
  /** Values per block. */
  readonly blockSize: number;
  /** Bytes per block. */
  readonly typeSize: number;
}

/** QK_K: values per k-quant super-block. */
export const QK_K = 256;

/** Every supported type by name. */
export const GGML_TYPES: Readonly<Record<GgmlTypeName, GgmlType>> = {
  F32: { id: 0, name: 'F32', blockSize: 1, typeSize: 4 },
  F16: { id: 1, name: 'F16', blockSize: 1, typeSize: 2 },
  Q4_0: { id: 2, name: 'Q4_0', blockSize: 32, typeSize: 2 + 16 },
  // d (f16), 32 fifth bits, 16 bytes of low nibbles; Q5_1 adds m (f16).
  Q5_0: { id: 6, name: 'Q5_0', blockSize: 32, typeSize: 2 + 4 + 16 },
  Q5_1: { id: 7, name: 'Q5_1', blockSize: 32, typeSize: 2 + 2 + 4 + 16 },
  Q8_0: { id: 8, name: 'Q8_0', blockSize: 32, typeSize: 2 + 32 },
  // d, dmin (f16), 12 bytes of packed 6-bit scales and mins, 128 bytes of 4-bit quants.
  Q4_K: { id: 12, name: 'Q4_K', blockSize: QK_K, typeSize: 2 + 2 + 12 + QK_K / 2 },
  // d, dmin (f16), 12 bytes of scales and mins, 32 bytes of fifth bits, 128 bytes of low nibbles.
  Q5_K: { id: 13, name: 'Q5_K', blockSize: QK_K, typeSize: 2 + 2 + 12 + QK_K / 8 + QK_K / 2 },
  // 128 bytes low 4 bits, 64 bytes high 2 bits, 16 int8 scales, d (f16).
  Q6_K: { id: 14, name: 'Q6_K', blockSize: QK_K, typeSize: QK_K / 2 + QK_K / 4 + QK_K / 16 + 2 },
  BF16: { id: 30, name: 'BF16', blockSize: 1, typeSize: 2 },
};

/** Types this package writes (llama-quantize's fallbacks and Q5_K_M) but does not read yet. */
export const WRITE_ONLY_TYPES: ReadonlySet<GgmlTypeName> = new Set(['Q5_0', 'Q5_1', 'Q5_K']);

const BY_ID = new Map<number, GgmlType>(Object.values(GGML_TYPES).filter((t) => !WRITE_ONLY_TYPES.has(t.name)).map((t) => [t.id, t]));

/** ggml type by enum value, or undefined when unknown or not read by this package. */
export function ggmlTypeById(id: number): GgmlType | undefined {
  return BY_ID.get(id);
}

/** Bytes of `n` values of `type` (n must be a multiple of the block size). */
export function rowBytes(type: GgmlType, n: number): number {
  return (n / type.blockSize) * type.typeSize;
}

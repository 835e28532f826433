// The ggml tensor types this package reads, with their block geometry (ggml's type traits):
// a row of `blockSize` values is stored in `typeSize` bytes.

/** Names of the supported ggml tensor types. */
export type GgmlTypeName = 'F32' | 'F16' | 'BF16' | 'Q4_0' | 'Q8_0' | 'Q4_K' | 'Q6_K';

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
  Q8_0: { id: 8, name: 'Q8_0', blockSize: 32, typeSize: 2 + 32 },
  // d, dmin (f16), 12 bytes of packed 6-bit scales and mins, 128 bytes of 4-bit quants.
  Q4_K: { id: 12, name: 'Q4_K', blockSize: QK_K, typeSize: 2 + 2 + 12 + QK_K / 2 },
  // 128 bytes low 4 bits, 64 bytes high 2 bits, 16 int8 scales, d (f16).
  Q6_K: { id: 14, name: 'Q6_K', blockSize: QK_K, typeSize: QK_K / 2 + QK_K / 4 + QK_K / 16 + 2 },
  BF16: { id: 30, name: 'BF16', blockSize: 1, typeSize: 2 },
};

const BY_ID = new Map<number, GgmlType>(Object.values(GGML_TYPES).map((t) => [t.id, t]));

/** ggml type by enum value, or undefined when unknown or unsupported. */
export function ggmlTypeById(id: number): GgmlType | undefined {
  return BY_ID.get(id);
}

/** Bytes of `n` values of `type` (n must be a multiple of the block size). */
export function rowBytes(type: GgmlType, n: number): number {
  return (n / type.blockSize) * type.typeSize;
}

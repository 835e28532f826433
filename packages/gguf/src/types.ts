// The ggml tensor types this package reads, with their block geometry (ggml's type traits):
// a row of `blockSize` values is stored in `typeSize` bytes. The quantized ones are the block
// formats of @apertus/tensor's dtypes.
import { QUANT_FORMATS } from '@apertus/tensor';

/** Names of the supported ggml tensor types. */
export type GgmlTypeName = 'F32' | 'F16' | 'BF16' | 'Q4_0' | 'Q4_1' | 'Q5_0' | 'Q5_1' | 'Q8_0' | 'Q2_K' | 'Q3_K' | 'Q4_K' | 'Q5_K' | 'Q6_K' | 'IQ4_NL' | 'IQ4_XS';

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

const quantized = Object.fromEntries(Object.values(QUANT_FORMATS).map((f) => [f.ggml, { id: f.ggmlId, name: f.ggml as GgmlTypeName, blockSize: f.blockValues, typeSize: f.blockBytes }]));

/** Every supported type by name. */
export const GGML_TYPES: Readonly<Record<GgmlTypeName, GgmlType>> = {
  F32: { id: 0, name: 'F32', blockSize: 1, typeSize: 4 },
  F16: { id: 1, name: 'F16', blockSize: 1, typeSize: 2 },
  BF16: { id: 30, name: 'BF16', blockSize: 1, typeSize: 2 },
  ...(quantized as Record<Exclude<GgmlTypeName, 'F32' | 'F16' | 'BF16'>, GgmlType>),
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

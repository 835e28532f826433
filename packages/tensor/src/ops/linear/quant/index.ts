// The cpu products of weights stored as GGUF blocks (or f32/bf16/f16) in the cpu device memory.
export { packedLinear, packedLinearAvailable, weightRowBytes, type PackedWeight, type WeightDType } from './product';
export { WeightStore, storeOnHeap, type WeightBytes } from './memory';
export { weightTensor, storedWeight, isStoredWeight } from './weight';
export { quantVariant as packedLinearVariant, setQuantVariant as setPackedLinearVariant } from './variant';
export type { Variant as PackedLinearVariant } from './layout';

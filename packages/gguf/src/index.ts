/**
 * @apertus/gguf — llama.cpp's GGUF format for Apertus: a validated (fuzzed) reader with lazy
 * tensor reads, a writer, the block formats (Q4_0, Q8_0, Q4_K, Q6_K), quantized matrices that
 * multiply without expanding the model, loading into ApertusModel, and HF → GGUF conversion.
 * `@apertus/gguf` under the `browser` condition is ./browser.ts: the same without file paths.
 * @packageDocumentation
 */
export { GgufError, GgufTruncatedError, GgufFormatError, GgufQuantTypeError, GgufArchitectureError, GgufMetadataError, GgufWriteError, GgufIoError, type GgufErrorContext } from './errors';
export { GGML_TYPES, QK_K, ggmlTypeById, rowBytes, type GgmlType, type GgmlTypeName } from './types';
export { parseHeader, GGUF_VALUE_TYPE, type GgufHeader, type GgufTensorInfo, type GgufValue, type GgufScalarType } from './header';
export { GgufFile, type GgufByteSource } from './file';
export { openGgufFile, loadGguf } from './open';
export { writeGguf, type GgufEntry, type GgufTensorEntry } from './writer';
export { quantize, dequantize, dequantizeInto, quantizeQ8_0, dequantizeQ8_0, quantizeQ4_0, dequantizeQ4_0, quantizeQ4_K, dequantizeQ4_K, quantizeQ5_K, quantizeQ6_K, dequantizeQ6_K } from './quant/index';
export { ARCH, ggufTensorName, ropeFactors, configFromMetadata, checkArchitecture } from './apertus';
export { tokenizerMetadata, tokenizerFromMetadata, TOKEN_TYPE } from './vocab';
export { loadGgufFile, type LoadedGguf, type LoadGgufOptions } from './load';
export { writeModelGguf, convertCheckpoint, tensorTypes, QUANTIZE_TYPES, type QuantizeType, type WriteModelGgufOptions } from './convert';
export { mixTypes, useMoreBits, fallbackType, isQuantized, MIX_FILE_TYPE, type QuantMix, type MixType, type MixTensor } from './mix';
export { runQuantizeCli, quantizeCommand } from './cli';

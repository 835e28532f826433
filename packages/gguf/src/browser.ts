/**
 * @apertus/gguf in a browser: the GGUF reader over bytes in memory (`GgufFile.fromBytes`, e.g. a
 * picked `File` or a `fetch` response), the block formats, quantized matrices and loading into
 * ApertusModel (`loadGgufFile`). Imports nothing from Node; file paths, the writer and the HF →
 * GGUF converter are in the Node entry.
 * @packageDocumentation
 */
export { GgufError, GgufTruncatedError, GgufFormatError, GgufQuantTypeError, GgufArchitectureError, GgufMetadataError, GgufWriteError, GgufIoError, type GgufErrorContext } from './errors';
export { GGML_TYPES, QK_K, ggmlTypeById, rowBytes, type GgmlType, type GgmlTypeName } from './types';
export { parseHeader, GGUF_VALUE_TYPE, type GgufHeader, type GgufTensorInfo, type GgufValue, type GgufScalarType } from './header';
export { GgufFile, type GgufByteSource } from './file';
export { quantize, dequantize, dequantizeInto, quantizeQ8_0, dequantizeQ8_0, quantizeQ4_0, dequantizeQ4_0, quantizeQ4_K, dequantizeQ4_K, quantizeQ5_K, quantizeQ6_K, dequantizeQ6_K } from './quant/index';
export { ARCH, ggufTensorName, ropeFactors, configFromMetadata, checkArchitecture } from './apertus';
export { tokenizerMetadata, tokenizerFromMetadata, TOKEN_TYPE } from './vocab';
export { loadGgufFile, type LoadedGguf, type LoadGgufOptions } from './load';

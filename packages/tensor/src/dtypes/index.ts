// The quantized storage dtypes: one file per GGUF block format, and the activation formats
// llama.cpp pairs with them (Q8_0 in q8_0.ts, Q8_1, Q8_K).
import type { QuantDType, QuantFormat } from './format';
import { IQ4_NL } from './iq4_nl';
import { IQ4_XS } from './iq4_xs';
import { Q2_K } from './q2_k';
import { Q3_K } from './q3_k';
import { Q4_1 } from './q4_1';
import { Q4_K } from './q4_k';
import { Q5_0 } from './q5_0';
import { Q5_1 } from './q5_1';
import { Q5_K } from './q5_k';
import { Q6_K } from './q6_k';
import { Q8_0, quantizeQ8_0 } from './q8_0';
import { Q4_0, quantizeQ4_0 } from './q4_0';
import { quantizeQ4_K, quantizeQ5_K, quantizeQ6_K } from './k-quants';
import { quantizeQ5_0, quantizeQ5_1 } from './q5-quantize';

/** Every quantized dtype's block format, by dtype name. */
export const QUANT_FORMATS: Readonly<Record<QuantDType, QuantFormat>> = {
  q4_0: Q4_0, q4_1: Q4_1, q5_0: Q5_0, q5_1: Q5_1, q8_0: Q8_0, q2_k: Q2_K, q3_k: Q3_K, q4_k: Q4_K, q5_k: Q5_K, q6_k: Q6_K, iq4_nl: IQ4_NL, iq4_xs: IQ4_XS,
};

/** Whether `dtype` is one of the quantized (GGUF block) dtypes. */
export function isQuantDType(dtype: string): dtype is QuantDType {
  return Object.hasOwn(QUANT_FORMATS, dtype);
}

/** The quantizers of the dtypes that have one (llama.cpp's reference quantization, bit for bit). */
export const QUANTIZERS: Readonly<Partial<Record<QuantDType, (x: Float32Array) => Uint8Array>>> = {
  q4_0: quantizeQ4_0, q5_0: quantizeQ5_0, q5_1: quantizeQ5_1, q8_0: quantizeQ8_0, q4_k: quantizeQ4_K, q5_k: quantizeQ5_K, q6_k: quantizeQ6_K,
};

/** The block format of a quantized dtype, or undefined for any other name. */
export function quantFormat(name: string): QuantFormat | undefined {
  return Object.hasOwn(QUANT_FORMATS, name) ? QUANT_FORMATS[name as QuantDType] : undefined;
}

export type { ActivationFormat, BlockParts, QuantDType, QuantFormat } from './format';
export { blockParts } from './format';
export { Q4_0, quantizeQ4_0, dequantizeQ4_0 } from './q4_0';
export { Q4_1 } from './q4_1';
export { Q5_0 } from './q5_0';
export { Q5_1 } from './q5_1';
export { Q8_0, quantizeQ8_0, dequantizeQ8_0, quantizeActivationsQ8_0, type QuantizedActivations } from './q8_0';
export { quantizeActivationsQ8_1 } from './q8_1';
export { quantizeActivationsQ8_K } from './q8_k';
export { Q2_K } from './q2_k';
export { Q3_K } from './q3_k';
export { Q4_K, dequantizeQ4_K, scaleMinK4 } from './q4_k';
export { quantizeQ4_K, quantizeQ5_K, quantizeQ6_K } from './k-quants';
export { quantizeQ5_0, quantizeQ5_1 } from './q5-quantize';
export { Q5_K } from './q5_k';
export { Q6_K, dequantizeQ6_K } from './q6_k';
export { IQ4_NL, IQ4_LEVELS } from './iq4_nl';
export { IQ4_XS } from './iq4_xs';
export { roundBf16Into } from './bf16';
export { roundF16Into } from './f16';
export { rint, roundAway, toF16 } from './rounding';

// Re-export: the Q6_K block format lives in @apertus/tensor's dtypes.
import { blockParts, QUANT_FORMATS } from '@apertus/tensor';

const parts = blockParts(QUANT_FORMATS.q6_k);

/** The 256 6-bit quants (0 … 63, in weight order) of the super-block at bytes[at] into `q`. */
export function quantsQ6_K(bytes: Uint8Array, at: number, q: Uint8Array): void {
  QUANT_FORMATS.q6_k.unpack(bytes, at, parts);
  for (let i = 0; i < 256; i++) q[i] = parts.w[i]! + 32;
}

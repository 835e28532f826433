// Random weights for the product tests and benchmarks (not exported from the package).
import { f32ToF16Bits } from '../../../dtype';
import type { Rng } from '../../../random';
import { QUANT_FORMATS, type QuantDType } from '../../../dtypes/index';

const F16_FIELDS: Record<QuantDType, number[]> = {
  q4_0: [0], q4_1: [0, 2], q5_0: [0], q5_1: [0, 2], q8_0: [0], q2_k: [80, 82], q3_k: [108],
  q4_k: [0, 2], q5_k: [0, 2], q6_k: [208], iq4_nl: [0], iq4_xs: [0],
};

/** Random blocks with finite f16 fields of magnitude about 2^e (e random in [lo, hi]). */
export function randomBlocks(name: QuantDType, blocks: number, rng: Rng, lo = -12, hi = -4): Uint8Array {
  const f = QUANT_FORMATS[name], out = Uint8Array.from({ length: blocks * f.blockBytes }, () => Math.floor(rng.uniform() * 256));
  for (let b = 0; b < blocks; b++) {
    for (const o of F16_FIELDS[name]) {
      const bits = f32ToF16Bits((rng.uniform() - 0.5) * 2 ** (lo + rng.uniform() * (hi - lo)));
      out[b * f.blockBytes + o] = bits & 255;
      out[b * f.blockBytes + o + 1] = bits >> 8;
    }
  }
  return out;
}


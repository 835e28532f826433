import type { F32, I32 } from '../../arrays';

export function rope(x: F32, N: number, heads: number, d: number, positions: I32, invFreq: F32, inverse: boolean, out: F32): void {
  const half = d >> 1;
  const cos = new Float32Array(half), sin = new Float32Array(half);
  const sign = inverse ? -1 : 1;
  for (let t = 0; t < N; t++) {
    const pos = positions[t]!;
    // HF: freqs = inv_freq (f32) * position (f32) in float32, cos/sin in float32.
    for (let i = 0; i < half; i++) {
      const angle = Math.fround(invFreq[i]! * pos);
      cos[i] = Math.cos(angle);
      sin[i] = sign * Math.sin(angle);
    }
    for (let h = 0; h < heads; h++) {
      const o = (t * heads + h) * d;
      for (let i = 0; i < half; i++) {
        const x1 = x[o + i]!, x2 = x[o + i + half]!;
        out[o + i] = x1 * cos[i]! - x2 * sin[i]!;
        out[o + i + half] = x2 * cos[i]! + x1 * sin[i]!;
      }
    }
  }
}

/**
 * GELU in its tanh form (GPT-2, `gelu_pytorch_tanh`), the reference kernels, each element in
 * float64 and rounded once:
 *   y  = ½·x·(1 + tanh(u)),  u = √(2/π)·(x + 0.044715·x³)
 *   y' = ½·(1 + tanh(u)) + ½·x·(1 − tanh²(u))·√(2/π)·(1 + 3·0.044715·x²)
 */
import type { F32 } from '../../arrays';

const C = Math.sqrt(2 / Math.PI);
const A = 0.044715;

/** out[i] = gelu(x[i]). */
export function gelu(x: F32, out: F32): void {
  for (let i = 0; i < x.length; i++) {
    const v = x[i]!;
    out[i] = 0.5 * v * (1 + Math.tanh(C * (v + A * v * v * v)));
  }
}

/** gx[i] = gy[i]·gelu'(x[i]). */
export function geluBackward(x: F32, gy: F32, gx: F32): void {
  for (let i = 0; i < x.length; i++) {
    const v = x[i]!, t = Math.tanh(C * (v + A * v * v * v));
    gx[i] = gy[i]! * (0.5 * (1 + t) + 0.5 * v * (1 - t * t) * C * (1 + 3 * A * v * v));
  }
}

// The products in TypeScript, operation for operation as the kernels compute them (rows.ts): the
// input quantized by dtypes/ (Q8_0, Q8_1 or Q8_K as llama.cpp pairs them with the format), the
// exact integer block sums, then the float32 steps in the documented order. The kernels must
// match it bit for bit, in both variants, for any tile height and any split of the rows.
import { blockParts, QUANT_FORMATS, quantizeActivationsQ8_0, quantizeActivationsQ8_1, quantizeActivationsQ8_K, type QuantDType, type QuantizedActivations } from '../../../dtypes/index';

const f = Math.fround;

/** The input of a product with weights of `name`, quantized as llama.cpp quantizes it. */
export function quantizeInput(name: QuantDType, x: Float32Array): QuantizedActivations {
  const a = QUANT_FORMATS[name].activation;
  return a === 'q8_k' ? quantizeActivationsQ8_K(x) : a === 'q8_1' ? quantizeActivationsQ8_1(x) : quantizeActivationsQ8_0(x);
}

/** y[M, N] = x[M, K] · Wᵀ for W [N, K] stored as `name` at `bytes`. */
export function quantMatmulReference(name: QuantDType, bytes: Uint8Array, N: number, K: number, x: Float32Array, M: number): Float32Array {
  const fmt = QUANT_FORMATS[name], nb = K / fmt.blockValues, parts = blockParts(fmt), G = fmt.blockValues / fmt.groupValues;
  const y = new Float32Array(M * N);
  for (let m = 0; m < M; m++) {
    const a = quantizeInput(name, x.subarray(m * K, (m + 1) * K));
    for (let r = 0; r < N; r++) {
      const row = r * nb * fmt.blockBytes;
      if (fmt.blockValues === 32) {
        const acc = [0, 0, 0, 0];
        let S = 0;
        for (let b = 0; b < nb; b++) {
          fmt.unpack(bytes, row + b * fmt.blockBytes, parts);
          const I = [0, 0, 0, 0];
          for (let i = 0; i < 32; i++) I[(i & 15) >> 2]! += parts.w[i]! * a.q[32 * b + i]!;
          const D = f(parts.f[0]! * a.d[b]!);
          for (let l = 0; l < 4; l++) acc[l] = f(acc[l]! + f(I[l]! * D));
          if (fmt.mins) S = f(S + f(parts.f[1]! * a.s[b]!));
        }
        const lanes = f(f(acc[0]! + acc[1]!) + f(acc[2]! + acc[3]!));
        y[m * N + r] = fmt.mins ? f(lanes + S) : lanes;
      } else {
        let A = 0, B = 0;
        for (let b = 0; b < nb; b++) {
          fmt.unpack(bytes, row + b * fmt.blockBytes, parts);
          let I = 0, Mi = 0;
          for (let j = 0; j < G; j++) {
            let s = 0, bs = 0;
            for (let i = j * fmt.groupValues; i < (j + 1) * fmt.groupValues; i++) { s += parts.w[i]! * a.q[256 * b + i]!; bs += a.q[256 * b + i]!; }
            I += parts.sc[j]! * s;
            Mi += parts.mn[j]! * bs;
          }
          A = f(A + f(f(parts.f[0]! * a.d[b]!) * f(I)));
          if (fmt.mins) B = f(B + f(f(parts.f[1]! * a.d[b]!) * f(Mi)));
        }
        y[m * N + r] = f(A - B);
      }
    }
  }
  return y;
}

import type { F32 } from '../../arrays';
import { jsGemm } from '../gemm/cpu';
import type { GemmFn } from '../gemm/kernel';
import type { LinearCrossEntropyArgs } from './args';

/** The row operations of the softmax over one row of logits `x[o .. o + n)`. */
export interface SoftmaxRowOps {
  /** The largest value. */
  max(x: F32, o: number, n: number): number;
  /** x[o + j] = exp(x[o + j] − shift) in place; returns the sum. */
  expShift(x: F32, o: number, n: number, shift: number): number;
  /** x[o + j] *= s. */
  scale(x: F32, o: number, n: number, s: number): void;
}

/** The reference row operations: `Math.exp` and sums in double. */
export const jsSoftmaxRows: SoftmaxRowOps = {
  max: (x, o, n) => {
    let m = -Infinity;
    for (let j = 0; j < n; j++) if (x[o + j]! > m) m = x[o + j]!;
    return m;
  },
  expShift: (x, o, n, shift) => {
    let s = 0;
    for (let j = 0; j < n; j++) { const e = Math.exp(x[o + j]! - shift); x[o + j] = e; s += e; }
    return s;
  },
  scale: (x, o, n, s) => {
    for (let j = 0; j < n; j++) x[o + j]! *= s;
  },
};

/**
 * The fused LM-head cross-entropy on top of a GEMM kernel. Per chunk of rows: logits = h·Wᵀ,
 * then per row the max, the exponentials and lse = m + log Σ exp(z − m); when gradients are
 * wanted, dlogits = w·(softmax − onehot) is formed in place (one exp per logit in total) and
 * folded at once into dh = dlogits·W and dW += dlogitsᵀ·h.
 */
export function fusedLinearCrossEntropy(
  gemm: GemmFn,
  scratch: { alloc(n: number): F32; release(a: F32): void } = { alloc: (n) => new Float32Array(n), release: () => {} },
  rowOps: SoftmaxRowOps = jsSoftmaxRows,
): (a: LinearCrossEntropyArgs) => void {
  return (a) => {
    const { rows, V, H, h, w, targets, weights, dh, dw, sums } = a;
    /** C[M, N] = A · op(W) with W [V, H] as stored (f32 or bf16 bits). */
    const byW = (transB: boolean, M: number, N: number, K: number, A: F32, C: F32): void => {
      if (w instanceof Uint16Array) gemm({ transA: false, transB, M, N, K, A, B: w, C });
      else gemm({ transA: false, transB, M, N, K, A, B: w, C });
    };
    const needGrad = dh !== null || dw !== null;
    const chunk = Math.max(1, Math.min(rows, a.chunkRows));
    const logits = scratch.alloc(chunk * V);
    let total = 0, weight = 0;
    for (let r0 = 0; r0 < rows; r0 += chunk) {
      const n = Math.min(chunk, rows - r0);
      const Xc = h.subarray(r0 * H, (r0 + n) * H);
      byW(true, n, V, H, Xc, logits);
      for (let i = 0; i < n; i++) {
        const r = r0 + i, o = i * V;
        const wr = weights[r]!;
        if (wr === 0) { if (needGrad) logits.fill(0, o, o + V); continue; }
        const t = targets[r]!;
        const zt = logits[o + t]!;
        const m = rowOps.max(logits, o, V);
        const s = rowOps.expShift(logits, o, V, m);
        const lse = m + Math.log(s);
        total += wr * (lse - zt);
        weight += wr;
        if (needGrad) {
          rowOps.scale(logits, o, V, wr / s);
          logits[o + t]! -= wr;
        }
      }
      if (dh) byW(false, n, H, V, logits, dh.subarray(r0 * H, (r0 + n) * H));
      if (dw) gemm({ transA: true, transB: false, M: V, N: H, K: n, A: logits, B: Xc, C: dw, beta: r0 === 0 ? 0 : 1 });
    }
    scratch.release(logits);
    sums[0] = total;
    sums[1] = weight;
  };
}

/** The reference kernel: the fused loss on the TypeScript GEMM. */
export const linearCrossEntropyReference = fusedLinearCrossEntropy(jsGemm);

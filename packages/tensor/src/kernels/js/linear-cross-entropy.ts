import type { F32, KernelSet, LinearCrossEntropyArgs } from '../types';

/**
 * The fused LM-head cross-entropy on top of a GEMM kernel. Per chunk of rows: logits = h·Wᵀ,
 * then per row the max, the exponentials and lse = m + log Σ exp(z − m); when gradients are
 * wanted, dlogits = w·(softmax − onehot) is formed in place (one exp per logit in total) and
 * folded at once into dh = dlogits·W and dW += dlogitsᵀ·h.
 */
export function fusedLinearCrossEntropy(
  gemm: KernelSet['gemm'],
  scratch: { alloc(n: number): F32; release(a: F32): void } = { alloc: (n) => new Float32Array(n), release: () => {} },
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
        let m = -Infinity;
        for (let j = 0; j < V; j++) if (logits[o + j]! > m) m = logits[o + j]!;
        let s = 0;
        if (needGrad) {
          for (let j = 0; j < V; j++) { const e = Math.exp(logits[o + j]! - m); logits[o + j] = e; s += e; }
        } else {
          for (let j = 0; j < V; j++) s += Math.exp(logits[o + j]! - m);
        }
        const lse = m + Math.log(s);
        total += wr * (lse - zt);
        weight += wr;
        if (needGrad) {
          const c = wr / s;
          for (let j = 0; j < V; j++) logits[o + j]! *= c;
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

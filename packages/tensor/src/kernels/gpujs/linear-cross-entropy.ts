/**
 * The LM-head cross-entropy (`linearCrossEntropy`) from the gpu.js kernels of this folder, chunk
 * by chunk of rows, as the fused CPU kernel (`kernels/js/linear-cross-entropy.ts`) does:
 *   logits = h_c · Wᵀ                              (gemm)
 *   [lse, w·(lse − z_t)] per row                   (crossEntropy)
 *   dlogits = w·(softmax − onehot)                 (crossEntropyBackward, g = 1, lse where it is)
 *   dh_c = dlogits · W,  dW += dlogitsᵀ · h_c      (gemm)
 * so the whole loss runs on the device. Only the per-row losses are summed on the host (float64,
 * as the fused kernel does). Rows of weight 0 are masked: their target is never read.
 */
import { ShapeError } from '../../errors';
import type { F32, I32, LinearCrossEntropyArgs } from '../types';
import { crossEntropyBackwardFromStats, rowStats } from './cross-entropy';
import { gemm } from './gemm';
import { checkIndexable, type KernelOp } from './runtime';

export function* linearCrossEntropy(a: LinearCrossEntropyArgs): KernelOp {
  const { rows, V, H, h, w, targets, weights, dh, dw, sums } = a;
  if (h.length !== rows * H) throw new ShapeError(`linearCrossEntropy: h has ${h.length} elements, expected ${rows} x ${H}`);
  if (w.length !== V * H) throw new ShapeError(`linearCrossEntropy: w has ${w.length} elements, expected ${V} x ${H}`);
  if (targets.length !== rows || weights.length !== rows) throw new ShapeError(`linearCrossEntropy: targets and weights need ${rows} elements`);
  if (dh !== null && dh.length !== rows * H) throw new ShapeError(`linearCrossEntropy: dh has ${dh.length} elements, expected ${rows} x ${H}`);
  if (dw !== null && (dw.length !== V * H || w instanceof Uint16Array)) throw new ShapeError('linearCrossEntropy: dw must be [V, H] and needs a float32 W');
  const chunk = Math.max(1, Math.min(rows, a.chunkRows));
  const logits = new Float32Array(chunk * V);
  const glogits = dh !== null || dw !== null ? new Float32Array(chunk * V) : null;
  let total = 0, weight = 0;
  if (dw !== null && rows === 0) dw.fill(0);
  for (let r0 = 0; r0 < rows; r0 += chunk) {
    const n = Math.min(chunk, rows - r0);
    const hc = h.subarray(r0 * H, (r0 + n) * H);
    const wc = weights.subarray(r0, r0 + n);
    // Masked rows: target −1 (the kernels' ignore index), so an unused target is never read.
    const tc: I32 = Int32Array.from(targets.subarray(r0, r0 + n), (t, i) => (wc[i] === 0 ? -1 : t));
    const lc: F32 = logits.subarray(0, n * V);
    yield* gemm({ transA: false, transB: true, M: n, N: V, K: H, A: hc, B: w, C: lc } as Parameters<typeof gemm>[0]);
    checkIndexable('linearCrossEntropy', { rows: n, V });
    const stats = yield* rowStats(lc, tc, wc, n, V);
    for (let i = 0; i < n; i++) {
      total += stats[2 * i + 1]!;
      weight += wc[i]!;
    }
    if (glogits === null) continue;
    const gc = glogits.subarray(0, n * V);
    yield* crossEntropyBackwardFromStats(lc, tc, wc, stats, n, V, gc);
    if (dh !== null) yield* gemm({ transA: false, transB: false, M: n, N: H, K: V, A: gc, B: w, C: dh.subarray(r0 * H, (r0 + n) * H) } as Parameters<typeof gemm>[0]);
    if (dw !== null) yield* gemm({ transA: true, transB: false, M: V, N: H, K: n, A: gc, B: hc, C: dw, beta: r0 === 0 ? 0 : 1 });
  }
  sums[0] = total;
  sums[1] = weight;
}

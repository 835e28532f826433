import { isGradEnabled, record } from '../../autograd';
import { packedLinearKernel } from '../linear/quant/kernel';
import { storedWeight } from '../linear/quant/weight';
import { sgemm, sgemmBf16 } from '../gemm';
import { DTypeError, ShapeError } from '../../errors';
import { heapView } from '../../memory/heap';
import { numel } from '../../shape';
import { Tensor } from '../../tensor';
import { kernelF32, out } from '../util';

/**
 * The last two axes of `t` as a GEMM operand: contiguous storage plus a transpose flag, so a
 * transposed view (e.g. `transpose(w)`) is multiplied without a copy.
 */
function operand(t: Tensor, op: string): { data: Float32Array; trans: boolean } {
  const r = t.rank;
  if (r >= 2 && !t.isContiguous() && t.dtype === 'f32') {
    const [rows, cols] = [t.shape[r - 2]!, t.shape[r - 1]!];
    let ok = t.strides[r - 2] === 1 && t.strides[r - 1] === rows;
    for (let i = r - 3, st = rows * cols; ok && i >= 0; st *= t.shape[i]!, i--) ok = t.shape[i] === 1 || t.strides[i] === st;
    if (ok) return { data: heapView(t.raw as Float32Array, t.offset, t.offset + t.size), trans: true };
  }
  return { data: kernelF32(t, op), trans: false };
}

/**
 * Matrix product over the last two axes: a [..., M, K] · b [..., K, N] → [..., M, N]. `b` is
 * either 2-D (shared by every batch entry) or has the same batch axes as `a`.
 */
export function matmul(a: Tensor, b: Tensor): Tensor {
  if (a.rank < 2 || b.rank < 2) throw new ShapeError(`matmul: operands need rank ≥ 2, got [${a.shape}] and [${b.shape}]`);
  const M = a.shape[a.rank - 2]!, K = a.shape[a.rank - 1]!, N = b.shape[b.rank - 1]!;
  if (b.shape[b.rank - 2] !== K) throw new ShapeError(`matmul: [${a.shape}] · [${b.shape}]: inner sizes ${K} and ${b.shape[b.rank - 2]} differ`);
  const batchA = a.shape.slice(0, -2), batchB = b.shape.slice(0, -2);
  const nb = numel(batchA), shared = b.rank === 2;
  if (!shared && (batchB.length !== batchA.length || batchB.some((d, i) => d !== batchA[i]))) {
    throw new ShapeError(`matmul: batch axes [${batchA}] and [${batchB}] differ`);
  }
  const A = operand(a, 'matmul'), B = operand(b, 'matmul');
  const res = out([...batchA, M, N]);
  if (shared && !A.trans) {
    sgemm({ transA: false, transB: B.trans, M: nb * M, N, K, A: A.data, B: B.data, C: res.data });
  } else {
    for (let i = 0; i < nb; i++) {
      sgemm({
        transA: A.trans, transB: B.trans, M, N, K,
        A: A.data.subarray(i * M * K, (i + 1) * M * K),
        B: shared ? B.data : B.data.subarray(i * K * N, (i + 1) * K * N),
        C: res.data.subarray(i * M * N, (i + 1) * M * N),
      });
    }
  }
  return record(res, 'matmul', [a, b], (g) => {
    const G = kernelF32(g, 'matmul');
    let ga: Tensor | null = null, gb: Tensor | null = null;
    if (a.requiresGrad) {
      // dA = G · Bᵀ
      ga = out(a.shape);
      for (let i = 0; i < nb; i++) {
        sgemm({
          transA: false, transB: !B.trans, M, N: K, K: N,
          A: G.subarray(i * M * N, (i + 1) * M * N),
          B: shared ? B.data : B.data.subarray(i * K * N, (i + 1) * K * N),
          C: ga.data.subarray(i * M * K, (i + 1) * M * K),
        });
      }
    }
    if (b.requiresGrad) {
      // dB = Aᵀ · G (summed over the batch when b is shared)
      gb = out(b.shape);
      for (let i = 0; i < nb; i++) {
        sgemm({
          transA: !A.trans, transB: false, M: K, N, K: M,
          A: A.data.subarray(i * M * K, (i + 1) * M * K),
          B: G.subarray(i * M * N, (i + 1) * M * N),
          C: shared ? gb.data : gb.data.subarray(i * K * N, (i + 1) * K * N),
          beta: shared && i > 0 ? 1 : 0,
        });
      }
    }
    return [ga, gb];
  });
}

/**
 * A bias-free linear layer in PyTorch's weight layout: x [..., in] · Wᵀ with W [out, in].
 * `W` may be bf16 (inference with checkpoint weights kept in bf16: converted inside the kernel),
 * or a stored weight (`weightTensor`, any quantized dtype: the registry's `packedLinear` kernels
 * for its dtype on the current device, as llama.cpp computes it; inference only).
 */
export function linear(x: Tensor, w: Tensor): Tensor {
  if (w.rank !== 2) throw new ShapeError(`linear: weight must be [out, in], got [${w.shape}]`);
  const [N, K] = w.shape as [number, number];
  if (x.shape[x.rank - 1] !== K) throw new ShapeError(`linear: input [${x.shape}] does not end in ${K} for weight ${w}`);
  const M = x.size / K;
  const stored = storedWeight(w);
  if (stored !== null) {
    if (x.requiresGrad && isGradEnabled()) throw new DTypeError(`linear: ${w} is a stored ${w.dtype} weight for inference: no gradient flows through it`);
    const y = out([...x.shape.slice(0, -1), N]);
    packedLinearKernel.run(stored, kernelF32(x, 'linear'), M, y.data);
    return y;
  }
  const X = kernelF32(x, 'linear');
  const res = out([...x.shape.slice(0, -1), N]);
  const wBits = w.dtype === 'bf16' ? w.materialize() : null;
  if (w.dtype !== 'f32' && w.dtype !== 'bf16') throw new DTypeError(`linear: weight ${w} must be f32, bf16 or a stored weight`);
  const W = wBits ? heapView(wBits.raw as Uint16Array, wBits.offset, wBits.offset + wBits.size) : kernelF32(w, 'linear');
  if (wBits) sgemmBf16({ transA: false, transB: true, M, N, K, A: X, B: W as Uint16Array, C: res.data });
  else sgemm({ transA: false, transB: true, M, N, K, A: X, B: W as Float32Array, C: res.data });
  return record(res, 'linear', [x, w], (g) => {
    const G = kernelF32(g, 'linear');
    let gx: Tensor | null = null, gw: Tensor | null = null;
    if (x.requiresGrad) {
      gx = out(x.shape);
      if (wBits) sgemmBf16({ transA: false, transB: false, M, N: K, K: N, A: G, B: W as Uint16Array, C: gx.data });
      else sgemm({ transA: false, transB: false, M, N: K, K: N, A: G, B: W as Float32Array, C: gx.data });
    }
    if (w.requiresGrad) {
      gw = out(w.shape);
      sgemm({ transA: true, transB: false, M: N, N: K, K: M, A: G, B: X, C: gw.data });
    }
    return [gx, gw];
  });
}

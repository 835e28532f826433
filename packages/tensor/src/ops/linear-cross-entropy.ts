import { isGradEnabled, record } from '../autograd';
import { DTypeError, ShapeError } from '../errors';
import { sgemm, sgemmBf16 } from '../kernels/gemm/index';
import type { Tensor } from '../tensor';
import { f32, i32, out } from './util';

/** Options of `linearCrossEntropy`. */
export interface LinearCrossEntropyOptions {
  /** Per-row float weights (loss mask). */
  mask?: Float32Array;
  /** Targets equal to this are ignored. Default −100. */
  ignoreIndex?: number;
  /** 'mean' (weighted sum / normalizer) or 'sum'. Default 'mean'. */
  reduction?: 'mean' | 'sum';
  /** Denominator for 'mean'; default the weight of the non-ignored rows. */
  normalizer?: number;
  /** Rows per chunk; default so a chunk of logits holds about 4M floats. */
  chunkRows?: number;
}

/**
 * Cross-entropy of the LM head fused with the head itself: loss(h·Wᵀ, targets) for hidden states
 * h [..., H] and W [V, H], computed chunk by chunk so the [rows, V] logits are never stored. When
 * gradients are needed, each chunk's dlogits = w·(softmax − onehot) is formed right after its
 * forward (one exp per logit in total) and immediately folded into dh = dlogits·W and
 * dW += dlogitsᵀ·h; the backward pass only scales those by the upstream gradient.
 */
export function linearCrossEntropy(h: Tensor, w: Tensor, targets: Tensor, opts: LinearCrossEntropyOptions = {}): Tensor {
  if (w.rank !== 2) throw new ShapeError(`linearCrossEntropy: weight must be [V, H], got [${w.shape}]`);
  const [V, H] = w.shape as [number, number];
  if (h.shape[h.rank - 1] !== H) throw new ShapeError(`linearCrossEntropy: hidden [${h.shape}] does not end in ${H}`);
  const rows = h.size / H;
  if (targets.size !== rows) throw new ShapeError(`linearCrossEntropy: ${targets.size} targets for ${rows} rows`);
  if (w.dtype !== 'f32' && w.dtype !== 'bf16') throw new DTypeError(`linearCrossEntropy: weight ${w} must be f32 or bf16`);
  const mask = opts.mask;
  if (mask && mask.length !== rows) throw new ShapeError(`linearCrossEntropy: mask has ${mask.length} entries for ${rows} rows`);
  const ignore = opts.ignoreIndex ?? -100;
  const tg = i32(targets, 'linearCrossEntropy');
  for (let r = 0; r < rows; r++) {
    const t = tg[r]!;
    if (t !== ignore && (t < 0 || t >= V)) throw new ShapeError(`linearCrossEntropy: target ${t} at row ${r} outside [0, ${V})`);
  }
  const X = f32(h, 'linearCrossEntropy');
  const wm = w.materialize();
  const Wf = w.dtype === 'f32' ? wm.data : null;
  const Wb = w.dtype === 'bf16' ? (wm.storage as Uint16Array).subarray(wm.offset, wm.offset + wm.size) : null;
  const needGrad = isGradEnabled() && (h.requiresGrad || w.requiresGrad);
  const chunk = Math.max(1, Math.min(rows, opts.chunkRows ?? Math.floor((4 << 20) / V)));
  const logits = new Float32Array(chunk * V);
  const dh = needGrad && h.requiresGrad ? new Float32Array(rows * H) : null;
  const dw = needGrad && w.requiresGrad ? new Float32Array(V * H) : null;
  let total = 0, weight = 0;
  for (let r0 = 0; r0 < rows; r0 += chunk) {
    const n = Math.min(chunk, rows - r0);
    const Xc = X.subarray(r0 * H, (r0 + n) * H);
    if (Wb) sgemmBf16({ transA: false, transB: true, M: n, N: V, K: H, A: Xc, B: Wb, C: logits });
    else sgemm({ transA: false, transB: true, M: n, N: V, K: H, A: Xc, B: Wf!, C: logits });
    for (let i = 0; i < n; i++) {
      const r = r0 + i, t = tg[r]!, o = i * V;
      const wr = t === ignore ? 0 : mask ? mask[r]! : 1;
      if (wr === 0) { if (needGrad) logits.fill(0, o, o + V); continue; }
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
        // dlogits = w·(softmax − onehot), from the exponentials already in place.
        const c = wr / s;
        for (let j = 0; j < V; j++) logits[o + j]! *= c;
        logits[o + t]! -= wr;
      }
    }
    if (dh) {
      if (Wb) sgemmBf16({ transA: false, transB: false, M: n, N: H, K: V, A: logits, B: Wb, C: dh.subarray(r0 * H, (r0 + n) * H) });
      else sgemm({ transA: false, transB: false, M: n, N: H, K: V, A: logits, B: Wf!, C: dh.subarray(r0 * H, (r0 + n) * H) });
    }
    if (dw) sgemm({ transA: true, transB: false, M: V, N: H, K: n, A: logits, B: Xc, C: dw, beta: r0 === 0 ? 0 : 1 });
  }
  const reduction = opts.reduction ?? 'mean';
  const denom = reduction === 'sum' ? 1 : (opts.normalizer ?? (weight === 0 ? 1 : weight));
  const res = out([], Float32Array.of(total / denom));
  if (!needGrad) return res;
  return record(res, 'linearCrossEntropy', [h, w], (g) => {
    const s = g.item() / denom;
    return [dh ? out(h.shape, dh.map((v) => v * s)) : null, dw ? out(w.shape, dw.map((v) => v * s)) : null];
  });
}

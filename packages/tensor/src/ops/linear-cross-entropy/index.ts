import { isGradEnabled, record } from '../../autograd';
import { scaleByKernel } from '../elementwise/kernel';
import { linearCrossEntropyKernel } from './kernel';
import { DTypeError, ShapeError } from '../../errors';
import type { Tensor } from '../../tensor';
import { i32, kernelF32, out, zerosF32 } from '../util';

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
 * h [..., H] and W [V, H], computed chunk by chunk so the [rows, V] logits are never stored (the
 * `linearCrossEntropy` kernel). When gradients are needed, the kernel forms each chunk's
 * dlogits = w·(softmax − onehot) right after its forward (one exp per logit in total) and folds
 * it into dh = dlogits·W and dW = Σ dlogitsᵀ·h; the backward pass only scales those by the
 * upstream gradient.
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
  const X = kernelF32(h, 'linearCrossEntropy');
  const wm = w.materialize();
  const W = w.dtype === 'f32' ? kernelF32(wm, 'linearCrossEntropy') : (wm.raw as Uint16Array).subarray(wm.offset, wm.offset + wm.size);
  const weights = new Float32Array(rows);
  for (let r = 0; r < rows; r++) weights[r] = tg[r] === ignore ? 0 : mask ? mask[r]! : 1;
  const needGrad = isGradEnabled() && (h.requiresGrad || w.requiresGrad);
  const dh = needGrad && h.requiresGrad ? zerosF32(rows * H) : null;
  const dw = needGrad && w.requiresGrad ? zerosF32(V * H) : null;
  const sums = new Float64Array(2);
  const chunkRows = Math.max(1, Math.min(rows, opts.chunkRows ?? Math.floor((4 << 20) / V)));
  linearCrossEntropyKernel.run({ rows, V, H, h: X, w: W, targets: tg, weights, chunkRows, sums, dh, dw });
  const total = sums[0]!, weight = sums[1]!;
  const reduction = opts.reduction ?? 'mean';
  const denom = reduction === 'sum' ? 1 : (opts.normalizer ?? (weight === 0 ? 1 : weight));
  const res = out([], zerosF32(1).fill(total / denom));
  if (!needGrad) return res;
  return record(res, 'linearCrossEntropy', [h, w], (g) => {
    const s = g.item() / denom;
    // The loss gradient scaled where dh and dw live (on a device, there), into fresh outputs.
    const scaled = (d: Float32Array, shape: readonly number[]): Tensor => {
      const res = zerosF32(d.length);
      scaleByKernel.run(d, s, res);
      return out(shape, res);
    };
    return [dh ? scaled(dh, h.shape) : null, dw ? scaled(dw, w.shape) : null];
  });
}

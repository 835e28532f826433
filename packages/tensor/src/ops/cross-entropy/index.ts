import { record } from '../../autograd';
import { crossEntropyBackwardKernel, crossEntropyKernel } from './kernel';
import { ShapeError } from '../../errors';
import type { Tensor } from '../../tensor';
import { f32, i32, kernelF32, out, zerosF32 } from '../util';

/** Options of `crossEntropy`. */
export interface CrossEntropyOptions {
  /** Per-row float weights [rows] (a loss mask: Goldfish keep-mask × end-of-document mask, …). */
  mask?: Tensor | Float32Array;
  /** Targets equal to this are ignored (weight 0). Default −100, as PyTorch. */
  ignoreIndex?: number;
  /**
   * 'mean' divides the weighted sum by `normalizer` (default: the sum of weights of non-ignored
   * rows, i.e. the number of kept tokens); 'sum' returns the weighted sum; 'none' returns per-row losses.
   */
  reduction?: 'mean' | 'sum' | 'none';
  /** Denominator for 'mean' (e.g. kept tokens of the whole accumulated batch). */
  normalizer?: number;
}

/**
 * Cross-entropy of `logits` [..., V] against integer `targets` [...], fused with log-softmax:
 * the backward recomputes softmax row by row from the saved log-sum-exp, so no second [rows, V]
 * probability tensor is ever stored.
 */
export function crossEntropy(logits: Tensor, targets: Tensor, opts: CrossEntropyOptions = {}): Tensor {
  const V = logits.shape[logits.rank - 1]!;
  const rows = logits.size / V;
  if (targets.size !== rows) throw new ShapeError(`crossEntropy: ${targets.size} targets for ${rows} rows of [${logits.shape}]`);
  const ignore = opts.ignoreIndex ?? -100;
  const tg = i32(targets, 'crossEntropy').map((t, r) => {
    if (t === ignore) return -1;
    if (t < 0 || t >= V) throw new ShapeError(`crossEntropy: target ${t} at row ${r} outside [0, ${V})`);
    return t;
  });
  const w = opts.mask === undefined ? null : opts.mask instanceof Float32Array ? opts.mask : f32(opts.mask, 'crossEntropy');
  if (w && w.length !== rows) throw new ShapeError(`crossEntropy: mask has ${w.length} entries for ${rows} rows`);
  const L = kernelF32(logits, 'crossEntropy');
  const loss = zerosF32(rows), lse = new Float32Array(rows);
  crossEntropyKernel.run(L, tg, w, rows, V, loss, lse);
  const reduction = opts.reduction ?? 'mean';
  let denom = 1;
  if (reduction === 'mean') {
    if (opts.normalizer !== undefined) denom = opts.normalizer;
    else { denom = 0; for (let r = 0; r < rows; r++) if (tg[r]! >= 0) denom += w ? w[r]! : 1; }
    if (denom === 0) denom = 1;
  }
  let res: Tensor;
  if (reduction === 'none') res = out(targets.shape, loss);
  else { let s = 0; for (let r = 0; r < rows; r++) s += loss[r]!; res = out([], zerosF32(1).fill(s / denom)); }
  return record(res, 'crossEntropy', [logits], (g) => {
    const gr = reduction === 'none' ? f32(g, 'crossEntropy') : zerosF32(rows).fill(g.item() / denom);
    const gl = out(logits.shape);
    crossEntropyBackwardKernel.run(L, tg, w, lse, gr, rows, V, gl.data);
    return [gl];
  });
}

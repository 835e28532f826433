/**
 * Choosing a token from one row of logits, the reference: greedy (the first largest), or a draw
 * after temperature, top-k, top-p and min-p (Hugging Face's order), exactly as the model's
 * sampler has always drawn, in float64. `u` is the draw's uniform number in [0, 1).
 */
import type { SampleParams } from './args';

/** The first index of the largest value. */
export function argmaxRow(x: ArrayLike<number>): number {
  let best = 0;
  for (let i = 1; i < x.length; i++) if (x[i]! > x[best]!) best = i;
  return best;
}

/** The token drawn from logits `x` (penalties already applied) with `p`, given the uniform draw `u`. */
export function drawToken(x: ArrayLike<number>, p: SampleParams, u: number): number {
  if (p.temperature === 0) return argmaxRow(x);
  const y = Float64Array.from(x, (v) => v / p.temperature);
  // Candidates sorted by logit, descending (ties by index).
  let idx = Array.from(y.keys());
  idx.sort((a, b) => y[b]! - y[a]! || a - b);
  if (p.topK > 0) idx = idx.slice(0, p.topK);
  const m = y[idx[0]!]!;
  let probs = idx.map((i) => Math.exp(y[i]! - m));
  let z = probs.reduce((s, v) => s + v, 0);
  probs = probs.map((v) => v / z);
  if (p.topP < 1) {
    let cum = 0, keep = 0;
    while (keep < probs.length && cum < p.topP) cum += probs[keep++]!;
    idx = idx.slice(0, Math.max(1, keep)); probs = probs.slice(0, Math.max(1, keep));
  }
  if (p.minP > 0) {
    const thr = p.minP * probs[0]!, first = probs.findIndex((v) => v < thr);
    const keep = Math.max(1, first < 0 ? probs.length : first);
    idx = idx.slice(0, keep); probs = probs.slice(0, keep);
  }
  z = probs.reduce((s, v) => s + v, 0);
  let t = u * z;
  for (let k = 0; k < probs.length; k++) { t -= probs[k]!; if (t < 0) return idx[k]!; }
  return idx[idx.length - 1]!;
}

/** out[r] = the token of row r of logits [rows, V] with params[r]. */
export function sampleRows(logits: Float32Array, rows: number, V: number, params: readonly SampleParams[], out: Int32Array): void {
  for (let r = 0; r < rows; r++) out[r] = drawToken(logits.subarray(r * V, (r + 1) * V), params[r]!, params[r]!.u);
}

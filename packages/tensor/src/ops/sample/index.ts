/**
 * Choosing the next tokens where the logits are: on the webgpu device a decode step then reads
 * back only the token ids, not the [rows, V] logits.
 */
import { ShapeError } from '../../errors';
import type { Tensor } from '../../tensor';
import { kernelF32 } from '../util';
import { sampleKernel, type SampleParams } from './kernel';

export type { SampleParams } from './kernel';
export { drawToken, argmaxRow } from './reference';

/** The token of each row of logits [rows, V] (greedy, or drawn with its params' `u`). */
export function sampleTokens(logits: Tensor, params: readonly SampleParams[]): Int32Array {
  if (logits.rank !== 2 || logits.shape[0] !== params.length) throw new ShapeError(`sampleTokens: logits [${logits.shape}] for ${params.length} rows of params`);
  const [rows, V] = logits.shape as [number, number];
  for (const p of params) {
    if (!(p.temperature >= 0 && p.topK >= 0 && p.topP > 0 && p.topP <= 1 && p.minP >= 0 && p.minP <= 1 && p.u >= 0 && p.u < 1)) throw new ShapeError(`sampleTokens: bad params ${JSON.stringify(p)}`);
  }
  const out = new Int32Array(rows);
  sampleKernel.run(kernelF32(logits, 'sampleTokens'), rows, V, params, out);
  return out;
}

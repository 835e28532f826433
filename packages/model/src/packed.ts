import { bf16ArrayToF32, embedding, isGradEnabled, kernelF32, linear, Tensor } from '@apertus/tensor';
import { ModelError } from './errors';

/**
 * A weight matrix W [out, in] held in a packed format (e.g. GGUF quantized blocks) that
 * multiplies itself, so the weights are never expanded to float32 as a whole. Inference only:
 * packed weights take no gradient.
 */
export interface PackedMatrix {
  /** [out, in], as the Hugging Face weight. */
  readonly shape: readonly [number, number];
  /** Storage format (e.g. 'Q4_K'), for messages. */
  readonly format: string;
  /** Bytes held. */
  readonly bytes: number;
  /** y [M, out] = x [M, in] · Wᵀ. */
  matmulT(x: Float32Array, M: number, y: Float32Array): void;
  /** Rows `ids` of W as float32 into `out` [ids.length, in] (an embedding lookup). */
  rows(ids: Int32Array, out: Float32Array): void;
}

/** A weight matrix as the model holds it: a tensor (f32/bf16) or a packed matrix. */
export type Weight = Tensor | PackedMatrix;

/** Whether a weight is packed. */
export function isPacked(w: Weight): w is PackedMatrix {
  return !(w instanceof Tensor);
}

/** x [..., in] · Wᵀ: `linear` for tensors (with autograd), the matrix's own kernel when packed. */
export function project(x: Tensor, w: Weight): Tensor {
  if (!isPacked(w)) return linear(x, w);
  const [N, K] = w.shape;
  if (x.shape[x.rank - 1] !== K) throw new ModelError(`project: input [${x.shape}] does not end in ${K} for a ${w.format} weight [${w.shape}]`);
  if (x.requiresGrad && isGradEnabled()) throw new ModelError(`project: ${w.format} weights are inference-only (no gradient flows through them)`);
  // The storage itself (no copy back from a device that holds it: the matrix multiplies where it lives).
  const X = kernelF32(x, 'project');
  // The product goes to tensor storage (in a `tidy` scope, a pooled block of the cpu device memory,
  // where the next op reads it in place) instead of a fresh JavaScript array per call.
  const y = Tensor.zeros([...x.shape.slice(0, -1), N]);
  w.matmulT(X, X.length / K, kernelF32(y, 'project'));
  return y;
}

/** Embedding rows of token ids [...] from a weight [V, H]: float32 [..., H]. */
export function embedWeight(ids: Tensor, w: Weight): Tensor {
  if (!isPacked(w)) return embedding(ids, w);
  const H = w.shape[1], idv = ids.materialize().ints, out = new Float32Array(idv.length * H);
  w.rows(idv, out);
  return Tensor.from(out, [...ids.shape, H]);
}

/** Rows `ids` of a weight [V, H] as float32 into `out` [ids.length, H] (bf16 converted row by row, never the whole table). */
export function weightRows(w: Weight, ids: Int32Array, out: Float32Array = new Float32Array(ids.length * w.shape[1]!)): Float32Array {
  const H = w.shape[1]!;
  if (isPacked(w)) { w.rows(ids, out); return out; }
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i]!, row = w.storage.subarray(w.offset + id * H, w.offset + (id + 1) * H);
    if (w.dtype === 'bf16') bf16ArrayToF32(row as Uint16Array, out.subarray(i * H, (i + 1) * H));
    else out.set(row as Float32Array, i * H);
  }
  return out;
}

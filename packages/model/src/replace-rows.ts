// PEFT's TrainableTokens on a token table (embedding or LM head) W [V, H]:
//   W'[i] = values[k] where i = indices[k], W'[i] = W[i] elsewhere   (torch's index_copy along rows)
//   ∂L/∂values[k] = ∂L/∂W'[indices[k]]
// W is frozen: it is an attribute, not an input, so it gets no gradient.

import { defineOp, Tensor } from '@apertus/tensor';

interface ReplaceRowsAttrs {
  /** The frozen table [V, H] (f32 or bf16). */
  readonly w: Tensor;
  /** Distinct row ids < V. */
  readonly indices: readonly number[];
}

const replaceRowsOp = defineOp<ReplaceRowsAttrs>({
  name: 'replaceRows',
  forward([values], { w, indices }) {
    const H = w.shape[1]!, V = values!.materialize().data;
    const output = new Tensor(w.toFloat32(), w.shape, 'f32'), o = output.data;
    indices.forEach((id, k) => o.set(V.subarray(k * H, (k + 1) * H), id * H));
    return { output, saved: undefined };
  },
  backward(g, { inputs: [values], attrs: { w, indices } }) {
    const H = w.shape[1]!, G = g.materialize().data;
    const gv = Tensor.zeros(values!.shape), d = gv.data;
    indices.forEach((id, k) => d.set(G.subarray(id * H, (id + 1) * H), k * H));
    return [gv];
  },
});

/** `w` [V, H] with rows `indices` replaced by `values` [indices.length, H]: a new float32 table, differentiable in `values`. */
export function replaceRows(w: Tensor, indices: readonly number[], values: Tensor): Tensor {
  return replaceRowsOp([values], { w, indices });
}

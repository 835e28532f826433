// The LoRA projection as one autograd op (Hu et al. 2021, eq. 3):
//   y = x·Wᵀ + s · (d ⊙ x)·Aᵀ·Bᵀ,   u = (d ⊙ x)·Aᵀ [M, r]
//   ∂L/∂B = s · Gᵀ·u     ∂L/∂A = (s · G·B)ᵀ·(d ⊙ x)     ∂L/∂x = G·W + d ⊙ (s · G·B)·A
// with G = ∂L/∂y [M, out] and d the inverted-dropout mask (0 or 1/(1 − p)). The backward pass
// keeps only x (an input, kept anyway), u and the mask's seed: no [M, out] intermediate, no
// merged weight W + s·B·A, and the frozen W is an attribute, not an input, so it never gets a
// gradient buffer.

import { defineOp, isStoredWeight, linear, Rng, sgemm, sgemmBf16, Tensor } from '@apertus/tensor';
import { AdapterError } from './errors';

interface LoraLinearAttrs {
  /** The frozen base weight [out, in] (any storage dtype). */
  readonly w: Tensor;
  /** s = lora_alpha / r. */
  readonly scaling: number;
  /** Dropout probability on the adapter's input (0: none). */
  readonly p: number;
  /** Seed of the dropout mask, drawn anew per call: the backward pass regenerates the same mask. */
  readonly seed: number;
}

/** The inverted-dropout mask d: each element 0 with probability p, else 1/(1 − p). */
function dropoutMask(n: number, p: number, seed: number): Float32Array {
  const rng = new Rng(seed), d = new Float32Array(n), keep = 1 / (1 - p);
  for (let i = 0; i < n; i++) d[i] = rng.uniform() < p ? 0 : keep;
  return d;
}

/** Contiguous float32 values (a view when already contiguous f32). */
function f32(t: Tensor): Float32Array {
  return t.dtype === 'f32' ? t.materialize().data : t.toFloat32();
}

/** d ⊙ x, or x itself without dropout. */
function droppedInput(X: Float32Array, p: number, seed: number): Float32Array {
  if (p === 0) return X;
  const d = dropoutMask(X.length, p, seed), Xd = new Float32Array(X.length);
  for (let i = 0; i < X.length; i++) Xd[i] = X[i]! * d[i]!;
  return Xd;
}

const loraLinearOp = defineOp<LoraLinearAttrs, Float32Array>({
  name: 'loraLinear',
  forward([x, A, B], { w, scaling, p, seed }) {
    const r = A!.shape[0]!, inp = A!.shape[1]!, out = B!.shape[0]!, M = x!.size / inp;
    const y = linear(x!, w);
    const u = new Float32Array(M * r);
    sgemm({ transA: false, transB: true, M, N: r, K: inp, A: droppedInput(f32(x!), p, seed), B: f32(A!), C: u });
    sgemm({ transA: false, transB: true, M, N: out, K: r, A: u, B: f32(B!), C: y.data, alpha: scaling, beta: 1 });
    return { output: y, saved: u };
  },
  backward(g, { inputs: [x, A, B], attrs: { w, scaling, p, seed }, saved: u }) {
    const r = A!.shape[0]!, inp = A!.shape[1]!, out = B!.shape[0]!, M = x!.size / inp;
    const G = f32(g);
    // gu = s · G·B [M, r]: the gradient reaching u.
    const gu = new Float32Array(M * r);
    sgemm({ transA: false, transB: false, M, N: r, K: out, A: G, B: f32(B!), C: gu, alpha: scaling });
    let gA: Tensor | null = null, gB: Tensor | null = null, gx: Tensor | null = null;
    if (B!.requiresGrad) {
      gB = Tensor.zeros(B!.shape);
      sgemm({ transA: true, transB: false, M: out, N: r, K: M, A: G, B: u, C: gB.data, alpha: scaling });
    }
    const X = f32(x!);
    if (A!.requiresGrad) {
      gA = Tensor.zeros(A!.shape);
      sgemm({ transA: true, transB: false, M: r, N: inp, K: M, A: gu, B: droppedInput(X, p, seed), C: gA.data });
    }
    if (x!.requiresGrad) {
      gx = Tensor.zeros(x!.shape);
      const gxd = gx.data;
      // The adapter's share, d ⊙ gu·A, first (the mask applies to it alone) …
      sgemm({ transA: false, transB: false, M, N: inp, K: r, A: gu, B: f32(A!), C: gxd });
      if (p > 0) { const d = dropoutMask(X.length, p, seed); for (let i = 0; i < gxd.length; i++) gxd[i]! *= d[i]!; }
      // … then the base's, G·W, accumulated onto it.
      if (isStoredWeight(w)) throw new AdapterError('(projection)', `a stored ${w.dtype} base weight is inference-only: no gradient flows through it`);
      const wm = w.materialize();
      if (wm.dtype === 'bf16') sgemmBf16({ transA: false, transB: false, M, N: inp, K: out, A: G, B: (wm.storage as Uint16Array).subarray(wm.offset, wm.offset + wm.size), C: gxd, beta: 1 });
      else sgemm({ transA: false, transB: false, M, N: inp, K: out, A: G, B: f32(wm), C: gxd, beta: 1 });
    }
    return [gx, gA, gB];
  },
});

/**
 * x·Wᵀ + s · dropout(x)·Aᵀ·Bᵀ for x [..., in], a frozen W [out, in], A [r, in], B [out, r], as one
 * differentiable op in x, A and B (see the file header for what its backward keeps). `seed` picks
 * the dropout mask when p > 0. Throws AdapterError when W requires a gradient (the base must be
 * frozen: the op gives W none).
 */
export function loraLinear(x: Tensor, w: Tensor, A: Tensor, B: Tensor, scaling: number, p = 0, seed = 0): Tensor {
  if (w.requiresGrad) throw new AdapterError('(projection)', `the base weight ${w.name ?? ''} requires a gradient: LoRA trains against a frozen base (LoraAdapter.attach freezes it)`);
  if (x.shape[x.rank - 1] !== A.shape[1] || A.shape[0] !== B.shape[1] || B.shape[0] !== w.shape[0] || w.shape[1] !== A.shape[1]) {
    throw new AdapterError('(projection)', `x [${x.shape}], W [${w.shape}], A [${A.shape}] and B [${B.shape}] do not fit x·Wᵀ + s·x·Aᵀ·Bᵀ`);
  }
  return loraLinearOp([x, A, B], { w, scaling, p, seed });
}

import { defineOp, ShapeError, Tensor } from '@apertus/tensor';
import { xieluBackward, xieluForward } from './kernels';
import { sigmoid, softplus } from './math';

/**
 * The four per-layer scalars of an xIELU activation, named and shaped as Apertus checkpoints
 * store them (`mlp.act_fn.*`): trainable raw `alpha_p` [1] and `alpha_n` [1] (softplus is
 * applied in the forward pass), buffers `beta` [] and `eps` [] (no gradient).
 */
export interface XieluParams {
  /** Raw positive-branch scalar a_p, shape [1]. */
  alpha_p: Tensor;
  /** Raw negative-branch scalar a_n, shape [1]. */
  alpha_n: Tensor;
  /** β, shape [] (buffer). */
  beta: Tensor;
  /** ε (negative, tiny), shape [] (buffer). */
  eps: Tensor;
}

/** Initial values (the reference constructor defaults). */
export interface XieluInit {
  /** αp at init; a_p = ln(expm1(alphaPInit)). Default 0.8. */
  alphaPInit?: number;
  /** αn at init; a_n = ln(expm1(alphaNInit − β)). Default 0.8. */
  alphaNInit?: number;
  /** β. Default 0.5. */
  beta?: number;
  /** ε. Default −1e-6. */
  eps?: number;
}

/** Fresh xIELU scalars as the reference initialises them (αp = αn = 0.8, β = 0.5, ε = −1e-6). */
export function initXielu(init: XieluInit = {}): XieluParams {
  const beta = init.beta ?? 0.5, eps = init.eps ?? -1e-6;
  const a_p = Math.log(Math.expm1(init.alphaPInit ?? 0.8));
  const a_n = Math.log(Math.expm1((init.alphaNInit ?? 0.8) - beta));
  return {
    alpha_p: Tensor.from(Float32Array.of(a_p), [1]).requireGrad(),
    alpha_n: Tensor.from(Float32Array.of(a_n), [1]).requireGrad(),
    beta: Tensor.from(Float32Array.of(beta), []),
    eps: Tensor.from(Float32Array.of(eps), []),
  };
}

interface Scalars { beta: number; eps: number }

function scalar(t: Tensor, name: string): number {
  if (t.size !== 1) throw new ShapeError(`xielu: ${name} must hold one value, got shape [${t.shape}]`);
  return t.item();
}

/**
 * Forward: per element, only the branch that applies is evaluated (no overflow in the other).
 * Backward: ∂/∂x per element, and ∂/∂a_p, ∂/∂a_n summed over all elements (float64 accumulation).
 * The element loops are the kernels of `kernels.ts` (WebAssembly SIMD where available).
 */
const xieluOp = defineOp<Scalars, Tensor>({
  name: 'xielu',
  forward([x, ap, an], { beta, eps }) {
    // The saved input is a tensor, not a view of its storage: a view does not keep the storage's
    // memory block alive, and the backward's staging could be handed that block again.
    const xt = x!.dtype === 'f32' ? x!.materialize() : Tensor.from(x!.toFloat32(), x!.shape);
    const output = Tensor.zeros(x!.shape);
    xieluForward(xt.data, output.data, softplus(ap!.item()), beta + softplus(an!.item()), beta, eps);
    return { output, saved: xt };
  },
  backward(g, { inputs: [x, ap, an], attrs: { beta, eps }, saved: xt }) {
    const a_p = ap!.item(), a_n = an!.item();
    const gxT = Tensor.zeros(x!.shape);
    const [sp, sn] = xieluBackward(xt.data, g.materialize().data, gxT.data, softplus(a_p), beta + softplus(a_n), beta, eps);
    return [
      gxT,
      Tensor.from(Float32Array.of(sp * sigmoid(a_p)), ap!.shape),
      Tensor.from(Float32Array.of(sn * sigmoid(a_n)), an!.shape),
    ];
  },
});

/** Apply xIELU with a layer's scalars: differentiable w.r.t. x, alpha_p and alpha_n. */
export function xielu(x: Tensor, p: XieluParams): Tensor {
  scalar(p.alpha_p, 'alpha_p');
  scalar(p.alpha_n, 'alpha_n');
  return xieluOp([x, p.alpha_p, p.alpha_n], { beta: scalar(p.beta, 'beta'), eps: scalar(p.eps, 'eps') });
}

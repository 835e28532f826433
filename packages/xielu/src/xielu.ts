import { defineOp, kernelF32, mul, ShapeError, sigmoid, softplus, Tensor } from '@apertus/tensor';
import { defineKernel, onWebgpu } from '@apertus/tensor/kernels';
import { simdXielu, xieluSimdAvailable } from './cpu';
import { xieluBackwardKernel, xieluKernel } from './kernel';
import * as reference from './reference';
import { xieluBackwardWgsl, xieluWgsl } from './webgpu';

defineKernel(xieluKernel, { device: 'cpu', impl: 'reference', run: reference.xielu });
defineKernel(xieluKernel, { device: 'cpu', impl: 'wasm', available: xieluSimdAvailable, run: simdXielu.xielu });
defineKernel(xieluBackwardKernel, { device: 'cpu', impl: 'reference', run: reference.xieluBackward });
defineKernel(xieluBackwardKernel, { device: 'cpu', impl: 'wasm', available: xieluSimdAvailable, run: simdXielu.xieluBackward });
onWebgpu((gpu) => {
  defineKernel(xieluKernel, { device: 'webgpu', impl: 'wgsl', run: gpu.record(xieluWgsl) });
  defineKernel(xieluBackwardKernel, { device: 'webgpu', impl: 'wgsl', run: gpu.record(xieluBackwardWgsl) });
});

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

/** What the backward needs: the input, αp = softplus(a_p) and softplus(a_n), as the forward computed them. */
interface Saved { x: Tensor; alpha_p: Tensor; softplus_n: Tensor }

/** Check that `t` holds one value (without reading it: a trainable scalar may live on a device). */
function one(t: Tensor, name: string): Tensor {
  if (t.size !== 1) throw new ShapeError(`xielu: ${name} must hold one value, got shape [${t.shape}]`);
  return t;
}

/**
 * Forward: per element, only the branch that applies is evaluated (no overflow in the other).
 * Backward: ∂/∂x per element, and ∂/∂a_p = σ(a_p)·Σ gy·x² (x > 0), ∂/∂a_n = σ(a_n)·Σ gy·(expm1(min(x, ε)) − x)
 * (x ≤ 0). The element loops and the two sums are the `xielu` / `xieluBackward` kernels of the
 * registry (kernel.ts: reference, cpu SIMD and webgpu); softplus and σ of the raw scalars and the
 * products are tensor ops, so on a device nothing leaves the device.
 */
const xieluOp = defineOp<Scalars, Saved>({
  name: 'xielu',
  forward([x, ap, an], { beta, eps }) {
    // The saved input is a tensor, not a view of its storage: a view does not keep the storage's
    // memory block alive, and the backward's staging could be handed that block again.
    const xt = x!.dtype === 'f32' ? x!.materialize() : Tensor.from(x!.toFloat32(), x!.shape);
    // softplus as a tensor op, where the scalars live (on backend webgpu nothing is read back).
    const alpha_p = softplus(ap!), softplus_n = softplus(an!);
    const output = Tensor.zeros(x!.shape);
    xieluKernel.run(kernelF32(xt, 'xielu'), kernelF32(alpha_p, 'xielu'), kernelF32(softplus_n, 'xielu'), beta, eps, output.data);
    return { output, saved: { x: xt, alpha_p, softplus_n } };
  },
  backward(g, { inputs: [x, ap, an], attrs: { beta, eps }, saved }) {
    const gx = Tensor.zeros(x!.shape), sumP = Tensor.zeros(ap!.shape), sumN = Tensor.zeros(an!.shape);
    xieluBackwardKernel.run(
      kernelF32(saved.x, 'xielu'), kernelF32(g, 'xielu'), kernelF32(saved.alpha_p, 'xielu'), kernelF32(saved.softplus_n, 'xielu'),
      beta, eps, gx.data, sumP.data, sumN.data,
    );
    return [gx, mul(sumP, sigmoid(ap!)), mul(sumN, sigmoid(an!))];
  },
});

/** Apply xIELU with a layer's scalars: differentiable w.r.t. x, alpha_p and alpha_n. */
export function xielu(x: Tensor, p: XieluParams): Tensor {
  return xieluOp([x, one(p.alpha_p, 'alpha_p'), one(p.alpha_n, 'alpha_n')], { beta: one(p.beta, 'beta').item(), eps: one(p.eps, 'eps').item() });
}

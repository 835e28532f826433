/**
 * The xIELU element kernels as ops of the @apertus/tensor registry, with αp = alpha_p[0] and
 * αn = β + softplus_n[0] passed as one-element arrays so that they stay where the tensors live:
 *   out[i] = αp·x² + β·x for x > 0, αn·(expm1(min(x, ε)) − x) + β·x for x ≤ 0.
 */
import { kernelOp } from '@apertus/tensor/kernels';

type F32 = Float32Array;

/** out = xIELU(x). */
export const xieluKernel = kernelOp<(x: F32, alpha_p: F32, softplus_n: F32, beta: number, eps: number, out: F32) => void>('xielu');

/**
 * gx[i] = gy[i]·∂out/∂x (overwritten), and the two sums the parameter gradients are made of
 * (before the softplus derivative; overwritten): sumP[0] = Σ_{x>0} gy·x²,
 * sumN[0] = Σ_{x≤0} gy·(expm1(min(x, ε)) − x).
 */
export const xieluBackwardKernel = kernelOp<(x: F32, gy: F32, alpha_p: F32, softplus_n: F32, beta: number, eps: number, gx: F32, sumP: F32, sumN: F32) => void>('xieluBackward');

/**
 * The `KernelSet` of device `webgpu`: every kernel of the contract, recorded on the device's
 * runtime (nothing waits), reading and writing tensor storage through the buffer table.
 */
import type { KernelSet } from '../kernels/types';
import type { WebgpuContext } from './kernel';
import { binary, copyStrided, unary, unaryBackward } from './kernels/elementwise';
import { gemm } from './kernels/gemm';
import { embedding, embeddingBackward, rope } from './kernels/embedding';
import { ademamixUpdate, adamwUpdate, scaleBy, sumSquares, xielu, xieluBackward } from './kernels/update';
import { crossEntropy, crossEntropyBackward, logSoftmax, logSoftmaxBackward, max, rmsnorm, rmsnormBackward, softmax, softmaxBackward, sum } from './kernels/rows';

/** Record one op, then release its temporary buffers. */
function op<A extends unknown[]>(ctx: WebgpuContext, f: (ctx: WebgpuContext, ...a: A) => void): (...a: A) => void {
  return (...a: A) => {
    try {
      f(ctx, ...a);
    } finally {
      ctx.st.endOp();
    }
  };
}

/** The kernels of device `webgpu` on `ctx`. */
export function webgpuKernelSet(ctx: WebgpuContext): Partial<KernelSet> {
  return {
    gemm: op(ctx, gemm),
    unary: op(ctx, unary),
    unaryBackward: op(ctx, unaryBackward),
    binary: op(ctx, binary),
    copyStrided: op(ctx, copyStrided),
    sum: op(ctx, sum),
    max: op(ctx, max),
    softmax: op(ctx, softmax),
    softmaxBackward: op(ctx, softmaxBackward),
    logSoftmax: op(ctx, logSoftmax),
    logSoftmaxBackward: op(ctx, logSoftmaxBackward),
    crossEntropy: op(ctx, crossEntropy),
    crossEntropyBackward: op(ctx, crossEntropyBackward),
    rmsnorm: op(ctx, rmsnorm),
    rmsnormBackward: op(ctx, rmsnormBackward),
    embedding: op(ctx, embedding),
    embeddingBackward: op(ctx, embeddingBackward),
    rope: op(ctx, rope),
    ademamixUpdate: op(ctx, ademamixUpdate),
    adamwUpdate: op(ctx, adamwUpdate),
    sumSquares: op(ctx, sumSquares),
    scaleBy: op(ctx, scaleBy),
    xielu: op(ctx, xielu),
    xieluBackward: op(ctx, xieluBackward),
  };
}

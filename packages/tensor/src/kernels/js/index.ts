import { jsGemm } from '../gemm/index';
import type { KernelSet } from '../types';
import { attention, attentionBackward } from './attention';
import { copyStrided } from './copy';
import { crossEntropy, crossEntropyBackward } from './cross-entropy';
import { binary, unary, unaryBackward } from './elementwise';
import { embedding, embeddingBackward } from './embedding';
import { fusedLinearCrossEntropy } from './linear-cross-entropy';
import { adamwUpdate, ademamixUpdate, scaleBy, sumSquares } from './optimizer';
import { pagedAttention } from './paged-attention';
import { max, sum } from './reduce';
import { rmsnorm, rmsnormBackward } from './rmsnorm';
import { rope } from './rope';
import { logSoftmax, logSoftmaxBackward, softmax, softmaxBackward } from './softmax';
import { xielu, xieluBackward } from './xielu';

/** The plain TypeScript kernels: the reference every other backend is tested against. */
export const jsKernels: KernelSet = {
  gemm: jsGemm,
  unary, unaryBackward, binary, copyStrided, sum, max,
  softmax, softmaxBackward, logSoftmax, logSoftmaxBackward,
  rmsnorm, rmsnormBackward, embedding, embeddingBackward, rope,
  attention, attentionBackward, pagedAttention, crossEntropy, crossEntropyBackward,
  linearCrossEntropy: fusedLinearCrossEntropy(jsGemm),
  ademamixUpdate, adamwUpdate, sumSquares, scaleBy, xielu, xieluBackward,
};

export { sigmoid, softplus } from './elementwise';

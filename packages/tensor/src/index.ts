/**
 * @apertus/tensor — tensors, reverse-mode autograd and compute kernels for Apertus.ts.
 * @packageDocumentation
 */
export { Tensor, type GradNode, type NestedArray } from './tensor';
export { type DType, type Storage, f32ToBf16Bits, bf16BitsToF32, f32ToF16Bits, f16BitsToF32, f32ArrayToBf16, bf16ArrayToF32, f32ArrayToF16, f16ArrayToF32 } from './dtype';
export { type Shape, numel, broadcastShapes } from './shape';
export { TensorError, ShapeError, DTypeError, AutogradError, BackendError, HeapError } from './errors';
export { Rng } from './random';
export { backward, noGrad, isGradEnabled, record } from './autograd';
export { tidy } from './tidy';
export { heapStats, type HeapStats } from './memory/heap';
export { selectKernels, resetKernels, kernelInfo, listKernels, type KernelListing } from './registry';
export type { UnaryOp, BinaryOp } from './ops/elementwise/kernel';
export type { AttentionArgs, AttentionBackwardArgs, PagedAttentionArgs } from './ops/attention/kernel';
export type { LinearCrossEntropyArgs } from './ops/linear-cross-entropy/kernel';
export { sgemmReference, setGemmThreads, gemmThreads, setGemmVariant, gemmKernelInfo, terminateGemmWorkers, relaxedSimdAvailable, GemmError, THREAD_MIN_WORK, type GemmArgs, type GemmBf16Args, type GemmKernelInfo, type GemmVariantName } from './ops/gemm/cpu';
export { add, sub, mul, div, maximum, minimum, pow, neg, exp, log, expm1, log1p, softplus, sigmoid, silu, tanh, sqrt, rsqrt, square, abs, relu, scale, scaleBy, type TensorLike } from './ops/elementwise';
export { sum, mean, max, argmax, sumSquares } from './ops/reduce';
export { reshape, permute, transpose, narrow, unsqueeze, squeeze, contiguous, cat } from './ops/view';
export { matmul, linear } from './ops/matmul';
export { sgemm, sgemmBf16 } from './ops/gemm';
export { rmsnorm } from './ops/rmsnorm';
export { gelu } from './ops/gelu';
export { softmax, logSoftmax } from './ops/softmax';
export { embedding } from './ops/embedding';
export { rope } from './ops/rope';
export { attention, pagedAttention, type AttentionOptions, type KVPages } from './ops/attention';
export { crossEntropy, type CrossEntropyOptions } from './ops/cross-entropy';
export { linearCrossEntropy, type LinearCrossEntropyOptions } from './ops/linear-cross-entropy';
export { deviceStorage, readBack } from './ops/device-storage';
export { defineOp, type CustomOp, type CustomOpContext } from './ops/custom';
export { kernelF32 } from './ops/util';
export { gradcheck, type GradcheckResult } from './gradcheck';
export { DEVICES, DEVICE_HELP, useDevice, currentDevice, describeDevice, type Device, type DeviceInfo } from './device';
export { WebgpuUnavailableError, SWIFTSHADER_ICD, type WebgpuMissing } from './kernels/gpujs/webgpu';

/**
 * @apertus/tensor — tensors, reverse-mode autograd and compute kernels for Apertus.ts.
 * @packageDocumentation
 */
export { Tensor, type GradNode, type NestedArray } from './tensor';
export { type DType, type ElementDType, type Storage, f32ToBf16Bits, bf16BitsToF32, f32ToF16Bits, f16BitsToF32, f32ArrayToBf16, bf16ArrayToF32, f32ArrayToF16, f16ArrayToF32 } from './dtype';
export { type Shape, numel, broadcastShapes } from './shape';
export { QUANT_FORMATS, QUANTIZERS, quantFormat, isQuantDType, blockParts, quantizeQ8_0, quantizeQ4_0, quantizeQ4_K, quantizeQ5_K, quantizeQ6_K, quantizeQ5_0, quantizeQ5_1, scaleMinK4, quantizeActivationsQ8_0, quantizeActivationsQ8_1, quantizeActivationsQ8_K, roundBf16Into, roundF16Into, type QuantDType, type QuantFormat, type BlockParts, type ActivationFormat, type QuantizedActivations } from './dtypes/index';
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
export { packedLinearKernel, packedRowsKernel } from './ops/linear/quant/kernel';
export { weightTensor, isStoredWeight } from './ops/linear/quant/weight';
export { packedLinearVariant, setPackedLinearVariant, weightRowBytes, WeightStore, type PackedWeight, type WeightDType, type WeightBytes, type PackedLinearVariant } from './ops/linear/quant/index';
export { rmsnorm } from './ops/rmsnorm';
export { gelu } from './ops/gelu';
export { softmax, logSoftmax } from './ops/softmax';
export { embedding } from './ops/embedding';
export { rope } from './ops/rope';
export { attention, pagedAttention, type AttentionOptions, type KVPages } from './ops/attention';
export { copyInto, kvBlockStorage, type KvLayout, type KvDType, type KvBlockData } from './ops/copy';
export { sampleTokens, drawToken, argmaxRow, type SampleParams } from './ops/sample';
export { crossEntropy, type CrossEntropyOptions } from './ops/cross-entropy';
export { linearCrossEntropy, type LinearCrossEntropyOptions } from './ops/linear-cross-entropy';
export { deviceStorage, readBack } from './ops/device-storage';
export { defineOp, type CustomOp, type CustomOpContext } from './ops/custom';
export { kernelF32 } from './ops/util';
export { gradcheck, type GradcheckResult } from './gradcheck';
export { DEVICES, DEVICE_HELP, useDevice, currentDevice, describeDevice, type Device, type DeviceInfo } from './device';
export { WebgpuUnavailableError, WebgpuMemoryError, WebgpuKernelError, type WebgpuMissing } from './webgpu/errors';
export { SWIFTSHADER_ICD, isSoftwareAdapter, type WebgpuAdapterInfo } from './webgpu/adapter';
export { webgpuCounters, countWebgpu, traceWebgpu, webgpuFeatures, loseWebgpuDevice } from './webgpu/device';
export { countersSince, type WebgpuCounters } from './webgpu/counters';
export type { WebgpuOptions } from './webgpu/runtime';

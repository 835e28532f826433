/**
 * @apertus/tensor/testing — what the tests of packages that extend the compute layer share with
 * tensor's own: deterministic random arrays, error bounds of float32 operations and the checks
 * built on them, and the webgpu test setup (SwiftShader's Vulkan driver when none is named; a
 * missing driver fails the test, it never skips). Imports vitest: for test files only.
 * @packageDocumentation
 */
export { expectWithin, randomF32, randomI32, Rounded, SLACK, sumErrorBound, treeSumBound, U32 } from './kernels/float-testing';
export { expectAllRanIn } from './kernels/gpujs/testing';
export { useSwiftshaderUnlessDriverNamed, webgpuForSuite } from './webgpu/testing';
export { expectClose, expectGrads } from './ops/test-util';

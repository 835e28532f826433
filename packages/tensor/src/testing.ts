/**
 * @apertus/tensor/testing — what the tests of packages that extend the compute layer share with
 * tensor's own: deterministic random arrays, error bounds of float32 operations and the checks
 * built on them, and the webgpu test setup (SwiftShader's Vulkan driver when none is named; a
 * missing driver fails the test, it never skips). Imports vitest: for test files only.
 * @packageDocumentation
 */
export {
  expectAllRanIn, expectWithin, randomF32, randomI32, SLACK, sumErrorBound, U32, useSwiftshaderUnlessDriverNamed, webgpuKernelsForSuite,
} from './kernels/gpujs/testing';
export { expectClose, expectGrads } from './ops/test-util';

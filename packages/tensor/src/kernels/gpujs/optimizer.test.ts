// The gradient-norm kernels (sumSquares, scaleBy) in gpu.js's `webgpu` mode against the reference
// kernels, over random sizes, within bounds derived from their float32 operations.
// Runs on SwiftShader without a GPU; a missing driver fails the test, never skips it.
import fc from 'fast-check';
import { describe, it } from 'vitest';
import { kernelSet } from '../types';
import { SUM_SQUARES_CHUNK } from './optimizer';
import { SLACK, U32, expectAllRanIn, expectWithin, randomF32, useSwiftshaderUnlessDriverNamed, webgpuKernelsForSuite } from './testing';

const jsKernels = kernelSet('reference');

useSwiftshaderUnlessDriverNamed();

/**
 * Relative error of one WGSL float32 operation (WGSL spec, "Floating point accuracy"): +, −, ×
 * are correctly rounded (U32); ÷ is within 2.5 ulp (ulp = 2·U32); sqrt is inherited from
 * 1/inverseSqrt (2 ulp, then the division).
 */

const NUM_RUNS = 12;

describe('gradient-norm kernels in webgpu mode', { timeout: 600_000 }, () => {
  const kernels = webgpuKernelsForSuite();

  it('sumSquares accumulates across tensors within its summation bound; scaleBy rounds once', async () => {
    await fc.assert(fc.asyncProperty(fc.array(fc.integer({ min: 1, max: 3000 }), { minLength: 1, maxLength: 4 }), fc.nat(), fc.double({ min: 0.01, max: 1, noNaN: true }), async (sizes, seed, s) => {
      const acc = new Float32Array(1);
      let exact = 0;
      let depth = 0;
      for (const [k, n] of sizes.entries()) {
        const x = randomF32(n, seed + k);
        await kernels().sumSquares(x, k === 0 ? null : acc, acc);
        for (const v of x) exact += v * v;
        // Each square rounds once; a partial sum adds ≤ CHUNK terms, the total ≤ parts + 1 more.
        depth = Math.max(depth, 1) + Math.ceil(n / SUM_SQUARES_CHUNK);
      }
      const bound = SLACK * (1 + SUM_SQUARES_CHUNK + depth) * U32 * exact;
      expectWithin(acc, [exact], [bound], 'sumSquares');
      const x = randomF32(sizes[0]!, seed);
      const got = x.slice();
      const want = x.slice();
      await kernels().scaleBy(got, Math.fround(s), got);
      jsKernels.scaleBy(want, Math.fround(s), want);
      expectWithin(got, want, Float64Array.from(want, (w) => U32 * Math.abs(w)), 'scaleBy');
    }), { numRuns: NUM_RUNS });
  });

  it('every kernel ran in webgpu', () => {
    expectAllRanIn(kernels(), 'webgpu', 3);
  });
});

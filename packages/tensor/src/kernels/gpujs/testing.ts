/**
 * Test helpers for the gpu.js kernel tests (not part of the package API): the float helpers of
 * `../float-testing.ts` and the check that every kernel ran in the mode asked for.
 */
import { expect } from 'vitest';

export { randomF32, randomI32, expectClose, U32, SLACK, sumErrorBound, expectWithin } from '../float-testing';

/**
 * Assert that every kernel a kernel set has built ran in `mode` (no silent fallback), and that
 * there were at least `min` of them. Call it as the last test of a describe block.
 */
export function expectAllRanIn(ks: { builtKernels(): Record<string, string> }, mode: string, min = 1): void {
  const modes = Object.entries(ks.builtKernels());
  expect(modes.length).toBeGreaterThanOrEqual(min);
  for (const [key, m] of modes) expect(m, key).toBe(mode);
}

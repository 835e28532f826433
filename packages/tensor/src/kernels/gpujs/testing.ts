/**
 * Test helpers for the gpu.js kernel tests (not part of the package API): deterministic random
 * buffers, elementwise closeness checks with a useful failure message, and the float32 rounding
 * error bounds the property tests compare against.
 */
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, expect } from 'vitest';
import { type WebgpuKernelSet, createWebgpuKernels } from './index';
import { SWIFTSHADER_ICD } from './webgpu';

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

/**
 * For the webgpu tests: run on SwiftShader's Vulkan driver (Debian package `chromium`) unless the
 * environment already names a driver (VK_ICD_FILENAMES / VK_DRIVER_FILES, e.g. a real GPU's).
 * Call before the first adapter request: the Vulkan loader reads these once per process.
 */
export function useSwiftshaderUnlessDriverNamed(): void {
  if (process.env.VK_ICD_FILENAMES === undefined && process.env.VK_DRIVER_FILES === undefined && existsSync(SWIFTSHADER_ICD)) {
    process.env.VK_ICD_FILENAMES = SWIFTSHADER_ICD;
  }
  process.env.XDG_RUNTIME_DIR ??= '/tmp';
}

/**
 * The `webgpu` kernel set of a describe block: created before its tests (on SwiftShader unless a
 * driver is named), disposed after them. Call inside the block; the getter returns the set.
 */
export function webgpuKernelsForSuite(): () => WebgpuKernelSet {
  useSwiftshaderUnlessDriverNamed();
  let ks: WebgpuKernelSet | undefined;
  beforeAll(async () => {
    ks = await createWebgpuKernels();
  }, 120_000);
  afterAll(async () => {
    await ks?.dispose();
  });
  return () => ks!;
}

/**
 * Test helpers of device `webgpu` (not part of the package API): run on SwiftShader's Vulkan
 * driver (Debian package `chromium`) unless the environment names a driver.
 */
import { existsSync } from 'node:fs';
import { SWIFTSHADER_ICD } from './adapter';

/**
 * Run on SwiftShader unless VK_ICD_FILENAMES / VK_DRIVER_FILES name a driver (a real GPU's). Call
 * before the first adapter request: the Vulkan loader reads these once per process. A machine
 * without the driver then fails the tests with what to install (never a skip).
 */
export function useSwiftshaderUnlessDriverNamed(): void {
  if (process.env.VK_ICD_FILENAMES === undefined && process.env.VK_DRIVER_FILES === undefined && existsSync(SWIFTSHADER_ICD)) {
    process.env.VK_ICD_FILENAMES = SWIFTSHADER_ICD;
  }
  process.env.XDG_RUNTIME_DIR ??= '/tmp';
}

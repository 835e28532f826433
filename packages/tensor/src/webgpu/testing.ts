/**
 * Test helpers of device `webgpu` (not part of the package API): run on SwiftShader's Vulkan
 * driver (Debian package `chromium`) unless the environment names a driver.
 */
import { existsSync } from 'node:fs';
import { afterAll, beforeAll } from 'vitest';
import { SWIFTSHADER_ICD } from './adapter';
import { WebgpuContext } from './kernel';
import { WebgpuRuntime, type WebgpuOptions } from './runtime';
import { DeviceStorage } from './storage';

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

/**
 * A webgpu device of its own for a describe block (created before its tests on SwiftShader unless
 * a driver is named, disposed after them), apart from the one `useDevice` starts: `ctx()` is its
 * kernel context, `run(f)` a kernel of the form `(ctx, ...args)` recorded on it, `host(...a)`
 * reads kernel outputs back into their arrays.
 */
export function webgpuForSuite(options: WebgpuOptions = {}): {
  ctx: () => WebgpuContext;
  run: <A extends unknown[]>(f: (ctx: WebgpuContext, ...args: A) => void) => (...args: A) => void;
  host: (...a: ArrayBufferView[]) => void;
} {
  useSwiftshaderUnlessDriverNamed();
  let ctx: WebgpuContext | undefined;
  beforeAll(async () => {
    const rt = await WebgpuRuntime.start(options);
    ctx = new WebgpuContext(rt, new DeviceStorage(rt));
  }, 120_000);
  afterAll(() => ctx?.rt.dispose());
  return {
    ctx: () => ctx!,
    run: (f) => (...args) => ctx!.record(f)(...args),
    host: (...a) => { for (const v of a) ctx!.st.toHost(v); },
  };
}

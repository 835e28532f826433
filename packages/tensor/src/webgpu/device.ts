/**
 * Starting the webgpu device: the runtime (its device thread and `GPUDevice`), the buffer table
 * installed as the tensors' residency, and the kernel context every registration (`onWebgpu`)
 * records on. One device per process at a time; a lost device is replaced by a new one on the
 * next start, and what lived only on the lost one is gone (reading it throws `device-lost`).
 */
import { webgpuStarted } from '../device-hooks';
import { setKernelDevice } from '../registry';
import { installResidency } from '../residency';
import { adapterName } from './adapter';
import { countersSince, zeroCounters, type WebgpuCounters } from './counters';
import { WebgpuContext } from './kernel';
import { WebgpuRuntime, type WebgpuOptions } from './runtime';
import { DeviceStorage } from './storage';

let running: { readonly ctx: WebgpuContext; readonly adapter: string } | null = null;

/**
 * Start the webgpu device (or take the running one) and, with `select` (default), run every op
 * there (`useDevice('webgpu')` calls this). Returns the adapter's name. Throws
 * `WebgpuUnavailableError` naming what is missing (the `webgpu` package, the Vulkan loader or
 * driver, an adapter).
 */
export async function enableWebgpu(options: WebgpuOptions & { readonly select?: boolean } = {}): Promise<string> {
  if (running === null || running.ctx.rt.lost) {
    const old = running;
    const rt = await WebgpuRuntime.start(options);
    const st = new DeviceStorage(rt, old?.ctx.st ?? null);
    const ctx = new WebgpuContext(rt, st);
    old?.ctx.rt.dispose();
    running = { ctx, adapter: adapterName(rt.adapter) };
    installResidency(st);
    webgpuStarted(ctx);
  }
  if (options.select ?? true) setKernelDevice('webgpu', running.adapter);
  return running.adapter;
}

/** What the webgpu device did so far (zeros before it starts): uploads, readbacks, dispatches, pipeline builds… */
export function webgpuCounters(): WebgpuCounters {
  return running?.ctx.rt.counters() ?? zeroCounters();
}

/** What `f` made the webgpu device do (the difference of the counters around it), and its result. */
export function countWebgpu<T>(f: () => T): { readonly result: T; readonly counters: WebgpuCounters } {
  const before = webgpuCounters();
  const result = f();
  return { result, counters: countersSince(before, webgpuCounters()) };
}

/**
 * What `f` made the webgpu device do, as `countWebgpu`, and its uploads in order, each named by
 * what went up (`token ids`, `kernel parameters`, a weight's name...): budget tests list the ones
 * they expect.
 */
export function traceWebgpu<T>(f: () => T): { readonly result: T; readonly counters: WebgpuCounters; readonly uploads: readonly { readonly what: string; readonly bytes: number }[] } {
  const rt = running?.ctx.rt;
  if (rt === undefined) return { ...countWebgpu(f), uploads: [] };
  const before = webgpuCounters();
  const { result, uploads } = rt.traceUploads(f);
  return { result, counters: countersSince(before, webgpuCounters()), uploads };
}

/** The running device's kernel context, or null (tests, benchmarks). */
export function webgpuContext(): WebgpuContext | null {
  return running?.ctx ?? null;
}

/** The adapter's features the device uses ('shader-f16', 'subgroups'), empty before it starts. */
export function webgpuFeatures(): readonly string[] {
  return running === null ? [] : [...running.ctx.rt.features];
}

/**
 * Destroy the device as a driver reset would (tests of the lost-device path): later work on it
 * throws `WebgpuUnavailableError` with `missing: 'device-lost'`, and the next `enableWebgpu`
 * starts a new device.
 */
export function loseWebgpuDevice(): void {
  running?.ctx.rt.loseDevice();
}

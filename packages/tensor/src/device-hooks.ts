/**
 * How packages bring their own kernels to the webgpu device: `onWebgpu(register)` runs `register`
 * when the device starts (or at once, if it has started) with the device's kernel context, where
 * WGSL kernels are recorded (`wgsl` of `@apertus/tensor/kernels` has what they are written with).
 * `register` calls `defineKernel(op, { device: 'webgpu', impl: 'wgsl', run: gpu.record(f) })`.
 * Kept apart from the device's runtime so that registering starts nothing.
 */
import type { WebgpuContext } from './webgpu/kernel';

/** What the webgpu device hands to kernel registrations when it starts: its kernel context. */
export type WebgpuKernelApi = WebgpuContext;

const hooks: ((api: WebgpuKernelApi) => void)[] = [];
let started: WebgpuKernelApi | null = null;

/** Run `register` with the webgpu device's kernel context when the device starts (now, if it has; again for a new device). */
export function onWebgpu(register: (api: WebgpuKernelApi) => void): void {
  hooks.push(register);
  if (started !== null) register(started);
}

/** The webgpu device started with `api`: run every hook (internal: called by the device's start). */
export function webgpuStarted(api: WebgpuKernelApi): void {
  started = api;
  for (const h of hooks) h(api);
}

/** The device's kernel context while it runs, else null (internal). */
export function startedWebgpu(): WebgpuKernelApi | null {
  return started;
}

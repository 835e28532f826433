/**
 * The device every op of the backend registry runs on, chosen once per process: `cpu` (the
 * default: WebAssembly SIMD kernels where there are some, the TypeScript reference elsewhere) or
 * `webgpu` (gpu.js kernels in `webgpu` mode, see `enableWebgpu`). This is the one definition the
 * apps' `--device` flag is built from.
 *
 * `webgpu` loads the optional gpu.js entry lazily, so the main entry never loads gpu.js; when it
 * or the `webgpu` package is missing, or there is no adapter, `useDevice` throws
 * `WebgpuUnavailableError` naming the missing piece and what to install.
 */
import { setBackend } from './backend';
import { BackendError } from './errors';
import { INSTALL_PACKAGES, WebgpuUnavailableError } from './kernels/gpujs/webgpu';

/** The devices `useDevice` accepts (the choices of the apps' `--device` flag). */
export const DEVICES = ['cpu', 'webgpu'] as const;

/** A device name. */
export type Device = (typeof DEVICES)[number];

/** The help text of the apps' `--device` flag. */
export const DEVICE_HELP = "where the ops run: 'cpu', or 'webgpu' (gpu.js WebGPU kernels; needs gpu.js, webgpu and a Vulkan driver)";

/** The device in use and what it runs on. */
export interface DeviceInfo {
  /** `cpu` or `webgpu`. */
  readonly device: Device;
  /** The GPU adapter (`google swiftshader ...`, `nvidia ...`); null on `cpu`. */
  readonly adapter: string | null;
}

let current: DeviceInfo = { device: 'cpu', adapter: null };
/** What `enableWebgpu` hands over for packages' own kernel ops (see `webgpuKernelApi`). */
let webgpuApi: unknown = null;

/** The device selected by the last `useDevice` or `enableWebgpu()` (initially `cpu`). */
export function currentDevice(): DeviceInfo {
  return current;
}

/**
 * Backend `webgpu` now runs every op (`enableWebgpu` selected it, directly or through
 * `useDevice('webgpu')`): the current device becomes `webgpu`, and `api` what `webgpuKernelApi`
 * returns. Internal to @apertus/tensor (not exported from the main entry).
 */
export function noteWebgpuSelected(adapter: string, api: unknown): void {
  current = { device: 'webgpu', adapter };
  webgpuApi = api;
}

/**
 * What a package needs to run its own gpu.js kernel ops on backend `webgpu` — `runWebgpuOp`,
 * `call`, `into`, `kept`, `inp`, `HostTable` of `@apertus/tensor/gpujs` — once backend `webgpu`
 * has been selected (`useDevice('webgpu')` or `enableWebgpu()`), else null. It lets a package run
 * such ops synchronously while the device is `webgpu` without importing the optional gpu.js
 * entry (and gpu.js) for its users who stay on `cpu`. Type it at the use site as `WebgpuKernelApi`
 * (a type-only import from `@apertus/tensor/gpujs`).
 */
export function webgpuKernelApi(): unknown {
  return webgpuApi;
}

/** `device cpu` or `device webgpu (google swiftshader ...)`: how progress lines and /health name it. */
export function describeDevice(info: DeviceInfo = current): string {
  return info.adapter === null ? info.device : `${info.device} (${info.adapter})`;
}

/**
 * Run every op of the registry on `device`: `cpu` restores the default choice per op; `webgpu`
 * starts the gpu.js webgpu kernels (a worker thread owning the GPU) and selects them for every op
 * they implement. Throws `WebgpuUnavailableError` naming what is missing.
 */
export async function useDevice(device: Device): Promise<DeviceInfo> {
  if (device === 'cpu') {
    setBackend('js');
    setBackend('cpu');
    current = { device, adapter: null };
    return current;
  }
  if (device !== 'webgpu') throw new BackendError(`unknown device '${String(device)}' (expected ${DEVICES.join(' or ')})`);
  if (current.device === 'webgpu') {
    setBackend('webgpu');
    return current;
  }
  let gpujs: typeof import('./gpujs');
  try {
    // A variable specifier keeps bundlers (a browser build of the main entry) from following the
    // Node-only gpu.js entry; the package resolves its own `./gpujs` export.
    const entry = '@apertus/tensor/gpujs';
    gpujs = (await import(entry)) as typeof import('./gpujs');
  } catch (e) {
    throw new WebgpuUnavailableError('webgpu-package', `the optional gpu.js kernels cannot be loaded (${e instanceof Error ? e.message : String(e)})`,
      INSTALL_PACKAGES, e);
  }
  // Selecting backend webgpu makes it the current device (`noteWebgpuSelected`).
  await gpujs.enableWebgpu();
  return current;
}

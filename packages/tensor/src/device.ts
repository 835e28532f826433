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
/** The `@apertus/tensor/gpujs` entry once `useDevice('webgpu')` has loaded it. */
let gpujsModule: unknown = null;

/** The device selected by the last `useDevice` (initially `cpu`). */
export function currentDevice(): DeviceInfo {
  return current;
}

/**
 * The `@apertus/tensor/gpujs` entry (its module namespace) once `useDevice('webgpu')` has loaded
 * it, else null. Packages that bring their own gpu.js kernel ops (`runWebgpuOp`, `call`, `inp`...)
 * take the runtime from here while the device is `webgpu`, synchronously, without importing the
 * optional entry (and gpu.js) for users who stay on `cpu`. Type it at the use site with
 * `typeof import('@apertus/tensor/gpujs')` (a type-only import).
 */
export function loadedGpujsEntry(): unknown {
  return gpujsModule;
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
  const info = await gpujs.enableWebgpu();
  gpujsModule = gpujs;
  current = { device, adapter: info.adapter };
  return current;
}

/**
 * The device every op of the registry runs on, chosen once per process: `cpu` (the default:
 * WebAssembly SIMD kernels where there are some, the TypeScript reference elsewhere) or `webgpu`
 * (the webgpu kernels, see `enableWebgpu`). This is the one definition the apps' `--device` flag
 * is built from.
 *
 * `webgpu` loads the optional gpu.js entry lazily, so the main entry never loads gpu.js; when it
 * or the `webgpu` package is missing, or there is no adapter, `useDevice` throws
 * `WebgpuUnavailableError` naming the missing piece and what to install.
 */
import { DEVICES, type Device } from './device-name';
import { BackendError } from './errors';
import { kernelDevice, setKernelDevice } from './registry';
import { INSTALL_PACKAGES, WebgpuUnavailableError } from './kernels/gpujs/webgpu';

export { DEVICES, type Device } from './device-name';

/** The help text of the apps' `--device` flag. */
export const DEVICE_HELP = "where the ops run: 'cpu', or 'webgpu' (WebGPU kernels; needs gpu.js, webgpu and a Vulkan driver)";

/** The device in use and what it runs on. */
export interface DeviceInfo {
  /** `cpu` or `webgpu`. */
  readonly device: Device;
  /** The GPU adapter (`google swiftshader ...`, `nvidia ...`); null on `cpu`. */
  readonly adapter: string | null;
}

let current: DeviceInfo = { device: 'cpu', adapter: null };

/** The device selected by the last `useDevice` or `enableWebgpu` (initially `cpu`). */
export function currentDevice(): DeviceInfo {
  const k = kernelDevice();
  if (k.device !== current.device || k.adapter !== current.adapter) current = { device: k.device, adapter: k.adapter };
  return current;
}

/** `device cpu` or `device webgpu (google swiftshader ...)`: how progress lines and /health name it. */
export function describeDevice(info: DeviceInfo = currentDevice()): string {
  return info.adapter === null ? info.device : `${info.device} (${info.adapter})`;
}

/**
 * Run every op of the registry on `device` (and undo `selectKernels`): `cpu` at once; `webgpu`
 * first starts the webgpu kernels (once per process). Throws `WebgpuUnavailableError` naming
 * what is missing, `BackendError` for an unknown device.
 */
export async function useDevice(device: Device): Promise<DeviceInfo> {
  if (!(DEVICES as readonly string[]).includes(device)) throw new BackendError(`unknown device '${String(device)}' (expected ${DEVICES.join(' or ')})`);
  if (device === 'cpu') {
    setKernelDevice('cpu');
    return currentDevice();
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
  await gpujs.enableWebgpu();
  return currentDevice();
}

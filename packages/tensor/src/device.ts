/**
 * The device every op of the registry runs on, chosen once per process: `cpu` (the default:
 * WebAssembly SIMD kernels where there are some, the TypeScript reference elsewhere) or `webgpu`
 * (WGSL kernels on a GPU, see `webgpu/`). This is the one definition the apps' `--device` flag
 * is built from.
 *
 * `webgpu` starts a device thread that loads the optional `webgpu` package (Dawn) in Node, or
 * uses the browser's `navigator.gpu`; when it is missing, or there is no adapter, `useDevice`
 * throws `WebgpuUnavailableError` naming the missing piece and what to install.
 */
import { DEVICES, type Device } from './device-name';
import { BackendError } from './errors';
import { kernelDevice, setKernelDevice } from './registry';
import { enableWebgpu } from './webgpu/device';
import type { WebgpuOptions } from './webgpu/runtime';

export { DEVICES, type Device } from './device-name';

/** The help text of the apps' `--device` flag. */
export const DEVICE_HELP = "where the ops run: 'cpu', or 'webgpu' (WGSL kernels on a GPU; in Node needs the webgpu package and a Vulkan driver)";

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
 * first starts the webgpu device (once per process, again after it was lost; `options`: its
 * memory budget, optional features, limits). Throws `WebgpuUnavailableError` naming what is
 * missing, `BackendError` for an unknown device.
 */
export async function useDevice(device: Device, options: WebgpuOptions = {}): Promise<DeviceInfo> {
  if (!(DEVICES as readonly string[]).includes(device)) throw new BackendError(`unknown device '${String(device)}' (expected ${DEVICES.join(' or ')})`);
  if (device === 'cpu') {
    setKernelDevice('cpu');
    return currentDevice();
  }
  await enableWebgpu(options);
  return currentDevice();
}

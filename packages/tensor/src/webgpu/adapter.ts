/**
 * What the device thread says about its adapter, and why there is none. In a browser
 * `navigator.gpu` exists. In Node it comes from the optional `webgpu` package (Dawn), which needs
 * a Vulkan loader (`libvulkan.so.1`) and a Vulkan driver (an ICD JSON file: the GPU vendor's, or
 * SwiftShader's CPU driver from Debian's `chromium` package via `VK_ICD_FILENAMES`). Each missing
 * piece is a `WebgpuUnavailableError` naming it and what to install.
 */
import { isNode, nodeBuiltin } from '../host';
import { WebgpuUnavailableError } from './errors';

/** Debian's `chromium` package ships SwiftShader's Vulkan driver here (a CPU implementation, for correctness only). */
export const SWIFTSHADER_ICD = '/usr/lib/chromium/vk_swiftshader_icd.json';

/** The npm package (and version) device `webgpu` needs in Node. */
export const INSTALL_PACKAGES = 'npm install webgpu@0.6.2 (Dawn for Node)';

/** What the adapter says about itself (`GPUAdapterInfo`). */
export interface WebgpuAdapterInfo {
  readonly vendor: string;
  readonly architecture: string;
  readonly device: string;
  readonly description: string;
}

/** A one-line name for an adapter: `google swiftshader`, `nvidia ...`. */
export function adapterName(info: WebgpuAdapterInfo): string {
  return [info.vendor, info.architecture, info.device, info.description].filter((s) => s !== '').join(' ') || 'unknown adapter';
}

/** Whether an adapter is a CPU implementation (SwiftShader): its figures are correctness-only. */
export function isSoftwareAdapter(info: WebgpuAdapterInfo): boolean {
  return /swiftshader|llvmpipe|lavapipe|warp/i.test(adapterName(info));
}

/** Why the device thread got no adapter: the `webgpu` package, then the Vulkan loader, then the drivers (Linux only). */
export function diagnoseNoAdapter(detail: string, missingPackage = false): WebgpuUnavailableError {
  if (missingPackage) return new WebgpuUnavailableError('webgpu-package', `the optional 'webgpu' package (Dawn for Node) cannot be loaded (${detail})`, INSTALL_PACKAGES);
  const why = `no WebGPU adapter (${detail})`;
  if (!isNode) {
    return new WebgpuUnavailableError('adapter', `${why} from the browser's navigator.gpu`, 'enable WebGPU in the browser (Chromium without a GPU: --enable-unsafe-webgpu --enable-features=Vulkan --use-angle=swiftshader --enable-unsafe-swiftshader)');
  }
  if (process.platform !== 'linux') {
    return new WebgpuUnavailableError('adapter', why, 'install or update the GPU driver (Dawn uses Metal on macOS, D3D12 on Windows)');
  }
  if (!vulkanLoaderPresent()) {
    return new WebgpuUnavailableError('vulkan-loader', `${why}: no Vulkan loader (libvulkan.so.1) on the library path`, 'install the Vulkan loader (Debian/Ubuntu: apt install libvulkan1)');
  }
  const named = (process.env.VK_DRIVER_FILES ?? process.env.VK_ICD_FILENAMES ?? '').split(':').filter((f) => f !== '');
  const withoutGpu = `without a GPU: apt install chromium and set VK_ICD_FILENAMES=${SWIFTSHADER_ICD} (SwiftShader, a CPU driver: correct but slow)`;
  if (named.length > 0) {
    const absent = named.filter((f) => !nodeFs().existsSync(f));
    if (absent.length === named.length) {
      return new WebgpuUnavailableError('vulkan-driver', `${why}: no Vulkan driver: VK_ICD_FILENAMES names ${absent.join(', ')}, which does not exist`,
        `point VK_ICD_FILENAMES at your GPU vendor's ICD JSON, or ${withoutGpu}`);
    }
  } else if (systemIcds().length === 0) {
    return new WebgpuUnavailableError('vulkan-driver', `${why}: no Vulkan driver (no ICD JSON in ${ICD_DIRS.join(', ')})`, `install your GPU vendor's Vulkan driver, or ${withoutGpu}`);
  }
  return new WebgpuUnavailableError('adapter', `${why}: the Vulkan drivers found (${named.length > 0 ? named.join(', ') : systemIcds().join(', ')}) give Dawn no adapter`,
    `use a driver with Vulkan 1.1 and the features Dawn requires (Debian 12's Mesa lavapipe is too old), or ${withoutGpu}`);
}

/** The error for a lost device (a driver reset or crash, an out-of-memory kill, or `device.destroy()`). */
export function deviceLostError(detail: string): WebgpuUnavailableError {
  return new WebgpuUnavailableError('device-lost', `the WebGPU device was lost (${detail})`,
    "select the device again (useDevice('webgpu') starts a new one; tensors that lived on the lost one are gone)");
}

/** Node's `fs`: the diagnosis runs only where the host is Node. */
function nodeFs(): typeof import('node:fs') {
  return nodeBuiltin<typeof import('node:fs')>('node:fs')!;
}

const ICD_DIRS = ['/etc/vulkan/icd.d', '/usr/share/vulkan/icd.d', '/usr/local/share/vulkan/icd.d'];

function systemIcds(): string[] {
  const found: string[] = [];
  for (const dir of ICD_DIRS) {
    try {
      for (const f of nodeFs().readdirSync(dir)) if (f.endsWith('.json')) found.push(`${dir}/${f}`);
    } catch {
      // A missing directory holds no drivers.
    }
  }
  return found;
}

function vulkanLoaderPresent(): boolean {
  const dirs = [
    ...(process.env.LD_LIBRARY_PATH ?? '').split(':').filter((d) => d !== ''),
    '/lib/x86_64-linux-gnu', '/usr/lib/x86_64-linux-gnu', '/lib/aarch64-linux-gnu', '/usr/lib/aarch64-linux-gnu',
    '/lib64', '/usr/lib64', '/lib', '/usr/lib', '/usr/local/lib',
  ];
  return dirs.some((d) => nodeFs().existsSync(`${d}/libvulkan.so.1`));
}

/**
 * Getting a WebGPU adapter for gpu.js's `webgpu` mode, and saying precisely why there is none.
 *
 * In a browser `navigator.gpu` exists. In Node it comes from the optional `webgpu` package
 * (Dawn), which needs a Vulkan loader (`libvulkan.so.1`) and a Vulkan driver (an ICD JSON file:
 * the GPU vendor's, or SwiftShader's CPU driver from Debian's `chromium` package via
 * `VK_ICD_FILENAMES`). Each missing piece is reported as a `WebgpuUnavailableError` naming it
 * and what to install.
 */
import { isNode, nodeBuiltin } from '../../host';
import { GpujsBackendError } from './errors';

/** Which piece is missing when no WebGPU adapter can be had. */
export type WebgpuMissing = 'webgpu-package' | 'vulkan-loader' | 'vulkan-driver' | 'adapter' | 'device-lost';

/** Debian's `chromium` package ships SwiftShader's Vulkan driver here (a CPU implementation, for correctness only). */
export const SWIFTSHADER_ICD = '/usr/lib/chromium/vk_swiftshader_icd.json';

/** The npm packages (and versions) the `webgpu` mode needs in Node. */
export const INSTALL_PACKAGES = 'npm install gpu.js@2.24.1 webgpu@0.6.2 (with "overrides": { "webgpu": "0.6.2" }: gpu.js pins webgpu 0.2.9, whose Dawn binary needs GLIBCXX_3.4.32)';

/** No WebGPU adapter (or device) is available; `missing` names the piece and `install` what to do about it. */
export class WebgpuUnavailableError extends GpujsBackendError {
  readonly missing: WebgpuMissing;
  readonly install: string;

  constructor(missing: WebgpuMissing, detail: string, install: string, cause?: unknown) {
    super({ requestedMode: 'webgpu', reason: `${detail}; ${install}`, cause });
    this.missing = missing;
    this.install = install;
  }
}

/** What the adapter says about itself (`GPUAdapterInfo`). */
export interface WebgpuAdapterInfo {
  readonly vendor: string;
  readonly architecture: string;
  readonly device: string;
  readonly description: string;
}

interface GpuLike {
  requestAdapter(): Promise<{ info?: Partial<WebgpuAdapterInfo> } | null>;
}

/**
 * Make `navigator.gpu` exist (in Node, from the `webgpu` package), request an adapter, and
 * return what it reports. Throws `WebgpuUnavailableError` naming the missing piece.
 */
export async function requestWebgpuAdapter(): Promise<WebgpuAdapterInfo> {
  const gpu = await navigatorGpu();
  let adapter: Awaited<ReturnType<GpuLike['requestAdapter']>>;
  try {
    adapter = await gpu.requestAdapter();
  } catch (e) {
    throw diagnose(e);
  }
  if (adapter === null) throw diagnose();
  const info = adapter.info ?? {};
  return { vendor: info.vendor ?? '', architecture: info.architecture ?? '', device: info.device ?? '', description: info.description ?? '' };
}

/** A one-line name for an adapter: `google swiftshader`, `nvidia ...`. */
export function adapterName(info: WebgpuAdapterInfo): string {
  return [info.vendor, info.architecture, info.device, info.description].filter((s) => s !== '').join(' ') || 'unknown adapter';
}

/** gpu.js's message when the shared device died; turned into `missing: 'device-lost'`. */
export function isDeviceLost(e: unknown): boolean {
  return /device (was )?lost/i.test(e instanceof Error ? e.message : String(e));
}

/** The error for a lost device (a driver reset or crash, or `device.destroy()`). */
export function deviceLostError(cause: unknown): WebgpuUnavailableError {
  return new WebgpuUnavailableError('device-lost', 'the WebGPU device was lost',
    'create a new kernel set with createWebgpuKernels() (a driver reset or an out-of-memory kill of the GPU process also causes this)', cause);
}

async function navigatorGpu(): Promise<GpuLike> {
  const g = globalThis as { navigator?: { gpu?: GpuLike } };
  if (g.navigator?.gpu) return g.navigator.gpu;
  if (typeof process === 'undefined' || process.versions?.node === undefined) {
    throw new WebgpuUnavailableError('adapter', 'this JavaScript runtime has no navigator.gpu', 'use a browser with WebGPU enabled');
  }
  // A variable specifier keeps bundlers from inlining the optional native package.
  const specifier = 'webgpu';
  let mod: { create(flags: string[]): GpuLike; globals: Record<string, unknown> };
  try {
    mod = (await import(specifier)) as typeof mod;
  } catch (e) {
    throw new WebgpuUnavailableError('webgpu-package', `the optional 'webgpu' package (Dawn for Node) cannot be loaded (${e instanceof Error ? e.message : String(e)})`, INSTALL_PACKAGES, e);
  }
  for (const [k, v] of Object.entries(mod.globals)) {
    if (!(k in globalThis)) (globalThis as Record<string, unknown>)[k] = v;
  }
  const gpu = mod.create([]);
  if (g.navigator === undefined) {
    Object.defineProperty(globalThis, 'navigator', { value: { gpu }, configurable: true, writable: true });
  } else {
    Object.defineProperty(g.navigator, 'gpu', { value: gpu, configurable: true });
  }
  return gpu;
}

/** Why `requestAdapter()` gave nothing: check the Vulkan loader, then the drivers (Linux only). */
function diagnose(cause?: unknown): WebgpuUnavailableError {
  const why = cause === undefined ? 'no WebGPU adapter' : `requestAdapter failed (${cause instanceof Error ? cause.message : String(cause)})`;
  if (!isNode) {
    return new WebgpuUnavailableError('adapter', `${why} from the browser's navigator.gpu`, 'enable WebGPU in the browser (Chromium without a GPU: --enable-unsafe-webgpu --enable-features=Vulkan --use-angle=swiftshader --enable-unsafe-swiftshader)', cause);
  }
  if (process.platform !== 'linux') {
    return new WebgpuUnavailableError('adapter', why, 'install or update the GPU driver (Dawn uses Metal on macOS, D3D12 on Windows)', cause);
  }
  if (!vulkanLoaderPresent()) {
    return new WebgpuUnavailableError('vulkan-loader', `${why}: no Vulkan loader (libvulkan.so.1) on the library path`,
      'install the Vulkan loader (Debian/Ubuntu: apt install libvulkan1)', cause);
  }
  const named = (process.env.VK_DRIVER_FILES ?? process.env.VK_ICD_FILENAMES ?? '').split(':').filter((f) => f !== '');
  const withoutGpu = `without a GPU: apt install chromium and set VK_ICD_FILENAMES=${SWIFTSHADER_ICD} (SwiftShader, a CPU driver: correct but slow)`;
  if (named.length > 0) {
    const absent = named.filter((f) => !nodeFs().existsSync(f));
    if (absent.length === named.length) {
      return new WebgpuUnavailableError('vulkan-driver', `${why}: no Vulkan driver: VK_ICD_FILENAMES names ${absent.join(', ')}, which does not exist`,
        `point VK_ICD_FILENAMES at your GPU vendor's ICD JSON, or ${withoutGpu}`, cause);
    }
  } else if (systemIcds().length === 0) {
    return new WebgpuUnavailableError('vulkan-driver', `${why}: no Vulkan driver (no ICD JSON in ${ICD_DIRS.join(', ')})`,
      `install your GPU vendor's Vulkan driver, or ${withoutGpu}`, cause);
  }
  return new WebgpuUnavailableError('adapter', `${why}: the Vulkan drivers found (${named.length > 0 ? named.join(', ') : systemIcds().join(', ')}) give Dawn no adapter`,
    `use a driver with Vulkan 1.1 and the features Dawn requires (Debian 12's Mesa lavapipe is too old), or ${withoutGpu}`, cause);
}

/** Node's `fs`: the diagnosis runs only where the host is Node (a page has navigator.gpu or nothing). */
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

/**
 * The typed errors of device `webgpu`: no adapter (and which piece is missing), a lost device,
 * memory that does not fit the device, and a kernel the device rejected.
 */
import { BackendError } from '../errors';

/** Which piece is missing when no WebGPU adapter can be had (or the device went away). */
export type WebgpuMissing = 'webgpu-package' | 'vulkan-loader' | 'vulkan-driver' | 'adapter' | 'device-lost';

/**
 * No WebGPU adapter (or device) is available: `missing` names the piece, `install` what to do about
 * it. A lost device (driver reset, `device.destroy()`, a GPU process killed) is `missing:
 * 'device-lost'`; the device is then gone for good and `useDevice('webgpu')` starts a new one.
 */
export class WebgpuUnavailableError extends BackendError {
  /** The missing piece. */
  readonly missing: WebgpuMissing;
  /** What to install or set. */
  readonly install: string;

  constructor(missing: WebgpuMissing, detail: string, install: string, cause?: unknown) {
    super(`webgpu: ${detail}; ${install}`);
    if (cause !== undefined) this.cause = cause;
    this.missing = missing;
    this.install = install;
  }
}

/**
 * Memory the device cannot give: `requested` bytes more while `inUse` bytes are held, against
 * `budget` (the device's memory budget, see `WebgpuOptions.memoryBytes`) — or a buffer or binding
 * larger than the adapter allows (`limit`). Thrown before anything of the request is uploaded.
 */
export class WebgpuMemoryError extends BackendError {
  constructor(
    /** What needed the memory (`model weights`, `KV cache`, a kernel's output…). */
    readonly what: string,
    /** Bytes requested. */
    readonly requested: number,
    /** Bytes already held on the device. */
    readonly inUse: number,
    /** The budget or limit that refused it. */
    readonly budget: number,
    detail = 'exceeds the device memory budget',
  ) {
    super(`webgpu: ${what} needs ${mib(requested)} with ${mib(inUse)} already on the device, which ${detail} of ${mib(budget)}`);
  }
}

/** A kernel the device rejected (a validation or shader compilation error), naming the kernel. */
export class WebgpuKernelError extends BackendError {
  constructor(readonly kernel: string, reason: string) {
    super(`webgpu kernel '${kernel}': ${reason}`);
  }
}

/** Bytes as MiB with two decimals (`1536.00 MiB`), for messages. */
export function mib(bytes: number): string {
  return `${(bytes / 2 ** 20).toFixed(2)} MiB`;
}

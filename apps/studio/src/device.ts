// Which device the tab computes on, said plainly. The model runs in a Web Worker: on WebGPU when
// the browser offers an adapter (and the page is cross-origin isolated, which the synchronous
// WebGPU kernels need for their SharedArrayBuffer), else on WebAssembly SIMD with its thread
// count — and then each reason for not using more is a visible notice.

/** The WebGPU adapter the browser offers (`vendor architecture description`), or null. */
export async function webgpuAdapter(): Promise<string | null> {
  interface GpuAdapterLike { info?: { vendor?: string; architecture?: string; description?: string } }
  const gpu = (navigator as { gpu?: { requestAdapter(): Promise<GpuAdapterLike | null> } }).gpu;
  try {
    const a = gpu ? await gpu.requestAdapter() : null;
    return a ? [a.info?.vendor, a.info?.architecture, a.info?.description].filter((s) => s).join(' ') || 'unnamed adapter' : null;
  } catch {
    return null;
  }
}

/** What the probe found and what the worker then did. */
export interface DeviceFacts {
  isolated: boolean;
  adapter: string | null;
  /** WebAssembly was asked for (`?device=wasm`). */
  forcedWasm: boolean;
  /** The worker runs on WebGPU. */
  webgpu: boolean;
  /** Why enabling WebGPU failed, if it was tried and failed. */
  webgpuError: string | null;
}

/** Whether to ask the worker for WebGPU. */
export const wantsWebgpu = (f: Omit<DeviceFacts, 'webgpu' | 'webgpuError'>): boolean => f.adapter !== null && f.isolated && !f.forcedWasm;

/** The visible notices: empty when the tab runs on WebGPU. */
export function deviceNotices(f: DeviceFacts): string[] {
  if (f.webgpu) return [];
  const notices: string[] = [];
  if (!f.isolated) notices.push('This page is not cross-origin isolated (COOP/COEP headers missing): no WebGPU, and WebAssembly runs on one thread, without Web Workers.');
  if (f.adapter === null) notices.push('No WebGPU adapter: computing on WebAssembly.');
  else if (f.forcedWasm) notices.push(`WebGPU adapter found (${f.adapter}), but WebAssembly was asked for (?device=wasm): computing on WebAssembly.`);
  else if (f.webgpuError !== null) notices.push(`WebGPU adapter found (${f.adapter}), but WebGPU failed to start (${f.webgpuError}): computing on WebAssembly.`);
  return notices;
}

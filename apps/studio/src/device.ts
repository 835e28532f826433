// Which device the tab computes on, said plainly: WebAssembly SIMD with its thread count, and why
// not more (no cross-origin isolation → one thread; a WebGPU adapter found but not used: the
// WebGPU kernels wait in Atomics.wait, which the page's main thread, where the model runs, may not).

import { gemmThreads } from '@apertus/tensor';

/** What the page shows about its device. */
export interface DeviceReport {
  /** The device the model runs on, e.g. `WebAssembly SIMD · 2 threads (Web Workers)`. */
  label: string;
  /** The WebGPU adapter the browser offers, if any (`vendor architecture`). */
  webgpuAdapter: string | null;
  /** Fallbacks, each a visible notice; empty when the tab runs on the best device it has. */
  notices: string[];
}

interface GpuAdapterLike { info?: { vendor?: string; architecture?: string; description?: string } }

/** Probe the browser and describe the device. */
export async function describeDevice(): Promise<DeviceReport> {
  const notices: string[] = [];
  const threads = gemmThreads();
  const isolated = globalThis.crossOriginIsolated === true;
  if (!isolated) notices.push('This page is not cross-origin isolated (COOP/COEP headers missing): WebAssembly runs on one thread, without Web Workers.');
  let webgpuAdapter: string | null = null;
  const gpu = (navigator as { gpu?: { requestAdapter(): Promise<GpuAdapterLike | null> } }).gpu;
  try {
    const a = gpu ? await gpu.requestAdapter() : null;
    if (a) webgpuAdapter = [a.info?.vendor, a.info?.architecture, a.info?.description].filter((s) => s).join(' ') || 'unnamed adapter';
  } catch {
    webgpuAdapter = null;
  }
  if (webgpuAdapter !== null) notices.push(`WebGPU adapter found (${webgpuAdapter}), but the studio computes on WebAssembly: its model runs on the page's thread, and the synchronous WebGPU kernels need a Web Worker.`);
  else notices.push('No WebGPU adapter: computing on WebAssembly.');
  const label = `WebAssembly SIMD · ${threads} thread${threads === 1 ? '' : 's'}${threads > 1 ? ' (Web Workers)' : ''}`;
  return { label, webgpuAdapter, notices };
}

// The test page's Web Worker (bundled for the browser): runs the shared workload on a device.
// `webgpu` needs a thread that may block (the synchronous kernels wait in Atomics.wait for the
// second worker, which owns gpu.js and the GPU device), which is why the workload runs here and
// not on the page's main thread.

import { setGemmThreads, useDevice } from '@apertus/tensor';
import { enableWebgpu, setGpujsScriptUrl } from '@apertus/tensor/gpujs';
import { gemmThreadsUsed, greedyTokens, trainingLosses } from './workload';

/** What the page posts: the workload and the device to run it on. */
export interface WorkerRequest {
  device: 'cpu' | 'webgpu';
  tokens: number;
  steps: number;
  seed: number;
  threads?: number;
}

/** What the worker posts back (or `{ error }`). */
export interface WorkerResult {
  tokens: number[];
  losses: number[];
  threads: number;
  workers: number;
  isolated: boolean;
  /** The backend's device line, e.g. `gpu.js webgpu (google swiftshader ...)`; `cpu` on cpu. */
  device: string;
}

self.onmessage = async (e: MessageEvent<WorkerRequest>) => {
  const { device, tokens, steps, seed, threads } = e.data;
  try {
    if (threads !== undefined) setGemmThreads(threads);
    let deviceLine = 'cpu';
    if (device === 'webgpu') {
      setGpujsScriptUrl('/gpu.js');
      deviceLine = (await enableWebgpu()).device;
    } else {
      await useDevice('cpu');
    }
    const config = await (await fetch('/config.json')).json();
    const generated = await greedyTokens(config, await fetch('/model.safetensors'), tokens);
    const losses = steps > 0 ? trainingLosses(steps, seed) : [];
    const result: WorkerResult = { tokens: generated, losses, ...gemmThreadsUsed(), isolated: crossOriginIsolated, device: deviceLine };
    postMessage(result);
  } catch (err) {
    postMessage({ error: err instanceof Error ? `${err.name}: ${err.message}` : String(err) });
  }
};

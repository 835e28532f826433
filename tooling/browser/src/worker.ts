// The test page's Web Worker (bundled for the browser): runs the shared workload on a device.
// `webgpu` needs a thread that may block (the synchronous kernels wait in Atomics.wait for the
// second worker, which owns gpu.js and the GPU device), which is why the workload runs here and
// not on the page's main thread.

import { setGemmThreads, useDevice } from '@apertus/tensor';
import { enableWebgpu, setGpujsScriptUrl, webgpuBuiltKernels } from '@apertus/tensor/gpujs';
import { gemmThreadsUsed, ggufGreedyTokens, greedyTokens, trainingLosses } from './workload';

/** What the page posts: the workload and the device to run it on. */
export interface WorkerRequest {
  device: 'cpu' | 'webgpu';
  tokens: number;
  steps: number;
  seed: number;
  threads?: number;
  /** GGUF files to generate from as well (paths on the page's server), `ggufTokens` tokens each. */
  gguf?: readonly string[];
  ggufTokens?: number;
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
  /** Greedy tokens of each requested GGUF file. */
  gguf: number[][];
  /** The gpu.js kernels built, by key, and the mode each ran in (webgpu only). */
  kernels: Record<string, string>;
}

self.onmessage = async (e: MessageEvent<WorkerRequest>) => {
  const { device, tokens, steps, seed, threads, gguf = [], ggufTokens = 0 } = e.data;
  try {
    if (threads !== undefined) setGemmThreads(threads);
    let deviceLine = 'cpu';
    if (device === 'webgpu') {
      setGpujsScriptUrl('/gpu.js');
      deviceLine = `webgpu (${await enableWebgpu()})`;
    } else {
      await useDevice('cpu');
    }
    const config = await (await fetch('/config.json')).json();
    const generated = await greedyTokens(config, await fetch('/model.safetensors'), tokens);
    const losses = steps > 0 ? trainingLosses(steps, seed) : [];
    const ggufGenerated: number[][] = [];
    for (const file of gguf) ggufGenerated.push(ggufGreedyTokens(new Uint8Array(await (await fetch(file)).arrayBuffer()), ggufTokens));
    const kernels = device === 'webgpu' ? webgpuBuiltKernels() : {};
    const result: WorkerResult = { tokens: generated, losses, ...gemmThreadsUsed(), isolated: crossOriginIsolated, device: deviceLine, gguf: ggufGenerated, kernels };
    postMessage(result);
  } catch (err) {
    postMessage({ error: err instanceof Error ? `${err.name}: ${err.message}` : String(err) });
  }
};

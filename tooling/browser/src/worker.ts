// The test page's Web Worker (bundled for the browser): runs the shared workload on a device.
// `webgpu` needs a thread that may block (reads from the device wait in Atomics.wait for the
// device's own worker, which drives the GPUDevice), which is why the workload runs here and not on
// the page's main thread.

import { describeDevice, setGemmThreads, useDevice, webgpuCounters, type WebgpuCounters } from '@apertus/tensor';
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
  /** The backend's device line, e.g. `webgpu (google swiftshader ...)`; `cpu` on cpu. */
  device: string;
  /** Greedy tokens of each requested GGUF file. */
  gguf: number[][];
  /** What the webgpu device did over the whole workload (zeros on cpu). */
  counters: WebgpuCounters;
}

self.onmessage = async (e: MessageEvent<WorkerRequest>) => {
  const { device, tokens, steps, seed, threads, gguf = [], ggufTokens = 0 } = e.data;
  try {
    if (threads !== undefined) setGemmThreads(threads);
    const deviceLine = describeDevice(await useDevice(device));
    const config = await (await fetch('/config.json')).json();
    const generated = await greedyTokens(config, await fetch('/model.safetensors'), tokens);
    const losses = steps > 0 ? trainingLosses(steps, seed) : [];
    const ggufGenerated: number[][] = [];
    for (const file of gguf) ggufGenerated.push(ggufGreedyTokens(new Uint8Array(await (await fetch(file)).arrayBuffer()), ggufTokens));
    const result: WorkerResult = { tokens: generated, losses, ...gemmThreadsUsed(), isolated: crossOriginIsolated, device: deviceLine, gguf: ggufGenerated, counters: webgpuCounters() };
    postMessage(result);
  } catch (err) {
    postMessage({ error: err instanceof Error ? `${err.name}: ${err.message}` : String(err) });
  }
};

// The test page's script (bundled for the browser): runs the shared workload on what the page's
// server hands out and leaves the result for the test to read — on the page's main thread, or in
// a Web Worker (`/worker.js`) on a chosen device.

import { setGemmThreads } from '@apertus/tensor';
import { gemmThreadsUsed, greedyTokens, trainingLosses } from './workload';
import type { WorkerRequest, WorkerResult } from './worker';

declare global {
  interface Window {
    /** Run the workload: greedy tokens from /config.json + /model.safetensors, and training losses. */
    runWorkload(o: { tokens: number; steps: number; seed: number; threads?: number }): Promise<{ tokens: number[]; losses: number[]; threads: number; workers: number; isolated: boolean }>;
    /** The same in a Web Worker on `device`. */
    runInWorker(o: WorkerRequest): Promise<WorkerResult>;
  }
}

window.runWorkload = async ({ tokens, steps, seed, threads }) => {
  if (threads !== undefined) setGemmThreads(threads);
  const config = await (await fetch('/config.json')).json();
  const generated = await greedyTokens(config, await fetch('/model.safetensors'), tokens);
  const losses = steps > 0 ? trainingLosses(steps, seed) : [];
  return { tokens: generated, losses, ...gemmThreadsUsed(), isolated: crossOriginIsolated };
};

window.runInWorker = (o) => new Promise((resolve, reject) => {
  const w = new Worker('/worker.js', { type: 'module' });
  w.onerror = (e) => reject(new Error(`worker: ${e.message}`));
  w.onmessage = (e: MessageEvent<WorkerResult | { error: string }>) => {
    w.terminate();
    if ('error' in e.data) reject(new Error(e.data.error));
    else resolve(e.data);
  };
  w.postMessage(o);
});

// The test page's script (bundled for the browser): runs the shared workload on what the page's
// server hands out and leaves the result for the test to read.

import { setGemmThreads } from '@apertus/tensor';
import { gemmThreadsUsed, greedyTokens, trainingLosses } from './workload';

declare global {
  interface Window {
    /** Run the workload: greedy tokens from /config.json + /model.safetensors, and training losses. */
    runWorkload(o: { tokens: number; steps: number; seed: number; threads?: number }): Promise<{ tokens: number[]; losses: number[]; threads: number; workers: number; isolated: boolean }>;
  }
}

window.runWorkload = async ({ tokens, steps, seed, threads }) => {
  if (threads !== undefined) setGemmThreads(threads);
  const config = await (await fetch('/config.json')).json();
  const generated = await greedyTokens(config, await fetch('/model.safetensors'), tokens);
  const losses = steps > 0 ? trainingLosses(steps, seed) : [];
  return { tokens: generated, losses, ...gemmThreadsUsed(), isolated: crossOriginIsolated };
};

/**
 * What device `webgpu` did, counted on the calling thread as the commands are recorded (so they
 * are the same on SwiftShader as on a GPU): the machine-independent budgets of a decode or
 * training step are asserted on differences of two snapshots.
 */
export interface WebgpuCounters {
  /** Host→device writes (`queue.writeBuffer`), each upload of a host array or a uniform block. */
  uploads: number;
  /** Their bytes (every byte that went up: tensor data, token ids, kernel parameters). */
  uploadBytes: number;
  /** Of `uploadBytes`, the kernel parameters (uniform blocks, each sent once per distinct content). */
  uniformBytes: number;
  /** Reads from the device: each one is a wait of the calling thread for the GPU. */
  readbacks: number;
  /** Bytes read back. */
  readbackBytes: number;
  /** Compute dispatches. */
  dispatches: number;
  /** Device-side buffer copies and clears (`copyBufferToBuffer`, `clearBuffer`). */
  copies: number;
  /** Batches posted to the device thread (each is encoded and submitted as one command buffer, or more when a write must wait for earlier work). */
  batches: number;
  /** `queue.submit` calls the device thread made. */
  submits: number;
  /** Compute pipelines built (one per distinct WGSL text; none in a steady state). */
  pipelineBuilds: number;
  /** Device buffers created (the pool reuses freed ones: none in a steady state). */
  buffersCreated: number;
  /** Bytes of device buffers held now (live and pooled). */
  bytesHeld: number;
  /** The most bytes held at once. */
  peakBytesHeld: number;
}

/** Zeroed counters. */
export function zeroCounters(): WebgpuCounters {
  return {
    uploads: 0, uploadBytes: 0, uniformBytes: 0, readbacks: 0, readbackBytes: 0, dispatches: 0, copies: 0, batches: 0, submits: 0,
    pipelineBuilds: 0, buffersCreated: 0, bytesHeld: 0, peakBytesHeld: 0,
  };
}

/** `after − before` for the event counts (`bytesHeld` and `peakBytesHeld` are taken from `after`). */
export function countersSince(before: WebgpuCounters, after: WebgpuCounters): WebgpuCounters {
  const d = { ...after };
  for (const k of Object.keys(d) as (keyof WebgpuCounters)[]) if (k !== 'bytesHeld' && k !== 'peakBytesHeld') d[k] = after[k] - before[k];
  return d;
}

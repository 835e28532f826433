/// <reference types="@webgpu/types" />
/**
 * The thread that owns the `GPUDevice`. The calling thread records commands (buffers, uploads,
 * dispatches, copies) and posts them here in batches without waiting; this thread encodes each
 * batch into one command encoder and submits it. Only a read makes the caller wait: it sleeps in
 * `Atomics.wait` on a shared control word until the values are in shared memory.
 *
 * `serveDevice` is self-contained (it refers to nothing outside its own body) because its source
 * text is what the worker runs: a worker thread in Node (`host-node.ts`), a Web Worker in a
 * browser (`host-browser.ts`).
 */

/** Control words shared with the calling thread (Int32Array indices). */
export const CTL = {
  /** The pending read: 0 waiting, 1 done, 2 failed (message in the error buffer). */
  READ: 0,
  /** Bytes of the message in the error buffer. */
  ERROR_LENGTH: 1,
  /** 1 once a batch failed asynchronously (validation, out of memory): the message is in the error buffer. */
  STICKY: 2,
  /** 1 once the device is lost. */
  LOST: 3,
  /** Batches done (the caller throttles on it). */
  BATCHES: 4,
  /** `queue.submit` calls so far. */
  SUBMITS: 5,
  /** Words in all. */
  WORDS: 8,
} as const;

/** Command codes of a batch (each command is an array whose first element is its code). */
export const OP = {
  /** [CREATE, id, bytes, kind (0 storage, 1 uniform)] */
  CREATE: 1,
  /** [DESTROY, id] (after the batch's submit) */
  DESTROY: 2,
  /** [WRITE, id, byteOffset, blob, blobByteOffset, bytes] (queue.writeBuffer, in order with the batch's work) */
  WRITE: 3,
  /** [PIPELINE, pipelineId, name, wgsl, bindings ('u' uniform, 'r' read-only storage, 'w' storage, one letter each)] */
  PIPELINE: 4,
  /** [DISPATCH, pipelineId, x, y, z, id0, offset0, size0, id1, …] */
  DISPATCH: 5,
  /** [COPY, src, srcOffset, dst, dstOffset, bytes] */
  COPY: 6,
  /** [CLEAR, id, offset, bytes] (zeros) */
  CLEAR: 7,
} as const;

/** How the worker was started (what the host's prelude hands `serveDevice`). */
export interface DeviceWorkerEnv {
  /** `navigator.gpu`. */
  gpu: GPU;
  /** Shared control words (CTL) and the error text buffer. */
  control: SharedArrayBuffer;
  error: SharedArrayBuffer;
  /** Features the device may use (intersected with the adapter's). */
  features: string[];
  /** Limits to request below the adapter's (for tests: smaller buffers and bindings). */
  limitCaps: Record<string, number>;
  /** Register the message handler. */
  listen(handler: (message: unknown) => void): void;
  /** Post a message to the calling thread (start-up only). */
  post(message: unknown): void;
}

/** A batch as posted by the calling thread. */
export interface Batch {
  cmds: unknown[][];
  blobs: ArrayBuffer[];
  /** Reads done after the batch's work: into `into` at `at`, `[id, offset, bytes, at]` each. */
  reads: number[][] | null;
  into: SharedArrayBuffer | null;
  /** Names of the kernels in the batch (for error messages). */
  kernels: string[];
}

/**
 * The worker's serving loop: request the adapter and device, post `{ t: 'ready', … }` (or
 * `{ t: 'error', message }`), then run every batch it receives, in order.
 */
export function serveDevice(env: DeviceWorkerEnv): void {
  const ctl = new Int32Array(env.control);
  const errBytes = new Uint8Array(env.error);
  const enc = new TextEncoder();
  const C = { READ: 0, ERROR_LENGTH: 1, STICKY: 2, LOST: 3, BATCHES: 4, SUBMITS: 5 };
  const USAGE = { STORAGE: 0x80, UNIFORM: 0x40, COPY_SRC: 0x04, COPY_DST: 0x08, MAP_READ: 0x01 };
  let device: GPUDevice;
  const buffers = new Map<number, GPUBuffer>();
  const pipelines = new Map<number, { pipeline: GPUComputePipeline; layout: GPUBindGroupLayout; name: string }>();
  const bindGroups = new Map<string, GPUBindGroup>();
  /** Bind groups that name each buffer (to drop them when it is destroyed). */
  const groupsOf = new Map<number, string[]>();
  const BIND_GROUP_LIMIT = 8192;
  let encoder: GPUCommandEncoder | null = null;
  let pass: GPUComputePassEncoder | null = null;
  /** Byte ranges [start, end) of each buffer that the pending encoder uses. */
  const inEncoder = new Map<number, number[]>();
  function use(id: number, start: number, bytes: number): void {
    let r = inEncoder.get(id);
    if (r === undefined) { r = []; inEncoder.set(id, r); }
    r.push(start, start + bytes);
  }
  function used(id: number, start: number, bytes: number): boolean {
    const r = inEncoder.get(id);
    if (r === undefined) return false;
    for (let i = 0; i < r.length; i += 2) if (r[i]! < start + bytes && start < r[i + 1]!) return true;
    return false;
  }
  let staging: GPUBuffer | null = null;
  let stickySet = false;

  function setText(text: string): void {
    const b = enc.encode(text).subarray(0, errBytes.length);
    errBytes.set(b);
    Atomics.store(ctl, C.ERROR_LENGTH, b.length);
  }
  function sticky(text: string): void {
    if (stickySet) return;
    stickySet = true;
    setText(text);
    Atomics.store(ctl, C.STICKY, 1);
  }
  function finishRead(state: number, text?: string): void {
    if (text !== undefined) setText(text);
    Atomics.store(ctl, C.READ, state);
    Atomics.notify(ctl, C.READ);
  }
  function message(e: unknown): string {
    return e instanceof Error ? e.message : String(e);
  }
  function endPass(): void {
    if (pass !== null) { pass.end(); pass = null; }
  }
  function submit(): void {
    endPass();
    if (encoder === null) return;
    device.queue.submit([encoder.finish()]);
    Atomics.add(ctl, C.SUBMITS, 1);
    encoder = null;
    inEncoder.clear();
  }
  function buffer(id: number): GPUBuffer {
    const b = buffers.get(id);
    if (b === undefined) throw new Error(`no device buffer ${id}`);
    return b;
  }
  function destroy(id: number): void {
    const b = buffers.get(id);
    if (b === undefined) return;
    buffers.delete(id);
    for (const key of groupsOf.get(id) ?? []) bindGroups.delete(key);
    groupsOf.delete(id);
    b.destroy();
  }
  /** Build a pipeline; the promise gives its compilation error (with the shader's messages), or null. */
  function makePipeline(pid: number, name: string, wgsl: string, kinds: string): Promise<string | null> {
    const entries: GPUBindGroupLayoutEntry[] = [];
    for (let i = 0; i < kinds.length; i++) {
      const k = kinds[i];
      entries.push({
        binding: i, visibility: 4 /* COMPUTE */,
        buffer: { type: k === 'u' ? 'uniform' : k === 'r' ? 'read-only-storage' : 'storage' },
      });
    }
    device.pushErrorScope('validation');
    const module = device.createShaderModule({ code: wgsl, label: name });
    const layout = device.createBindGroupLayout({ entries, label: name });
    const pipeline = device.createComputePipeline({
      layout: device.createPipelineLayout({ bindGroupLayouts: [layout] }),
      compute: { module, entryPoint: 'main' }, label: name,
    });
    pipelines.set(pid, { pipeline, layout, name });
    return device.popErrorScope().then(async (e) => {
      if (e === null) return null;
      let lines = '';
      try {
        const info = await module.getCompilationInfo();
        lines = info.messages.map((m) => `${m.lineNum}:${m.linePos} ${m.message}`).join('; ');
      } catch { /* the message alone */ }
      return `kernel '${name}' did not build: ${e.message}${lines ? ` (${lines})` : ''}`;
    }, () => null);
  }
  function dispatch(c: unknown[]): void {
    const pid = c[1] as number;
    const p = pipelines.get(pid);
    if (p === undefined) throw new Error(`no pipeline ${pid}`);
    let key = String(pid);
    for (let i = 5; i < c.length; i++) key += ',' + (c[i] as number);
    let group = bindGroups.get(key);
    if (group === undefined) {
      const entries: GPUBindGroupEntry[] = [];
      for (let i = 5, b = 0; i < c.length; i += 3, b++) {
        entries.push({ binding: b, resource: { buffer: buffer(c[i] as number), offset: c[i + 1] as number, size: c[i + 2] as number } });
      }
      group = device.createBindGroup({ layout: p.layout, entries, label: p.name });
      if (bindGroups.size >= BIND_GROUP_LIMIT) {
        const oldest = bindGroups.keys().next().value as string;
        bindGroups.delete(oldest);
      }
      for (let i = 5; i < c.length; i += 3) {
        const id = c[i] as number;
        let keys = groupsOf.get(id);
        if (keys === undefined) { keys = []; groupsOf.set(id, keys); }
        keys.push(key);
      }
    } else {
      bindGroups.delete(key);
    }
    bindGroups.set(key, group);
    if (pass === null) {
      encoder ??= device.createCommandEncoder();
      pass = encoder.beginComputePass();
    }
    pass.setPipeline(p.pipeline);
    pass.setBindGroup(0, group);
    pass.dispatchWorkgroups(c[2] as number, c[3] as number, c[4] as number);
    for (let i = 5; i < c.length; i += 3) use(c[i] as number, c[i + 1] as number, c[i + 2] as number);
  }
  function encoderForCopy(): GPUCommandEncoder {
    endPass();
    encoder ??= device.createCommandEncoder();
    return encoder;
  }
  async function run(batch: Batch): Promise<void> {
    device.pushErrorScope('out-of-memory');
    device.pushErrorScope('validation');
    const destroyed: number[] = [];
    const built: Promise<string | null>[] = [];
    let failure: string | null = null;
    let popped = false;
    try {
      for (const c of batch.cmds) {
        switch (c[0]) {
          case 1: {
            const usage = c[3] === 1 ? USAGE.UNIFORM | USAGE.COPY_DST : USAGE.STORAGE | USAGE.COPY_SRC | USAGE.COPY_DST;
            buffers.set(c[1] as number, device.createBuffer({ size: c[2] as number, usage }));
            break;
          }
          case 2: destroyed.push(c[1] as number); break;
          case 3: {
            const id = c[1] as number;
            // queue.writeBuffer lands before the encoder it is recorded among is submitted: a
            // buffer the pending work uses is written after that work is submitted.
            if (used(id, c[2] as number, c[5] as number)) submit();
            device.queue.writeBuffer(buffer(id), c[2] as number, batch.blobs[c[3] as number]!, c[4] as number, c[5] as number);
            break;
          }
          case 4: built.push(makePipeline(c[1] as number, c[2] as string, c[3] as string, c[4] as string)); break;
          case 5: dispatch(c); break;
          case 6: {
            encoderForCopy().copyBufferToBuffer(buffer(c[1] as number), c[2] as number, buffer(c[3] as number), c[4] as number, c[5] as number);
            use(c[1] as number, c[2] as number, c[5] as number); use(c[3] as number, c[4] as number, c[5] as number);
            break;
          }
          case 7: {
            encoderForCopy().clearBuffer(buffer(c[1] as number), c[2] as number, c[3] as number);
            use(c[1] as number, c[2] as number, c[3] as number);
            break;
          }
          default: throw new Error(`unknown command ${String(c[0])}`);
        }
      }
      let total = 0;
      if (batch.reads !== null) {
        for (const r of batch.reads) total = Math.max(total, r[3]! + r[2]!);
        const size = Math.max(256, Math.ceil(total / 256) * 256);
        if (staging === null || staging.size < size) {
          staging?.destroy();
          staging = device.createBuffer({ size: Math.max(size, 2 * (staging?.size ?? 0)), usage: USAGE.MAP_READ | USAGE.COPY_DST });
        }
        const e = encoderForCopy();
        for (const r of batch.reads) e.copyBufferToBuffer(buffer(r[0]!), r[1]!, staging, r[3]!, r[2]!);
      }
      submit();
      for (const id of destroyed) destroy(id);
      popped = true;
      const validation = device.popErrorScope();
      const oom = device.popErrorScope();
      const scopes = Promise.all([validation, oom, Promise.all(built)]).then(([v, o, b]) => {
        // A kernel that did not compile explains the batch's failure better than its consequences.
        const compile = b.find((t) => t !== null);
        if (compile !== undefined && compile !== null) return compile;
        const e = o ?? v;
        if (e === null) return null;
        return `${o !== null ? 'out of device memory' : 'validation error'} in a batch of ${batch.kernels.length} kernels (${[...new Set(batch.kernels)].join(', ')}): ${e.message}`;
      });
      if (batch.reads === null) {
        scopes.then((t) => { if (t !== null) sticky(t); }, (e) => sticky(message(e)));
        return;
      }
      const s = staging!;
      await s.mapAsync(1 /* READ */, 0, Math.ceil(total / 4) * 4);
      const mapped = new Uint8Array(s.getMappedRange(0, Math.ceil(total / 4) * 4));
      const into = new Uint8Array(batch.into!);
      for (const r of batch.reads) into.set(mapped.subarray(r[3]!, r[3]! + r[2]!), r[3]!);
      s.unmap();
      failure = await scopes;
    } catch (e) {
      failure = message(e);
      encoder = null; pass = null; inEncoder.clear();
      if (!popped) { device.popErrorScope().catch(() => null); device.popErrorScope().catch(() => null); }
      for (const id of destroyed) destroy(id);
    }
    if (batch.reads !== null) {
      if (failure !== null) finishRead(2, failure);
      else finishRead(1);
    } else if (failure !== null) {
      sticky(failure);
    }
  }

  let queue: Promise<void> = Promise.resolve();
  const start = (async () => {
    const adapter = await env.gpu.requestAdapter({ powerPreference: 'high-performance' });
    if (adapter === null) throw new Error('no adapter');
    const features = env.features.filter((f) => adapter.features.has(f)) as GPUFeatureName[];
    const names = ['maxBufferSize', 'maxStorageBufferBindingSize', 'maxStorageBuffersPerShaderStage', 'maxComputeWorkgroupStorageSize',
      'maxComputeInvocationsPerWorkgroup', 'maxComputeWorkgroupSizeX', 'maxComputeWorkgroupSizeY', 'maxComputeWorkgroupsPerDimension'];
    const requiredLimits: Record<string, number> = {};
    const al = adapter.limits as unknown as Record<string, number>;
    for (const n of names) requiredLimits[n] = Math.min(al[n]!, env.limitCaps[n] ?? Infinity);
    device = await adapter.requestDevice({ requiredFeatures: features, requiredLimits });
    device.lost.then((info) => {
      Atomics.store(ctl, C.LOST, 1);
      sticky(`the WebGPU device was lost (${info.reason}: ${info.message})`);
      finishRead(2, `the WebGPU device was lost (${info.reason}: ${info.message})`);
    }, () => undefined);
    device.onuncapturederror = (e) => sticky(`uncaptured WebGPU error: ${(e as GPUUncapturedErrorEvent).error.message}`);
    const dl = device.limits as unknown as Record<string, number>;
    const limits: Record<string, number> = {};
    for (const n of names) limits[n] = dl[n]!;
    const info = adapter.info;
    env.post({
      t: 'ready',
      adapter: { vendor: info.vendor, architecture: info.architecture, device: info.device, description: info.description },
      features: [...device.features], limits,
    });
  })();
  start.catch((e) => env.post({ t: 'error', message: message(e) }));
  env.listen((m) => {
    const msg = m as { t: string; batch?: Batch };
    queue = queue.then(async () => {
      await start;
      if (msg.t === 'destroy') { device.destroy(); return; }
      await run(msg.batch!);
      Atomics.add(ctl, C.BATCHES, 1);
      Atomics.notify(ctl, C.BATCHES);
    }).catch((e) => { sticky(message(e)); finishRead(2, message(e)); });
  });
}

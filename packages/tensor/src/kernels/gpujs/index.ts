/**
 * The gpu.js kernel backend of @apertus/tensor: the whole `KernelSet` (GEMM and the LM-head loss included) as gpu.js
 * kernels in one explicitly chosen gpu.js mode — synchronous (webasm, cpu, GL) or asynchronous
 * (webgpu) — with silent fallbacks turned into errors. See README.md in this folder for the kernel
 * designs and their limits.
 */
import type { KernelSet } from '../types';
import { attention, attentionBackward } from './attention';
import { copyStrided } from './copy';
import { crossEntropy, crossEntropyBackward } from './cross-entropy';
import { binary, unary, unaryBackward } from './elementwise';
import { embedding, embeddingBackward } from './embedding';
import { GpujsBackendError } from './errors';
import { type GemmArgs, gemm } from './gemm';
import type { GemmBf16Args } from '../../ops/gemm/cpu';
import { linearCrossEntropy } from './linear-cross-entropy';
import { scaleBy, sumSquares } from './optimizer';
import { pagedAttention } from './paged-attention';
import { max, sum } from './reduce';
import { rmsnorm, rmsnormBackward } from './rmsnorm';
import { rope } from './rope';
import { GPUJS_MODES, type DeviceArray, type GpujsMode, GpujsRuntime, type KernelOp, drive, driveAsync, inp } from './runtime';
import type { GpujsInput } from '../../device-hooks';
import { logSoftmax, logSoftmaxBackward, softmax, softmaxBackward } from './softmax';
import { type WebgpuAdapterInfo, deviceLostError, isDeviceLost, requestWebgpuAdapter } from './webgpu';
import { type WebgpuTransfers, WebgpuWorkerRuntime } from './webgpu-worker';
import type { Residency } from '../../residency';

export type { WebgpuTransfers } from './webgpu-worker';
export { setGpujsScriptUrl } from './webgpu-host-browser';

export { GpujsBackendError } from './errors';
export type { GemmArgs } from './gemm';
export type { GpujsMode } from './runtime';
export { SWIFTSHADER_ICD, WebgpuUnavailableError, adapterName, type WebgpuAdapterInfo, type WebgpuMissing } from './webgpu';

/**
 * Argument positions of the arrays an op reads or writes on the host rather than through a
 * kernel: crossEntropy writes `loss` and `lse`,
 * max writes `out` (and `arg`, never on the GPU).
 */
const HOST_ARGS = { crossEntropy: [5, 6], max: [4] } as const;

/** Every op of the gpu.js kernels, each written once as a generator of kernel calls. */
const OPS = {
  unary, unaryBackward, binary, copyStrided, sum, max, softmax, softmaxBackward, logSoftmax, logSoftmaxBackward,
  rmsnorm, rmsnormBackward, embedding, embeddingBackward, rope, attention, attentionBackward, pagedAttention,
  crossEntropy, crossEntropyBackward, gemm, linearCrossEntropy, sumSquares, scaleBy,
} satisfies { [K in keyof KernelSet]-?: (...a: Parameters<NonNullable<KernelSet[K]>>) => KernelOp };

type Ops = typeof OPS;
/** The ops with each result mapped to `R` (void for the synchronous modes, Promise<void> for webgpu). */
type BoundOps<R> = { [K in keyof Ops]: (...a: Parameters<Ops[K]>) => R };

function bindOps<R>(run: (op: KernelOp) => R): BoundOps<R> {
  const bound: Record<string, (...a: unknown[]) => R> = {};
  for (const [name, op] of Object.entries(OPS)) bound[name] = (...a: unknown[]) => run((op as (...x: unknown[]) => KernelOp)(...a));
  return bound as BoundOps<R>;
}

/** A `KernelSet` of gpu.js kernels, plus GEMM, the mode they run in, and cleanup. */
export interface GpujsKernelSet extends KernelSet {
  /** C = alpha·op(A)·op(B) + beta·C (row-major) as a gpu.js kernel. */
  gemm(args: GemmArgs | GemmBf16Args): void;
  /** The gpu.js mode every kernel of this set runs in (`webasm`, `cpu`, `headlessgl`...). */
  readonly mode: string;
  /** The compiled kernels by `op|shape` key and the mode each one really ran in (diagnostics, tests). */
  builtKernels(): Record<string, string>;
  /**
   * Run an op defined outside this set (a generator of kernel calls, see `call`) on this set's
   * runtime, synchronously: how a package brings its own gpu.js kernels (e.g. `@apertus/gguf`'s
   * quantized products) to the same device, cache and fallback checks.
   */
  runOp(op: KernelOp): void;
  /** Destroy all compiled kernels and the gpu.js instance; later calls throw GpujsBackendError. */
  dispose(): void;
}

/**
 * Create a KernelSet whose kernels are gpu.js kernels running in `mode`.
 *
 * `mode: 'gpu'` means "a real GPU backend" (headlessgl, webgl2 or webgl). Throws
 * GpujsBackendError when the mode is unavailable or gpu.js would run a different one: the
 * backend gpu.js picks is checked here, and every kernel is checked again after it is built
 * (`kernel.kernel.constructor.mode` and `fallbackReason`), before its result is used.
 * The asynchronous `webgpu` mode has its own constructor, `createWebgpuKernels`.
 */
export function createGpujsKernels(mode: GpujsMode): GpujsKernelSet {
  if ((mode as string) === 'webgpu') {
    throw new GpujsBackendError({ requestedMode: mode, reason: 'webgpu kernels are asynchronous: use createWebgpuKernels()' });
  }
  const rt = new GpujsRuntime(mode);
  const runOp = (op: KernelOp): void => drive(op, (c) => rt.run(c));
  return {
    ...bindOps(runOp),
    mode: rt.mode,
    builtKernels: () => rt.builtKernels(),
    runOp,
    dispose: () => rt.dispose(),
  };
}

/**
 * The same kernels in gpu.js's `webgpu` mode (WGSL compute shaders): every op returns a promise
 * that resolves once its outputs are written into the caller's arrays. Calls are queued and run
 * one after another, in call order.
 */
export interface WebgpuKernelSet extends BoundOps<Promise<void>> {
  /** Always `webgpu` (checked for every kernel, like the synchronous modes). */
  readonly mode: string;
  /** Run an op defined outside this set (a generator of kernel calls, see `call`), queued after the calls before it. */
  runOp(op: KernelOp): Promise<void>;
  /** A flat array as a gpu.js input read as `a[z][y][x]`, `dims = [x, y, z]` (what `WebgpuKernelApi.inp` gives on the device). */
  inp(data: Float32Array | Int32Array | DeviceArray, dims: readonly number[]): GpujsInput;
  /** The adapter the kernels run on, e.g. `{ vendor: 'google', architecture: 'swiftshader', ... }`. */
  readonly adapter: WebgpuAdapterInfo;
  builtKernels(): Record<string, string>;
  /** Destroy all compiled kernels (after the queued calls finish); later calls reject. */
  dispose(): Promise<void>;
}

/**
 * Build the gpu.js kernels in `webgpu` mode. In Node this loads the optional `webgpu` package
 * (Dawn) and needs a Vulkan driver; throws `WebgpuUnavailableError` naming the missing piece
 * (package, Vulkan loader, Vulkan driver, adapter) and what to install. A device lost later
 * rejects the running call with `missing: 'device-lost'`.
 */
export async function createWebgpuKernels(): Promise<WebgpuKernelSet> {
  const adapter = await requestWebgpuAdapter();
  const rt = new GpujsRuntime('webgpu');
  let queue: Promise<void> = Promise.resolve();
  const enqueue = (op: KernelOp): Promise<void> => {
    const done = queue.then(() => driveAsync(op, (c) => rt.runAsync(c))).catch((e: unknown) => {
      throw isDeviceLost(e) ? deviceLostError(e) : e;
    });
    queue = done.catch(() => undefined);
    return done;
  };
  return {
    ...bindOps(enqueue),
    mode: rt.mode,
    runOp: enqueue,
    inp: (data, dims) => inp(data, dims) as unknown as GpujsInput,
    adapter,
    builtKernels: () => rt.builtKernels(),
    dispose: () => queue.then(() => rt.dispose()),
  };
}

/** The synchronous `webgpu` set: a `GpujsKernelSet` plus its adapter and transfer counts. */
export interface WebgpuSyncKernelSet extends GpujsKernelSet {
  readonly adapter: WebgpuAdapterInfo;
  /** Where op outputs stay on the GPU and how the host gets them back (install with `installResidency`). */
  readonly residency: Residency;
  /** Kernel launches, uploads and readbacks so far (counts and bytes). */
  transfers(): WebgpuTransfers;
}

/**
 * The `webgpu` kernels as a synchronous `GpujsKernelSet` (Node): a worker thread owns the GPU
 * device and runs each kernel call while the calling thread waits (`Atomics.wait`), so the set
 * can serve the synchronous tensor ops (this is what `enableWebgpu` registers). Within an op,
 * intermediates stay on the GPU and each input is uploaded once. With `resident: true` (what
 * `enableWebgpu` asks for) an output that fills its array stays on the GPU too, until the host
 * reads it through the set's `residency`; otherwise outputs are written into the caller's arrays.
 */
export async function createWebgpuSyncKernels(options: { resident?: boolean } = {}): Promise<WebgpuSyncKernelSet> {
  const adapter = await requestWebgpuAdapter();
  const rt = new WebgpuWorkerRuntime(options.resident ?? false);
  const runOp = (op: KernelOp): void => rt.runOp(op);
  const ops = bindOps(runOp);
  // Arrays these ops read or write on the host (not through a kernel) come home first.
  const onHost = <K extends keyof typeof HOST_ARGS>(name: K): BoundOps<void>[K] => ((...a: unknown[]) => {
    for (const i of HOST_ARGS[name]) if (ArrayBuffer.isView(a[i])) rt.toHost(a[i] as ArrayBufferView);
    return (ops[name] as (...x: unknown[]) => void)(...a);
  }) as BoundOps<void>[K];
  return {
    ...ops,
    crossEntropy: onHost('crossEntropy'),
    max: onHost('max'),
    mode: rt.mode,
    adapter,
    residency: rt,
    transfers: () => rt.transfers(),
    builtKernels: () => rt.builtKernels(),
    runOp,
    dispose: () => rt.dispose(),
  };
}

/** The outcome of probing one gpu.js mode. */
export interface GpujsProbe {
  /** True when a kernel built and ran in exactly this mode and returned the right numbers. */
  ok: boolean;
  /** The mode gpu.js really used (when it got that far). */
  mode?: string;
  /** Why the mode does not work. */
  reason?: string;
}

/**
 * Which modes work on this machine: each is probed by building and running a tiny kernel (a
 * 1100-long reduction, so a loop cut at gpu.js's 1000-iteration cap is caught too) and checking
 * both the result and the mode it really ran in.
 */
export function probeGpujsModes(): Record<GpujsMode, GpujsProbe> {
  const res = {} as Record<GpujsMode, GpujsProbe>;
  const n = 1100;
  const x = new Float32Array(2 * n);
  for (let i = 0; i < x.length; i++) x[i] = (i % 7) - 3;
  const want = [0, 0];
  for (let i = 0; i < x.length; i++) want[i < n ? 0 : 1]! += x[i]!;
  for (const mode of GPUJS_MODES) {
    let ks: GpujsKernelSet | undefined;
    try {
      ks = createGpujsKernels(mode);
      const out = new Float32Array(2);
      ks.sum(x, 2, n, 1, out);
      const ran = Object.values(ks.builtKernels());
      if (ran.length !== 1 || ran[0] !== ks.mode) {
        res[mode] = { ok: false, mode: ran[0] ?? ks.mode, reason: 'the probe kernel ran in a different mode' };
      } else if (out[0] !== want[0] || out[1] !== want[1]) {
        res[mode] = { ok: false, mode: ks.mode, reason: `wrong probe result [${out[0]}, ${out[1]}], expected [${want[0]}, ${want[1]}]` };
      } else {
        res[mode] = { ok: true, mode: ks.mode };
      }
    } catch (e) {
      const reason = e instanceof Error ? e.message : String(e);
      const actual = e instanceof GpujsBackendError ? e.actualMode : undefined;
      res[mode] = actual === undefined ? { ok: false, reason } : { ok: false, mode: actual, reason };
    } finally {
      ks?.dispose();
    }
  }
  return res;
}

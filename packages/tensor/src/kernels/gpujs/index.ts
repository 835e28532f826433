/**
 * The gpu.js kernel backend of @apertus/tensor: the whole `KernelSet` (GEMM and the LM-head loss included) as gpu.js
 * kernels in one explicitly chosen gpu.js mode (webasm, cpu, GL) with silent fallbacks turned
 * into errors. The webgpu device does not use gpu.js (see ../../webgpu/README.md). See README.md in this folder for the kernel
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
import { GPUJS_MODES, type GpujsMode, GpujsRuntime, type KernelOp, drive } from './runtime';
import { logSoftmax, logSoftmaxBackward, softmax, softmaxBackward } from './softmax';

export { GpujsBackendError } from './errors';
export type { GemmArgs } from './gemm';
export type { GpujsMode } from './runtime';

/** Every op of the gpu.js kernels, each written once as a generator of kernel calls. */
const OPS = {
  unary, unaryBackward, binary, copyStrided, sum, max, softmax, softmaxBackward, logSoftmax, logSoftmaxBackward,
  rmsnorm, rmsnormBackward, embedding, embeddingBackward, rope, attention, attentionBackward, pagedAttention,
  crossEntropy, crossEntropyBackward, gemm, linearCrossEntropy, sumSquares, scaleBy,
} satisfies { [K in keyof KernelSet]-?: (...a: Parameters<NonNullable<KernelSet[K]>>) => KernelOp };

type Ops = typeof OPS;
/** The ops with each result mapped to `R`. */
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
 */
export function createGpujsKernels(mode: GpujsMode): GpujsKernelSet {
  if ((mode as string) === 'webgpu') {
    throw new GpujsBackendError({ requestedMode: mode, reason: "the webgpu device runs WGSL kernels, not gpu.js: useDevice('webgpu')" });
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

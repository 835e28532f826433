/**
 * The gpu.js kernel backend of @apertus/tensor: the whole `KernelSet` (plus GEMM) as gpu.js
 * kernels, synchronous, in one explicitly chosen gpu.js mode, with silent fallbacks turned into
 * errors. See README.md in this folder for the kernel designs and their limits.
 */
import type { AttentionArgs, AttentionBackwardArgs, BinaryOp, F32, I32, KernelSet, UnaryOp } from '../types';
import { attention, attentionBackward } from './attention';
import { crossEntropy, crossEntropyBackward } from './cross-entropy';
import { binary, unary, unaryBackward } from './elementwise';
import { embedding, embeddingBackward } from './embedding';
import { GpujsBackendError } from './errors';
import { type GemmArgs, gemm } from './gemm';
import { max, sum } from './reduce';
import { rmsnorm, rmsnormBackward } from './rmsnorm';
import { rope } from './rope';
import { GPUJS_MODES, type GpujsMode, GpujsRuntime } from './runtime';
import { logSoftmax, logSoftmaxBackward, softmax, softmaxBackward } from './softmax';

export { GpujsBackendError } from './errors';
export type { GemmArgs } from './gemm';
export type { GpujsMode } from './runtime';

/** A `KernelSet` of gpu.js kernels, plus GEMM, the mode they run in, and cleanup. */
export interface GpujsKernelSet extends KernelSet {
  /** C = alpha·op(A)·op(B) + beta·C (row-major) as a gpu.js kernel. */
  gemm(args: GemmArgs): void;
  /** The gpu.js mode every kernel of this set runs in (`webasm`, `cpu`, `headlessgl`...). */
  readonly mode: string;
  /** The compiled kernels by `op|shape` key and the mode each one really ran in (diagnostics, tests). */
  builtKernels(): Record<string, string>;
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
  const rt = new GpujsRuntime(mode);
  return {
    mode: rt.mode,
    unary: (op: UnaryOp, x: F32, out: F32) => unary(rt, op, x, out),
    unaryBackward: (op: UnaryOp, x: F32, y: F32, gy: F32, gx: F32) => unaryBackward(rt, op, x, y, gy, gx),
    binary: (op: BinaryOp, a: F32, aStrides: readonly number[], b: F32, bStrides: readonly number[], outShape: readonly number[], out: F32) =>
      binary(rt, op, a, aStrides, b, bStrides, outShape, out),
    sum: (x: F32, outer: number, n: number, inner: number, out: F32) => sum(rt, x, outer, n, inner, out),
    max: (x: F32, outer: number, n: number, inner: number, out: F32, arg: I32) => max(rt, x, outer, n, inner, out, arg),
    softmax: (x: F32, rows: number, n: number, out: F32) => softmax(rt, x, rows, n, out),
    softmaxBackward: (y: F32, gy: F32, rows: number, n: number, gx: F32) => softmaxBackward(rt, y, gy, rows, n, gx),
    logSoftmax: (x: F32, rows: number, n: number, out: F32) => logSoftmax(rt, x, rows, n, out),
    logSoftmaxBackward: (y: F32, gy: F32, rows: number, n: number, gx: F32) => logSoftmaxBackward(rt, y, gy, rows, n, gx),
    rmsnorm: (x: F32, w: F32, rows: number, n: number, eps: number, out: F32, rstd: F32) => rmsnorm(rt, x, w, rows, n, eps, out, rstd),
    rmsnormBackward: (x: F32, w: F32, rstd: F32, gy: F32, rows: number, n: number, gx: F32, gw: F32) =>
      rmsnormBackward(rt, x, w, rstd, gy, rows, n, gx, gw),
    embedding: (ids: I32, table: F32, H: number, out: F32) => embedding(rt, ids, table, H, out),
    embeddingBackward: (ids: I32, gy: F32, H: number, gtable: F32) => embeddingBackward(rt, ids, gy, H, gtable),
    rope: (x: F32, N: number, heads: number, d: number, positions: I32, invFreq: F32, inverse: boolean, out: F32) =>
      rope(rt, x, N, heads, d, positions, invFreq, inverse, out),
    attention: (args: AttentionArgs) => attention(rt, args),
    attentionBackward: (args: AttentionBackwardArgs) => attentionBackward(rt, args),
    crossEntropy: (logits: F32, targets: I32, weights: F32 | null, rows: number, V: number, loss: F32, lse: F32) =>
      crossEntropy(rt, logits, targets, weights, rows, V, loss, lse),
    crossEntropyBackward: (logits: F32, targets: I32, weights: F32 | null, lse: F32, g: F32, rows: number, V: number, glogits: F32) =>
      crossEntropyBackward(rt, logits, targets, weights, lse, g, rows, V, glogits),
    gemm: (args: GemmArgs) => gemm(rt, args),
    builtKernels: () => rt.builtKernels(),
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

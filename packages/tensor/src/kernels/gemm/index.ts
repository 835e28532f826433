/**
 * CPU GEMM kernels of @apertus/tensor: C = alpha * op(A) * op(B) + beta * C on row-major,
 * contiguous Float32Arrays, with a bf16-weight variant.
 *
 * Backends, fastest first:
 * - `wasm-simd-threads`: the WebAssembly SIMD kernel (register-blocked micro-kernel on packed A/B
 *   panels, Goto-style cache blocking) split over `worker_threads` that share one wasm memory;
 *   the calling thread works too and then sleeps in `Atomics.wait` until the workers finish.
 * - `wasm-simd`: the same kernel on the calling thread only.
 * - `js`: plain JavaScript, for runtimes without WebAssembly SIMD.
 *
 * Problems with fewer than {@link THREAD_MIN_WORK} multiply-adds always run on the calling thread,
 * so per-call overhead stays small for attention-sized products. x * W^T with few rows (decode
 * steps) skips packing and streams W through dot products.
 */
import { checkGemmArgs, type CheckedGemm, type GemmArgs, type GemmBf16Args } from './args';
import { GemmError } from './errors';
import { gemmJs } from './js';
import { bestVariant, WasmGemmEngine } from './wasm/engine';
import type { GemmVariantName } from './wasm/variants';
import { availableParallelism } from 'node:os';

export type { GemmArgs, GemmBf16Args } from './args';
export { GemmError } from './errors';
export { sgemmReference } from './reference';
export { THREAD_MIN_WORK } from './wasm/engine';
export type { GemmVariantName } from './wasm/variants';

/** Names of the GEMM implementations. */
export type GemmBackendName = 'wasm-simd-threads' | 'wasm-simd' | 'js';

let forced: GemmBackendName | 'auto' = 'auto';
let threadCount = Math.max(1, availableParallelism());
let engine: WasmGemmEngine | null = null;
let variant: GemmVariantName | null | undefined;
/** Why the WebAssembly engine cannot be created here (null while it can, or before the first try). */
let engineFailure: string | null = null;

function wasmVariant(): GemmVariantName | null {
  if (variant === undefined) variant = bestVariant();
  return variant;
}

function getEngine(): WasmGemmEngine {
  if (engine === null) {
    const v = wasmVariant();
    if (v === null) throw new GemmError('backend', 'WebAssembly SIMD is not available in this runtime');
    try {
      engine = new WasmGemmEngine(v);
    } catch (e) {
      engineFailure = e instanceof Error ? e.message : String(e);
      throw new GemmError('backend', `cannot start the WebAssembly GEMM: ${engineFailure}`);
    }
  }
  return engine;
}

function wasmUsable(): boolean {
  if (wasmVariant() === null || engineFailure !== null) return false;
  try {
    getEngine();
    return true;
  } catch {
    return false;
  }
}

function resolve(): GemmBackendName {
  if (forced !== 'auto') return forced;
  // 'auto' uses plain JS where WebAssembly SIMD is missing or the engine cannot start (e.g. code
  // generation from strings disallowed); gemmBackend() reports it, so this is not silent.
  if (!wasmUsable()) return 'js';
  return threadCount > 1 ? 'wasm-simd-threads' : 'wasm-simd';
}

function run(g: CheckedGemm): void {
  const backend = resolve();
  if (backend === 'js') gemmJs(g);
  else getEngine().run(g, backend === 'wasm-simd-threads' ? threadCount : 1);
}

/**
 * C = alpha * op(A) * op(B) + beta * C (row-major, contiguous; see {@link GemmArgs}) with the
 * backend reported by {@link gemmBackend}. Throws {@link GemmError} on bad arguments, before
 * touching C.
 *
 * @example
 * ```ts
 * const C = new Float32Array(2 * 2);
 * sgemm({ transA: false, transB: false, M: 2, N: 2, K: 3,
 *   A: new Float32Array([1, 2, 3, 4, 5, 6]), B: new Float32Array([1, 0, 0, 1, 1, 1]), C });
 * // C = [4, 5, 10, 11]
 * ```
 */
export function sgemm(args: GemmArgs): void {
  run(checkGemmArgs(args, false));
}

/**
 * {@link sgemm} with B given as bf16 bit patterns (`Uint16Array`, the upper 16 bits of each f32),
 * widened to f32 while B is packed: inference with bf16 weights, usually `transB: true` with
 * B = W[N, K]. Results equal `sgemm` on the widened B up to summation order.
 */
export function sgemmBf16(args: GemmBf16Args): void {
  run(checkGemmArgs(args, true));
}

/** The implementation {@link sgemm} uses now: `'wasm-simd-threads'`, `'wasm-simd'` or `'js'`. */
export function gemmBackend(): GemmBackendName {
  return resolve();
}

/**
 * Force a backend (tests, benchmarks) or return to automatic choice with `'auto'`. Forcing a
 * WebAssembly backend where SIMD is unavailable throws {@link GemmError}.
 */
export function setGemmBackend(name: GemmBackendName | 'auto'): void {
  if (name !== 'auto' && name !== 'js' && name !== 'wasm-simd' && name !== 'wasm-simd-threads') {
    throw new GemmError('backend', `unknown backend '${String(name)}'`);
  }
  if ((name === 'wasm-simd' || name === 'wasm-simd-threads') && wasmVariant() === null) {
    throw new GemmError('backend', `'${name}' needs WebAssembly SIMD, which this runtime lacks`);
  }
  forced = name;
}

/**
 * Threads the `wasm-simd-threads` backend uses, the calling thread included (default:
 * `os.availableParallelism()`). With `'auto'`, one thread means `wasm-simd`.
 */
export function setGemmThreads(n: number): void {
  if (!Number.isInteger(n) || n < 1 || n > 64) throw new GemmError('threads', `expected an integer in 1..64, got ${n}`);
  threadCount = n;
}

/** Threads the `wasm-simd-threads` backend uses (see {@link setGemmThreads}). */
export function gemmThreads(): number {
  return threadCount;
}

/**
 * Stop the GEMM worker threads and drop the wasm memory (it is garbage-collected once the
 * workers have exited). Workers never keep the process alive; this is for releasing memory or
 * for tests. The next threaded call starts fresh workers.
 */
export function terminateGemmWorkers(): void {
  engine?.terminate();
  engine = null;
}

/** What the WebAssembly backends run on: module variant, micro-tile, worker count and memory size. */
export interface GemmKernelInfo {
  /** Backend {@link sgemm} uses now. */
  backend: GemmBackendName;
  /** `'relaxed'` (fused multiply-add, relaxed SIMD) or `'simd'` (mul + add); null without WebAssembly SIMD. */
  variant: GemmVariantName | null;
  /** Micro-tile as `MRxNR`, e.g. `'4x8'`; null without WebAssembly SIMD. */
  microTile: string | null;
  /** Threads used by `wasm-simd-threads`. */
  threads: number;
  /** Worker threads started so far. */
  workers: number;
  /** Bytes of the shared wasm memory (0 before the first call). */
  memoryBytes: number;
}

/** Describe the GEMM configuration (for benchmark reports and diagnostics). */
export function gemmKernelInfo(): GemmKernelInfo {
  const v = wasmVariant();
  return {
    backend: resolve(),
    variant: v,
    microTile: v === null ? null : `${engine?.mr ?? (v === 'relaxed' ? 6 : 4)}x${engine?.nr ?? 8}`,
    threads: threadCount,
    workers: engine?.workerCount ?? 0,
    memoryBytes: engine?.memoryBytes ?? 0,
  };
}

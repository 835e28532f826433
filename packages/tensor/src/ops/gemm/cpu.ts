/**
 * CPU GEMM kernels of @apertus/tensor: C = alpha * op(A) * op(B) + beta * C on row-major,
 * contiguous Float32Arrays, with a bf16-weight variant. They are the `gemm` kernels of the `js`
 * and `cpu` backends; which one runs is chosen in the backend registry like every other op.
 *
 * - {@link wasmGemm} (`cpu` backend): the WebAssembly SIMD kernel (register-blocked micro-kernel
 *   on packed A/B panels, Goto-style cache blocking) split over workers (Node `worker_threads`,
 *   or Web Workers in a cross-origin isolated page) that share one wasm memory; the calling
 *   thread works too and then sleeps in `Atomics.wait` (spins on a page's main thread) until the
 *   workers finish. {@link setGemmThreads} sets the thread count (1 = calling thread only).
 * - {@link jsGemm} (`js` backend): plain JavaScript, the reference backend.
 *
 * Problems with fewer than {@link THREAD_MIN_WORK} multiply-adds always run on the calling thread,
 * so per-call overhead stays small for attention-sized products. x * W^T with few rows (decode
 * steps) skips packing and streams W through dot products.
 */
import { checkGemmArgs, type GemmArgs, type GemmBf16Args } from './args';
import { GemmError } from './errors';
import { gemmJs } from './js';
import { variantValidates, WasmGemmEngine } from './wasm/engine';
import { workersAvailable } from './wasm/threads';
import type { GemmVariantName } from './wasm/variants';
import { canShareMemory, hardwareThreads } from '../../host';
import { heapStats } from '../../memory/heap';

export type { GemmArgs, GemmBf16Args } from './args';
export { GemmError } from './errors';
export { sgemmReference } from './reference';
export { THREAD_MIN_WORK } from './wasm/engine';
export type { GemmVariantName } from './wasm/variants';

let threadCount = canShareMemory() && workersAvailable() ? hardwareThreads() : 1;
let engine: WasmGemmEngine | null = null;
let variant: GemmVariantName | null | undefined;

/**
 * Whether the relaxed-SIMD variant compiles here (Node >= 22, Chrome >= 114, Firefox >= 145;
 * Safari rejects such modules, and the plain SIMD variant runs there).
 */
export function relaxedSimdAvailable(): boolean {
  return variantValidates('relaxed');
}

/**
 * Whether `relaxed_madd` is fused on this CPU: C = 1·(−1) + a·a with a = 1 + 2⁻¹² is 2⁻¹¹ + 2⁻²⁴
 * when fused and rounds to 2⁻¹¹ when the product is rounded first (V8 lowers `relaxed_madd` to
 * mul + add on CPUs without FMA).
 */
function fusedOn(e: WasmGemmEngine): boolean {
  const a = 1 + 2 ** -12;
  const C = new Float32Array(1);
  e.run(checkGemmArgs({ transA: false, transB: false, M: 1, N: 1, K: 2, A: new Float32Array([1, a]), B: new Float32Array([-1, a]), C }, false), 1);
  return C[0] === 2 ** -11 + 2 ** -24;
}

/** Values of the `APERTUS_GEMM` environment variable and what they select. */
const SETTING: Record<string, GemmVariantName> = { fma: 'relaxed', relaxed: 'relaxed', simd: 'simd' };

/**
 * The variant named by a setting such as `APERTUS_GEMM` (`fma`/`relaxed` or `simd`), or null when
 * the setting is empty. Throws {@link GemmError} (field `APERTUS_GEMM`) on any other value.
 */
export function parseGemmSetting(value: string | undefined): GemmVariantName | null {
  if (value === undefined || value === '') return null;
  const v = SETTING[value.toLowerCase()];
  if (v === undefined) throw new GemmError('APERTUS_GEMM', `expected fma, relaxed or simd, got '${value}'`);
  return v;
}

/** Start an engine of variant `v` (GemmError where it cannot run here). */
function startEngine(v: GemmVariantName): WasmGemmEngine {
  if (v === 'relaxed' ? !relaxedSimdAvailable() : !variantValidates('simd')) {
    throw new GemmError('backend', `WebAssembly ${v === 'relaxed' ? 'relaxed SIMD' : 'SIMD'} is not available in this runtime`);
  }
  try {
    return new WasmGemmEngine(v);
  } catch (e) {
    throw new GemmError('backend', `cannot start the WebAssembly GEMM: ${e instanceof Error ? e.message : String(e)}`);
  }
}

/**
 * The engine of the current variant. By default (no {@link setGemmVariant}, no `APERTUS_GEMM`)
 * that is `relaxed` where relaxed SIMD validates and `relaxed_madd` is fused on this CPU, else
 * `simd`; null without WebAssembly SIMD.
 */
function currentEngine(): WasmGemmEngine | null {
  if (engine !== null) return engine;
  if (variant === undefined) {
    if (!variantValidates('simd')) variant = null;
    else {
      const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env;
      variant = parseGemmSetting(env?.APERTUS_GEMM);
      if (variant === null && relaxedSimdAvailable()) {
        const fma = startEngine('relaxed');
        if (fusedOn(fma)) engine = fma;
        else fma.terminate();
      }
      variant ??= engine?.variant ?? 'simd';
    }
  }
  if (variant === null) return null;
  engine ??= startEngine(variant);
  return engine;
}

const isBf16 = (args: GemmArgs | GemmBf16Args): args is GemmBf16Args => args.B instanceof Uint16Array;

/** The engine of the current variant (its worker threads run other kernels' call jobs too), or null without WebAssembly SIMD. Internal to the package. */
export function gemmEngine(): WasmGemmEngine | null {
  return currentEngine();
}

/** Whether this runtime can run {@link wasmGemm} (WebAssembly SIMD validates). */
export function wasmGemmAvailable(): boolean {
  return variantValidates('simd');
}

/**
 * Choose the variant of the `cpu` GEMM (and so of the attention tiles and fused loss built on it):
 * `'relaxed'` — 6 x 8 tile, `f32x4.relaxed_madd`, a fused multiply-add where the CPU has FMA, the
 * default there — or `'simd'` — 4 x 8 tile, mul + add, the same bits on every CPU and Node version
 * (for bit-exact reproducibility across machines). The environment variable
 * `APERTUS_GEMM=fma|simd` sets the same choice for a whole process. Throws {@link GemmError} where
 * the variant cannot run.
 */
export function setGemmVariant(v: GemmVariantName): void {
  if (v !== 'relaxed' && v !== 'simd') throw new GemmError('variant', `expected 'relaxed' or 'simd', got ${String(v)}`);
  if (engine?.variant === v) return;
  const next = startEngine(v);
  engine?.terminate();
  engine = next;
  variant = v;
}

/**
 * The `cpu` backend's GEMM: WebAssembly SIMD (the variant of {@link setGemmVariant}) on
 * {@link gemmThreads} threads. B holds bf16 bits (widened while packing) when it is a
 * Uint16Array. Throws {@link GemmError} on bad arguments, before touching C, and where WebAssembly
 * SIMD is missing.
 */
export function wasmGemm(args: GemmArgs | GemmBf16Args): void {
  const g = checkGemmArgs(args, isBf16(args));
  const e = currentEngine();
  if (e === null) throw new GemmError('backend', 'WebAssembly SIMD is not available in this runtime');
  e.run(g, threadCount);
}

/** The `js` backend's GEMM (plain JavaScript, about 1 GFLOPS); same contract as {@link wasmGemm}. */
export function jsGemm(args: GemmArgs | GemmBf16Args): void {
  gemmJs(checkGemmArgs(args, isBf16(args)));
}

/**
 * Threads {@link wasmGemm} uses, the calling thread included (default: the hardware threads
 * where memory can be shared with workers, else 1; 1 runs on the calling thread only).
 */
export function setGemmThreads(n: number): void {
  if (!Number.isInteger(n) || n < 1 || n > 64) throw new GemmError('threads', `expected an integer in 1..64, got ${n}`);
  threadCount = n;
}

/** Threads {@link wasmGemm} uses (see {@link setGemmThreads}). */
export function gemmThreads(): number {
  return threadCount;
}

/**
 * Stop the GEMM worker threads (the wasm memory stays: it holds tensor storage). Workers never
 * keep the process alive; this is for tests and shutdown. The next threaded call starts fresh
 * workers.
 */
export function terminateGemmWorkers(): void {
  engine?.terminate();
  engine = null;
}

/** What the WebAssembly GEMM runs on: module variant, micro-tile, worker count and memory size. */
export interface GemmKernelInfo {
  /** `'relaxed'` (fused multiply-add, relaxed SIMD) or `'simd'` (mul + add); null without WebAssembly SIMD. */
  variant: GemmVariantName | null;
  /** Micro-tile as `MRxNR`, e.g. `'4x8'`; null without WebAssembly SIMD. */
  microTile: string | null;
  /** Threads {@link wasmGemm} uses. */
  threads: number;
  /** Worker threads started so far. */
  workers: number;
  /** Bytes of the shared wasm memory, the cpu device's memory (0 before first use). */
  memoryBytes: number;
  /**
   * Bytes {@link wasmGemm} has copied into or out of the wasm memory so far: operands that were
   * plain JavaScript arrays rather than tensor storage on the cpu device. 0 for tensor operands.
   */
  bytesStaged: number;
}

/** Describe the GEMM configuration (for benchmark reports and diagnostics). */
export function gemmKernelInfo(): GemmKernelInfo {
  const e = currentEngine();
  return {
    variant: e?.variant ?? null,
    microTile: e === null ? null : `${e.mr}x${e.nr}`,
    threads: threadCount,
    workers: engine?.workerCount ?? 0,
    memoryBytes: heapStats().memoryBytes,
    bytesStaged: engine?.bytesStaged ?? 0,
  };
}

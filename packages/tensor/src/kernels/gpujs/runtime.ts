/**
 * The gpu.js runtime shared by every kernel of the gpu.js backend: one `GPU` instance in one
 * mode, a bounded cache of compiled kernels keyed by op and shape, the silent-fallback guard,
 * and the conversion of gpu.js results back into flat float32 data.
 *
 * Conventions used by all kernels of this folder:
 * - Kernel sources are strings holding a plain `function (...) { ... }` (see `KernelSource`).
 * - Sizes are `this.constants` of type Integer, so every loop bound is a compile-time constant
 *   (gpu.js caps loops with argument bounds at `loopMaxIterations`, silently) and index
 *   arithmetic on the webasm backend stays in i32.
 * - Float scalars (eps, scale, alpha...) are `Float` arguments, and per-call integers (qOffset,
 *   offsets) `Integer` arguments, so changing them never recompiles.
 * - Row-major buffers are passed as `input(flat, [x, y, z])` and read as `a[z][y][x]`: gpu.js
 *   then computes the flat address itself (in i32 on webasm). Locals that hold an index decay to
 *   f32 on webasm, so every single coordinate must stay below 2^24 (checked by `checkIndexable`).
 */
import { GPU, type IGPUKernelSettings, type IKernelRunShortcut, Input, type OutputDimensions } from 'gpu.js';
import { ShapeError } from '../../errors';
import { GpujsBackendError } from './errors';

/** gpu.js modes we support with the synchronous tensor API. */
export type GpujsMode = 'webasm' | 'cpu' | 'headlessgl' | 'webgl2' | 'webgl' | 'gpu';

/** The modes gpu.js may pick for `mode: 'gpu'` that are real GPU backends. */
const GPU_MODES: readonly string[] = ['headlessgl', 'webgl2', 'webgl'];

/** Every mode name `createGpujsKernels` accepts. */
export const GPUJS_MODES: readonly GpujsMode[] = ['webasm', 'cpu', 'headlessgl', 'webgl2', 'webgl', 'gpu'];

export {
  call, checkIndexable, drive, expectLength, HostTable, into, kept, MAX_COORD,
  type ArgType, type DeviceArray, type KernelCall, type KernelOp, type KernelSource, type KernelSpec,
} from './ops';
import { HostTable, MAX_COORD, type ArgType, type DeviceArray, type KernelCall, type KernelSpec } from './ops';

/** A compiled kernel, the mode it really runs in, and how many values it returns per cell. */
interface Entry {
  readonly run: IKernelRunShortcut;
  readonly cells: number;
  readonly components: number;
  verified: boolean;
}

/** Flat-array wrapper gpu.js reads as `a[z][y][x]` with `dims = [x, y, z]`. */
export function inp(data: Float32Array | Int32Array | DeviceArray, dims: readonly number[]): Input {
  return new Input(data as unknown as number[], [...dims] as OutputDimensions);
}

/** Default bound on compiled kernels kept alive per runtime (each holds a wasm memory or GL program). */
const CACHE_LIMIT = 192;

/** One gpu.js `GPU` instance plus the compiled-kernel cache. */
export class GpujsRuntime {
  /** The mode that was asked for. */
  readonly requested: GpujsMode;
  /** The mode gpu.js runs (the backend `GPU` chose; every kernel is checked against it). */
  readonly mode: string;
  private readonly gpu: GPU;
  private readonly cache = new Map<string, Entry>();
  private disposed = false;

  constructor(requested: GpujsMode) {
    if (!GPUJS_MODES.includes(requested)) {
      throw new GpujsBackendError({ requestedMode: String(requested), reason: `unknown mode; expected one of ${GPUJS_MODES.join(', ')}` });
    }
    this.requested = requested;
    let gpu: GPU;
    try {
      gpu = new GPU({ mode: requested });
    } catch (e) {
      throw new GpujsBackendError({ requestedMode: requested, reason: `not available on this machine (${errorText(e)})`, cause: e });
    }
    const chosen = (gpu as unknown as { Kernel: { mode: string } | null }).Kernel?.mode;
    if (chosen === undefined) {
      throw new GpujsBackendError({ requestedMode: requested, reason: 'gpu.js chose no kernel class' });
    }
    const ok = requested === 'gpu' ? GPU_MODES.includes(chosen) : chosen === requested;
    if (!ok) {
      destroyQuietly(gpu);
      const reason = requested === 'gpu'
        ? 'no GPU backend (headlessgl, webgl2, webgl) works here; refusing the silent fallback'
        : 'refusing the silent fallback';
      throw new GpujsBackendError({ requestedMode: requested, actualMode: chosen, reason });
    }
    this.gpu = gpu;
    this.mode = chosen;
  }

  /**
   * Run one kernel call synchronously and return its output as one flat Float32Array (x fastest;
   * `components` values per cell).
   */
  run(c: KernelCall): Float32Array {
    const [entry, cacheKey] = this.entry(c);
    let result: unknown;
    try {
      result = this.invoke(entry, c.args);
    } catch (e) {
      throw this.failed(c.name, entry, cacheKey, e);
    }
    return this.finish(c.name, entry, cacheKey, result);
  }

  /** The compiled kernel for a call (built from `spec()` on first use) and its cache key. */
  private entry(c: KernelCall): [Entry, string] {
    if (this.disposed) throw this.error(c.name, 'the kernel set was disposed');
    const cacheKey = `${c.name}|${c.key}`;
    let entry = this.cache.get(cacheKey);
    if (entry === undefined) {
      entry = this.build(c.name, c.spec());
      this.cache.set(cacheKey, entry);
      this.evict();
    } else {
      // Map iteration order is insertion order: re-insert to mark as most recently used.
      this.cache.delete(cacheKey);
      this.cache.set(cacheKey, entry);
    }
    return [entry, cacheKey];
  }

  private invoke(entry: Entry, args: readonly unknown[]): unknown {
    const plain = args.map((a) => (a instanceof HostTable ? inp(a.make(), a.dims) : a));
    return (entry.run as unknown as (...a: unknown[]) => unknown)(...plain);
  }

  /** Turn a gpu.js failure into a GpujsBackendError (a fallback on first use is reported as such). */
  private failed(name: string, entry: Entry, cacheKey: string, e: unknown): GpujsBackendError {
    if (e instanceof GpujsBackendError) return e;
    if (!entry.verified) {
      this.cache.delete(cacheKey);
      try {
        this.checkFallback(name, entry, e);
      } catch (fallback) {
        return fallback as GpujsBackendError;
      }
      destroyKernelQuietly(entry.run);
    }
    return this.error(name, `gpu.js failed: ${errorText(e)}`, e);
  }

  private finish(name: string, entry: Entry, cacheKey: string, result: unknown): Float32Array {
    if (!entry.verified) {
      // gpu.js builds on the first call and may swap in a cpu kernel there (kernel.fallbackReason).
      this.checkFallback(name, entry, undefined, cacheKey);
      entry.verified = true;
    }
    return flatten(result, entry.cells * entry.components, name, this.requested);
  }

  private error(kernel: string, reason: string, cause?: unknown): GpujsBackendError {
    return new GpujsBackendError({ requestedMode: this.requested, actualMode: this.mode, kernel, reason, cause });
  }

  /** The mode each compiled kernel really runs in, by cache key (for tests and diagnostics). */
  builtKernels(): Record<string, string> {
    const res: Record<string, string> = {};
    for (const [key, e] of this.cache) {
      if (e.verified) res[key] = (e.run.kernel as unknown as { constructor: { mode: string } }).constructor.mode;
    }
    return res;
  }

  /** Destroy every compiled kernel and the GPU instance. */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    for (const e of this.cache.values()) destroyKernelQuietly(e.run);
    this.cache.clear();
    destroyQuietly(this.gpu);
  }

  /** Throw if the kernel gpu.js built for `entry` is not running in this runtime's mode. */
  private checkFallback(name: string, entry: Entry, cause?: unknown, cacheKey?: string): void {
    const k = entry.run.kernel as unknown as { constructor: { mode: string }; fallbackReason?: string | null };
    const ran = k.constructor.mode;
    const reason = k.fallbackReason ?? null;
    if (ran === this.mode && reason === null) return;
    if (cacheKey !== undefined) this.cache.delete(cacheKey);
    destroyKernelQuietly(entry.run);
    throw new GpujsBackendError({
      requestedMode: this.requested, actualMode: ran === this.mode ? 'cpu' : ran, kernel: name,
      reason: `gpu.js fell back silently${reason === null ? '' : `: ${reason}`}`, cause,
    });
  }

  private build(name: string, spec: KernelSpec): Entry {
    let run: IKernelRunShortcut;
    try {
      run = this.gpu.createKernel(spec.source, kernelSettings(spec) as IGPUKernelSettings);
    } catch (e) {
      throw new GpujsBackendError({ requestedMode: this.requested, actualMode: this.mode, kernel: name, reason: `gpu.js could not create the kernel: ${errorText(e)}`, cause: e });
    }
    return { run, cells: outputCells(spec), components: spec.components ?? 1, verified: false };
  }

  private evict(): void {
    while (this.cache.size > CACHE_LIMIT) {
      const oldest = this.cache.keys().next().value as string;
      destroyKernelQuietly(this.cache.get(oldest)!.run);
      this.cache.delete(oldest);
    }
  }
}

/** The gpu.js settings of a kernel spec (plain data, so they can also be posted to a worker). */
export function kernelSettings(spec: KernelSpec): Record<string, unknown> {
  const constants = spec.constants ?? {};
  const constantTypes: Record<string, string> = {};
  let loopMax = 1000;
  for (const [k, v] of Object.entries(constants)) {
    constantTypes[k] = 'Integer';
    loopMax = Math.max(loopMax, v + 1);
  }
  return {
    output: [...spec.output],
    constants,
    constantTypes,
    argumentTypes: { ...spec.argumentTypes },
    // Every loop bound is a constant, but raise the cap anyway so nothing can be cut at 1000.
    loopMaxIterations: loopMax,
    precision: 'single',
    tactic: 'precision',
  };
}

/** Number of output cells of a kernel spec. */
export function outputCells(spec: KernelSpec): number {
  let cells = 1;
  for (const d of spec.output) cells *= d;
  return cells;
}

/**
 * gpu.js returns a Float32Array for 1-D outputs, nested arrays of row views for 2-D/3-D outputs,
 * and arrays of Float32Array(2) for `Array(2)` returns. On webasm all of those are views of one
 * fresh buffer in cell order, which we reuse; otherwise (cpu, GL) we copy element by element.
 */
function flatten(result: unknown, total: number, name: string, mode: string): Float32Array {
  if (result instanceof Float32Array && result.length === total) return result;
  // Find the first and last leaf typed arrays.
  let first: unknown = result;
  while (Array.isArray(first)) first = first[0];
  let last: unknown = result;
  while (Array.isArray(last)) last = last[last.length - 1];
  if (first instanceof Float32Array && last instanceof Float32Array) {
    const end = last.byteOffset + last.byteLength;
    if (first.buffer === last.buffer && end - first.byteOffset === total * 4) {
      return new Float32Array(first.buffer, first.byteOffset, total);
    }
  }
  const out = new Float32Array(total);
  let n = 0;
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) {
      for (const x of v) walk(x);
    } else if (v instanceof Float32Array || v instanceof Float64Array) {
      if (n + v.length > total) n = total + 1;
      else { out.set(v, n); n += v.length; }
    } else if (typeof v === 'number') {
      if (n < total) out[n] = v;
      n++;
    } else {
      n = total + 1;
    }
  };
  walk(result);
  if (n !== total) {
    throw new GpujsBackendError({ requestedMode: mode, kernel: name, reason: `gpu.js returned ${n} values, expected ${total}` });
  }
  return out;
}

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

function destroyKernelQuietly(k: IKernelRunShortcut): void {
  try {
    k.destroy();
  } catch {
    // Destroying a half-built kernel can throw inside gpu.js; there is nothing left to free.
  }
}

function destroyQuietly(gpu: GPU): void {
  try {
    const p = gpu.destroy() as unknown;
    if (p instanceof Promise) p.catch(() => undefined);
  } catch {
    // As above.
  }
}

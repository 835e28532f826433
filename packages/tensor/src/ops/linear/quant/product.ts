// y[M, N] = x[M, K] · Wᵀ for a weight W [N, K] stored as GGUF blocks (or f32/bf16/f16) in a memory
// the kernels run on (memory.ts): the cpu kernel of `linear` for such weights.
//
// Quantized: the input is quantized once (quantize-input.ts, on the calling thread) into records
// in the weight's memory, then the rows of W are cut into jobs that the GEMM's worker threads and
// the calling thread claim (rows.ts computes every output the same way whatever the cut, so any
// thread count gives the same bits). Batches go in chunks of at most MAX_ROWS activation rows
// (a whole number of tiles: the same bits as one call). F32/BF16 up to DOT_MAX_ROWS rows: the
// GEMM's dot_nt in this module on the weight's memory; more rows: the GEMM itself (which reads a
// weight on the heap in place and stages one elsewhere by chunks). F16: f16_rows. BF16 and F16
// inputs are rounded as llama.cpp rounds them (to bf16 / f16) first.
import { BackendError, ShapeError } from '../../../errors';
import { gemmEngine, gemmThreads, wasmGemm } from '../../gemm/cpu';
import { dotAccBytes, dotScratchBytes } from '../../gemm/wasm/dot-nt';
import type { WasmGemmEngine } from '../../gemm/wasm/engine';
import type { WasmMemory } from '../../../wasm/api';
import { roundBf16Into } from '../../../dtypes/bf16';
import { roundF16Into } from '../../../dtypes/f16';
import { QUANT_FORMATS, type QuantDType } from '../../../dtypes/index';
import { compiledModule, instantiate, moduleNames, type KernelExports } from './module';
import { record, recordsBytes, TILE, traits, type Variant } from './layout';
import { quantizerName } from './quantize-input';
import { kernelName, scratchBytes } from './rows';
import { addressIn, scratch, type WeightBytes } from './memory';
import { quantVariant } from './variant';

/** The storage dtypes a weight of a product may have. */
export type WeightDType = QuantDType | 'f32' | 'bf16' | 'f16';

/** A weight matrix [N, K] of `dtype` at `byteOffset` in `memory`. */
export interface PackedWeight extends WeightBytes {
  readonly dtype: WeightDType;
  /** Rows (outputs). */
  readonly N: number;
  /** Columns (inputs): a multiple of the block size (8 for F16). */
  readonly K: number;
}

/** Activation rows per chunk of a batch (a multiple of the tile height). */
const MAX_ROWS = 64;
/** F32/BF16 products of at most this many rows run dot_nt here (the GEMM's own threshold). */
const DOT_MAX_ROWS = 32;
/** Products of fewer multiply-adds run on the calling thread only. */
const THREAD_MIN_WORK = 1 << 18;
/** Stored bytes of the rows one prefill job walks per tile of activations (they stay in L2). */
const JOB_ROW_BYTES = 192 << 10;
/**
 * Bytes of two stored rows up to which one activation row takes the rows two at a time (the `_r2`
 * kernels: each activation vector loaded once for both). Short rows: 1.03–1.15× (Zen 5, one
 * thread, the small shapes, best of 4 alternating runs, load 15); rows of 2.5–3.3 KB (Q6_K, Q8_0
 * at K = 3072) came as slow or slower two at a time.
 */
const TWO_ROWS_MAX_BYTES = 4096;

/** Bytes of one stored row. */
export function weightRowBytes(dtype: WeightDType, K: number): number {
  if (dtype === 'f32') return 4 * K;
  if (dtype === 'bf16' || dtype === 'f16') return 2 * K;
  const f = QUANT_FORMATS[dtype];
  return (K / f.blockValues) * f.blockBytes;
}

/** Whether products of `dtype` with rows of K values run here (WebAssembly SIMD, K a multiple of the block size). */
export function packedLinearAvailable(dtype: WeightDType, K: number): boolean {
  if (quantVariant() === null) return false;
  if (dtype === 'f32' || dtype === 'bf16') return K > 0;
  if (dtype === 'f16') return K > 0 && K % 8 === 0;
  return K > 0 && K % QUANT_FORMATS[dtype].blockValues === 0;
}

/** The module's function names of each variant, in order (a call job's function is its index). */
const names = new Map<Variant, string[]>();
const namesOf = (v: Variant): string[] => {
  if (!names.has(v)) names.set(v, moduleNames(v));
  return names.get(v)!;
};

/** Per memory: the module's instance on the calling thread, and the kernel set's index in each engine. */
interface OnMemory { v: Variant; exports: KernelExports; sets: WeakMap<WasmGemmEngine, number> }
const onMemory = new WeakMap<WasmMemory, OnMemory>();

function kernelsOn(memory: WasmMemory, v: Variant): OnMemory {
  let k = onMemory.get(memory);
  if (!k || k.v !== v) {
    k = { v, exports: instantiate(v, memory), sets: new WeakMap() };
    onMemory.set(memory, k);
  }
  return k;
}

/** Run call jobs (function name, i32 arguments) on `memory`: on the GEMM's threads where there are more than one, else here. */
function runJobs(memory: WasmMemory, v: Variant, jobs: [string, number[]][], threads: number): void {
  const k = kernelsOn(memory, v), engine = threads > 1 && jobs.length > 1 ? gemmEngine() : null;
  if (engine === null) {
    for (const [name, args] of jobs) k.exports[name]!(...args);
    return;
  }
  let set = k.sets.get(engine);
  if (set === undefined) {
    set = engine.addKernelSet({ module: compiledModule(v)!, memory, names: namesOf(v) });
    k.sets.set(engine, set);
  }
  const index = namesOf(v);
  engine.call(set, jobs.map(([name, args]) => [index.indexOf(name), ...args]), threads);
}

/** Cut rows [0, N) into jobs of at most `rows` rows (at least `unit`-row multiples). */
function cuts(N: number, rows: number, unit = 1): [number, number][] {
  const step = Math.max(unit, Math.ceil(rows / unit) * unit), out: [number, number][] = [];
  for (let r = 0; r < N; r += step) out.push([r, Math.min(N, r + step)]);
  return out;
}

/**
 * y[M, N] = x[M, K] · Wᵀ (see the file comment). x and y are float32 arrays anywhere (those not in
 * the weight's memory are staged). Throws ShapeError on sizes that do not fit and BackendError
 * where no kernel runs here.
 */
export function packedLinear(w: PackedWeight, x: Float32Array, M: number, y: Float32Array): void {
  const { N, K, dtype } = w;
  if (x.length < M * K || y.length < M * N) throw new ShapeError(`linear: input of ${x.length} floats or output of ${y.length} for [${M}, ${K}] · [${N}, ${K}]ᵀ`);
  const v = quantVariant();
  if (v === null || !packedLinearAvailable(dtype, K)) throw new BackendError(`linear: no cpu kernel for ${dtype} weights with rows of ${K} values here`);
  if (M === 0 || N === 0) return;
  if ((dtype === 'f32' || dtype === 'bf16') && M > DOT_MAX_ROWS) return gemmProduct(w, x, M, y);
  const threads = M * N * K < THREAD_MIN_WORK ? 1 : gemmThreads();
  for (let m0 = 0; m0 < M; m0 += MAX_ROWS) {
    const Mc = Math.min(MAX_ROWS, M - m0), xs = x.subarray(m0 * K, (m0 + Mc) * K), ys = y.subarray(m0 * N, (m0 + Mc) * N);
    if (dtype === 'f32' || dtype === 'bf16' || dtype === 'f16') floatProduct(w, v, xs, Mc, ys, threads);
    else quantProduct(w, dtype, v, xs, Mc, ys, threads);
  }
}

/** Lay out `sizes` (bytes) 64-byte aligned from `at`. */
function regions(at: number, sizes: number[]): number[] {
  return sizes.map((s) => { const a = at; at = Math.ceil((at + s) / 64) * 64; return a; });
}
const total = (sizes: number[]): number => sizes.reduce((s, b) => s + Math.ceil(b / 64) * 64, 0);

function quantProduct(w: PackedWeight, dtype: QuantDType, v: Variant, x: Float32Array, M: number, y: Float32Array, threads: number): void {
  const { N, K, memory } = w, t = traits(dtype), f = t.format, nb = K / f.blockValues, rs = nb * f.blockBytes;
  const xIn = addressIn(memory, x), yIn = addressIn(memory, y);
  const full = Math.floor(M / TILE), rest = M % TILE;
  // Rows per job: a decode product (one tile) in a few jobs per thread; a prefill one in jobs whose rows stay in L2.
  const perJob = full + (rest > 0 ? 1 : 0) <= 1 ? Math.ceil(N / (threads === 1 ? 1 : 4 * threads)) : Math.max(1, Math.min(Math.ceil(N / (2 * threads)), Math.floor(JOB_ROW_BYTES / rs)));
  const pairs = rest === 1 && 2 * rs <= TWO_ROWS_MAX_BYTES;
  const rows = cuts(N, perJob, pairs ? 2 : 1), jobs = rows.length * ((full > 0 ? 1 : 0) + (rest > 0 ? 1 : 0) + (pairs ? 1 : 0));
  const sizes = [xIn >= 0 ? 0 : 4 * M * K, recordsBytes(t, v, M, nb), yIn >= 0 ? 0 : 4 * M * N, jobs * scratchBytes(nb)];
  const s = scratch(memory, total(sizes), `linear (${dtype})`);
  try {
    const [xs, rec, ys, sc] = regions(s.at, sizes) as [number, number, number, number];
    const f32 = new Float32Array(memory.buffer);
    if (xIn < 0) f32.set(x.subarray(0, M * K), xs / 4);
    const k = kernelsOn(memory, v);
    k.exports[quantizerName(t, v)]!(xIn >= 0 ? xIn : xs, K, M, rec);
    const py = yIn >= 0 ? yIn : ys, recRest = rec + full * nb * record(t, v, TILE).bytes, list: [string, number[]][] = [];
    for (const [r0, r1] of rows) {
      if (full > 0) list.push([kernelName(dtype, TILE), [w.byteOffset, rs, r0, r1, nb, rec, full, py, N, sc + list.length * scratchBytes(nb)]]);
      const yRest = py + 4 * full * TILE * N;
      if (pairs) {
        // Two rows at a time, then an odd last row alone: the same bits as one at a time.
        const r2 = r0 + ((r1 - r0) & ~1);
        if (r2 > r0) list.push([kernelName(dtype, 1, 2), [w.byteOffset, rs, r0, r2, nb, recRest, 1, yRest, N, sc + list.length * scratchBytes(nb)]]);
        if (r1 > r2) list.push([kernelName(dtype, 1), [w.byteOffset, rs, r2, r1, nb, recRest, 1, yRest, N, sc + list.length * scratchBytes(nb)]]);
      } else if (rest > 0) list.push([kernelName(dtype, rest), [w.byteOffset, rs, r0, r1, nb, recRest, 1, yRest, N, sc + list.length * scratchBytes(nb)]]);
    }
    runJobs(memory, v, list, threads);
    if (yIn < 0) y.set(new Float32Array(memory.buffer, ys, M * N));
  } finally {
    s.release();
  }
}

function floatProduct(w: PackedWeight, v: Variant, x: Float32Array, M: number, y: Float32Array, threads: number): void {
  const { N, K, memory, dtype } = w, round = dtype !== 'f32';
  const xIn = round ? -1 : addressIn(memory, x), yIn = addressIn(memory, y);
  const dot = dtype !== 'f16';
  const rows = dot ? cuts(N, Math.ceil(N / (threads === 1 ? 1 : 4 * threads)), 4) : cuts(N, Math.ceil(N / (threads === 1 ? 1 : 4 * threads)));
  const sizes = [xIn >= 0 ? 0 : 4 * M * K, dot ? dotScratchBytes(M, K) : 0, yIn >= 0 ? 0 : 4 * M * N, dot ? rows.length * Math.ceil(dotAccBytes(M) / 64) * 64 : 0];
  const s = scratch(memory, total(sizes), `linear (${dtype})`);
  try {
    const [xs, packed, ys, acc] = regions(s.at, sizes) as [number, number, number, number];
    if (xIn < 0) {
      const dst = new Float32Array(memory.buffer, xs, M * K), src = x.subarray(0, M * K);
      if (dtype === 'bf16') roundBf16Into(src, dst); else if (dtype === 'f16') roundF16Into(src, dst); else dst.set(src);
    }
    const k = kernelsOn(memory, v), px = xIn >= 0 ? xIn : xs, py = yIn >= 0 ? yIn : ys;
    if (dot) {
      (k.exports.dot_pack as (...a: number[]) => void)(M, K, px, K, 1, packed);
      const bf16 = dtype === 'bf16' ? 1 : 0, accBytes = Math.ceil(dotAccBytes(M) / 64) * 64;
      runJobs(memory, v, rows.map(([r0, r1], j) => ['dot_nt', [M, r1 - r0, K, packed, w.byteOffset + r0 * K * (bf16 ? 2 : 4), K, bf16, py + 4 * r0, N, 0, acc + j * accBytes]]), threads);
    } else {
      runJobs(memory, v, rows.map(([r0, r1]) => ['f16_rows', [w.byteOffset, r0, r1, K, px, M, py, N]]), threads);
    }
    if (yIn < 0) y.set(new Float32Array(memory.buffer, ys, M * N));
  } finally {
    s.release();
  }
}

/** F32/BF16 products of many rows: the GEMM, with the weight read where it lives (staged by chunks when not on the heap). */
function gemmProduct(w: PackedWeight, x: Float32Array, M: number, y: Float32Array): void {
  const { N, K, memory, byteOffset, dtype } = w;
  if (dtype === 'f32') {
    wasmGemm({ transA: false, transB: true, M, N, K, A: x.subarray(0, M * K), B: new Float32Array(memory.buffer, byteOffset, N * K), C: y.subarray(0, M * N) });
    return;
  }
  const xr = roundBf16Into(x.subarray(0, M * K), new Float32Array(M * K));
  wasmGemm({ transA: false, transB: true, M, N, K, A: xr, B: new Uint16Array(memory.buffer, byteOffset, N * K), C: y.subarray(0, M * N) });
}

/**
 * Host side of the WebAssembly GEMM: the cpu device's shared memory (`kernels/cpu/heap.ts`), one
 * module instance on the main thread, optional workers (Node worker threads or Web Workers, see
 * `threads.ts`) running the same module on the same memory.
 *
 * Operands that live in that memory (tensor storage) are read and written in place. Any other
 * operand (a plain JavaScript array) is staged: A and C by blocks of rows, B by chunks of its
 * stored rows (about `bChunkBytes` each, one contiguous copy), so the scratch stays bounded even
 * for vocabulary-sized weights; staged bytes are counted (`bytesStaged`). The product becomes a
 * sequence of steps (row block, B chunk); B chunks (column chunks, or K chunks of whole KC
 * blocks) never change a sum, so a B in the wasm memory goes in one step and results do not
 * depend on where the operands live. While the threads compute one step, the
 * calling thread copies out the C block of the previous step and stages the next step into the
 * other half of each double buffer. Within a step, work is split into jobs (column or row
 * ranges) that the main thread and the workers claim (see `jobs.ts`).
 */
import type { CheckedGemm } from '../args';
import { GemmError } from '../errors';
import { scaleC } from '../js';
import {
  CALL_ARGS, compileRunner, CTL_BYTES, CTL_CLAIM, CTL_DONE, CTL_ERROR, CTL_GEN, CTL_JOBS, CTL_QUIT, CTL_SCRATCH,
  JOB_ALPHA_GEMM, JOB_CALL, JOB_DOT, JOB_GEMM, JOB_WORDS, MAX_JOBS, MAX_THREADS,
  type GemmExports, type KernelSet, type RunJobs,
} from './jobs';
import { GEMM_WASM_RELAXED, GEMM_WASM_RELAXED_WIDE, GEMM_WASM_SIMD, GEMM_WASM_SIMD_WIDE } from './module.generated';
import { dotAccBytes, dotScratchBytes } from './dot-nt';
import { heapAddress, heapMemory, heapRelease, heapScratch } from '../../../memory/heap';
import { GEMM_VARIANTS, GEMM_WIDE_TILES, type GemmVariantName } from './variants';
import { canBlock, canShareMemory, compileOptimized, revectorizeOn } from '../../../host';
import { startGemmWorker, workersAvailable, type GemmWorker } from './threads';
import { wasmApi, type WasmMemory, type WasmModule } from '../../../wasm/api';

/** Tuning knobs of an engine (defaults in {@link DEFAULT_ENGINE_TUNING}). */
export interface EngineTuning {
  /** Rows of the packed A block (L2-resident: 264 x KC floats = 528 KiB; 264 = 44 x 6 = 66 x 4, so
   * a 256-row product is one block, and each packed B panel serves 44 tiles from L1). */
  MC: number;
  /** Columns of the packed B block. */
  NC: number;
  /** Depth of both packed blocks (a B micro-panel of KC x NR stays in L1). */
  KC: number;
  /** Largest staged A chunk in bytes (at least one row is staged). */
  aChunkBytes: number;
  /** Target size of a staged B chunk in bytes (see `minChunkRows`). */
  bChunkBytes: number;
  /** Fewest rows of B^T per column chunk (unless N is smaller), whatever `bChunkBytes` says (K chunks have at least KC rows). */
  minChunkRows: number;
  /** Largest staged C block in bytes when B takes several chunks (at least one row is staged). */
  cChunkBytes: number;
  /** Staged C block in bytes when B fits in one chunk (cache-sized; at least one row). */
  cBlockBytes: number;
  /** Narrowest column job when a product is split over threads by columns. */
  minJobCols: number;
  /** Problems with fewer multiply-adds (M * N * K) than this run on the calling thread only. */
  threadMinWork: number;
  /** x * W^T (transB, not transA) with at most this many rows uses the unpacked dot-product path. */
  dotMaxM: number;
}

/** Problems with fewer multiply-adds than this run on the calling thread only. */
export const THREAD_MIN_WORK = 1 << 20;

/** Default tuning, measured on x86-64 with `bench/gemm.mjs`. */
export const DEFAULT_ENGINE_TUNING: Readonly<EngineTuning> = {
  MC: 264,
  NC: 1024,
  KC: 512,
  aChunkBytes: 64 << 20,
  bChunkBytes: 4 << 20,
  minChunkRows: 64,
  cChunkBytes: 64 << 20,
  cBlockBytes: 2 << 20,
  minJobCols: 128,
  threadMinWork: THREAD_MIN_WORK,
  dotMaxM: 32,
};

/** Round a byte address up to a cache line (arithmetic, not bitwise: addresses may exceed 2^31). */
const align = (x: number): number => Math.ceil(x / 64) * 64;

function decode(b64: string): Uint8Array {
  const s = atob(b64);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

/** Bytes of the committed module variant `name`, with its 128-bit or its wide micro-tile (see variants.ts). */
export function variantBytes(name: GemmVariantName, wide = false): Uint8Array {
  if (name === 'relaxed') return decode(wide ? GEMM_WASM_RELAXED_WIDE : GEMM_WASM_RELAXED);
  return decode(wide ? GEMM_WASM_SIMD_WIDE : GEMM_WASM_SIMD);
}

/** Whether this runtime compiles the variant (relaxed SIMD: Node >= 22, Chrome >= 114, Firefox >= 145; not Safari). */
export function variantValidates(name: GemmVariantName): boolean {
  return wasmApi !== null && wasmApi.validate(variantBytes(name));
}

/** Copy `rows` rows of `cols` elements from `src` (row stride `stride`, from `srcOff`) densely to `dst` at `dstOff`. */
function copyRows<T extends Float32Array<ArrayBufferLike> | Uint16Array<ArrayBufferLike>>(
  dst: T, dstOff: number, src: T, srcOff: number, rows: number, cols: number, stride: number,
): void {
  if (cols === stride || rows === 1) {
    dst.set(src.subarray(srcOff, srcOff + (rows - 1) * stride + cols) as never, dstOff);
  } else if (cols < 32) {
    for (let r = 0; r < rows; r++) {
      const s = srcOff + r * stride, d = dstOff + r * cols;
      for (let j = 0; j < cols; j++) dst[d + j] = src[s + j]!;
    }
  } else {
    for (let r = 0; r < rows; r++) dst.set(src.subarray(srcOff + r * stride, srcOff + r * stride + cols) as never, dstOff + r * cols);
  }
}

/** A GEMM engine over one shared wasm memory (see the file comment). */
export class WasmGemmEngine {
  /** Which committed module runs. */
  readonly variant: GemmVariantName;
  /** Whether it runs the wide micro-tile (compiled with V8's revectorizer, see variants.ts). */
  readonly wide: boolean;
  /** Micro-tile rows. */
  readonly mr: number;
  /** Micro-tile columns. */
  readonly nr: number;
  private readonly memory: WasmMemory;
  private readonly module: WasmModule;
  private readonly ex: GemmExports;
  /** Whether workers can share the control block (a browser page that is not cross-origin isolated has no SharedArrayBuffer: the engine then runs on the calling thread only). */
  private readonly threaded = canShareMemory() && workersAvailable();
  private control = this.threaded ? new SharedArrayBuffer(CTL_BYTES) : new ArrayBuffer(CTL_BYTES);
  private ctl = new Int32Array(this.control);
  private ctlF32 = new Float32Array(this.control);
  private readonly runJobs: RunJobs = compileRunner();
  /** The kernel sets of call jobs, and their functions on the calling thread. */
  private readonly sets: KernelSet[] = [];
  private readonly setFns: ((...args: number[]) => void)[][] = [];
  private workers: GemmWorker[] = [];
  private workerFailure: string | null = null;
  private dead = false;
  private staged = 0;
  private viewBuffer: ArrayBufferLike | null = null;
  private f32View: Float32Array<ArrayBufferLike> = new Float32Array(0);
  private u16View: Uint16Array<ArrayBufferLike> = new Uint16Array(0);

  private readonly tuning: EngineTuning;

  /**
   * @param variant - the arithmetic (FMA or mul + add)
   * @param tuning - blocking and chunk sizes (tests)
   * @param wide - the wide micro-tile; default: where `compileOptimized` turns the revectorizer on
   */
  constructor(variant: GemmVariantName, tuning: Partial<EngineTuning> = {}, wide = revectorizeOn()) {
    this.tuning = { ...DEFAULT_ENGINE_TUNING, ...tuning };
    this.variant = variant;
    this.wide = wide;
    const tile = (wide ? GEMM_WIDE_TILES : GEMM_VARIANTS)[variant];
    this.mr = tile.mr;
    this.nr = tile.nr;
    if (wasmApi === null) throw new GemmError('backend', 'WebAssembly is not available in this runtime');
    // Optimized at once: the workers run the same compiled code, and the driver and packing
    // functions run few, long calls.
    const api = wasmApi;
    this.module = compileOptimized(() => new api.Module(variantBytes(variant, wide)));
    const memory = heapMemory();
    if (memory === null) throw new GemmError('backend', 'cannot create a shared WebAssembly memory (SharedArrayBuffer missing?)');
    this.memory = memory;
    this.ex = new wasmApi.Instance(this.module, { env: { memory: this.memory } }).exports as unknown as GemmExports;
  }

  /** Workers currently started. */
  get workerCount(): number {
    return this.workers.length;
  }

  /** Bytes of the wasm memory. */
  get memoryBytes(): number {
    return this.memory.buffer.byteLength;
  }

  /** Bytes copied into and out of the wasm memory so far (operands that did not live there). */
  get bytesStaged(): number {
    return this.staged;
  }

  /**
   * Make the functions `names` of `module` instantiated on `memory` runnable as call jobs
   * ({@link call}); returns the set's index. Workers already started are replaced by fresh ones
   * that know the new set (once per set: a model's weights memory, the product module).
   */
  addKernelSet(set: KernelSet): number {
    if (this.dead) throw new GemmError('backend', 'this GEMM engine was terminated');
    const exports = new wasmApi!.Instance(set.module, { env: { memory: set.memory } }).exports as Record<string, (...args: number[]) => void>;
    this.setFns.push(set.names.map((n) => exports[n]!));
    this.sets.push(set);
    if (this.workers.length > 0) this.restartWorkers();
    return this.sets.length - 1;
  }

  /**
   * Run the call jobs `jobs` (each: the index of a function of kernel set `set`, then its i32
   * arguments) on up to `threads` threads, the calling thread included, in rounds of at most
   * MAX_JOBS; returns when all have run. Jobs must not depend on each other's order.
   */
  call(set: number, jobs: readonly (readonly number[])[], threads: number): void {
    if (this.dead) throw new GemmError('backend', 'this GEMM engine was terminated');
    const T = !this.threaded ? 1 : Math.max(1, Math.min(threads, MAX_THREADS, jobs.length));
    if (T > 1) this.ensureWorkers(T - 1);
    for (let j0 = 0; j0 < jobs.length; j0 += MAX_JOBS) {
      const n = Math.min(MAX_JOBS, jobs.length - j0);
      for (let j = 0; j < n; j++) {
        const job = jobs[j0 + j]!;
        if (job.length - 1 > CALL_ARGS) throw new GemmError('backend', `a call job takes at most ${CALL_ARGS} arguments`);
        this.writeJob(j, JOB_CALL, [set, ...job]);
      }
      this.publish(n, T);
      this.join(n);
    }
  }

  /** Stop the workers and start over with a fresh control block (their successors are started on demand, with every kernel set). */
  private restartWorkers(): void {
    Atomics.store(this.ctl, CTL_QUIT, 1);
    Atomics.add(this.ctl, CTL_GEN, 1);
    Atomics.notify(this.ctl, CTL_GEN);
    for (const w of this.workers) w.terminate();
    this.workers = [];
    this.control = new SharedArrayBuffer(CTL_BYTES);
    this.ctl = new Int32Array(this.control);
    this.ctlF32 = new Float32Array(this.control);
  }

  /** Compute the GEMM `g` with up to `threads` threads (1 = the calling thread only). */
  run(g: CheckedGemm, threads: number): void {
    if (this.dead) throw new GemmError('backend', 'this GEMM engine was terminated');
    const { M, N, K, alpha, beta } = g;
    if (M === 0 || N === 0) return;
    if (K === 0 || alpha === 0) {
      scaleC(g.C, M * N, beta);
      return;
    }
    const { NC, KC, aChunkBytes, bChunkBytes, cChunkBytes, cBlockBytes, minChunkRows, minJobCols, threadMinWork, dotMaxM } = this.tuning;
    // A whole number of MR-tall panels per A block: only the last block of M has a partial panel.
    const MC = Math.ceil(this.tuning.MC / this.mr) * this.mr;
    const work = M * N * K;
    const T = work < threadMinWork || !this.threaded ? 1 : Math.max(1, Math.min(threads, MAX_THREADS));
    if (T > 1) this.ensureWorkers(T - 1);
    const dot = g.transB && !g.transA && M <= dotMaxM;
    const es = g.bf16 ? 2 : 4;
    const mr = this.mr, nr = this.nr;
    // Operands already in the wasm memory are used in place (-1: staged).
    const inA = heapAddress(g.A), inB = heapAddress(g.B), inC = heapAddress(g.C);

    // Scratch layout: [packing scratch x T][A slots][B slots][C slots] (slots only for staged operands).
    const packABytes = align(Math.ceil(MC / mr) * mr * KC * 4);
    const packBBytes = align(Math.ceil(NC / nr) * nr * KC * 4);
    const tileBytes = align(mr * nr * 4);
    const scratchBytes = dot ? 0 : packABytes + packBBytes + tileBytes;
    // x·Wᵀ with few rows: A is packed once (dot_pack, on the calling thread) for all its jobs,
    // which each get their own accumulator scratch.
    const dotJobs = T === 1 ? 1 : Math.min(MAX_JOBS, 4 * T), accBytes = align(dotAccBytes(M));
    const dotBytes = dot ? align(dotScratchBytes(M, K)) + dotJobs * accBytes : 0;
    // Every live thread gets scratch: a worker still in its claim loop may pick up any job.
    const S = Math.max(T, this.workers.length + 1);
    // B is cut in chunks along its stored outer dimension, so that each chunk is one contiguous
    // copy when staged: column blocks of op(B) when transB (B is [N, K]), row blocks (a K range,
    // accumulated into C) otherwise (B is [K, N]).
    const byK = !g.transB;
    const outer = byK ? K : N;
    // With K chunks and a wide C, the columns are also cut into blocks of nbW, so the C block that
    // the K chunks accumulate into stays cache-sized; B chunks are then row pieces (nbW wide).
    const nbW = byK && N > 2 * NC && K > KC ? 2 * NC : N;
    const nBlocks = Math.ceil(N / nbW);
    const rowElems = byK ? nbW : K;
    // K chunks are whole multiples of KC: the kernel adds each KC block's sum into C in K order
    // whether the blocks come from one call or from several chunks, so chunking never changes a
    // sum (and no K block is shorter than KC except the last one of K).
    const unit = byK ? KC : dot ? 4 : nr;
    // Column chunks are at least as wide as M (up to 4 x bChunkBytes), so a step can be split by
    // columns: row jobs would each pack the whole B chunk.
    const wide = byK || dot ? 0 : Math.min(M, Math.floor((4 * bChunkBytes) / (es * rowElems)));
    // A B that lives in the wasm memory is not staged, so its chunks would only cut the product
    // into more hand-offs to the threads: it goes in one (chunks never change a sum, so the bits
    // are those of the staged path).
    let chunk = inB >= 0 ? outer : Math.max(byK ? KC : minChunkRows, Math.floor(bChunkBytes / (es * rowElems)), wide);
    chunk = chunk >= outer ? outer : Math.max(unit, Math.floor(chunk / unit) * unit);
    const nChunks = Math.ceil(outer / chunk);
    const bOnce = nChunks === 1 && nBlocks === 1;
    // A and C go by blocks of rows. With B in a single chunk, B is staged once and C goes out in
    // cache-sized row blocks (the micro-kernel's stores then hit cache, which matters when K is
    // short). Otherwise each row block re-stages all of B, so blocks are as large as allowed.
    const cRowBytes = 4 * (byK ? nbW : chunk);
    // (A C in the wasm memory is not copied out, so its row blocks need not be cache-sized.)
    const cBytes = inC >= 0 ? cChunkBytes : bOnce ? cBlockBytes : cChunkBytes;
    const mChunk = Math.max(1, Math.min(M, Math.floor(aChunkBytes / (4 * K)), Math.floor(cBytes / cRowBytes)));
    const mChunks = Math.ceil(M / mChunk);

    // The work is a sequence of steps (row block m, column block nb, B chunk c; c fastest). While
    // the threads compute step s, the calling thread copies out the C block that step s-1
    // finished and stages step s+1 into the other slot of each double buffer.
    const steps = mChunks * nBlocks * nChunks;
    const aSlots = inA >= 0 ? 0 : mChunks > 1 ? 2 : 1, bSlots = inB >= 0 ? 0 : bOnce ? 1 : 2;
    const cSlots = inC >= 0 ? 0 : steps > 1 ? 2 : 1;
    const aSlot = align(mChunk * K * 4), bSlot = align(chunk * rowElems * es), cSlot = align(mChunk * cRowBytes);
    const sA = align(S * scratchBytes) + dotBytes;
    const sB = sA + aSlots * aSlot;
    const sC = sB + bSlots * bSlot;
    const region = heapScratch(sC + cSlots * cSlot + 64);
    if (region === null) throw new GemmError('memory', `cannot grow the wasm memory by ${sC + cSlots * cSlot} bytes of GEMM scratch`);
    try {
      const base = align(region.byteOffset);
      for (let t = 0; t < S; t++) {
        const p = base + t * scratchBytes;
        this.ctl[CTL_SCRATCH + 3 * t] = p;
        this.ctl[CTL_SCRATCH + 3 * t + 1] = p + packABytes;
        this.ctl[CTL_SCRATCH + 3 * t + 2] = p + packABytes + packBBytes;
      }
      const pA0 = base + sA, pB0 = base + sB, pC0 = base + sC, pDot = base + align(S * scratchBytes);
      const bf16 = g.bf16 ? 1 : 0;
      // Column stride of op(A) (row stride is K, or 1 when transA) and row stride of C.
      const ldc = (nl: number): number => (inC >= 0 ? N : nl);

      /** Rows, column block, B chunk range and operand addresses of step s. */
      const at = (s: number) => {
        const c = s % nChunks, blk = Math.floor(s / nChunks), nb = blk % nBlocks, m = Math.floor(blk / nBlocks);
        const m0 = m * mChunk, o0 = c * chunk, n0 = nb * nbW;
        const ml = Math.min(mChunk, M - m0), ol = Math.min(chunk, outer - o0), nw = Math.min(nbW, N - n0);
        const cCol = byK ? n0 : o0;
        return {
          m, nb, c, m0, ml, o0, ol, n0, nw,
          pA: inA >= 0 ? inA + 4 * (g.transA ? m0 : m0 * K) : pA0 + (m % aSlots) * aSlot,
          // By step, not by chunk: with an odd chunk count, the last chunk of one block and the
          // first of the next are consecutive steps.
          pB: inB >= 0 ? inB + es * (byK ? o0 * N + n0 : o0 * K) : pB0 + (s % bSlots) * bSlot,
          // K chunks accumulate into one C block per (row block, column block); column chunks
          // have their own.
          pC: inC >= 0 ? inC + 4 * (m0 * N + cCol) : pC0 + ((byK ? blk : s) % cSlots) * cSlot,
        };
      };
      const prepare = (s: number): void => {
        const x = at(s);
        if (x.c === 0 && x.nb === 0 && inA < 0) this.stageA(g, x.m0, x.ml, x.pA);
        if (byK) {
          if (x.c === 0 && beta !== 0) this.stageC(g, x.m0, x.ml, x.n0, x.nw, x.pC, inC >= 0);
          if (inB < 0 && (!bOnce || s === 0)) this.stageB(g, x.o0, x.ol, x.n0, x.nw, x.pB);
        } else {
          if (inB < 0 && (!bOnce || s === 0)) this.stageB(g, x.o0, x.ol, 0, K, x.pB);
          if (beta !== 0) this.stageC(g, x.m0, x.ml, x.o0, x.ol, x.pC, inC >= 0);
        }
      };
      const finish = (s: number): void => {
        if (inC >= 0) return;
        const x = at(s);
        if (!byK) this.unstageC(g, x.m0, x.ml, x.o0, x.ol, x.pC);
        else if (x.c === nChunks - 1) this.unstageC(g, x.m0, x.ml, x.n0, x.nw, x.pC);
      };

      prepare(0);
      for (let s = 0; s < steps; s++) {
        const { ml, o0, ol, nw, c, pA, pB, pC } = at(s);
        // This step's product: C[ml x nl] (+)= op(A)[:, k0:k0+kl] op(B)[k0:k0+kl, n0:n0+nl].
        const nl = byK ? nw : ol, kl = byK ? ol : K, ld = ldc(nl);
        // op(A): rows of K (stride 1 along k), or columns of the stored [K][M] A when transA.
        const rsA = g.transA ? 1 : K, csA = g.transA ? (inA >= 0 ? M : ml) : 1;
        const a0 = byK ? pA + 4 * o0 * csA : pA;
        // op(B): [kl][nl] row-major when byK, else [nl][K] (op(B)[k, j] at j*K + k).
        const rsB = byK ? (inB >= 0 ? N : nl) : 1, csB = byK ? 1 : K;
        const accumulate = beta !== 0 || (byK && c > 0) ? 1 : 0;
        let jobs = 0;
        if (dot) {
          this.ex.dot_pack(ml, K, pA, K, alpha, pDot);
          const step = Math.ceil(Math.ceil(nl / 4) / dotJobs) * 4, pAcc = pDot + align(dotScratchBytes(M, K));
          for (let j0 = 0; j0 < nl; j0 += step) {
            this.writeJob(jobs, JOB_DOT, [ml, Math.min(step, nl - j0), K, pDot, pB + j0 * K * es, K, bf16, pC + 4 * j0, ld, accumulate, pAcc + jobs * accBytes]);
            jobs++;
          }
        } else {
          // Split the longer side of C. Column jobs are finer (up to 4 per thread, at least
          // minJobCols wide) so that the thread doing the copies still finds work afterwards.
          const splitN = nl >= ml;
          const total = splitN ? nl : ml, u = splitN ? nr : mr;
          const units = Math.ceil(total / u);
          const parts = T === 1 ? 1 : Math.min(MAX_JOBS, splitN ? Math.max(T, Math.min(4 * T, Math.floor(nl / minJobCols))) : T);
          const step = Math.ceil(units / Math.min(parts, units)) * u;
          for (let s0 = 0; s0 < total; s0 += step) {
            const len = Math.min(step, total - s0);
            const a = splitN ? a0 : a0 + 4 * s0 * rsA;
            const b = splitN ? pB + es * s0 * csB : pB;
            const cp = splitN ? pC + 4 * s0 : pC + 4 * s0 * ld;
            this.writeJob(jobs++, JOB_GEMM, [
              splitN ? ml : len, splitN ? len : nl, kl, a, rsA, csA, b, rsB, csB, bf16, cp, ld, alpha, accumulate,
              0, 0, 0, MC, NC, KC,
            ], JOB_ALPHA_GEMM);
          }
        }
        this.publish(jobs, T);
        if (s > 0) finish(s - 1);
        if (s + 1 < steps) prepare(s + 1);
        this.join(jobs);
      }
      finish(steps - 1);
    } finally {
      heapRelease(region);
    }
  }

  /**
   * Stop the workers. The engine must not be used afterwards: a worker that has not exited yet
   * still holds this engine's memory and control block, so a fresh engine gets fresh ones.
   */
  terminate(): void {
    this.dead = true;
    Atomics.store(this.ctl, CTL_QUIT, 1);
    Atomics.add(this.ctl, CTL_GEN, 1);
    Atomics.notify(this.ctl, CTL_GEN);
    for (const w of this.workers) w.terminate();
    this.workers = [];
  }

  private ensureWorkers(n: number): void {
    if (this.workerFailure !== null) {
      const why = this.workerFailure;
      this.workerFailure = null;
      throw new GemmError('threads', `a GEMM worker failed: ${why}`);
    }
    while (this.workers.length < n) {
      const thread = this.workers.length + 1;
      const w = startGemmWorker({ module: this.module, memory: this.memory, control: this.control as SharedArrayBuffer, thread, sets: this.sets }, (message) => {
        this.workerFailure = message;
        this.workers = this.workers.filter((x) => x !== w);
      });
      this.workers.push(w);
    }
  }

  private views(): void {
    const buf = this.memory.buffer;
    if (buf !== this.viewBuffer) {
      this.viewBuffer = buf;
      this.f32View = new Float32Array(buf);
      this.u16View = new Uint16Array(buf);
    }
  }

  private stageA(g: CheckedGemm, m0: number, ml: number, pA: number): void {
    this.views();
    const { M, K, A } = g;
    this.staged += 4 * ml * K;
    if (!g.transA) copyRows(this.f32View, pA / 4, A, m0 * K, 1, ml * K, ml * K);
    else copyRows(this.f32View, pA / 4, A, m0, K, ml, M);
  }

  /**
   * Stage rows o0..o0+ol, columns n0..n0+nw of the stored B (row length N when byK, else K),
   * densely: one contiguous copy when the rows are whole.
   */
  private stageB(g: CheckedGemm, o0: number, ol: number, n0: number, nw: number, pB: number): void {
    this.views();
    const row = g.transB ? g.K : g.N;
    this.staged += (g.bf16 ? 2 : 4) * ol * nw;
    if (g.bf16) copyRows(this.u16View, pB / 2, g.B as Uint16Array, o0 * row + n0, ol, nw, row);
    else copyRows(this.f32View, pB / 4, g.B as Float32Array, o0 * row + n0, ol, nw, row);
  }

  /** Stage the C block (or, in place, just scale it) for beta != 0: the kernel then accumulates into beta * C. */
  private stageC(g: CheckedGemm, m0: number, ml: number, n0: number, nl: number, pC: number, inPlace: boolean): void {
    const { N, C, beta } = g;
    if (inPlace) {
      if (beta !== 1) for (let r = 0; r < ml; r++) for (let i = (m0 + r) * N + n0, end = i + nl; i < end; i++) C[i] = beta * C[i]!;
      return;
    }
    this.views();
    this.staged += 4 * ml * nl;
    const f = this.f32View, d0 = pC / 4;
    copyRows(f, d0, C, m0 * N + n0, ml, nl, N);
    if (beta !== 1) for (let i = d0, end = d0 + ml * nl; i < end; i++) f[i] = beta * f[i]!;
  }

  private unstageC(g: CheckedGemm, m0: number, ml: number, n0: number, nl: number, pC: number): void {
    this.views();
    const { N, C } = g;
    this.staged += 4 * ml * nl;
    const f = this.f32View, s0 = pC / 4;
    if (nl === N) C.set(f.subarray(s0, s0 + ml * nl), m0 * N);
    else for (let r = 0; r < ml; r++) C.set(f.subarray(s0 + r * nl, s0 + (r + 1) * nl), (m0 + r) * N + n0);
  }

  /** Write job j: its kind and arguments, the one in record slot `alphaSlot` (if any) as an f32. */
  private writeJob(j: number, kind: number, args: number[], alphaSlot = 0): void {
    const b = CTL_JOBS + j * JOB_WORDS;
    this.ctl[b] = kind;
    for (let q = 0; q < args.length; q++) {
      if (q + 1 === alphaSlot) this.ctlF32[b + 1 + q] = args[q]!;
      else this.ctl[b + 1 + q] = args[q]!;
    }
  }

  /** Publish jobs 0..n-1; with T > 1 wake the workers so they start on them. */
  private publish(n: number, T: number): void {
    const ctl = this.ctl;
    Atomics.store(ctl, CTL_DONE, 0);
    Atomics.store(ctl, CTL_ERROR, 0);
    Atomics.store(ctl, CTL_CLAIM, n << 16);
    if (T > 1) {
      Atomics.add(ctl, CTL_GEN, 1);
      Atomics.notify(ctl, CTL_GEN);
    }
  }

  /**
   * Run the published jobs that are still unclaimed, then sleep until all n are done (spin where
   * this thread may not block: a browser page's main thread; the wait is for jobs that running
   * workers have claimed, so it is short).
   */
  private join(n: number): void {
    const ctl = this.ctl;
    this.runJobs(this.ex, ctl, this.ctlF32, 0, this.setFns);
    for (;;) {
      const d = Atomics.load(ctl, CTL_DONE);
      if (d >= n) break;
      if (canBlock) Atomics.wait(ctl, CTL_DONE, d);
    }
    if (Atomics.load(ctl, CTL_ERROR) !== 0) throw new GemmError('backend', 'a GEMM job trapped in WebAssembly');
  }
}

/**
 * The job protocol shared by the main thread and the GEMM workers.
 *
 * One control block (a SharedArrayBuffer of Int32 words) holds a wake-up counter, the claim word,
 * a completion counter, an error flag, each thread's scratch pointers and up to {@link MAX_JOBS}
 * job records. A dispatch writes the job records, resets DONE, then publishes
 * `CLAIM = njobs << 16 | 0` and bumps GEN. Every participating thread (the main thread included)
 * claims jobs with a compare-and-swap on CLAIM until `next == njobs`, runs each one, and counts it
 * in DONE; the main thread then sleeps on DONE until all jobs are counted. Because the job count
 * lives in the claim word itself, a thread that wakes late can only ever claim a job of the
 * dispatch that is currently published, whose records are complete.
 *
 * Other modules' functions run as call jobs ({@link JOB_CALL}) of kernel sets the workers were
 * started with.
 *
 * The job runner is JavaScript source ({@link JOB_RUNNER_SOURCE}) so that the workers (started
 * from inline source, in Node or in a browser) and the main thread run literally the same code.
 */

import type { WasmMemory, WasmModule } from '../../../wasm/api';

/** Control-block word: bumped on every dispatch; workers sleep on it. */
export const CTL_GEN = 0;
/** Control-block word: `njobs << 16 | next` of the published dispatch. */
export const CTL_CLAIM = 1;
/** Control-block word: jobs finished in the published dispatch. */
export const CTL_DONE = 2;
/** Control-block word: non-zero when a job threw. */
export const CTL_ERROR = 3;
/** Control-block word: non-zero tells workers to exit. */
export const CTL_QUIT = 4;
/** First word of the scratch table: 3 words (packA, packB, tile byte pointers) per thread. */
export const CTL_SCRATCH = 8;
/** Most threads (main thread included). */
export const MAX_THREADS = 64;
/** First word of the job records. */
export const CTL_JOBS = CTL_SCRATCH + 3 * MAX_THREADS;
/** Words per job record: kind, then the export's arguments. */
export const JOB_WORDS = 24;
/** Most jobs per dispatch. */
export const MAX_JOBS = 64;
/** Size of the control block in bytes. */
export const CTL_BYTES = 4 * (CTL_JOBS + JOB_WORDS * MAX_JOBS);

/** Job kind: `gemm(M, N, K, pA, rsA, csA, pB, rsB, csB, bf16, pC, ldc, alpha, accumulate, <scratch x3>, MC, NC, KC)`. */
export const JOB_GEMM = 1;
/** Job kind: `dot_nt(M, N, K, packedA, pB, ldb, bf16, pC, ldc, accumulate, acc)` (A packed once by `dot_pack` for all jobs; `acc` the job's own scratch). */
export const JOB_DOT = 2;
/**
 * Job kind: `call(set, fn, args…)`: function `fn` of kernel set `set` (a module instantiated on a
 * memory of its own choosing, see {@link KernelSet}) with up to {@link CALL_ARGS} i32 arguments.
 */
export const JOB_CALL = 3;
/** Most i32 arguments of a call job. */
export const CALL_ARGS = JOB_WORDS - 3;
/** Record slot of the f32 `alpha` argument of gemm jobs (slot 0 is the kind, slots 1.. the arguments). */
export const JOB_ALPHA_GEMM = 13;

/**
 * A module whose functions the workers can run as call jobs: instantiated by every thread on
 * `memory` (which the module imports as `env.memory`); `names` are the exports in call order.
 */
export interface KernelSet {
  module: WasmModule;
  memory: WasmMemory;
  names: string[];
}

/** The exports of the GEMM module the runner calls. */
export interface GemmExports {
  /** The blocked, packed product (20 arguments; see codegen.ts). */
  gemm(...args: number[]): void;
  /** The unpacked x * W^T product for few rows on an A packed by `dot_pack` (11 arguments; see dot-nt.ts). */
  dot_nt(...args: number[]): number;
  /** A of `dot_nt` times alpha into its packed layout (6 arguments; see dot-nt.ts). */
  dot_pack(...args: number[]): void;
}

/** Signature of the job runner: claims and runs jobs until none is left (`sets[k]`: the functions of kernel set k, by index). */
export type RunJobs = (ex: GemmExports, ctl: Int32Array, f32: Float32Array, thread: number, sets: ((...args: number[]) => void)[][]) => void;

/** JavaScript source of the job runner (a function expression). */
export const JOB_RUNNER_SOURCE = `function runJobs(ex, ctl, f32, thread, sets) {
  for (;;) {
    const w = Atomics.load(ctl, ${CTL_CLAIM});
    const next = w & 0xffff;
    if (next >= (w >>> 16)) return;
    if (Atomics.compareExchange(ctl, ${CTL_CLAIM}, w, w + 1) !== w) continue;
    const b = ${CTL_JOBS} + next * ${JOB_WORDS};
    const s = ${CTL_SCRATCH} + thread * 3;
    try {
      if (ctl[b] === ${JOB_CALL}) {
        sets[ctl[b + 1]][ctl[b + 2]](ctl[b + 3], ctl[b + 4], ctl[b + 5], ctl[b + 6], ctl[b + 7], ctl[b + 8], ctl[b + 9], ctl[b + 10],
          ctl[b + 11], ctl[b + 12], ctl[b + 13], ctl[b + 14], ctl[b + 15], ctl[b + 16], ctl[b + 17], ctl[b + 18], ctl[b + 19], ctl[b + 20],
          ctl[b + 21], ctl[b + 22], ctl[b + 23]);
      } else if (ctl[b] === ${JOB_GEMM}) {
        ex.gemm(ctl[b + 1], ctl[b + 2], ctl[b + 3], ctl[b + 4], ctl[b + 5], ctl[b + 6], ctl[b + 7], ctl[b + 8],
          ctl[b + 9], ctl[b + 10], ctl[b + 11], ctl[b + 12], f32[b + ${JOB_ALPHA_GEMM}], ctl[b + 14],
          ctl[s], ctl[s + 1], ctl[s + 2], ctl[b + 18], ctl[b + 19], ctl[b + 20]);
      } else {
        ex.dot_nt(ctl[b + 1], ctl[b + 2], ctl[b + 3], ctl[b + 4], ctl[b + 5], ctl[b + 6], ctl[b + 7], ctl[b + 8],
          ctl[b + 9], ctl[b + 10], ctl[b + 11]);
      }
    } catch (e) {
      Atomics.store(ctl, ${CTL_ERROR}, 1);
    }
    Atomics.add(ctl, ${CTL_DONE}, 1);
    Atomics.notify(ctl, ${CTL_DONE});
  }
}`;

/**
 * Body of a GEMM worker (a function expression of its start data): instantiate the shared module,
 * then run jobs on every wake-up. The same source runs in a Node worker thread and in a Web Worker;
 * only how the start data arrives differs (see `threads.ts`).
 */
export const WORKER_MAIN_SOURCE = `function workerMain({ module, memory, control, thread, sets }) {
  const runJobs = (${JOB_RUNNER_SOURCE});
  const ex = new WebAssembly.Instance(module, { env: { memory } }).exports;
  const fns = sets.map((s) => {
    const e = new WebAssembly.Instance(s.module, { env: { memory: s.memory } }).exports;
    return s.names.map((n) => e[n]);
  });
  const ctl = new Int32Array(control);
  const f32 = new Float32Array(control);
  for (;;) {
    const seen = Atomics.load(ctl, ${CTL_GEN});
    if (Atomics.load(ctl, ${CTL_QUIT}) !== 0) break;
    runJobs(ex, ctl, f32, thread, fns);
    Atomics.wait(ctl, ${CTL_GEN}, seen);
  }
}`;

/** The job runner compiled for the main thread. */
export function compileRunner(): RunJobs {
  // eslint-disable-next-line @typescript-eslint/no-implied-eval
  return new Function(`return (${JOB_RUNNER_SOURCE});`)() as RunJobs;
}

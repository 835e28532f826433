import { expect, it } from 'vitest';
import {
  CALL_ARGS, compileRunner, CTL_BYTES, CTL_CLAIM, CTL_DONE, CTL_ERROR, CTL_JOBS, CTL_SCRATCH, JOB_CALL, JOB_DOT, JOB_GEMM, JOB_WORDS,
  type GemmExports,
} from './wasm/jobs';

/** A control block with n jobs published; job j's first argument is j, and alternating kinds. */
function publish(n: number): { ctl: Int32Array; f32: Float32Array } {
  const sab = new SharedArrayBuffer(CTL_BYTES);
  const ctl = new Int32Array(sab), f32 = new Float32Array(sab);
  for (let j = 0; j < n; j++) {
    const b = CTL_JOBS + j * JOB_WORDS;
    ctl[b] = j % 2 === 0 ? JOB_GEMM : JOB_DOT;
    for (let q = 1; q < JOB_WORDS; q++) ctl[b + q] = 1000 * j + q;
  }
  ctl[CTL_SCRATCH + 3] = 11; // thread 1's scratch pointers
  ctl[CTL_SCRATCH + 4] = 22;
  ctl[CTL_SCRATCH + 5] = 33;
  Atomics.store(ctl, CTL_CLAIM, n << 16);
  return { ctl, f32 };
}

it('the job runner claims every published job once, with its arguments and the thread scratch', () => {
  const { ctl, f32 } = publish(7);
  const calls: { kind: string; args: number[] }[] = [];
  const ex: GemmExports = {
    gemm: (...args) => void calls.push({ kind: 'gemm', args }),
    dot_nt: (...args) => { calls.push({ kind: 'dot', args }); return 0; },
    dot_pack: () => { throw new Error('dot_pack is the calling thread\'s, never a job'); },
  };
  compileRunner()(ex, ctl, f32, 1, []);
  expect(calls.map((c) => c.args[0])).toEqual([0, 1000, 2000, 3000, 4000, 5000, 6000].map((x) => x + 1));
  expect(calls.map((c) => c.kind)).toEqual(['gemm', 'dot', 'gemm', 'dot', 'gemm', 'dot', 'gemm']);
  // gemm: 20 arguments, slots 15..17 replaced by the thread's scratch pointers; dot: 11 arguments
  // (its packed A is the record's, shared by all its jobs; its accumulator scratch the job's own).
  expect(calls[0]!.args).toHaveLength(20);
  expect(calls[0]!.args.slice(14, 17)).toEqual([11, 22, 33]);
  expect(calls[0]!.args[17]).toBe(18);
  expect(calls[1]!.args).toEqual(Array.from({ length: 11 }, (_, q) => 1000 + q + 1));
  expect(Atomics.load(ctl, CTL_DONE)).toBe(7);
  expect(Atomics.load(ctl, CTL_CLAIM) & 0xffff).toBe(7);
  // Nothing left: a second runner finds no work.
  compileRunner()(ex, ctl, f32, 1, []);
  expect(calls).toHaveLength(7);
});

it('a throwing job sets the error flag and still counts as done', () => {
  const { ctl, f32 } = publish(3);
  let n = 0;
  const ex: GemmExports = {
    gemm: () => {
      n++;
      if (n === 2) throw new Error('trap');
    },
    dot_nt: () => 0,
    dot_pack: () => undefined,
  };
  compileRunner()(ex, ctl, f32, 0, []);
  expect(Atomics.load(ctl, CTL_ERROR)).toBe(1);
  expect(Atomics.load(ctl, CTL_DONE)).toBe(3);
});

it('call jobs run function fn of kernel set s with the record\'s arguments', () => {
  const sab = new SharedArrayBuffer(CTL_BYTES);
  const ctl = new Int32Array(sab), f32 = new Float32Array(sab);
  for (let j = 0; j < 4; j++) {
    const b = CTL_JOBS + j * JOB_WORDS;
    ctl[b] = JOB_CALL;
    ctl[b + 1] = j % 2; // kernel set
    ctl[b + 2] = j >> 1; // function of the set
    for (let q = 3; q < JOB_WORDS; q++) ctl[b + q] = 100 * j + q;
  }
  Atomics.store(ctl, CTL_CLAIM, 4 << 16);
  const calls: string[] = [];
  const fn = (name: string) => (...args: number[]) => void calls.push(`${name}:${args.join(',')}`);
  const ex: GemmExports = { gemm: () => { throw new Error('no gemm job'); }, dot_nt: () => 0, dot_pack: () => undefined };
  compileRunner()(ex, ctl, f32, 0, [[fn('a0'), fn('a1')], [fn('b0'), fn('b1')]]);
  const args = (j: number) => Array.from({ length: CALL_ARGS }, (_, q) => 100 * j + q + 3).join(',');
  expect(calls).toEqual([`a0:${args(0)}`, `b0:${args(1)}`, `a1:${args(2)}`, `b1:${args(3)}`]);
  expect(Atomics.load(ctl, CTL_DONE)).toBe(4);
});

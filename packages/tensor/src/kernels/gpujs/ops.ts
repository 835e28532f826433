/**
 * Writing a gpu.js kernel op, without gpu.js: the types and helpers an op generator is made of
 * (`call`, `kept`, `into`, the host tables, the size checks). gpu.js itself is loaded only by the
 * runtime that runs the ops (`runtime.ts`); packages that bring their own gpu.js kernels import
 * these from `@apertus/tensor/kernels` and get `inp` (which builds a gpu.js `Input`) from the
 * webgpu device when it starts (`onWebgpu`).
 */
import { ShapeError } from '../../errors';

/** gpu.js argument types used by our kernels. */
export type ArgType = 'Array' | 'Input' | 'Float' | 'Integer';

/**
 * The source of a kernel: the text of a `function (...) { ... this.thread.x ... }`. Kernels are
 * kept as strings, not functions, so that bundlers and minifiers (which fold statements into
 * comma expressions the webasm backend rejects) can never rewrite what gpu.js parses.
 */
export type KernelSource = string;

/** Everything gpu.js needs to build one kernel for one shape. */
export interface KernelSpec {
  source: KernelSource;
  /** gpu.js output size, x fastest: `[x]`, `[x, y]` or `[x, y, z]`. */
  output: readonly number[];
  /** Integer constants (sizes); loop bounds come from here. */
  constants?: Readonly<Record<string, number>>;
  /** Argument types by argument name, in order. */
  argumentTypes: Readonly<Record<string, ArgType>>;
  /** Values per output cell: 1 (default) or 2 (an `Array(2)` return). */
  components?: 1 | 2;
}

/** One kernel launch an op asks for: which compiled kernel (`name` and shape `key`), how to build it, its arguments. */
export interface KernelCall {
  readonly name: string;
  readonly key: string;
  readonly spec: () => KernelSpec;
  readonly args: readonly unknown[];
  /**
   * False when the op only passes the output on to later calls (see `kept`): a runtime whose
   * kernels run elsewhere (the webgpu worker) then leaves it there instead of reading it back.
   */
  readonly read?: boolean;
  /** The host array the op copies the output into (see `into`), so a runtime can tell which host data changes. */
  readonly writes?: Float32Array;
  /** Where in `writes` the output goes (element offset). */
  readonly at?: number;
}

/**
 * A kernel output that an op only hands to later kernel calls of the same op: a host array in
 * the synchronous modes, a buffer left on the GPU by the webgpu worker. Its values cannot be
 * read on the host (the type has no element access); pass it as an argument or to `inp`.
 */
export type DeviceArray = { readonly length: number } & { readonly __deviceArray: unique symbol };

/**
 * An op, written once for every mode: a generator that yields the kernel calls it needs and
 * receives each call's flat output; `drive` runs it.
 */
export type KernelOp = Generator<KernelCall, void, Float32Array>;

/** Run an op generator, handing each kernel call to `run` and its output back to the op. */
export function drive(op: KernelOp, run: (c: KernelCall) => Float32Array): void {
  let r = op.next();
  while (!r.done) r = op.next(run(r.value));
}

/** A kernel call for an op generator to yield; its output comes back as a host Float32Array. */
export function call(name: string, key: string, spec: () => KernelSpec, args: readonly unknown[]): KernelCall {
  return { name, key, spec, args };
}

/** Run `c` and keep its output for later calls of the same op only (never read on the host). */
export function* kept(c: KernelCall): Generator<KernelCall, DeviceArray, Float32Array> {
  return (yield { ...c, read: false }) as unknown as DeviceArray;
}

/**
 * Run `c` and copy its output into `out` at element `at`; returns the output for later calls of
 * the same op (which then need not upload `out` again). Host writes of an op that a later call
 * of the same op reads must go through here, so the webgpu worker knows its copy of `out` is stale.
 * A runtime that keeps `out` on its device instead (the webgpu worker, when the output fills
 * `out`) answers with a `DeviceArray`, and nothing is written on the host.
 */
export function* into(out: Float32Array, c: KernelCall, at = 0): Generator<KernelCall, DeviceArray, Float32Array> {
  const r = yield { ...c, writes: out, at };
  if (ArrayBuffer.isView(r)) out.set(r, at);
  return r as unknown as DeviceArray;
}

/** Largest coordinate we let a kernel see (f32 locals are exact below 2^24). */
export const MAX_COORD = 1 << 24;

/**
 * A table an op computes on the host from some of its inputs (RoPE's cos/sin): the synchronous
 * modes build it for every call; the webgpu worker keeps it on the device under `key` and builds
 * and uploads it again only when `inputs` differ from those it was built from.
 */
export class HostTable {
  constructor(
    /** One device copy per key (the op and its shape). */
    readonly key: string,
    /** What the table is a function of, compared element by element. */
    readonly inputs: readonly ArrayLike<number>[],
    /** gpu.js dims, as for `inp`. */
    readonly dims: readonly number[],
    readonly make: () => Float32Array,
  ) {}
}

/** Throw a ShapeError unless `arr.length === n`. */
export function expectLength(op: string, name: string, arr: { length: number }, n: number): void {
  if (arr.length !== n) throw new ShapeError(`${op}: ${name} has ${arr.length} elements, expected ${n}`);
}

/** Throw a ShapeError unless every size is a non-negative integer below 2^24. */
export function checkIndexable(op: string, sizes: Readonly<Record<string, number>>): void {
  for (const [name, v] of Object.entries(sizes)) {
    if (!Number.isInteger(v) || v < 0 || v >= MAX_COORD) {
      throw new ShapeError(`${op}: ${name} = ${v} must be an integer in [0, 2^24) for the gpu.js kernels`);
    }
  }
}


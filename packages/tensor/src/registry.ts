/**
 * The one kernel registry of @apertus/tensor: every op × dtype × device.
 *
 * A kernel op (`kernelOp`) is a contract — a positional signature over contiguous typed arrays and
 * sizes that writes into the outputs it is given — plus the dtype key of a call ('f32', 'bf16',
 * 'q4_k', …). Implementations are registered for a device (`cpu`, `webgpu`) with `defineKernel`,
 * each under an implementation name (`reference` for the TypeScript reference, `wasm`, `gpujs`,
 * `wgsl`, …). A call runs, on the current device, the implementation chosen for that op
 * (`selectKernels`; by default the highest-ranked one that is available for the dtype key).
 * There is no fallback: an op with no implementation for its dtype key on the current device
 * throws `BackendError`.
 *
 * Packages above tensor register their own ops and kernels through the same functions (xIELU in
 * `@apertus/xielu`, the optimizer updates in `@apertus/ademamix`).
 */
import { DEVICES, type Device } from './device-name';
import { BackendError } from './errors';
import { currentResidency, hostAccess } from './residency';

export { DEVICES, type Device } from './device-name';

/** A kernel: positional arguments (typed arrays, sizes, argument objects), outputs written in place. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type KernelFn = (...args: any[]) => void;

/** An op of the registry: its name, the dtype key of a call, and `run` (the current device's kernel). */
export interface KernelOp<F extends KernelFn> {
  /** Unique name, e.g. 'rmsnorm'. */
  readonly name: string;
  /** The dtype key of a call (default 'f32'), e.g. 'bf16' for a GEMM whose B holds bf16 bits. */
  readonly dtypes: (...args: Parameters<F>) => string;
  /** Run the kernel the registry chooses for this call on the current device. */
  readonly run: F;
}

/** One implementation of an op on a device. */
export interface KernelDef<F extends KernelFn> {
  /** Where it runs. */
  readonly device: Device;
  /** Implementation name ('reference', 'wasm', 'gpujs', 'wgsl', …), the handle of `selectKernels`. */
  readonly impl: string;
  /** The dtype keys it accepts (default: every key). */
  readonly dtypes?: readonly string[];
  /** Higher wins by default (default 0 for 'reference', 10 otherwise). */
  readonly rank?: number;
  /** Whether it runs here (e.g. WebAssembly SIMD validates); checked once, on first use. */
  readonly available?: () => boolean;
  /** The kernel. */
  readonly run: F;
}

interface Entry {
  readonly def: KernelDef<KernelFn>;
  ok?: boolean;
}

interface OpState {
  readonly op: KernelOp<KernelFn>;
  readonly entries: Entry[];
  /** `device|key` → the chosen kernel (cleared whenever a registration or a selection changes). */
  readonly cache: Map<string, Entry | null>;
}

const ops = new Map<string, OpState>();
/** Implementation chosen per op (by name) and device; absent: the default ranking. */
const chosen = new Map<string, string>();
let device: Device = 'cpu';
/** The adapter of the webgpu device while it is the current device (for messages), else null. */
let adapter: string | null = null;

const rankOf = (d: KernelDef<KernelFn>): number => d.rank ?? (d.impl === 'reference' ? 0 : 10);
const accepts = (e: Entry, key: string): boolean => e.def.dtypes === undefined || e.def.dtypes.includes(key);
const usable = (e: Entry): boolean => (e.ok ??= e.def.available?.() ?? true);

function stateOf(name: string): OpState {
  const s = ops.get(name);
  if (!s) throw new BackendError(`unknown kernel op '${name}'`);
  return s;
}

function clearCaches(): void {
  for (const s of ops.values()) s.cache.clear();
}

/** The entry that runs op `s` for dtype key `key` on device `dev`, or null. */
function choose(s: OpState, dev: Device, key: string): Entry | null {
  const want = chosen.get(`${s.op.name}|${dev}`);
  let best: Entry | null = null;
  for (const e of s.entries) {
    if (e.def.device !== dev || !accepts(e, key)) continue;
    if (want !== undefined ? e.def.impl !== want : !usable(e)) continue;
    if (best === null || rankOf(e.def) > rankOf(best.def)) best = e;
  }
  return best;
}

/** Bring a kernel argument's arrays (a typed array, or the arrays of an arguments object) to the host. */
function onHost(a: unknown): void {
  if (ArrayBuffer.isView(a)) hostAccess(a);
  else if (a !== null && typeof a === 'object' && !Array.isArray(a)) for (const v of Object.values(a)) if (ArrayBuffer.isView(v)) hostAccess(v);
}

function dispatch(s: OpState, args: unknown[]): void {
  const key = (s.op.dtypes as (...a: unknown[]) => string)(...args);
  const ck = `${device}|${key}`;
  let e = s.cache.get(ck);
  if (e === undefined) s.cache.set(ck, (e = choose(s, device, key)));
  if (e === null) throw missing(s, device, key);
  // While a device keeps tensor storage (residency.ts), kernels of another device get host copies.
  const r = currentResidency();
  if (r !== null && r.device !== e.def.device) for (const a of args) onHost(a);
  (e.def.run as (...a: unknown[]) => void)(...args);
}

function missing(s: OpState, dev: Device, key: string): BackendError {
  const want = chosen.get(`${s.op.name}|${dev}`);
  const have = s.entries.filter((e) => e.def.device === dev).map((e) => `${e.def.impl}${e.def.dtypes ? ` (${e.def.dtypes.join(', ')})` : ''}`);
  return new BackendError(`no kernel for '${s.op.name}' with dtype ${key} on device ${dev}${want ? ` (implementation '${want}' selected)` : ''}`
    + `; registered there: ${have.length ? have.join(', ') : 'none'}`);
}

/**
 * Declare a kernel op. `dtypes` gives a call's dtype key (default: always 'f32'). The returned
 * op's `run` dispatches to the kernel chosen for the current device; register kernels with
 * {@link defineKernel}. Names are unique: declaring one twice throws.
 */
export function kernelOp<F extends KernelFn>(name: string, dtypes?: (...args: Parameters<F>) => string): KernelOp<F> {
  if (ops.has(name)) throw new BackendError(`kernel op '${name}' is declared twice`);
  const key = dtypes ?? ((): string => 'f32');
  const op: KernelOp<F> = { name, dtypes: key, run: ((...args: unknown[]) => dispatch(state, args)) as F };
  const state: OpState = { op: op as unknown as KernelOp<KernelFn>, entries: [], cache: new Map() };
  ops.set(name, state);
  return op;
}

/** Register an implementation of `op` (a later one with the same device and name replaces it). */
export function defineKernel<F extends KernelFn>(op: KernelOp<F>, def: KernelDef<F>): void {
  const s = stateOf(op.name);
  const i = s.entries.findIndex((e) => e.def.device === def.device && e.def.impl === def.impl && String(e.def.dtypes) === String(def.dtypes));
  const entry: Entry = { def: def as unknown as KernelDef<KernelFn> };
  if (i >= 0) s.entries[i] = entry;
  else s.entries.push(entry);
  clearCaches();
}

/** Remove every implementation `impl` of `device` (e.g. a device runtime that was disposed). */
export function removeKernels(dev: Device, impl: string): void {
  for (const s of ops.values()) {
    for (let i = s.entries.length - 1; i >= 0; i--) if (s.entries[i]!.def.device === dev && s.entries[i]!.def.impl === impl) s.entries.splice(i, 1);
  }
  clearCaches();
}

/** The device ops run on (initially 'cpu') and, for webgpu, its adapter. */
export function kernelDevice(): { readonly device: Device; readonly adapter: string | null } {
  return { device, adapter };
}

/**
 * Run every op on `dev` from now on (`useDevice` in device.ts starts a device first and calls
 * this; `enableWebgpu` too). Clears the implementation choices of `selectKernels`.
 */
export function setKernelDevice(dev: Device, adapterName: string | null = null): void {
  if (!(DEVICES as readonly string[]).includes(dev)) throw new BackendError(`unknown device '${String(dev)}' (expected ${DEVICES.join(' or ')})`);
  device = dev;
  adapter = dev === 'cpu' ? null : adapterName;
  chosen.clear();
  clearCaches();
}

/**
 * On the current device, run `only` (ops or their names; default: every op that has it) with implementation `impl`,
 * e.g. `selectKernels('reference')` to run the TypeScript references. Throws `BackendError` if
 * a named op has no such implementation there. `resetKernels()` goes back to the defaults.
 */
export function selectKernels(impl: string, only?: readonly (KernelOp<KernelFn> | string)[]): void {
  const names = only ? only.map((o) => (typeof o === 'string' ? o : o.name)) : [...ops.keys()].filter((n) => stateOf(n).entries.some((e) => e.def.device === device && e.def.impl === impl));
  if (names.length === 0) throw new BackendError(`no op has implementation '${impl}' on device ${device}`);
  for (const n of names) {
    const s = stateOf(n);
    const e = s.entries.find((x) => x.def.device === device && x.def.impl === impl);
    if (!e) throw new BackendError(`'${n}' has no implementation '${impl}' on device ${device}`);
    if (!usable(e)) throw new BackendError(`'${n}': implementation '${impl}' is not available here`);
    chosen.set(`${n}|${device}`, impl);
  }
  clearCaches();
}

/** Undo `selectKernels` on every device. */
export function resetKernels(): void {
  chosen.clear();
  clearCaches();
}

/** What runs `op` for dtype key `key` (default 'f32') on the current device, or null when nothing would. */
export function kernelInfo(op: KernelOp<KernelFn> | string, key = 'f32'): { readonly device: Device; readonly impl: string } | null {
  const e = choose(stateOf(typeof op === 'string' ? op : op.name), device, key);
  return e === null ? null : { device: e.def.device, impl: e.def.impl };
}

/** One registered implementation, for listings and docs. */
export interface KernelListing {
  readonly op: string;
  readonly device: Device;
  readonly impl: string;
  /** The dtype keys it accepts, or null for every key. */
  readonly dtypes: readonly string[] | null;
  /** Whether it runs here. */
  readonly available: boolean;
}

/** Every registered implementation of every op, in registration order. */
export function listKernels(): KernelListing[] {
  return [...ops.values()].flatMap((s) => s.entries.map((e) => ({
    op: s.op.name, device: e.def.device, impl: e.def.impl, dtypes: e.def.dtypes ?? null, available: usable(e),
  })));
}

/**
 * The kernel of implementation `impl` of `op` on `device` (default 'cpu'), to call directly:
 * tests compare implementations this way. Throws `BackendError` when there is none.
 */
export function implementationOf<F extends KernelFn>(op: KernelOp<F>, impl: string, dev: Device = 'cpu'): F {
  const e = stateOf(op.name).entries.find((x) => x.def.device === dev && x.def.impl === impl);
  if (!e) throw new BackendError(`'${op.name}' has no implementation '${impl}' on device ${dev}`);
  return e.def.run as F;
}

/** The declared op named `name` (for device runtimes that register a whole set of kernels by name). */
export function kernelOpNamed(name: string): KernelOp<KernelFn> {
  return stateOf(name).op;
}

import { BackendError } from './errors';
import { cpuKernels } from './kernels/cpu/index';
import { jsKernels } from './kernels/js/index';
import type { KernelName, KernelSet } from './kernels/types';
import { currentResidency, hostAccess } from './residency';

/**
 * Per-op kernel selection — the one mechanism for every op, GEMM (`matmul`, `linear`) and the
 * fused LM-head loss included. Each backend registers the kernels it implements; every op runs
 * the kernel of the backend chosen for it, and asking for a backend that does not implement an op
 * (or is not available on this machine) throws `BackendError` — there is no silent fallback.
 */
export interface BackendInfo {
  /** Backend name, e.g. 'js', 'gpujs'. */
  readonly name: string;
  /** What it really runs on (e.g. gpu.js mode 'webasm'), as reported by the backend itself. */
  readonly device: string;
}

interface Registered extends BackendInfo {
  readonly kernels: Partial<KernelSet>;
}

const backends = new Map<string, Registered>([
  ['js', { name: 'js', device: 'cpu (TypeScript reference)', kernels: jsKernels }],
  ['cpu', { name: 'cpu', device: 'cpu (WebAssembly SIMD, worker threads)', kernels: cpuKernels }],
]);
const KERNEL_NAMES = Object.keys(jsKernels) as KernelName[];
/**
 * Default per op: the `cpu` kernel where there is one (measured fastest, see BENCHMARKS.md; none
 * where WebAssembly SIMD is missing), else the reference. `backendOf` reports the choice.
 */
const selected = new Map<KernelName, Registered>(KERNEL_NAMES.map((k) => [k, backends.get(cpuKernels[k] ? 'cpu' : 'js')!]));

/** Register (or replace) a backend's kernels. */
export function registerBackend(name: string, device: string, kernels: Partial<KernelSet>): void {
  backends.set(name, { name, device, kernels });
}

/** Names of the registered backends. */
export function listBackends(): BackendInfo[] {
  return [...backends.values()].map(({ name, device }) => ({ name, device }));
}

/**
 * Run `ops` on backend `name` (default: every op the backend implements). Throws BackendError if
 * the backend is unknown or lacks one of the named ops.
 */
export function setBackend(name: string, ops?: readonly KernelName[]): void {
  const b = backends.get(name);
  if (!b) throw new BackendError(`unknown backend '${name}' (registered: ${[...backends.keys()].join(', ')})`);
  for (const op of ops ?? KERNEL_NAMES.filter((k) => b.kernels[k])) {
    if (!b.kernels[op]) throw new BackendError(`backend '${name}' has no kernel for '${op}'`);
    selected.set(op, b);
  }
}

/** Which backend runs `op` right now. */
export function backendOf(op: KernelName): BackendInfo {
  const b = selected.get(op)!;
  return { name: b.name, device: b.device };
}

/**
 * The active kernel for `op`. While a device backend keeps tensor storage on its device
 * (`residency.ts`), the kernels of every other backend get their arrays' host copies.
 */
export function kernel<K extends KernelName>(op: K): NonNullable<KernelSet[K]> {
  const b = selected.get(op)!;
  const k = b.kernels[op] as NonNullable<KernelSet[K]>;
  const r = currentResidency();
  if (r === null || r.backend === b.name) return k;
  return ((...args: unknown[]) => {
    for (const a of args) onHost(a);
    return (k as (...a: unknown[]) => unknown)(...args);
  }) as NonNullable<KernelSet[K]>;
}

/** Bring a kernel argument's arrays (a typed array, or the arrays of an arguments object) to the host. */
function onHost(a: unknown): void {
  if (ArrayBuffer.isView(a)) hostAccess(a);
  else if (a !== null && typeof a === 'object' && !Array.isArray(a)) for (const v of Object.values(a)) if (ArrayBuffer.isView(v)) hostAccess(v);
}

/** Every kernel name, in a stable order. */
export function kernelNames(): readonly KernelName[] {
  return KERNEL_NAMES;
}

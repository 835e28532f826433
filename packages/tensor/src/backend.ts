import { BackendError } from './errors';
import { jsKernels } from './kernels/js/index';
import type { KernelName, KernelSet } from './kernels/types';

/**
 * Per-op kernel selection. Each backend registers the kernels it implements; every op runs the
 * kernel of the backend chosen for it, and asking for a backend that does not implement an op (or
 * is not available on this machine) throws `BackendError` — there is no silent fallback.
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

const backends = new Map<string, Registered>([['js', { name: 'js', device: 'cpu (TypeScript)', kernels: jsKernels }]]);
const KERNEL_NAMES = Object.keys(jsKernels) as KernelName[];
const selected = new Map<KernelName, Registered>(KERNEL_NAMES.map((k) => [k, backends.get('js')!]));

/** Register (or replace) a backend's kernels. */
export function registerBackend(name: string, device: string, kernels: Partial<KernelSet>): void {
  backends.set(name, { name, device, kernels });
}

/** Names of the registered backends. */
export function listBackends(): BackendInfo[] {
  return [...backends.values()].map(({ name, device }) => ({ name, device }));
}

/**
 * Run `ops` (default: every op the backend implements... or all ops, which must then all be
 * implemented) on backend `name`. Throws BackendError if it is unknown or lacks one of the ops.
 */
export function setBackend(name: string, ops?: readonly KernelName[]): void {
  const b = backends.get(name);
  if (!b) throw new BackendError(`unknown backend '${name}' (registered: ${[...backends.keys()].join(', ')})`);
  for (const op of ops ?? KERNEL_NAMES) {
    if (!b.kernels[op]) throw new BackendError(`backend '${name}' has no kernel for '${op}'`);
    selected.set(op, b);
  }
}

/** Which backend runs `op` right now. */
export function backendOf(op: KernelName): BackendInfo {
  const b = selected.get(op)!;
  return { name: b.name, device: b.device };
}

/** The active kernel for `op`. */
export function kernel<K extends KernelName>(op: K): KernelSet[K] {
  return selected.get(op)!.kernels[op] as KernelSet[K];
}

/** Every kernel name, in a stable order. */
export function kernelNames(): readonly KernelName[] {
  return KERNEL_NAMES;
}

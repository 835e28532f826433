/**
 * What the host runtime offers the kernels, found at run time so that the package imports nothing
 * from Node and bundles for a browser as it is: Node's built-in modules (through
 * `process.getBuiltinModule`, Node >= 20.16) where the host is Node, the number of hardware
 * threads, and whether this thread may block in `Atomics.wait` (a browser's main thread may not).
 */

interface NodeProcess {
  versions?: { node?: string };
  getBuiltinModule?: (id: string) => unknown;
}

const nodeProcess = (globalThis as { process?: NodeProcess }).process;

/** Whether the host is Node (or a runtime that provides Node's built-in modules). */
export const isNode: boolean = typeof nodeProcess?.versions?.node === 'string' && typeof nodeProcess.getBuiltinModule === 'function';

/** Node's built-in module `id` (e.g. `'node:worker_threads'`), or null where the host is not Node. */
export function nodeBuiltin<T>(id: string): T | null {
  return isNode ? (nodeProcess!.getBuiltinModule!(id) as T) : null;
}

/** Hardware threads: `os.availableParallelism()` in Node, `navigator.hardwareConcurrency` in a browser, else 1. */
export function hardwareThreads(): number {
  const os = nodeBuiltin<{ availableParallelism(): number }>('node:os');
  if (os !== null) return Math.max(1, os.availableParallelism());
  const nav = (globalThis as { navigator?: { hardwareConcurrency?: number } }).navigator;
  return Math.max(1, nav?.hardwareConcurrency ?? 1);
}

/**
 * Whether this thread may sleep in `Atomics.wait`: everywhere but a browser window's main thread
 * (a page, where `document` exists), which must spin instead.
 */
export const canBlock: boolean = isNode || typeof (globalThis as { document?: unknown }).document === 'undefined';

/**
 * Whether memory can be shared with other threads: `SharedArrayBuffer` exists (in a browser only
 * when the page is cross-origin isolated: COOP `same-origin` and COEP `require-corp`).
 */
export function canShareMemory(): boolean {
  if (typeof SharedArrayBuffer === 'undefined') return false;
  const isolated = (globalThis as { crossOriginIsolated?: boolean }).crossOriginIsolated;
  return isNode || isolated !== false;
}

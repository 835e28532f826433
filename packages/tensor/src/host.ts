/**
 * What the host runtime offers the kernels, found at run time so that the package imports nothing
 * from Node and bundles for a browser as it is: Node's built-in modules (through
 * `process.getBuiltinModule`, Node >= 20.16) where the host is Node, the number of hardware
 * threads, and whether this thread may block in `Atomics.wait` (a browser's main thread may not).
 */

interface NodeProcess {
  versions?: { node?: string };
  execArgv?: string[];
  env?: Record<string, string | undefined>;
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

/**
 * Whether the V8 boolean flag `--<flag>` is on per the command line (`NODE_OPTIONS`, then
 * `execArgv`; the last mention wins; `on` when it is not mentioned), e.g. `wasm-dynamic-tiering`.
 */
export function v8FlagFromArgs(flag: string, execArgv: readonly string[], nodeOptions = '', on = true): boolean {
  const re = new RegExp(`^--(no-?)?${flag}(?:=(true|false))?$`);
  for (const arg of [...nodeOptions.split(/\s+/), ...execArgv]) {
    const m = re.exec(arg.replaceAll('_', '-'));
    if (m !== null) on = m[1] === undefined && m[2] !== 'false';
  }
  return on;
}

/** Nesting depth of {@link compileOptimized} (only the outermost call sets and restores the flags). */
let optimizedDepth = 0;

/** The V8 flags {@link compileOptimized} turns off while it compiles (both default on). */
const EAGER_OFF = ['wasm-dynamic-tiering', 'wasm-lazy-compilation'] as const;

/** The V8 flag {@link compileOptimized} turns on (off by default in V8 13), and leaves on. */
const REVECTORIZE = 'experimental-wasm-revectorize';

/**
 * Whether {@link compileOptimized} lets V8 widen pairs of 128-bit SIMD operations into 256-bit ones
 * (`--experimental-wasm-revectorize`): on unless the environment sets `APERTUS_REVECTORIZE=0`.
 * V8 pairs only isomorphic lane-wise operations on adjacent memory, so results are the same bits
 * (the GEMM's C tiles: 1.2–1.3× on x86-64 with AVX2; kernels that store little are unchanged).
 */
export function revectorizeOn(): boolean {
  return nodeProcess?.env?.APERTUS_REVECTORIZE !== '0';
}

/**
 * Run `compile` (typically `new WebAssembly.Module(bytes)`) with V8's wasm dynamic tiering and lazy
 * compilation off, so that every function of the module is compiled by the optimizing compiler
 * (TurboFan) right away, in the background, instead of only once it has run hot. V8 fixes a
 * module's tiering when it compiles it, and has no on-stack replacement for wasm: a function that
 * is called rarely but loops long (a packing routine, a whole prefill's product) otherwise keeps
 * running its baseline (Liftoff) code. (V8 13, Node 24, compiles lazily by default: with only
 * dynamic tiering off, functions still start in Liftoff.) In Node the flags are set in-process and
 * then restored to what the command line (`NODE_OPTIONS`, `execArgv`) set; elsewhere (a browser)
 * `compile` just runs. V8 caches compiled modules by their bytes: bytes that were compiled before
 * without this keep their tiering. The revectorizer ({@link revectorizeOn}) is turned on by the
 * first call and stays on for the process: V8 still compiles some of a module's functions after
 * `new WebAssembly.Module` has returned, and with the flag restored right away one start-up in
 * four ran the GEMM's micro-kernel without its 256-bit code (a third of the speed).
 */
export function compileOptimized<T>(compile: () => T): T {
  const v8 = optimizedDepth === 0 ? nodeBuiltin<{ setFlagsFromString(flags: string): void }>('node:v8') : null;
  if (v8 === null) return compile();
  const argv = nodeProcess?.execArgv ?? [], options = nodeProcess?.env?.NODE_OPTIONS;
  const restore = EAGER_OFF.map((f) => v8FlagFromArgs(f, argv, options));
  for (const f of EAGER_OFF) v8.setFlagsFromString(`--no-${f}`);
  if (revectorizeOn()) v8.setFlagsFromString(`--${REVECTORIZE}`);
  optimizedDepth++;
  try {
    return compile();
  } finally {
    optimizedDepth--;
    EAGER_OFF.forEach((f, i) => v8.setFlagsFromString(restore[i] ? `--${f}` : `--no-${f}`));
  }
}

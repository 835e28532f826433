/**
 * Instantiate a small generated WebAssembly module of the cpu backend on the cpu device memory
 * (`heap.ts`), on the calling thread. The GEMM has its own committed module and worker threads;
 * the row kernels here (softmax rows, RMSNorm) are generated from TypeScript on first use.
 */
import { GEMM_MEMORY_PAGES } from '../ops/gemm/wasm/codegen';
import { encodeModule, type FuncDef } from './encoder';
import { wasmApi, type WasmModule } from './api';
import { heapMemory } from '../memory/heap';
import { compileOptimized } from '../host';

/** Compile `bytes` with every function optimized at once (row kernels: few calls, long loops). */
const compile = (bytes: Uint8Array): WasmModule => compileOptimized(() => new wasmApi!.Module(bytes));

/** The module of `funcs` on the heap memory, or null where WebAssembly SIMD or the heap is missing. */
export function instantiateOnHeap<T>(funcs: FuncDef[]): T | null {
  const memory = heapMemory();
  if (wasmApi === null || memory === null) return null;
  const bytes = encodeModule(funcs, GEMM_MEMORY_PAGES.min, GEMM_MEMORY_PAGES.max);
  if (!wasmApi.validate(bytes)) return null;
  return new wasmApi.Instance(compile(bytes), { env: { memory } }).exports as unknown as T;
}

/**
 * The module of `funcs` on a private, unshared memory of `bytes` (rounded up to 64 KiB pages),
 * or null where WebAssembly SIMD is missing. For staging: copies between JavaScript arrays and a
 * shared memory (the heap) run element by element in V8, about 30× slower than into an unshared one.
 */
export function instantiatePrivate<T>(funcs: FuncDef[], bytes: number): { exports: T; memory: ArrayBuffer } | null {
  if (wasmApi === null) return null;
  const pages = Math.max(1, Math.ceil(bytes / 65536));
  const code = encodeModule(funcs, pages, pages, false);
  if (!wasmApi.validate(code)) return null;
  const memory = new wasmApi.Memory({ initial: pages, maximum: pages, shared: false });
  const exports = new wasmApi.Instance(compile(code), { env: { memory } }).exports as unknown as T;
  return { exports, memory: memory.buffer as ArrayBuffer };
}

/**
 * Instantiate a small generated WebAssembly module of the cpu backend on the cpu device memory
 * (`heap.ts`), on the calling thread. The GEMM has its own committed module and worker threads;
 * the row kernels here (softmax rows, RMSNorm) are generated from TypeScript on first use.
 */
import { GEMM_MEMORY_PAGES } from '../gemm/wasm/codegen';
import { encodeModule, type FuncDef } from '../gemm/wasm/encoder';
import { wasmApi } from '../gemm/wasm/wasm-api';
import { heapMemory } from './heap';

/** The module of `funcs` on the heap memory, or null where WebAssembly SIMD or the heap is missing. */
export function instantiateOnHeap<T>(funcs: FuncDef[]): T | null {
  const memory = heapMemory();
  if (wasmApi === null || memory === null) return null;
  const bytes = encodeModule(funcs, GEMM_MEMORY_PAGES.min, GEMM_MEMORY_PAGES.max);
  if (!wasmApi.validate(bytes)) return null;
  return new wasmApi.Instance(new wasmApi.Module(bytes), { env: { memory } }).exports as unknown as T;
}

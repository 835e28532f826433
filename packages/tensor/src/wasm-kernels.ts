/**
 * What a package above @apertus/tensor needs to write its own WebAssembly SIMD kernel on the cpu
 * device memory, as the cpu backend's row kernels are written: the binary encoder of the GEMM
 * generator (`seq`, `get`, `set`, `forLoop`, `i32`, `f32`, `f64`, `v128`, `Locals`, ...),
 * `instantiateOnHeap` (a module of generated functions on the shared heap, or null where
 * WebAssembly SIMD is missing), `instantiatePrivate` (the same on an unshared memory of its own,
 * for staging: copies into a shared memory are slow in V8), `heapAddress` (byte address of a typed array that lives on the
 * heap, else −1), heap scratch (`scratchF32` / `heapRelease`) to stage arrays that do not,
 * `persistentF32` (long-lived heap storage that belongs to no `tidy` scope: KV-cache blocks) and
 * `compileOptimized` (compile a module with every function optimized at once, for kernels that
 * run few, long calls).
 */
export {
  block, br, brIf, call, f32, f64, forLoop, get, i32, i64, if_, loop, select, seq, set, tee, v128,
  Locals, type Code, type FuncDef,
} from './kernels/gemm/wasm/encoder';
export { instantiateOnHeap, instantiatePrivate } from './kernels/cpu/wasm-module';
export { heapAddress, heapRelease, persistentF32, scratchF32 } from './kernels/cpu/heap';
export { compileOptimized } from './host';
import { ValType } from './kernels/gemm/wasm/encoder';

/** The value type codes (`i32`, `f32`, `f64`, `v128`) for `params`, `results` and `Locals.add`. */
export const types = { ...ValType };

/**
 * Writing a WebAssembly SIMD kernel on the cpu device memory, as the cpu kernels of this package
 * are written: the typed binary encoder (`seq`, `get`, `set`, `forLoop`, `i32`, `f32`, `f64`,
 * `v128`, `Locals`, …), `instantiateOnHeap` (a module of generated functions on the shared heap,
 * or null where WebAssembly SIMD is missing), `instantiatePrivate` (the same on an unshared memory
 * of its own, for staging), the heap (`heapAddress`: byte address of a typed array that lives on
 * the heap, else −1; `stagedRows`/`staged` for operands that do not; `scratchF32` / `heapRelease`;
 * `persistentF32` for long-lived storage outside every `tidy` scope) and `compileOptimized`.
 */
import { ValType } from './encoder';

export {
  block, br, brIf, call, encodeModule, f32, f64, forLoop, get, i32, i64, if_, loop, select, seq, set, tee, v128,
  Locals, type Code, type FuncDef,
} from './encoder';

/** The value type codes (`i32`, `f32`, `f64`, `v128`) for `params`, `results` and `Locals.add`. */
export const types = { ...ValType };
export { instantiateOnHeap, instantiatePrivate } from './module';
export { heapAddress, heapRelease, persistentF32, scratchF32, staged, stagedRows } from '../memory/heap';
export { compileOptimized } from '../host';

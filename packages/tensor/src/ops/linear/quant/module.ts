// The product module of a variant: every format's row kernels (tile heights 1 … 4), the input
// quantizers they read, generated with the typed encoder at first use (a few milliseconds: cheaper
// than committing the bytes; a test pins their sha256, see module.test.ts), compiled once with
// every function optimized, and instantiated on each memory that holds weights.
import { encodeModule, type FuncDef } from '../../../kernels/gemm/wasm/encoder';
import { GEMM_MEMORY_PAGES } from '../../../kernels/gemm/wasm/codegen';
import { wasmApi, type WasmMemory, type WasmModule } from '../../../kernels/gemm/wasm/wasm-api';
import { compileOptimized } from '../../../host';
import { QUANT_FORMATS, type QuantDType } from '../../../dtypes/index';
import { kernelName, rowsFn } from './rows';
import { quantizerFns } from './quantize-input';
import { dotFns, f16RowsFn } from './floats';
import { traits, TILE, type Variant } from './layout';

/** Every quantized dtype with kernels. */
export const KERNEL_DTYPES = Object.keys(QUANT_FORMATS) as QuantDType[];

/** The functions of the module of a variant. */
export function moduleFns(v: Variant): FuncDef[] {
  const fns: FuncDef[] = [];
  for (const name of KERNEL_DTYPES) for (let T = 1; T <= TILE; T++) fns.push(rowsFn(name, v, T));
  fns.push(...quantizerFns(KERNEL_DTYPES.map(traits), v), ...dotFns(v), f16RowsFn(v));
  return fns;
}

/** The module's bytes (imports one shared memory, `env.memory`). */
export function moduleBytes(v: Variant): Uint8Array {
  return encodeModule(moduleFns(v), GEMM_MEMORY_PAGES.min, GEMM_MEMORY_PAGES.max);
}

const compiled = new Map<Variant, WasmModule | null>();

/** The compiled module of a variant, or null where it does not validate (no SIMD, or no relaxed SIMD). */
export function compiledModule(v: Variant): WasmModule | null {
  if (!compiled.has(v)) {
    let m: WasmModule | null = null;
    if (wasmApi !== null) {
      const bytes = moduleBytes(v);
      if (wasmApi.validate(bytes)) m = compileOptimized(() => new wasmApi!.Module(bytes));
    }
    compiled.set(v, m);
  }
  return compiled.get(v)!;
}

/** The exports of an instance: kernels by name. */
export type KernelExports = Record<string, (...args: number[]) => void>;

/** An instance of the module of `v` on `memory`. */
export function instantiate(v: Variant, memory: WasmMemory): KernelExports {
  return new wasmApi!.Instance(compiledModule(v)!, { env: { memory } }).exports as KernelExports;
}

export { kernelName };

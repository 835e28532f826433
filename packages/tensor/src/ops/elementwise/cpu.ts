/**
 * Elementwise add, sub and mul of two operands of the output's layout (the residual adds of a
 * decoder layer, the SwiGLU product) in WebAssembly SIMD on the cpu device memory; every other
 * case (broadcasting, other ops, operands off the heap) is the reference kernel. The bits are the
 * reference's: an f32 lane operation is the correctly rounded result, and so is the reference's
 * f64 operation rounded to f32 (double rounding is innocuous for +, −, × when 53 ≥ 2·24 + 2).
 */
import { f32, forLoop, get, i32, seq, set, v128, ValType, type Code, type FuncDef, Locals } from '../../wasm/encoder';
import { binary as jsBinary } from './reference';
import type { F32 } from '../../arrays';
import type { BinaryOp } from './args';
import { heapAddress } from '../../memory/heap';
import { instantiateOnHeap } from '../../wasm/module';

const { i32: I32 } = ValType;
const c = i32.const;
const OPS = {
  add: [v128.f32x4_add, f32.add],
  sub: [v128.f32x4_sub, f32.sub],
  mul: [v128.f32x4_mul, f32.mul],
} as const satisfies Partial<Record<BinaryOp, readonly [(a: Code, b: Code) => Code, (a: Code, b: Code) => Code]>>;
type SimdOp = keyof typeof OPS;

/** `<op>(a, b, out, n)`: out[i] = a[i] op b[i], pointers in bytes. */
function opFn(op: SimdOp): FuncDef {
  const [vec, scalar] = OPS[op];
  const A = { a: 0, b: 1, out: 2, n: 3 };
  const L = new Locals(4);
  const j = L.add(I32), n4 = L.add(I32);
  const at = (p: number): Code => i32.add(get(p), i32.shl(get(j), c(2)));
  return {
    name: op,
    params: [I32, I32, I32, I32],
    results: [],
    locals: L.types,
    body: seq(
      set(n4, i32.and(get(A.n), c(~3))),
      forLoop(j, c(0), get(n4), c(4), v128.store(at(A.out), vec(v128.load(at(A.a)), v128.load(at(A.b))))),
      forLoop(j, get(n4), get(A.n), c(1), f32.store(at(A.out), scalar(f32.load(at(A.a)), f32.load(at(A.b))))),
    ),
  };
}

/** The module's functions (exported for the validation test). */
export const binaryFuncs = (): FuncDef[] => (Object.keys(OPS) as SimdOp[]).map(opFn);

type BinaryExports = Record<SimdOp, (a: number, b: number, out: number, n: number) => void>;
let instance: BinaryExports | null | undefined;
function ex(): BinaryExports | null {
  if (instance === undefined) instance = instantiateOnHeap<BinaryExports>(binaryFuncs());
  return instance;
}

/** Whether `strides` lay out `shape` row-major (axes of size 1 may have any stride). */
function rowMajor(shape: readonly number[], strides: readonly number[]): boolean {
  let st = 1;
  for (let i = shape.length - 1; i >= 0; i--) {
    if (shape[i] !== 1 && strides[i] !== st) return false;
    st *= shape[i]!;
  }
  return true;
}

/** Whether the module runs here (WebAssembly SIMD). */
export function simdBinaryAvailable(): boolean {
  return ex() !== null;
}

/**
 * The cpu `binary` kernel: same-layout add/sub/mul in WebAssembly SIMD on the heap; every other
 * case (broadcasting, arrays off the heap, other ops) in the reference loop.
 */
export function simdBinary(op: BinaryOp, a: F32, aStrides: readonly number[], b: F32, bStrides: readonly number[], outShape: readonly number[], out: F32): void {
  const m = ex(), n = out.length;
  if (m !== null && op in OPS && n > 0 && a.length === n && b.length === n && rowMajor(outShape, aStrides) && rowMajor(outShape, bStrides)) {
    const pa = heapAddress(a), pb = heapAddress(b), po = heapAddress(out);
    if (pa >= 0 && pb >= 0 && po >= 0) { m[op as SimdOp](pa, pb, po, n); return; }
  }
  jsBinary(op, a, aStrides, b, bStrides, outShape, out);
}

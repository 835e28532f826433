// Which build of the product kernels runs: `relaxed` where relaxed SIMD validates and a start-up
// probe finds `i32x4.relaxed_dot_i8x16_i7x16_add_s` exact (with the second operand in 0 … 127, as
// the kernels keep it), else `simd` (the two-step form), else none (no WebAssembly SIMD). Both
// builds give the same bits; `relaxed` is the fast one where V8 lowers the dot to vpdpbusd.
import { BackendError } from '../../../errors';
import { encodeModule, forLoop, get, i32, v128, ValType, type Code } from '../../../wasm/encoder';
import { wasmApi } from '../../../wasm/api';
import { compileOptimized } from '../../../host';
import { compiledModule } from './module';
import type { Variant } from './layout';

/** Vectors of the probe: a (int8), b (0 … 127), c (i32) each 16 bytes, out i32x4 = c + Σ of each 4 a·b. */
function probeVectors(): { a: Int8Array; b: Uint8Array; c: Int32Array } {
  const n = 64, a = new Int8Array(16 * n), b = new Uint8Array(16 * n), cc = new Int32Array(4 * n);
  let s = 12345;
  const next = (): number => (s = (Math.imul(s, 1103515245) + 12345) >>> 0) >>> 8;
  for (let i = 0; i < 16 * n; i++) { a[i] = (next() & 255) - 128; b[i] = next() & 127; }
  for (let i = 0; i < 4 * n; i++) cc[i] = (next() & 0xffff) - 0x8000;
  // Extremes: −128·127 four times, 127·127, and accumulators near ±2³⁰.
  a.fill(-128, 0, 16); b.fill(127, 0, 16); a.fill(127, 16, 32); b.fill(127, 16, 32);
  cc[0] = 1 << 30; cc[5] = -(1 << 30);
  return { a, b, c: cc };
}

/**
 * Whether the relaxed int8 dot products compute the exact sums here (compiled as the product
 * module is: every function optimized): `i32x4.relaxed_dot_i8x16_i7x16_add_s` (c + Σ of each 4
 * a·b) and `i16x8.relaxed_dot_i8x16_i7x16_s` (Σ of each 2 a·b), over random vectors and the
 * extremes, with b in 0 … 127 as the kernels keep it.
 */
export function relaxedDotExact(): boolean {
  if (wasmApi === null) return false;
  const { i32: I32 } = ValType, [pa, pb, pc, po, pq, n, k] = [0, 1, 2, 3, 4, 5, 6];
  const at = (p: number): Code => i32.add(get(p), i32.shl(get(k), i32.const(4)));
  const body = forLoop(k, i32.const(0), get(n), i32.const(1),
    v128.store(at(po), v128.i32x4_relaxed_dot_i8x16_i7x16_add_s(v128.load(at(pa)), v128.load(at(pb)), v128.load(at(pc)))),
    v128.store(at(pq), v128.i16x8_relaxed_dot_i8x16_i7x16_s(v128.load(at(pa)), v128.load(at(pb)))));
  const bytes = encodeModule([{ name: 'probe', params: [I32, I32, I32, I32, I32, I32], results: [], locals: [I32], body }], 1, 1);
  if (!wasmApi.validate(bytes)) return false;
  const memory = new wasmApi.Memory({ initial: 1, maximum: 1, shared: true });
  const probe = (new wasmApi.Instance(compileOptimized(() => new wasmApi!.Module(bytes)), { env: { memory } }).exports as { probe: (...a: number[]) => void }).probe;
  const { a, b, c } = probeVectors(), N = a.length / 16;
  const mem = new Uint8Array(memory.buffer);
  mem.set(new Uint8Array(a.buffer), 0); mem.set(b, 16 * N); mem.set(new Uint8Array(c.buffer), 32 * N);
  probe(0, 16 * N, 32 * N, 48 * N, 64 * N, N);
  const out = new Int32Array(memory.buffer, 48 * N, 4 * N), pairs = new Int16Array(memory.buffer, 64 * N, 8 * N);
  for (let l = 0; l < 4 * N; l++) {
    let want = c[l]!;
    for (let q = 0; q < 4; q++) want += a[4 * l + q]! * b[4 * l + q]!;
    if (out[l] !== want) return false;
  }
  for (let l = 0; l < 8 * N; l++) if (pairs[l] !== a[2 * l]! * b[2 * l]! + a[2 * l + 1]! * b[2 * l + 1]!) return false;
  return true;
}

let chosen: Variant | null | undefined;

/** The variant the products run (see the file comment); null where neither build runs here. */
export function quantVariant(): Variant | null {
  if (chosen === undefined) chosen = compiledModule('relaxed') !== null && relaxedDotExact() ? 'relaxed' : compiledModule('simd') !== null ? 'simd' : null;
  return chosen;
}

/** Choose the build (tests run both); 'auto' returns to the default. Throws BackendError where the build cannot run here. */
export function setQuantVariant(v: Variant | 'auto'): void {
  if (v === 'auto') { chosen = undefined; return; }
  if (compiledModule(v) === null || (v === 'relaxed' && !relaxedDotExact())) throw new BackendError(`the ${v} product kernels cannot run in this runtime`);
  chosen = v;
}

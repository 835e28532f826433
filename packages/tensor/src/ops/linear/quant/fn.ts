// A function under construction for the typed encoder: named locals, and vector constants held
// in locals set once at the start (V8 rebuilds a v128.const at every use inside a loop).
import { get, seq, set, v128, Locals, ValType, type Code, type FuncDef } from '../../../wasm/encoder';

const { i32: I32, f32: F32, v128: V128 } = ValType;

/** Builder of one exported function. */
export class Fn {
  private readonly locals: Locals;
  private readonly consts = new Map<string, number>();
  private readonly inits: Code[] = [];

  /** `params`: name → type, in order (their local indices are 0 … n − 1). */
  constructor(readonly name: string, params: readonly (readonly [string, ValType])[], readonly results: ValType[] = []) {
    this.params = params.map(([, t]) => t);
    params.forEach(([n], i) => (this.p[n] = i));
    this.locals = new Locals(params.length);
  }

  readonly params: ValType[];
  /** Parameter index by name. */
  readonly p: Record<string, number> = {};

  i32(): number { return this.locals.add(I32); }
  f32(): number { return this.locals.add(F32); }
  v128(): number { return this.locals.add(V128); }

  /** A local holding the 16 constant bytes (one local per distinct constant). */
  bytes(b: readonly number[]): Code {
    const key = b.map((x) => x & 255).join(',');
    let l = this.consts.get(key);
    if (l === undefined) {
      l = this.v128();
      this.consts.set(key, l);
      this.inits.push(set(l, v128.const_i8x16(b)));
    }
    return get(l);
  }
  /** A local holding 16 copies of the byte `x`. */
  splat8(x: number): Code { return this.bytes(Array(16).fill(x)); }
  /** A local holding 8 copies of the i16 `x`. */
  splat16(x: number): Code { return this.bytes(Array.from({ length: 16 }, (_, i) => (i & 1 ? x >> 8 : x) & 255)); }
  /** A local holding 4 copies of the i32 `x`. */
  splat32(x: number): Code { return this.bytes(Array.from({ length: 16 }, (_, i) => (x >>> (8 * (i & 3))) & 255)); }
  /** A local holding the four f32 lanes. */
  f32x4(lanes: readonly number[]): Code { return this.bytes(Array.from(new Uint8Array(Float32Array.from(lanes).buffer))); }

  /** The function with `body` (constants set first). */
  def(...body: Code[]): FuncDef {
    return { name: this.name, params: this.params, results: this.results, locals: this.locals.types, body: seq(...this.inits, ...body) };
  }
}

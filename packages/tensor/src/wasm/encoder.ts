/**
 * A tiny WebAssembly binary encoder: just the sections and opcodes the GEMM module uses.
 *
 * Code is built as plain byte arrays. Every instruction helper returns `number[]`, and helpers
 * nest like the folded WAT form, so `set(x, i32.add(get(a), get(b)))` reads as
 * `(local.set $x (i32.add (local.get $a) (local.get $b)))` and encodes to the same bytes.
 * Only the generator (`codegen.ts`) uses this file; nothing here runs when a GEMM runs.
 */

/** Byte sequence of an instruction or a whole instruction list. */
export type Code = number[];

/** Value type codes. */
export const ValType = { i32: 0x7f, f32: 0x7d, f64: 0x7c, v128: 0x7b } as const;
/** One of the value type codes in {@link ValType}. */
export type ValType = (typeof ValType)[keyof typeof ValType];

/** Unsigned LEB128. */
export function uleb(value: number): number[] {
  const out: number[] = [];
  let v = value >>> 0;
  do {
    let byte = v & 0x7f;
    v >>>= 7;
    if (v !== 0) byte |= 0x80;
    out.push(byte);
  } while (v !== 0);
  return out;
}

/** Signed LEB128 of a 32-bit integer. */
export function sleb(value: number): number[] {
  const out: number[] = [];
  let v = value | 0;
  for (;;) {
    const byte = v & 0x7f;
    v >>= 7;
    const done = (v === 0 && (byte & 0x40) === 0) || (v === -1 && (byte & 0x40) !== 0);
    out.push(done ? byte : byte | 0x80);
    if (done) return out;
  }
}

function utf8(s: string): number[] {
  return [...uleb(s.length), ...Array.from(new TextEncoder().encode(s))];
}

function vec(items: number[][]): number[] {
  return [...uleb(items.length), ...items.flat()];
}

function section(id: number, body: number[]): number[] {
  return [id, ...uleb(body.length), ...body];
}

/** Concatenate instruction sequences (the body of a block, loop or function). */
export function seq(...parts: Code[]): Code {
  return parts.flat();
}

// ---------------------------------------------------------------------------------------------
// Locals and control flow

/** `local.get`. */
export const get = (local: number): Code => [0x20, ...uleb(local)];
/** `local.set` of the value computed by `value`. */
export const set = (local: number, value: Code): Code => [...value, 0x21, ...uleb(local)];
/** `local.tee`. */
export const tee = (local: number, value: Code): Code => [...value, 0x22, ...uleb(local)];
/** `call` of function `index` with the given argument expressions. */
export const call = (index: number, ...args: Code[]): Code => [...args.flat(), 0x10, ...uleb(index)];
/** `block` with no result. A `br 0` inside (outside nested blocks) jumps past its end. */
export const block = (...body: Code[]): Code => [0x02, 0x40, ...body.flat(), 0x0b];
/** `loop` with no result. A `br 0` inside (outside nested blocks) jumps back to its start. */
export const loop = (...body: Code[]): Code => [0x03, 0x40, ...body.flat(), 0x0b];
/** `if` (no result) on a condition expression, with an optional else branch. */
export const if_ = (cond: Code, then: Code, otherwise?: Code): Code =>
  otherwise === undefined
    ? [...cond, 0x04, 0x40, ...then, 0x0b]
    : [...cond, 0x04, 0x40, ...then, 0x05, ...otherwise, 0x0b];
/** `br`. */
export const br = (depth: number): Code => [0x0c, ...uleb(depth)];
/** `br_if` on a condition expression. */
export const brIf = (depth: number, cond: Code): Code => [...cond, 0x0d, ...uleb(depth)];
/** `return`. */
export const ret = (): Code => [0x0f];
/** `drop` the value of an expression (a load kept for its effect on the caches). */
export const drop = (value: Code): Code => [...value, 0x1a];
/** `select`: `a` if `cond` is non-zero else `b`. */
export const select = (a: Code, b: Code, cond: Code): Code => [...a, ...b, ...cond, 0x1b];

/**
 * A counted loop `for (i = from; i < to; i += step) body`, comparing as signed i32.
 * Inside `body`, `br 0` would restart the iteration without incrementing; the helpers here never
 * branch out of a body, so the depths stay simple.
 */
export function forLoop(i: number, from: Code, to: Code, step: Code, ...body: Code[]): Code {
  return seq(
    set(i, from),
    block(
      loop(
        brIf(1, i32.ge_s(get(i), to)),
        ...body,
        set(i, i32.add(get(i), step)),
        br(0),
      ),
    ),
  );
}

// ---------------------------------------------------------------------------------------------
// Numeric instructions

const bin = (op: number) => (a: Code, b: Code): Code => [...a, ...b, op];
const un = (op: number) => (a: Code): Code => [...a, op];
const memarg = (align: number, offset: number): number[] => [...uleb(align), ...uleb(offset)];

/** i32 instructions. */
export const i32 = {
  const: (v: number): Code => [0x41, ...sleb(v)],
  eqz: un(0x45),
  eq: bin(0x46),
  ne: bin(0x47),
  lt_s: bin(0x48),
  lt_u: bin(0x49),
  gt_s: bin(0x4a),
  le_s: bin(0x4c),
  ge_s: bin(0x4e),
  ge_u: bin(0x4f),
  le_u: bin(0x4d),
  gt_u: bin(0x4b),
  add: bin(0x6a),
  sub: bin(0x6b),
  mul: bin(0x6c),
  div_u: bin(0x6e),
  and: bin(0x71),
  or: bin(0x72),
  xor: bin(0x73),
  shl: bin(0x74),
  shr_s: bin(0x75),
  shr_u: bin(0x76),
  reinterpret_f32: un(0xbc),
  trunc_f32_s: un(0xa8),
  /** Signed minimum, built from select (evaluates each operand twice: pass locals or constants). */
  min_s: (a: Code, b: Code): Code => select(a, b, i32.lt_s(a, b)),
  load: (addr: Code, offset = 0): Code => [...addr, 0x28, ...memarg(2, offset)],
  load16_u: (addr: Code, offset = 0): Code => [...addr, 0x2f, ...memarg(1, offset)],
  load8_u: (addr: Code, offset = 0): Code => [...addr, 0x2d, ...memarg(0, offset)],
  load8_s: (addr: Code, offset = 0): Code => [...addr, 0x2c, ...memarg(0, offset)],
  store: (addr: Code, value: Code, offset = 0): Code => [...addr, ...value, 0x36, ...memarg(2, offset)],
  store8: (addr: Code, value: Code, offset = 0): Code => [...addr, ...value, 0x3a, ...memarg(0, offset)],
  store16: (addr: Code, value: Code, offset = 0): Code => [...addr, ...value, 0x3b, ...memarg(1, offset)],
};

/** f32 instructions. */
export const f32 = {
  const: (v: number): Code => {
    const bytes = new Uint8Array(new Float32Array([v]).buffer);
    return [0x43, ...bytes];
  },
  abs: un(0x8b),
  neg: un(0x8c),
  nearest: un(0x90),
  add: bin(0x92),
  sub: bin(0x93),
  mul: bin(0x94),
  div: bin(0x95),
  min: bin(0x96),
  max: bin(0x97),
  copysign: bin(0x98),
  eq: bin(0x5b),
  ne: bin(0x5c),
  lt: bin(0x5d),
  ge: bin(0x60),
  convert_i32_s: un(0xb2),
  demote_f64: un(0xb6),
  reinterpret_i32: un(0xbe),
  load: (addr: Code, offset = 0): Code => [...addr, 0x2a, ...memarg(2, offset)],
  store: (addr: Code, value: Code, offset = 0): Code => [...addr, ...value, 0x38, ...memarg(2, offset)],
};

/** i64 instructions (constants for `i64x2.splat`). */
export const i64 = {
  const: (v: number): Code => [0x42, ...sleb(v)],
};

/** f64 instructions. */
export const f64 = {
  const: (v: number): Code => [0x44, ...new Uint8Array(new Float64Array([v]).buffer)],
  sqrt: un(0x9f),
  add: bin(0xa0),
  mul: bin(0xa2),
  div: bin(0xa3),
  convert_i32_s: un(0xb7),
  promote_f32: un(0xbb),
};

const simd = (op: number): number[] => [0xfd, ...uleb(op)];
const simdBin = (op: number) => (a: Code, b: Code): Code => [...a, ...b, ...simd(op)];

/** v128 / f32x4 instructions (the SIMD proposal, plus `relaxed_madd` from relaxed SIMD). */
export const v128 = {
  load: (addr: Code, offset = 0): Code => [...addr, ...simd(0x00), ...memarg(4, offset)],
  /** Load four u16 and zero-extend each to a u32 lane. */
  load16x4_u: (addr: Code, offset = 0): Code => [...addr, ...simd(0x04), ...memarg(3, offset)],
  load32_splat: (addr: Code, offset = 0): Code => [...addr, ...simd(0x09), ...memarg(2, offset)],
  /** Load 8 bytes into both halves. */
  load64_splat: (addr: Code, offset = 0): Code => [...addr, ...simd(0x0a), ...memarg(3, offset)],
  store: (addr: Code, value: Code, offset = 0): Code => [...addr, ...value, ...simd(0x0b), ...memarg(4, offset)],
  /** All-zero vector. */
  zero: (): Code => [...simd(0x0c), ...new Array<number>(16).fill(0)],
  /** `i8x16.shuffle` picking bytes 0..31 from the concatenation of `a` and `b`. */
  shuffle: (a: Code, b: Code, lanes: readonly number[]): Code => {
    if (lanes.length !== 16) throw new RangeError('shuffle needs 16 lane indices');
    return [...a, ...b, ...simd(0x0d), ...lanes];
  },
  f32x4_splat: (a: Code): Code => [...a, ...simd(0x13)],
  f32x4_extract_lane: (a: Code, lane: number): Code => [...a, ...simd(0x1f), lane],
  i32x4_splat: (a: Code): Code => [...a, ...simd(0x11)],
  f64x2_splat: (a: Code): Code => [...a, ...simd(0x14)],
  f64x2_extract_lane: (a: Code, lane: number): Code => [...a, ...simd(0x21), lane],
  f32x4_nearest: (a: Code): Code => [...a, ...simd(0x6a)],
  f64x2_promote_low_f32x4: (a: Code): Code => [...a, ...simd(0x5f)],
  i32x4_shl: simdBin(0xab),
  i32x4_gt_s: simdBin(0x3b),
  i32x4_shr_s: simdBin(0xac),
  i32x4_add: simdBin(0xae),
  i32x4_sub: simdBin(0xb1),
  f32x4_add: simdBin(0xe4),
  f32x4_sub: simdBin(0xe5),
  f32x4_mul: simdBin(0xe6),
  f32x4_min: simdBin(0xe8),
  f32x4_max: simdBin(0xe9),
  /** `b < a ? b : a` per lane (x86 `minps`: one instruction, where `f32x4_min` takes several). */
  f32x4_pmin: simdBin(0xea),
  /** `a < b ? b : a` per lane (x86 `maxps`). */
  f32x4_pmax: simdBin(0xeb),
  /** Lane mask: all ones where a > b (false for NaN). */
  f32x4_gt: simdBin(0x44),
  /** Lane mask: all ones where a ≤ b (false for NaN). */
  f32x4_le: simdBin(0x45),
  f64x2_add: simdBin(0xf0),
  f64x2_sub: simdBin(0xf1),
  f64x2_mul: simdBin(0xf2),
  f64x2_div: simdBin(0xf3),
  f64x2_sqrt: (a: Code): Code => [...a, ...simd(0xef)],
  f64x2_ne: simdBin(0x48),
  f32x4_div: simdBin(0xe7),
  f32x4_sqrt: (a: Code): Code => [...a, ...simd(0xe3)],
  f32x4_demote_f64x2_zero: (a: Code): Code => [...a, ...simd(0x5e)],
  and: simdBin(0x4e),
  or: simdBin(0x50),
  xor: simdBin(0x51),
  /** Bits of `a` where `mask` is 1, of `b` where it is 0. */
  bitselect: (a: Code, b: Code, mask: Code): Code => [...a, ...b, ...mask, ...simd(0x52)],
  i64x2_splat: (a: Code): Code => [...a, ...simd(0x12)],
  i64x2_shr_s: simdBin(0xcc),
  i64x2_add: simdBin(0xce),
  i64x2_eq: simdBin(0xd6),
  i32x4_trunc_sat_f32x4_s: (a: Code): Code => [...a, ...simd(0xf8)],
  /** `a * b + c`, fused or not (relaxed SIMD). */
  f32x4_relaxed_madd: (a: Code, b: Code, c: Code): Code => [...a, ...b, ...c, ...simd(0x105)],

  // Loads and lanes.
  /** Load 8 bytes and sign-extend each to an i16 lane. */
  load8x8_s: (addr: Code, offset = 0): Code => [...addr, ...simd(0x01), ...memarg(3, offset)],
  /** Load 8 bytes and zero-extend each to an i16 lane. */
  load8x8_u: (addr: Code, offset = 0): Code => [...addr, ...simd(0x02), ...memarg(3, offset)],
  load8_splat: (addr: Code, offset = 0): Code => [...addr, ...simd(0x07), ...memarg(0, offset)],
  load16_splat: (addr: Code, offset = 0): Code => [...addr, ...simd(0x08), ...memarg(1, offset)],
  /** Load 4 bytes into lane 0 of an otherwise zero vector. */
  load32_zero: (addr: Code, offset = 0): Code => [...addr, ...simd(0x5c), ...memarg(2, offset)],
  /** Load 8 bytes into the low half of an otherwise zero vector. */
  load64_zero: (addr: Code, offset = 0): Code => [...addr, ...simd(0x5d), ...memarg(3, offset)],
  /** Replace 16-bit lane `lane` of `v` by the u16 at addr. */
  load16_lane: (addr: Code, v: Code, lane: number, offset = 0): Code => [...addr, ...v, ...simd(0x55), ...memarg(1, offset), lane],
  /** Replace 32-bit lane `lane` of `v` by the 4 bytes at addr. */
  load32_lane: (addr: Code, v: Code, lane: number, offset = 0): Code => [...addr, ...v, ...simd(0x56), ...memarg(2, offset), lane],
  /** Store 32-bit lane `lane` of `v` at addr. */
  store32_lane: (addr: Code, v: Code, lane: number, offset = 0): Code => [...addr, ...v, ...simd(0x5a), ...memarg(2, offset), lane],
  /** Store the low 8 bytes of `v` at addr. */
  store64_lane: (addr: Code, v: Code, lane: number, offset = 0): Code => [...addr, ...v, ...simd(0x5b), ...memarg(3, offset), lane],
  /** A vector of 16 constant bytes. */
  const_i8x16: (bytes: readonly number[]): Code => {
    if (bytes.length !== 16) throw new RangeError('const_i8x16 needs 16 bytes');
    return [...simd(0x0c), ...bytes.map((b) => b & 255)];
  },
  /** A vector of 8 constant i16 lanes. */
  const_i16x8: (lanes: readonly number[]): Code => v128.const_i8x16(lanes.flatMap((l) => [l & 255, (l >> 8) & 255])),
  /** A vector of 4 constant i32 lanes. */
  const_i32x4: (lanes: readonly number[]): Code => v128.const_i8x16(lanes.flatMap((l) => [l & 255, (l >> 8) & 255, (l >> 16) & 255, (l >>> 24) & 255])),
  /** A vector of 4 constant f32 lanes. */
  const_f32x4: (lanes: readonly number[]): Code => v128.const_i8x16(Array.from(new Uint8Array(Float32Array.from(lanes).buffer))),
  /** Bytes of `a` picked by the indices in `idx` (0 for an index above 15). */
  swizzle: simdBin(0x0e),
  i8x16_splat: (a: Code): Code => [...a, ...simd(0x0f)],
  i16x8_splat: (a: Code): Code => [...a, ...simd(0x10)],
  i32x4_extract_lane: (a: Code, lane: number): Code => [...a, ...simd(0x1b), lane],
  i32x4_replace_lane: (a: Code, lane: number, x: Code): Code => [...a, ...x, ...simd(0x1c), lane],
  f32x4_replace_lane: (a: Code, lane: number, x: Code): Code => [...a, ...x, ...simd(0x20), lane],

  // Bitwise and integer lanes.
  not: (a: Code): Code => [...a, ...simd(0x4d)],
  /** a & ~b. */
  andnot: simdBin(0x4f),
  i8x16_eq: simdBin(0x23),
  i8x16_abs: (a: Code): Code => [...a, ...simd(0x60)],
  i8x16_neg: (a: Code): Code => [...a, ...simd(0x61)],
  i8x16_narrow_i16x8_s: simdBin(0x65),
  i8x16_add: simdBin(0x6e),
  i8x16_sub: simdBin(0x71),
  i8x16_max_s: simdBin(0x78),
  i8x16_min_s: simdBin(0x76),
  i16x8_extadd_pairwise_i8x16_s: (a: Code): Code => [...a, ...simd(0x7c)],
  i32x4_extadd_pairwise_i16x8_s: (a: Code): Code => [...a, ...simd(0x7e)],
  i16x8_narrow_i32x4_s: simdBin(0x85),
  i16x8_extend_low_i8x16_s: (a: Code): Code => [...a, ...simd(0x87)],
  i16x8_extend_high_i8x16_s: (a: Code): Code => [...a, ...simd(0x88)],
  i16x8_extend_low_i8x16_u: (a: Code): Code => [...a, ...simd(0x89)],
  i16x8_extend_high_i8x16_u: (a: Code): Code => [...a, ...simd(0x8a)],
  /** Shift every i16 lane left (bits shifted out of a lane are lost; none come in from a neighbour). */
  i16x8_shl: simdBin(0x8b),
  i16x8_shr_u: simdBin(0x8d),
  i16x8_add: simdBin(0x8e),
  i16x8_sub: simdBin(0x91),
  i16x8_mul: simdBin(0x95),
  i32x4_extend_low_i16x8_s: (a: Code): Code => [...a, ...simd(0xa7)],
  i32x4_extend_high_i16x8_s: (a: Code): Code => [...a, ...simd(0xa8)],
  i32x4_extend_low_i16x8_u: (a: Code): Code => [...a, ...simd(0xa9)],
  i32x4_extend_high_i16x8_u: (a: Code): Code => [...a, ...simd(0xaa)],
  i32x4_shr_u: simdBin(0xad),
  i32x4_mul: simdBin(0xb5),
  i32x4_min_s: simdBin(0xb6),
  /** Σ of adjacent pairs of i16 products, exact in i32 lanes (pmaddwd). */
  i32x4_dot_i16x8_s: simdBin(0xba),
  f32x4_abs: (a: Code): Code => [...a, ...simd(0xe0)],
  f32x4_lt: simdBin(0x43),
  f32x4_convert_i32x4_s: (a: Code): Code => [...a, ...simd(0xfa)],
  f32x4_convert_i32x4_u: (a: Code): Code => [...a, ...simd(0xfb)],

  // Relaxed SIMD integer dot products: exact when every lane of `b` is in 0 … 127 (the "i7" operand).
  /** i16x8 of Σ of adjacent pairs a_i·b_i (a int8, b 7-bit). */
  i16x8_relaxed_dot_i8x16_i7x16_s: simdBin(0x112),
  /** c + Σ of each 4 adjacent a_i·b_i in i32 lanes (a int8, b 7-bit): `vpdpbusd` on CPUs with AVX-VNNI. */
  i32x4_relaxed_dot_i8x16_i7x16_add_s: (a: Code, b: Code, c: Code): Code => [...a, ...b, ...c, ...simd(0x113)],
};

// ---------------------------------------------------------------------------------------------
// Module

/** One function of a module under construction. */
export interface FuncDef {
  /** Export name. */
  name: string;
  /** Parameter types (local indices 0..params.length-1). */
  params: ValType[];
  /** Result types. */
  results: ValType[];
  /** Types of the extra locals (indices continue after the parameters). */
  locals: ValType[];
  /** Function body without the final `end`. */
  body: Code;
}

/** Helper that hands out local indices while a function body is being written. */
export class Locals {
  readonly types: ValType[] = [];
  constructor(private readonly nParams: number) {}
  /** A fresh local of type `t`; returns its index. */
  add(t: ValType): number {
    this.types.push(t);
    return this.nParams + this.types.length - 1;
  }
}

/**
 * Encode a module that imports one memory (shared unless `shared` is false) as `env.memory` (`minPages`..`maxPages`) and
 * exports the given functions under their names (also written to the names section, so that CPU
 * profiles show them). Functions may call each other by their index in `funcs`.
 */
export function encodeModule(funcs: FuncDef[], minPages: number, maxPages: number, shared = true): Uint8Array {
  const sigKey = (f: FuncDef): string => `${f.params.join(',')}:${f.results.join(',')}`;
  const sigs: FuncDef[] = [];
  const sigIndex = new Map<string, number>();
  for (const f of funcs) {
    if (!sigIndex.has(sigKey(f))) {
      sigIndex.set(sigKey(f), sigs.length);
      sigs.push(f);
    }
  }
  const typeSec = vec(sigs.map((f) => [0x60, ...vec(f.params.map((t) => [t])), ...vec(f.results.map((t) => [t]))]));
  // import "env" "memory" (memory [shared] min max): limits flag 0x03 = has maximum + shared, 0x01 = has maximum.
  const importSec = vec([[...utf8('env'), ...utf8('memory'), 0x02, shared ? 0x03 : 0x01, ...uleb(minPages), ...uleb(maxPages)]]);
  const funcSec = vec(funcs.map((f) => uleb(sigIndex.get(sigKey(f))!)));
  const exportSec = vec(funcs.map((f, i) => [...utf8(f.name), 0x00, ...uleb(i)]));
  const codeSec = vec(
    funcs.map((f) => {
      // Run-length encode the local declarations.
      const groups: number[][] = [];
      for (let i = 0; i < f.locals.length; ) {
        let j = i;
        while (j < f.locals.length && f.locals[j] === f.locals[i]) j++;
        groups.push([...uleb(j - i), f.locals[i]!]);
        i = j;
      }
      const body = [...vec(groups), ...f.body, 0x0b];
      return [...uleb(body.length), ...body];
    }),
  );
  const names = vec(funcs.map((f, i) => [...uleb(i), ...utf8(f.name)]));
  return new Uint8Array([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
    ...section(1, typeSec),
    ...section(2, importSec),
    ...section(3, funcSec),
    ...section(7, exportSec),
    ...section(10, codeSec),
    // The names section (function names subsection): CPU profiles name the kernels.
    ...section(0, [...utf8('name'), 1, ...uleb(names.length), ...names]),
  ]);
}

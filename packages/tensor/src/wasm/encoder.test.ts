import { describe, expect, it } from 'vitest';
import { encodeModule, f32, forLoop, get, i32, Locals, set, sleb, uleb, v128, ValType } from './encoder';
import { wasmApi } from './api';

describe('wasm encoder', () => {
  it('encodes LEB128 like the spec examples', () => {
    expect(uleb(0)).toEqual([0]);
    expect(uleb(127)).toEqual([0x7f]);
    expect(uleb(128)).toEqual([0x80, 0x01]);
    expect(uleb(624485)).toEqual([0xe5, 0x8e, 0x26]);
    expect(sleb(-1)).toEqual([0x7f]);
    expect(sleb(63)).toEqual([0x3f]);
    expect(sleb(64)).toEqual([0xc0, 0x00]);
    expect(sleb(-123456)).toEqual([0xc0, 0xbb, 0x78]);
  });

  it('builds a module whose loop, loads, stores and SIMD ops compute what they say', () => {
    // sum(ptr, n): f32 sum of n floats with a scalar loop; axpy4(x, y): y[0:4] += 2 * x[0:4] with f32x4.
    const L = new Locals(2);
    const i = L.add(ValType.i32), acc = L.add(ValType.f32);
    const sum = {
      name: 'sum', params: [ValType.i32, ValType.i32], results: [ValType.f32], locals: L.types,
      body: [
        ...set(acc, f32.const(0)),
        ...forLoop(i, i32.const(0), get(1), i32.const(1),
          set(acc, f32.add(get(acc), f32.load(i32.add(get(0), i32.shl(get(i), i32.const(2))))))),
        ...get(acc),
      ],
    };
    const axpy4 = {
      name: 'axpy4', params: [ValType.i32, ValType.i32], results: [], locals: [],
      body: v128.store(get(1), v128.f32x4_add(v128.load(get(1)), v128.f32x4_mul(v128.f32x4_splat(f32.const(2)), v128.load(get(0))))),
    };
    const bytes = encodeModule([sum, axpy4], 1, 2);
    const memory = new wasmApi!.Memory({ initial: 1, maximum: 2, shared: true });
    const ex = new wasmApi!.Instance(new wasmApi!.Module(bytes), { env: { memory } }).exports as {
      sum(p: number, n: number): number; axpy4(x: number, y: number): void;
    };
    const f = new Float32Array(memory.buffer);
    f.set([1, 2, 3, 4, 5, 10, 20, 30, 40], 0);
    expect(ex.sum(0, 5)).toBe(15);
    expect(ex.sum(4, 3)).toBe(9);
    ex.axpy4(0, 20);
    expect(Array.from(f.subarray(5, 9))).toEqual([12, 24, 36, 48]);
  });
});

import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { kernelInfo } from '../../registry';
import { encodeModule } from '../../wasm/encoder';
import { GEMM_MEMORY_PAGES } from '../gemm/wasm/codegen';
import { wasmApi } from '../../wasm/api';
import type { BinaryOp } from '../../kernels/types';
import { binaryFuncs, simdBinary } from './cpu';
import { heapAddress, heapRelease, scratchF32 } from '../../memory/heap';
import { kernelSet } from '../../kernels/types';

const jsKernels = kernelSet('reference');

/** Row-major strides of `shape`, 0 along the axes where `of` has size 1 (broadcast). */
function strides(shape: number[], of: number[]): number[] {
  const s = new Array<number>(shape.length).fill(0);
  for (let i = shape.length - 1, st = 1; i >= 0; i--) { if (of[i] !== 1) s[i] = st; st *= of[i]!; }
  return s;
}

describe('cpu add/sub/mul (WebAssembly SIMD) equal the reference kernel bit for bit', () => {
  test('the module validates; the cpu backend runs binary', () => {
    expect(wasmApi!.validate(encodeModule(binaryFuncs(), GEMM_MEMORY_PAGES.min, GEMM_MEMORY_PAGES.max))).toBe(true);
    expect(kernelInfo('binary')?.impl).toBe('wasm');
  });

  test('any op, same layout or broadcast, on the heap or not, odd lengths, extreme values', () => {
    const special = [0, -0, 1e-45, -1e-45, 3.4028234663852886e38, -3.4028234663852886e38, Infinity, -Infinity, NaN, 1, -1, 1.5e-38];
    fc.assert(fc.property(
      fc.record({
        op: fc.constantFrom<BinaryOp>('add', 'sub', 'mul', 'div', 'maximum'),
        shape: fc.array(fc.integer({ min: 1, max: 9 }), { minLength: 1, maxLength: 3 }),
        broadcast: fc.boolean(), heap: fc.boolean(), seed: fc.integer({ min: 0, max: 1 << 30 }),
      }),
      ({ op, shape, broadcast, heap, seed }) => {
        const n = shape.reduce((p, d) => p * d, 1), bShape = broadcast ? shape.map((d, i) => (i === 0 ? 1 : d)) : shape;
        const nb = bShape.reduce((p, d) => p * d, 1);
        let r = seed;
        const value = (): number => { r = (r * 1103515245 + 12345) % 2147483648; return r % 7 === 0 ? special[r % special.length]! : ((r / 2147483648) - 0.5) * 2 ** ((r % 60) - 30); };
        const arr = (len: number): Float32Array => { const a = heap ? scratchF32(len) : new Float32Array(len); for (let i = 0; i < len; i++) a[i] = value(); return a; };
        const a = arr(n), b = arr(nb), got = heap ? scratchF32(n) : new Float32Array(n), want = new Float32Array(n);
        if (heap) expect(heapAddress(a)).toBeGreaterThanOrEqual(0);
        simdBinary(op, a, strides(shape, shape), b, strides(shape, bShape), shape, got);
        jsKernels.binary(op, a, strides(shape, shape), b, strides(shape, bShape), shape, want);
        expect(new Uint32Array(got.slice().buffer)).toEqual(new Uint32Array(want.buffer));
        if (heap) [a, b, got].forEach(heapRelease);
      }), { numRuns: 300 });
  });
});

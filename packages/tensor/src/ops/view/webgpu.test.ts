// Copies of strided views (materialising non-contiguous views) as the WGSL kernel of the webgpu
// device against the reference: a copy is exact, so every element must be equal.
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { ShapeError } from '../../errors';
import { randomF32 } from '../../kernels/float-testing';
import { webgpuForSuite } from '../../webgpu/testing';
import * as reference from './reference';
import { copyStrided } from './webgpu';

/** Runs of the property (raised ×20 once locally: `COPY_RUNS=600`). */
const RUNS = Number(process.env.COPY_RUNS ?? 30);

/** A random view of a contiguous tensor: a permutation of its axes, then a narrowing of each. */
const views = fc.integer({ min: 1, max: 5 }).chain((rank) => fc.record({
  dims: fc.array(fc.integer({ min: 1, max: 5 }), { minLength: rank, maxLength: rank }),
  perm: fc.shuffledSubarray([...Array(rank).keys()], { minLength: rank, maxLength: rank }),
  cuts: fc.array(fc.tuple(fc.nat(3), fc.nat(3)), { minLength: rank, maxLength: rank }),
  seed: fc.nat(),
})).map(({ dims, perm, cuts, seed }) => {
  const base: number[] = [];
  let s = 1;
  for (let k = dims.length - 1; k >= 0; k--) { base[k] = s; s *= dims[k]!; }
  // Permuted axes, each narrowed to [lo, lo + len) of its extent.
  const shape: number[] = [], strides: number[] = [];
  let offset = 0;
  perm.forEach((p, k) => {
    const d = dims[p]!, lo = Math.min(cuts[k]![0], d - 1), len = Math.max(1, Math.min(d - lo, d - cuts[k]![1]));
    offset += lo * base[p]!;
    shape.push(len);
    strides.push(base[p]!);
  });
  return { x: randomF32(s + 3, seed), offset, shape, strides };
});

describe('copyStrided on the device', { timeout: 600_000 }, () => {
  const { run, host } = webgpuForSuite();

  test('equals the reference exactly for permuted and narrowed views (property)', () => {
    fc.assert(fc.property(views, ({ x, offset, shape, strides }) => {
      const n = shape.reduce((p, d) => p * d, 1);
      const want = new Float32Array(n), got = new Float32Array(n);
      reference.copyStrided(x, offset, shape, strides, want);
      run(copyStrided)(x, offset, shape, strides, got);
      host(got);
      expect(got).toEqual(want);
    }), { numRuns: RUNS });
  });

  test('copies of strided views are exact', () => {
    const x = randomF32(5000, 3);
    for (const [offset, shape, strides] of [[7, [4, 5, 6], [1, 24, 4]], [0, [10, 10], [100, 1]], [3, [2, 3, 2, 2, 2, 2], [1, 2, 6, 12, 24, 48]]] as const) {
      const n = shape.reduce((p, d) => p * d, 1);
      const out = new Float32Array(n), out0 = new Float32Array(n);
      run(copyStrided)(x, offset, shape, strides, out);
      host(out);
      reference.copyStrided(x, offset, shape, strides, out0);
      expect(Array.from(out)).toEqual(Array.from(out0));
    }
  });

  test('rejects a view that reaches past x, and a wrong out size, with a ShapeError', () => {
    expect(() => run(copyStrided)(new Float32Array(6), 1, [2, 3], [3, 1], new Float32Array(6))).toThrow(ShapeError);
    expect(() => run(copyStrided)(new Float32Array(6), 0, [2, 3], [1, 2], new Float32Array(5))).toThrow(/out has 5/);
  });
});

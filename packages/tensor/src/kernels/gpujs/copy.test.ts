// The strided copy (materialising non-contiguous views) as a gpu.js kernel in `webgpu` mode
// against the reference kernel: a copy is exact, so every element must be equal. On backend
// `webgpu`, a transpose of a tensor on the GPU is copied there (counted transfers).
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { kernelInfo } from '../../registry';
import { ShapeError } from '../../errors';
import { useDevice } from '../../device';
import { webgpuTransfers } from '../../gpujs-backend';
import { add } from '../../ops/elementwise';
import { permute, reshape, transpose } from '../../ops/view';
import { Tensor } from '../../tensor';
import { kernelSet } from '../types';
import { expectAllRanIn, randomF32, useSwiftshaderUnlessDriverNamed, webgpuKernelsForSuite } from './testing';

const jsKernels = kernelSet('reference');

useSwiftshaderUnlessDriverNamed();

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

describe('copyStrided in webgpu mode', { timeout: 600_000 }, () => {
  const kernels = webgpuKernelsForSuite();

  it('equals the reference exactly for permuted and narrowed views', async () => {
    await fc.assert(fc.asyncProperty(views, async ({ x, offset, shape, strides }) => {
      const n = shape.reduce((p, d) => p * d, 1);
      const want = new Float32Array(n), got = new Float32Array(n);
      jsKernels.copyStrided(x, offset, shape, strides, want);
      await kernels().copyStrided(x, offset, shape, strides, got);
      expect(got).toEqual(want);
    }), { numRuns: RUNS });
  });

  it('rejects a view that reaches past x, and a wrong out size, with a ShapeError', async () => {
    await expect(kernels().copyStrided(new Float32Array(6), 1, [2, 3], [3, 1], new Float32Array(6))).rejects.toThrow(ShapeError);
    await expect(kernels().copyStrided(new Float32Array(6), 0, [2, 3], [1, 2], new Float32Array(5))).rejects.toThrow(/out has 5/);
  });

  it('ran every kernel in webgpu', () => {
    expectAllRanIn(kernels(), 'webgpu', 3);
  });
});

describe('copies of views on backend webgpu', { timeout: 300_000 }, () => {
  afterAll(() => useDevice('cpu'));

  it('a transpose of a tensor on the GPU is materialised there: one kernel, no upload, no readback', async () => {
    await useDevice('webgpu');
    expect(kernelInfo('copyStrided')).toEqual({ device: 'webgpu', impl: 'gpujs' });
    const a = Tensor.from(randomF32(4 * 6, 1), [4, 6]);
    const b = Tensor.from(randomF32(4 * 6, 2), [4, 6]);
    const s = add(a, b); // on the GPU
    const t0 = webgpuTransfers();
    const t = transpose(s, 0, 1).materialize();
    const p = permute(reshape(s, [2, 2, 6]), [2, 0, 1]).materialize();
    const t1 = webgpuTransfers();
    expect({ calls: t1.calls - t0.calls, uploads: t1.uploads - t0.uploads, readbacks: t1.readbacks - t0.readbacks }).toEqual({ calls: 2, uploads: 0, readbacks: 0 });
    // Reading them is their readback; the values are the host transpose of the sum.
    const sum = Float32Array.from(a.data, (v, i) => v + b.data[i]!);
    // Both are sᵀ: element (c, r) of the [6, 4] transpose and (c, i, j) of the [6, 2, 2] permute with r = 2i + j.
    const sT = Float32Array.from({ length: 24 }, (_, k) => sum[(k % 4) * 6 + Math.floor(k / 4)]!);
    expect(t.data).toEqual(sT);
    expect(p.data).toEqual(sT);
    expect(webgpuTransfers().readbacks - t1.readbacks).toBe(2);
  });
});

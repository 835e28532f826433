import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { Rng } from '../../random';
import { Tensor } from '../../tensor';
import * as E from './index';
import { max, mean, sum } from '../reduce';
import { expectClose, expectGrads, param } from '../test-util';

const rng = new Rng(7);

describe('unary ops', () => {
  const cases: [keyof typeof E, (x: number) => number, (r: Rng) => number][] = [
    ['exp', Math.exp, (r) => r.normal()],
    ['log', Math.log, (r) => 0.5 + r.uniform() * 3],
    ['expm1', Math.expm1, (r) => r.normal()],
    ['log1p', Math.log1p, (r) => r.uniform() * 3],
    ['softplus', (x) => Math.log(1 + Math.exp(x)), (r) => 3 * r.normal()],
    ['sigmoid', (x) => 1 / (1 + Math.exp(-x)), (r) => 3 * r.normal()],
    ['silu', (x) => x / (1 + Math.exp(-x)), (r) => 3 * r.normal()],
    ['tanh', Math.tanh, (r) => r.normal()],
    ['sqrt', Math.sqrt, (r) => 0.5 + r.uniform() * 3],
    ['rsqrt', (x) => 1 / Math.sqrt(x), (r) => 0.5 + r.uniform() * 3],
    ['square', (x) => x * x, (r) => r.normal()],
    ['neg', (x) => -x, (r) => r.normal()],
    ['abs', Math.abs, (r) => r.normal() + (r.uniform() > 0.5 ? 0.5 : -0.5)],
    ['relu', (x) => Math.max(0, x), (r) => r.normal() + (r.uniform() > 0.5 ? 0.5 : -0.5)],
  ];
  for (const [name, ref, gen] of cases) {
    test(`${name}: forward vs Math, backward vs finite differences`, () => {
      const x = Tensor.from(Float32Array.from({ length: 37 }, () => gen(rng)), [37]).requireGrad();
      const f = E[name] as (t: Tensor) => Tensor;
      expectClose(f(x).data, Array.from(x.data, ref), 1e-6);
      expectGrads(([t]) => f(t!), [x], 1e-2, 1e-3);
    });
  }
  test('softplus and sigmoid do not overflow', () => {
    const x = Tensor.from([-1000, -50, 0, 50, 1000]);
    expect(Array.from(E.softplus(x).data)).toEqual([0, Math.fround(Math.exp(-50)), Math.fround(Math.LN2), 50, 1000]);
    expect(Array.from(E.sigmoid(x).data)).toEqual([0, Math.fround(Math.exp(-50)), 0.5, 1, 1]);
  });
});

describe('binary ops with broadcasting', () => {
  const shapes = fc.constantFrom<[number[], number[]]>([[3, 4], [3, 4]], [[2, 3, 4], [4]], [[2, 1, 4], [3, 1]], [[5], []], [[1, 3], [2, 1]], [[2, 3, 1, 2], [3, 4, 1]]);
  const refs = { add: (a: number, b: number) => a + b, sub: (a: number, b: number) => a - b, mul: (a: number, b: number) => a * b, div: (a: number, b: number) => a / b };
  test('forward matches an index-by-index reference', () => {
    fc.assert(fc.property(shapes, fc.constantFrom('add', 'sub', 'mul', 'div' as const), fc.integer(), ([sa, sb], op, seed) => {
      const r = new Rng(seed);
      const a = Tensor.randn(sa, r), b = Tensor.from(Tensor.randn(sb, r).data.map((v) => v + (v >= 0 ? 1 : -1)), sb);
      const y = E[op](a, b);
      // Reference: walk output indices and map to operand indices.
      const rank = y.rank;
      const expected: number[] = [];
      const idx = new Array(rank).fill(0);
      const at = (t: Tensor) => {
        let o = 0;
        for (let i = 0; i < t.rank; i++) o += (t.shape[i] === 1 ? 0 : idx[rank - t.rank + i]) * t.strides[i]!;
        return t.data[o]!;
      };
      for (let n = 0; n < y.size; n++) {
        expected.push(refs[op](at(a), at(b)));
        for (let ax = rank - 1; ax >= 0; ax--) { if (++idx[ax] < y.shape[ax]!) break; idx[ax] = 0; }
      }
      expectClose(y.data, expected, 1e-6);
    }), { numRuns: 60 });
  });
  test('gradients reduce over broadcast axes', () => {
    for (const op of ['add', 'sub', 'mul', 'div', 'maximum', 'minimum'] as const) {
      const a = param([2, 3, 4], rng), b = Tensor.from(Tensor.randn([3, 1], rng).data.map((v) => v + (v >= 0 ? 1 : -1)), [3, 1]).requireGrad();
      expectGrads(([x, y]) => E[op](x!, y!), [a, b], 1e-2, 1e-3);
    }
    const a = Tensor.from(Tensor.rand([4, 3], rng, 0.5, 2).data, [4, 3]).requireGrad(), b = param([3], rng);
    expectGrads(([x, y]) => E.pow(x!, y!), [a, b], 1e-2, 1e-3);
  });
  test('scalar operands and scale', () => {
    const a = param([3, 2], rng);
    expectClose(E.add(a, 2).data, Array.from(a.data, (v) => v + 2));
    expectClose(E.scale(a, -3).data, Array.from(a.data, (v) => v * -3));
    expectGrads(([x]) => E.scale(E.mul(x!, 0.5), 3), [a]);
  });
});

describe('reductions', () => {
  test('sum/mean/max along each axis match loops, with gradients', () => {
    const x = param([3, 4, 5], rng);
    const at = (i: number, j: number, k: number) => x.data[(i * 4 + j) * 5 + k]!;
    const s1: number[] = [];
    for (let i = 0; i < 3; i++) for (let k = 0; k < 5; k++) { let s = 0; for (let j = 0; j < 4; j++) s += at(i, j, k); s1.push(s); }
    expectClose(sum(x, 1).data, s1);
    expect(sum(x, 1, true).shape).toEqual([3, 1, 5]);
    expectClose(mean(x, -1).data, Array.from({ length: 12 }, (_, r) => { let s = 0; for (let k = 0; k < 5; k++) s += x.data[r * 5 + k]!; return s / 5; }));
    expectClose(max(x, 0).data, Array.from({ length: 20 }, (_, r) => Math.max(x.data[r]!, x.data[20 + r]!, x.data[40 + r]!)));
    expectClose([sum(x).item()], [x.data.reduce((a, b) => a + b, 0)], 1e-5);
    for (const axis of [0, 1, 2]) {
      expectGrads(([t]) => sum(t!, axis), [x]);
      expectGrads(([t]) => mean(t!, axis, true), [x]);
      expectGrads(([t]) => max(t!, axis), [x], 1e-2, 1e-3);
    }
    expectGrads(([t]) => mean(t!), [x]);
  });
});

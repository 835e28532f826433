import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { backward, noGrad } from '../autograd';
import { ShapeError } from '../errors';
import { Rng } from '../random';
import { Tensor } from '../tensor';
import { attention } from './attention';
import { crossEntropy } from './cross-entropy';
import { defineOp } from './custom';
import { mul } from './elementwise';
import { embedding } from './embedding';
import { sum } from './reduce';
import { rmsnorm } from './rmsnorm';
import { rope } from './rope';
import { logSoftmax, softmax } from './softmax';
import { cat, narrow, permute, reshape, transpose } from './view';
import { expectClose, expectGrads, param } from './test-util';

const rng = new Rng(11);

describe('rmsnorm', () => {
  test('forward matches the formula in float64 and gradients match finite differences', () => {
    fc.assert(fc.property(fc.integer({ min: 1, max: 5 }), fc.integer({ min: 1, max: 70 }), fc.integer(), (rows, n, seed) => {
      const r = new Rng(seed);
      const x = Tensor.randn([rows, n], r), w = Tensor.randn([n], r);
      const y = rmsnorm(x, w, 1e-5).data;
      for (let i = 0; i < rows; i++) {
        let ss = 0;
        for (let j = 0; j < n; j++) ss += x.data[i * n + j]! ** 2;
        const rs = 1 / Math.sqrt(ss / n + 1e-5);
        expectClose(y.subarray(i * n, i * n + n), Array.from({ length: n }, (_, j) => w.data[j]! * x.data[i * n + j]! * rs), 1e-5);
      }
    }), { numRuns: 40 });
    expectGrads(([x, w]) => rmsnorm(x!, w!, 1e-5), [param([3, 2, 9], rng), param([9], rng)], 2e-2, 1e-3);
  });
  test('rejects a weight of the wrong length', () => {
    expect(() => rmsnorm(Tensor.zeros([2, 4]), Tensor.zeros([3]), 1e-5)).toThrow(ShapeError);
  });
});

describe('softmax and logSoftmax', () => {
  test('match exp/sum in float64, with gradients', () => {
    const x = param([4, 33], rng, 3);
    const p = softmax(x).data, lp = logSoftmax(x).data;
    for (let i = 0; i < 4; i++) {
      const row = Array.from(x.data.subarray(i * 33, i * 33 + 33));
      const m = Math.max(...row), z = row.reduce((s, v) => s + Math.exp(v - m), 0);
      expectClose(p.subarray(i * 33, i * 33 + 33), row.map((v) => Math.exp(v - m) / z), 1e-6);
      expectClose(lp.subarray(i * 33, i * 33 + 33), row.map((v) => v - m - Math.log(z)), 1e-6);
    }
    expectGrads(([t]) => softmax(t!), [x], 1e-2, 1e-3);
    expectGrads(([t]) => logSoftmax(t!), [x], 1e-2, 1e-3);
  });
  test('stable for large logits and rows longer than 1000', () => {
    const x = Tensor.from(Float32Array.from({ length: 5000 }, (_, i) => (i === 4321 ? 1e4 : 0)), [1, 5000]);
    expect(softmax(x).data[4321]).toBe(1);
    expect(logSoftmax(x).data[0]).toBe(-1e4);
  });
});

describe('embedding', () => {
  test('gathers rows and scatter-adds gradients (repeated ids accumulate)', () => {
    const table = param([7, 5], rng);
    const ids = Tensor.ints([3, 0, 3, 6], [2, 2]);
    const y = embedding(ids, table);
    expect(y.shape).toEqual([2, 2, 5]);
    expectClose(y.data.subarray(10, 15), table.data.subarray(15, 20), 0);
    expectGrads(([t]) => embedding(ids, t!), [table]);
    table.grad = null;
    backward(sum(embedding(ids, table)));
    expect(Array.from(table.grad!.data.subarray(15, 20))).toEqual([2, 2, 2, 2, 2]);
    expect(Array.from(table.grad!.data.subarray(5, 10))).toEqual([0, 0, 0, 0, 0]);
  });
  test('rejects ids out of range', () => {
    expect(() => embedding(Tensor.ints([7]), Tensor.zeros([7, 2]))).toThrow(/id 7 at position 0/);
  });
});

describe('rope', () => {
  test('rotate_half against the HF formula, inverse, and gradients', () => {
    const d = 8, heads = 3, N = 5;
    const invFreq = Float32Array.from({ length: d / 2 }, (_, i) => 1 / 10000 ** ((2 * i) / d));
    const pos = Tensor.ints([0, 1, 7, 100, 4096]);
    const x = param([N, heads, d], rng);
    const y = rope(x, pos, invFreq).data;
    for (let t = 0; t < N; t++) for (let h = 0; h < heads; h++) {
      const o = (t * heads + h) * d;
      const cos = [...Array(d)].map((_, i) => Math.cos(pos.ints[t]! * invFreq[i % (d / 2)]!));
      const sin = [...Array(d)].map((_, i) => Math.sin(pos.ints[t]! * invFreq[i % (d / 2)]!));
      // q_embed = q * cos + rotate_half(q) * sin, rotate_half(x) = cat(-x2, x1)
      const rot = [...Array(d)].map((_, i) => (i < d / 2 ? -x.data[o + i + d / 2]! : x.data[o + i - d / 2]!));
      expectClose(y.subarray(o, o + d), [...Array(d)].map((_, i) => x.data[o + i]! * cos[i]! + rot[i]! * sin[i]!), 1e-5);
    }
    expectGrads(([t]) => rope(t!, pos, invFreq), [x], 1e-2, 1e-3);
  });
});

/** Naive attention materialising the full score matrix, in float64. */
function naiveAttention(q: Tensor, k: Tensor, v: Tensor, qOffset: number, docQ?: Int32Array, docK?: Int32Array): Float64Array {
  const [B, T, nh, d] = q.shape as number[];
  const [, S, nkv] = k.shape as number[];
  const res = new Float64Array(B! * T! * nh! * d!);
  for (let b = 0; b < B!; b++) for (let t = 0; t < T!; t++) for (let h = 0; h < nh!; h++) {
    const g = Math.floor(h / (nh! / nkv!));
    const scores: number[] = [];
    for (let s = 0; s < S!; s++) {
      const ok = s <= qOffset + t && (!docQ || docQ[b * T! + t] === docK![b * S! + s]);
      let dot = 0;
      for (let e = 0; e < d!; e++) dot += q.data[((b * T! + t) * nh! + h) * d! + e]! * k.data[((b * S! + s) * nkv! + g) * d! + e]!;
      scores.push(ok ? dot / Math.sqrt(d!) : -Infinity);
    }
    const m = Math.max(...scores);
    const p = scores.map((x) => Math.exp(x - m));
    const z = p.reduce((a, c) => a + c, 0);
    for (let e = 0; e < d!; e++) {
      let acc = 0;
      for (let s = 0; s < S!; s++) acc += (p[s]! / z) * v.data[((b * S! + s) * nkv! + g) * d! + e]!;
      res[((b * T! + t) * nh! + h) * d! + e] = acc;
    }
  }
  return res;
}

describe('attention', () => {
  test('streaming softmax equals naive attention (GQA, causal, document mask, KV offset)', () => {
    fc.assert(fc.property(
      fc.record({ B: fc.integer({ min: 1, max: 2 }), T: fc.integer({ min: 1, max: 9 }), extra: fc.integer({ min: 0, max: 4 }), nkv: fc.integer({ min: 1, max: 2 }), rep: fc.integer({ min: 1, max: 3 }), d: fc.constantFrom(2, 4, 6), docs: fc.boolean(), seed: fc.integer() }),
      ({ B, T, extra, nkv, rep, d, docs, seed }) => {
        const r = new Rng(seed);
        const S = T + extra, nh = nkv * rep;
        const q = Tensor.randn([B, T, nh, d], r), k = Tensor.randn([B, S, nkv, d], r), v = Tensor.randn([B, S, nkv, d], r);
        let docQ: Tensor | undefined, docK: Tensor | undefined;
        if (docs) {
          // Sorted document ids, as packing produces them.
          const dk = new Int32Array(B * S);
          for (let b = 0; b < B; b++) { let id = 0; for (let s = 0; s < S; s++) { if (s > 0 && r.uniform() < 0.3) id++; dk[b * S + s] = id; } }
          docK = Tensor.from(dk, [B, S]);
          docQ = Tensor.from(Int32Array.from({ length: B * T }, (_, i) => dk[Math.floor(i / T) * S + extra + (i % T)]!), [B, T]);
        }
        const y = attention(q, k, v, { qOffset: extra, ...(docQ ? { docQ, docK: docK! } : {}) });
        expectClose(y.data, naiveAttention(q, k, v, extra, docQ?.ints, docK?.ints), 1e-5);
      }), { numRuns: 60 });
  });
  test('gradients match finite differences with and without documents', () => {
    const q = param([2, 5, 4, 4], rng), k = param([2, 5, 2, 4], rng), v = param([2, 5, 2, 4], rng);
    expectGrads(([a, b, c]) => attention(a!, b!, c!), [q, k, v], 2e-2, 1e-3);
    const doc = Tensor.ints([0, 0, 1, 1, 1, 0, 1, 1, 2, 2], [2, 5]);
    expectGrads(([a, b, c]) => attention(a!, b!, c!, { docQ: doc }), [q, k, v], 2e-2, 1e-3);
  });
});

describe('crossEntropy', () => {
  test('equals −log softmax[target] averaged over kept rows, with ignore index and mask', () => {
    const logits = param([6, 11], rng, 2);
    const targets = Tensor.ints([3, -100, 0, 10, 5, 5]);
    const mask = Float32Array.of(1, 1, 0, 1, 1, 0.5);
    const ref = (withMask: boolean) => {
      let s = 0, n = 0;
      for (let r = 0; r < 6; r++) {
        const t = targets.ints[r]!;
        if (t < 0) continue;
        const row = Array.from(logits.data.subarray(r * 11, r * 11 + 11));
        const m = Math.max(...row);
        const lse = m + Math.log(row.reduce((a, v) => a + Math.exp(v - m), 0));
        const w = withMask ? mask[r]! : 1;
        s += w * (lse - row[t]!); n += w;
      }
      return s / n;
    };
    expectClose([crossEntropy(logits, targets).item()], [ref(false)], 1e-6);
    expectClose([crossEntropy(logits, targets, { mask }).item()], [ref(true)], 1e-6);
    expectGrads(([l]) => crossEntropy(l!, targets, { mask }), [logits], 1e-2, 1e-3);
    expectGrads(([l]) => crossEntropy(l!, targets, { reduction: 'none' }), [logits], 1e-2, 1e-3);
    expect(crossEntropy(logits, targets, { reduction: 'sum', mask }).item()).toBeCloseTo(ref(true) * 3.5, 4);
  });
  test('long rows (V > 1000) and bad targets', () => {
    const logits = Tensor.zeros([2, 3000]);
    expectClose([crossEntropy(logits, Tensor.ints([0, 2999])).item()], [Math.log(3000)], 1e-6);
    expect(() => crossEntropy(logits, Tensor.ints([0, 3000]))).toThrow(/target 3000 at row 1/);
  });
});

describe('views', () => {
  test('reshape, permute, transpose, narrow and cat keep values and gradients', () => {
    const x = param([2, 3, 4], rng);
    const p = permute(x, [2, 0, 1]);
    expect(p.shape).toEqual([4, 2, 3]);
    expect(p.materialize().data[1 * 6 + 1 * 3 + 2]).toBe(x.data[1 * 12 + 2 * 4 + 1]); // p[1,1,2] = x[1,2,1]
    expect(p.storage).toBe(x.storage);
    const n = narrow(x, 1, 1, 2);
    expect(n.storage).toBe(x.storage);
    expect(Array.from(n.materialize().data.subarray(0, 4))).toEqual(Array.from(x.data.subarray(4, 8)));
    const w = Tensor.randn([2, 3, 4], rng);
    expectGrads(([t]) => mul(reshape(permute(t!, [2, 0, 1]), [8, 3]), reshape(permute(w, [2, 0, 1]), [8, 3])), [x]);
    expectGrads(([t]) => transpose(narrow(t!, 2, 1, 2)), [x]);
    const y = param([2, 1, 4], rng);
    const c = cat([x, y], 1);
    expect(c.shape).toEqual([2, 4, 4]);
    expect(Array.from(c.data.subarray(28, 32))).toEqual(Array.from(y.data.subarray(4, 8)));
    expectGrads(([a, b]) => cat([a!, b!], 1), [x, y]);
    expect(() => reshape(x, [5, 5])).toThrow(ShapeError);
  });
});

describe('autograd', () => {
  test('gradients accumulate across backward calls and noGrad records nothing', () => {
    const x = param([3], rng);
    backward(sum(mul(x, x)));
    backward(sum(mul(x, x)));
    expectClose(x.grad!.data, Array.from(x.data, (v) => 4 * v), 1e-6);
    const y = noGrad(() => mul(x, x));
    expect(y.requiresGrad).toBe(false);
    expect(() => backward(y)).toThrow(/does not require grad/);
  });
  test('a tensor used twice receives the sum of both paths', () => {
    const x = param([4], rng);
    expectGrads(([t]) => mul(softmax(t!), t!), [x], 1e-2, 1e-3);
  });
  test('custom ops plug into the tape', () => {
    const cube = defineOp<{ c: number }, Float32Array>({
      name: 'cube',
      forward: ([x], { c }) => { const d = x!.data; return { output: Tensor.from(d.map((v) => c * v ** 3), x!.shape), saved: d }; },
      backward: (g, { saved, attrs }) => [Tensor.from(g.data.map((gv, i) => gv * 3 * attrs.c * saved[i]! ** 2), g.shape)],
    });
    const x = param([5], rng);
    expectClose(cube([x], { c: 2 }).data, Array.from(x.data, (v) => 2 * v ** 3), 1e-6);
    expectGrads(([t]) => cube([t!], { c: 2 }), [x], 1e-2, 1e-3);
  });
});

describe('linearCrossEntropy (fused LM head + loss)', () => {
  test('equals crossEntropy(linear(h, W)) in value and gradients, across chunks, with mask and ignore', async () => {
    const { linear } = await import('./matmul');
    const { linearCrossEntropy } = await import('./linear-cross-entropy');
    const h = param([2, 5, 6], rng), w = param([13, 6], rng);
    const targets = Tensor.ints([1, 2, -100, 12, 0, 5, 5, 7, 3, 9], [2, 5]);
    const mask = Float32Array.of(1, 0.5, 1, 1, 0, 1, 1, 1, 2, 1);
    for (const chunkRows of [1, 3, 10]) {
      for (const o of [{ mask }, { mask, reduction: 'sum' as const }, { normalizer: 17 }]) {
        const fused = linearCrossEntropy(h, w, targets, { ...o, chunkRows });
        const plain = crossEntropy(linear(h, w), targets, o);
        expectClose([fused.item()], [plain.item()], 1e-5);
        h.grad = null; w.grad = null;
        backward(mul(fused, 3));
        const [gh, gw] = [h.grad!.data.slice(), w.grad!.data.slice()];
        h.grad = null; w.grad = null;
        backward(mul(plain, 3));
        expectClose(gh, h.grad!.data, 1e-5);
        expectClose(gw, w.grad!.data, 1e-5);
      }
    }
    expectGrads(([a, b]) => linearCrossEntropy(a!, b!, targets, { mask, chunkRows: 4 }), [h, w], 1e-2, 1e-3);
    expect(noGrad(() => linearCrossEntropy(h, w, targets)).requiresGrad).toBe(false);
  });
});

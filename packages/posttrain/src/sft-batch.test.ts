// Collation: property tests of the left-padding / shift / mask invariants, and a tiny Apertus
// model showing that a padded row computes exactly what it computes alone.

import fc from 'fast-check';
import { crossEntropy, noGrad, Tensor } from '@apertus/tensor';
import { describe, expect, it } from 'vitest';
import { PosttrainError } from './errors';
import { logSoftmax64, tinyModel } from './fixtures.test-helper';
import { collateSft, countLossTokens, packSft } from './sft-batch';

const rowArb = fc.integer({ min: 2, max: 24 }).chain((n) =>
  fc.record({
    ids: fc.array(fc.integer({ min: 4, max: 1000 }), { minLength: n, maxLength: n }),
    assistantMask: fc.array(fc.constantFrom(0, 1), { minLength: n, maxLength: n }),
  }),
);

describe('collateSft invariants (property tests)', () => {
  it('left-pads, shifts targets by one and aligns the mask with the targets', () => {
    fc.assert(
      fc.property(fc.array(rowArb, { minLength: 1, maxLength: 6 }), fc.integer({ min: 1, max: 8 }), (rows, multiple) => {
        const padId = 3;
        const b = collateSft(rows, { padId, padToMultipleOf: multiple });
        const longest = Math.max(...rows.map((r) => r.ids.length - 1));
        expect(b.length % multiple).toBe(0);
        expect(b.length).toBeGreaterThanOrEqual(longest);
        expect(b.length).toBeLessThan(longest + multiple);
        for (const a of [b.inputs, b.targets, b.lossMask, b.positions, b.docIds]) expect(a.length).toBe(rows.length * b.length);
        let supervised = 0;
        rows.forEach((r, i) => {
          const n = r.ids.length - 1;
          const pad = b.length - n;
          expect(b.padding[i]).toBe(pad);
          const at = (a: ArrayLike<number>, t: number): number => a[i * b.length + t]!;
          for (let t = 0; t < pad; t++) {
            // padding: pad id, mask 0, its own document
            expect([at(b.inputs, t), at(b.targets, t), at(b.lossMask, t), at(b.docIds, t), at(b.positions, t)]).toEqual([padId, padId, 0, 0, 0]);
          }
          // the real part reproduces the row: inputs x_0..x_{n-1}, targets x_1..x_n, mask a_1..a_n
          const inputs = Array.from({ length: n }, (_, t) => at(b.inputs, pad + t));
          const targets = Array.from({ length: n }, (_, t) => at(b.targets, pad + t));
          expect([...inputs, targets[n - 1]]).toEqual(r.ids);
          expect(targets).toEqual(r.ids.slice(1));
          for (let t = 0; t + 1 < n; t++) expect(at(b.inputs, pad + t + 1)).toBe(at(b.targets, pad + t));
          expect(Array.from({ length: n }, (_, t) => at(b.lossMask, pad + t))).toEqual(r.assistantMask.slice(1));
          expect(Array.from({ length: n }, (_, t) => at(b.positions, pad + t))).toEqual(Array.from({ length: n }, (_, t) => t));
          expect(Array.from({ length: n }, (_, t) => at(b.docIds, pad + t))).toEqual(new Array(n).fill(1));
          supervised += r.assistantMask.slice(1).reduce((x: number, y: number) => x + y, 0);
        });
        expect(b.lossTokens).toBe(supervised);
        expect(b.lossMask.reduce((x, y) => x + y, 0)).toBe(supervised);
      }),
      { numRuns: 200 },
    );
  });

  it('does not depend on the other rows of the batch (no packing, no cross-row effects)', () => {
    fc.assert(
      fc.property(fc.array(rowArb, { minLength: 2, maxLength: 5 }), (rows) => {
        const b = collateSft(rows, { padId: 3 });
        rows.forEach((r, i) => {
          const alone = collateSft([r], { padId: 3 });
          const pad = b.padding[i]!;
          const slice = (a: Int32Array | Float32Array): number[] => Array.from(a.subarray(i * b.length + pad, (i + 1) * b.length));
          expect(slice(b.inputs)).toEqual(Array.from(alone.inputs));
          expect(slice(b.targets)).toEqual(Array.from(alone.targets));
          expect(slice(b.lossMask)).toEqual(Array.from(alone.lossMask));
        });
        expect(countLossTokens(rows.map((r) => collateSft([r], { padId: 3 })))).toBe(b.lossTokens);
      }),
      { numRuns: 100 },
    );
  });

  it('rejects empty batches, one-token rows and mismatched masks', () => {
    expect(() => collateSft([], { padId: 3 })).toThrow(PosttrainError);
    expect(() => collateSft([{ ids: [1], assistantMask: [0] }], { padId: 3 })).toThrow(/at least 2/);
    expect(() => collateSft([{ ids: [1, 2], assistantMask: [0] }], { padId: 3 })).toThrow(expect.objectContaining({ field: 'rows[0].assistantMask' }));
    expect(() => collateSft([{ ids: [1, 2], assistantMask: [0, 1] }], { padId: -1 })).toThrow(/padId/);
    expect(() => collateSft([{ ids: [1, 2], assistantMask: [0, 1] }], { tokenizer: { padTokenId: null } })).toThrow(/no padding id/);
  });
});

describe('collateSft with a tiny Apertus model', () => {
  it('a left-padded row has the logits it has alone, and the masked loss is Σ mask·NLL / Σ mask', () => {
    const model = tinyModel(64, 3, 64);
    const rows: { ids: number[]; assistantMask: number[] }[] = [
      { ids: [1, 10, 11, 12, 13, 14, 15, 16, 17], assistantMask: [0, 0, 0, 1, 1, 1, 0, 1, 1] },
      { ids: [1, 20, 21, 22], assistantMask: [0, 0, 1, 1] },
      { ids: [1, 30, 31, 32, 33, 34], assistantMask: [0, 0, 0, 0, 1, 1] },
    ];
    const b = collateSft(rows, { tokenizer: { padTokenId: 3 } });
    expect(b.inputs[b.length]).toBe(3); // row 1 is shorter: its first position is padding
    const V = model.config.vocab_size;
    const T = b.length;
    noGrad(() => {
      const logits = model.forward(Tensor.ints(b.inputs, [b.batchSize, T]), {
        positions: Tensor.ints(b.positions, [b.batchSize, T]),
        docIds: Tensor.ints(b.docIds, [b.batchSize, T]),
      });
      const L = logits.data as Float32Array;
      let sum = 0;
      rows.forEach((r, i) => {
        const n = r.ids.length - 1;
        const alone = model.forward(Tensor.ints(r.ids.slice(0, n), [1, n])).data as Float32Array;
        const pad = b.padding[i]!;
        for (let t = 0; t < n; t++) {
          for (let v = 0; v < V; v++) expect(L[(i * T + pad + t) * V + v]).toBeCloseTo(alone[t * V + v]!, 5);
          if (r.assistantMask[t + 1]) sum -= logSoftmax64(alone.subarray(t * V, (t + 1) * V))[r.ids[t + 1]!]!;
        }
      });
      const loss = crossEntropy(logits, Tensor.ints(b.targets, [b.batchSize, T]), { mask: b.lossMask });
      expect(b.lossTokens).toBe(9);
      expect(loss.item()).toBeCloseTo(sum / b.lossTokens, 5);
    });
  });
});

describe('packSft', () => {
  it('best-fit decreasing: every row exactly once, no packed row over maxLength, deterministic (property)', () => {
    fc.assert(fc.property(fc.array(rowArb, { minLength: 1, maxLength: 12 }), fc.integer({ min: 24, max: 60 }), (rows, L) => {
      const packed = packSft(rows, { maxLength: L });
      expect(packSft(rows, { maxLength: L })).toEqual(packed);
      const seen: string[] = [];
      for (const p of packed) {
        expect(p.ids.length).toBeLessThanOrEqual(L);
        let o = 0;
        for (const n of p.docLengths!) { seen.push(JSON.stringify([Array.from(p.ids).slice(o, o + n), Array.from(p.assistantMask).slice(o, o + n)])); o += n; }
        expect(o).toBe(p.ids.length);
      }
      expect(seen.sort()).toEqual(rows.map((r) => JSON.stringify([r.ids, r.assistantMask])).sort());
      // Best fit: no two packed rows could be merged.
      const used = packed.map((p) => p.ids.length).sort((a, b) => a - b);
      if (used.length >= 2) expect(used[0]! + used[1]!).toBeGreaterThan(L);
    }));
    expect(() => packSft([{ ids: [1, 2, 3], assistantMask: [0, 1, 1] }], { maxLength: 2 })).toThrow(expect.objectContaining({ field: 'rows[0].ids' }));
  });

  it('collated, positions restart and document ids change at each document; a document\'s last token predicts nothing', () => {
    const b = collateSft([{ ids: [1, 10, 11, 1, 20, 21, 22], assistantMask: [0, 1, 1, 0, 0, 1, 1], docLengths: [3, 4] }], { padId: 3 });
    expect(Array.from(b.inputs)).toEqual([1, 10, 11, 1, 20, 21]);
    expect(Array.from(b.targets)).toEqual([10, 11, 1, 20, 21, 22]);
    expect(Array.from(b.positions)).toEqual([0, 1, 2, 0, 1, 2]);
    expect(Array.from(b.docIds)).toEqual([1, 1, 1, 2, 2, 2]);
    expect(Array.from(b.lossMask)).toEqual([1, 1, 0, 0, 1, 1]);
    expect(() => collateSft([{ ids: [1, 2, 3], assistantMask: [0, 1, 1], docLengths: [1, 1] }], { padId: 3 })).toThrow(expect.objectContaining({ field: 'rows[0].docLengths' }));
  });

  it('with a tiny Apertus model, each packed document has the logits and loss it has alone', () => {
    const model = tinyModel(64, 3, 64);
    const rows = [
      { ids: [1, 10, 11, 12, 13, 14], assistantMask: [0, 0, 1, 1, 1, 1] },
      { ids: [1, 20, 21, 22], assistantMask: [0, 0, 1, 1] },
      { ids: [1, 30, 31, 32, 33], assistantMask: [0, 1, 1, 0, 1] },
    ];
    const packed = packSft(rows, { maxLength: 16 });
    expect(packed).toHaveLength(1);
    const b = collateSft(packed, { padId: 3 });
    const V = model.config.vocab_size, T = b.length;
    noGrad(() => {
      const logits = model.forward(Tensor.ints(b.inputs, [1, T]), { positions: Tensor.ints(b.positions, [1, T]), docIds: Tensor.ints(b.docIds, [1, T]) });
      const L = logits.data as Float32Array;
      let o = 0, sum = 0;
      for (const n of packed[0]!.docLengths!) {
        const r = rows.find((x) => x.ids.length === n)!;
        const alone = model.forward(Tensor.ints(r.ids.slice(0, n - 1), [1, n - 1])).data as Float32Array;
        for (let t = 0; t < n - 1; t++) {
          for (let v = 0; v < V; v++) expect(L[(o + t) * V + v]).toBeCloseTo(alone[t * V + v]!, 5);
          if (r.assistantMask[t + 1]) sum -= logSoftmax64(alone.subarray(t * V, (t + 1) * V))[r.ids[t + 1]!]!;
        }
        o += n;
      }
      const loss = crossEntropy(logits, Tensor.ints(b.targets, [1, T]), { mask: b.lossMask });
      expect(b.lossTokens).toBe(4 + 2 + 3);
      expect(loss.item()).toBeCloseTo(sum / b.lossTokens, 5);
    });
  });
});

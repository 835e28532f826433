import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DataError, EmptyCorpusError, InvalidOptionError, TokenError } from '../errors';
import { Packer, packDocuments } from './packer';
import type { PackedSample } from './sample';
import { buildAttentionMask } from './sample';

const BOD = 1;
const EOD = 2;

/**
 * Independent reference of Megatron's `get_ltor_masks_and_position_ids` +
 * `eod_mask_loss`, written the way the Python code computes it: start from
 * arange, and for every EoD at index i subtract (i + 1 − prev) from the
 * positions after it; zero the loss where the input is EoD.
 */
function megatronReference(text: number[]): { tokens: number[]; labels: number[]; loss: number[]; pos: number[]; mask: number[][] } {
  const tokens = text.slice(0, -1);
  const labels = text.slice(1);
  const L = tokens.length;
  const pos = tokens.map((_, i) => i);
  const mask = Array.from({ length: L }, (_, q) => Array.from({ length: L }, (_, k) => (k <= q ? 1 : 0)));
  let prev = 0;
  for (let i = 0; i < L; i++) {
    if (tokens[i] !== EOD) continue;
    for (let q = i + 1; q < L; q++) for (let k = 0; k <= i; k++) mask[q]![k] = 0;
    for (let j = i + 1; j < L; j++) pos[j]! -= i + 1 - prev;
    prev = i + 1;
  }
  const loss = tokens.map((t) => (t === EOD ? 0 : 1));
  return { tokens, labels, loss, pos, mask };
}

function denseMask(flat: Uint8Array, L: number): number[][] {
  return Array.from({ length: L }, (_, q) => Array.from(flat.subarray(q * L, q * L + L)));
}

describe('training-recipe §4.4 worked example', () => {
  // text=[1,11,12,2,1,13,2,1,14,15]: documents [11,12], [13], [14,15...] cut at seq_len 9
  it('gives the spec tokens, labels, loss mask, positions and attention blocks value by value', () => {
    const packer = new Packer({ seqLength: 9, bodId: BOD, eodId: EOD });
    const samples: PackedSample[] = [];
    samples.push(...packer.addDocument([11, 12]));
    samples.push(...packer.addDocument([13]));
    samples.push(...packer.beginDocument(), ...packer.pushTokens([14, 15]));
    expect(samples).toHaveLength(1);
    const s = samples[0]!;
    expect(Array.from(s.tokens)).toEqual([1, 11, 12, 2, 1, 13, 2, 1, 14]);
    expect(Array.from(s.labels)).toEqual([11, 12, 2, 1, 13, 2, 1, 14, 15]);
    expect(Array.from(s.lossMask)).toEqual([1, 1, 1, 0, 1, 1, 0, 1, 1]);
    expect(Array.from(s.positionIds)).toEqual([0, 1, 2, 3, 0, 1, 2, 0, 1]);
    expect(Array.from(s.documentIds)).toEqual([0, 0, 0, 0, 1, 1, 1, 2, 2]);
    // allowed attention = causal within blocks {0..3}, {4..6}, {7..8}
    const mask = denseMask(buildAttentionMask(s.tokens, EOD), 9);
    const block = (i: number): number => (i <= 3 ? 0 : i <= 6 ? 1 : 2);
    for (let q = 0; q < 9; q++) {
      for (let k = 0; k < 9; k++) expect(mask[q]![k], `q=${q} k=${k}`).toBe(k <= q && block(k) === block(q) ? 1 : 0);
    }
  });

  it('without the reset flags gives plain positions, full loss and a causal mask (64k stage)', () => {
    const packer = new Packer({ seqLength: 9, bodId: BOD, eodId: EOD, resetPositionIds: false, eodMaskLoss: false });
    const s = [...packer.addDocument([11, 12]), ...packer.addDocument([13]), ...packer.addDocument([14, 15])][0]!;
    expect(Array.from(s.positionIds)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
    expect(Array.from(s.lossMask)).toEqual([1, 1, 1, 1, 1, 1, 1, 1, 1]);
    const mask = denseMask(buildAttentionMask(s.tokens, EOD, false), 9);
    for (let q = 0; q < 9; q++) for (let k = 0; k < 9; k++) expect(mask[q]![k]).toBe(k <= q ? 1 : 0);
  });
});

describe('Packer', () => {
  it('matches an independent Megatron reference on random documents (property)', () => {
    const doc = fc.array(fc.integer({ min: 3, max: 500 }), { maxLength: 12 });
    fc.assert(
      fc.property(fc.array(doc, { minLength: 1, maxLength: 8 }), fc.integer({ min: 1, max: 16 }), (docs, L) => {
        const packer = new Packer({ seqLength: L, bodId: BOD, eodId: EOD, vocabSize: 501 });
        const samples = docs.flatMap((d) => packer.addDocument(d));
        samples.push(...packer.finish());
        const stream = docs.flatMap((d) => [BOD, ...d, EOD]);
        // stride L, window L+1: ⌊(N−1)/L⌋ samples
        expect(samples).toHaveLength(Math.floor((stream.length - 1) / L));
        const docOf = docs.flatMap((d, i) => Array<number>(d.length + 2).fill(i));
        samples.forEach((s, i) => {
          const ref = megatronReference(stream.slice(i * L, i * L + L + 1));
          expect(Array.from(s.tokens)).toEqual(ref.tokens);
          expect(Array.from(s.labels)).toEqual(ref.labels);
          expect(Array.from(s.lossMask)).toEqual(ref.loss);
          expect(Array.from(s.positionIds)).toEqual(ref.pos);
          expect(denseMask(buildAttentionMask(s.tokens, EOD), L)).toEqual(ref.mask);
          expect(Array.from(s.documentIds)).toEqual(docOf.slice(i * L, i * L + L));
        });
      }),
      { numRuns: 200 },
    );
  });

  it('streams a long document in chunks with the same result as one call', () => {
    const long = Array.from({ length: 5000 }, (_, i) => 3 + (i % 97));
    const a = new Packer({ seqLength: 64, bodId: BOD, eodId: EOD });
    const whole = a.addDocument(long);
    const b = new Packer({ seqLength: 64, bodId: BOD, eodId: EOD });
    const chunked = [...b.beginDocument()];
    for (let i = 0; i < long.length; i += 333) chunked.push(...b.pushTokens(long.slice(i, i + 333)));
    chunked.push(...b.endDocument());
    expect(chunked.length).toBe(whole.length);
    expect(chunked.length).toBe(Math.floor((long.length + 2 - 1) / 64));
    chunked.forEach((s, i) => expect(Array.from(s.tokens)).toEqual(Array.from(whole[i]!.tokens)));
  });

  it('pads the tail when padId is given: pad labels get loss mask 0 and document id -1', () => {
    const p = new Packer({ seqLength: 4, bodId: BOD, eodId: EOD, padId: 3 });
    const samples = [...p.addDocument([10, 11, 12, 13]), ...p.addDocument([14, 15])];
    // stream: 1 10 11 12 13 2 1 14 15 2 (10 tokens) → ⌊9/4⌋ = 2 full samples, tail window [15, 2]
    expect(samples).toHaveLength(2);
    const [tail] = p.finish();
    // window = [15, 2, pad, pad, pad]: the EoD input has mask 0 anyway, pad labels get 0
    expect(Array.from(tail!.tokens)).toEqual([15, 2, 3, 3]);
    expect(Array.from(tail!.labels)).toEqual([2, 3, 3, 3]);
    expect(Array.from(tail!.lossMask)).toEqual([1, 0, 0, 0]);
    expect(Array.from(tail!.documentIds)).toEqual([1, 1, -1, -1]);
    expect(Array.from(tail!.positionIds)).toEqual([0, 1, 0, 1]);
    const q = new Packer({ seqLength: 4, bodId: BOD, eodId: EOD, padId: 3 });
    q.addDocument([10, 11, 12]);
    const [t2] = q.finish();
    // stream 1 10 11 12 2: one full sample exactly → no tail
    expect(t2).toBeUndefined();
    const r = new Packer({ seqLength: 4, bodId: BOD, eodId: EOD, padId: 3 });
    r.addDocument([10, 11]);
    const [t3] = r.finish();
    expect(Array.from(t3!.tokens)).toEqual([1, 10, 11, 2]);
    expect(Array.from(t3!.labels)).toEqual([10, 11, 2, 3]);
    expect(Array.from(t3!.lossMask)).toEqual([1, 1, 1, 0]);
  });

  it('rejects bad options, bad tokens, misuse and an empty corpus with typed errors', () => {
    expect(() => new Packer({ seqLength: 0, bodId: 1, eodId: 2 })).toThrow(InvalidOptionError);
    expect(() => new Packer({ seqLength: 4, bodId: 1, eodId: 1 })).toThrow(InvalidOptionError);
    expect(() => new Packer({ seqLength: 4, bodId: 1, eodId: 2, vocabSize: 2 })).toThrow(InvalidOptionError);
    expect(() => new Packer({ seqLength: 2.5, bodId: 1, eodId: 2 })).toThrow(/seqLength/);
    const p = new Packer({ seqLength: 4, bodId: 1, eodId: 2, vocabSize: 100 });
    expect(() => p.addDocument([5, 100])).toThrow(TokenError);
    const q = new Packer({ seqLength: 4, bodId: 1, eodId: 2 });
    expect(() => q.addDocument([5, 2, 6])).toThrow(/EoD/);
    expect(() => new Packer({ seqLength: 4, bodId: 1, eodId: 2 }).pushTokens([5])).toThrow(DataError);
    expect(() => new Packer({ seqLength: 4, bodId: 1, eodId: 2 }).finish()).toThrow(EmptyCorpusError);
  });

  it('packDocuments encodes text documents through a structural encoder', async () => {
    const encoder = { encode: (t: string) => Array.from(t, (c) => c.charCodeAt(0)) };
    const docs = [
      { id: 'a', text: 'ab' },
      { id: 'b', text: 'c' },
    ];
    const out: PackedSample[] = [];
    for await (const s of packDocuments(docs, { seqLength: 3, bodId: BOD, eodId: EOD, encoder })) out.push(s);
    // stream 1 97 98 2 1 99 2 → ⌊6/3⌋ = 2 samples
    expect(out.map((s) => Array.from(s.tokens))).toEqual([
      [1, 97, 98],
      [2, 1, 99],
    ]);
    await expect(async () => {
      for await (const _ of packDocuments(docs, { seqLength: 3, bodId: BOD, eodId: EOD })) void _;
    }).rejects.toThrow(InvalidOptionError);
  });
});

// roundBf16Into (the input of every BF16 product) against the scalar definition, bit for bit, on
// every kind of float32: random bit patterns (NaNs, infinities, subnormals, both signs), exact ties
// between two bf16 values, and the values just beside them.
import { bf16BitsToF32, f32ToBf16Bits } from '@apertus/tensor';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { roundBf16Into } from './activations';

/** The bits of bf16(v) widened to float32, one value at a time through the scalar conversions. */
const scalarBits = (v: number): number => new Uint32Array(Float32Array.of(bf16BitsToF32(f32ToBf16Bits(v))).buffer)[0]!;

describe('roundBf16Into', () => {
  it('gives the bits of bf16BitsToF32(f32ToBf16Bits(v)) for any float32 bit pattern, ties and neighbours included', () => {
    const word = fc.integer({ min: 0, max: 0xffffffff });
    // A tie is a pattern whose low 16 bits are 0x8000; ±1 beside it rounds the other way.
    const near = fc.tuple(word, fc.integer({ min: -1, max: 1 })).map(([u, d]) => (((u & 0xffff0000) | 0x8000) + d) >>> 0);
    fc.assert(fc.property(fc.array(fc.oneof(word, near), { minLength: 1, maxLength: 64 }), (bits) => {
      const x = new Float32Array(Uint32Array.from(bits).buffer), out = new Float32Array(x.length);
      roundBf16Into(x, out);
      const got = new Uint32Array(out.buffer);
      x.forEach((v, i) => expect(got[i]).toBe(scalarBits(v)));
      // In place (out = x) gives the same.
      expect(new Uint32Array(roundBf16Into(x, x).buffer)).toEqual(got);
    }), { numRuns: 300 });
  });
});

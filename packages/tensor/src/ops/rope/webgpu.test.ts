// RoPE on the device against the reference: the same float32 table values, three float32 roundings.
import { describe, test } from 'vitest';
import { expectWithin, randomF32, SLACK, U32 } from '../../kernels/float-testing';
import { webgpuForSuite } from '../../webgpu/testing';
import * as reference from './reference';
import { rope } from './webgpu';

describe('RoPE on the device', { timeout: 600_000 }, () => {
  const { run, host, ctx } = webgpuForSuite();

  test('RoPE and its inverse, at positions up to 131071 (the table grows by doubling)', () => {
    const N = 6, heads = 3, d = 16, half = d / 2;
    const invFreq = Float32Array.from({ length: half }, (_, i) => Math.fround(500000 ** (-(2 * i) / d)));
    const x = randomF32(N * heads * d, 4);
    for (const positions of [Int32Array.of(0, 1, 2, 3, 4, 5), Int32Array.of(7, 4095, 4096, 70000, 131071, 9)]) {
      for (const inverse of [false, true]) {
        const y = new Float32Array(x.length), y0 = new Float32Array(x.length);
        run(rope)(x, N, heads, d, positions, invFreq, inverse, y);
        host(y);
        reference.rope(x, N, heads, d, positions, invFreq, inverse, y0);
        // x1·c − x2·s: two products and a difference in float32 (the reference rounds once), with c, s the same float32 table values.
        const bound = Float64Array.from(y0, (v, i) => {
          const o = i - (i % d), j = i % half;
          return SLACK * U32 * (Math.abs(x[o + j]!) + Math.abs(x[o + j + half]!) + 2 * Math.abs(v));
        });
        expectWithin(y, y0, bound, `rope positions ${positions[1]} inverse ${inverse}`);
      }
    }
  });

});

// Embedding and its backward on the device: exact, in the reference's order of additions.
import { describe, expect, test } from 'vitest';
import { randomF32, randomI32 } from '../../kernels/float-testing';
import { webgpuForSuite } from '../../webgpu/testing';
import * as reference from './reference';
import { embedding, embeddingBackward } from './webgpu';

describe('embedding on the device', { timeout: 600_000 }, () => {
  const { run, host, ctx } = webgpuForSuite();

  test('embedding gathers exactly; its backward sums each id\'s rows in token order', () => {
    const V = 50, H = 33, ids = randomI32(70, 1, 0, V);
    ids[3] = ids[9] = ids[20] = 7;
    const table = randomF32(V * H, 2), out = new Float32Array(70 * H), out0 = new Float32Array(70 * H);
    run(embedding)(ids, table, H, out);
    host(out);
    reference.embedding(ids, table, H, out0);
    expect(Array.from(out)).toEqual(Array.from(out0));
    const gy = randomF32(70 * H, 3), g = new Float32Array(V * H).fill(9), g0 = new Float32Array(V * H);
    run(embeddingBackward)(ids, gy, H, g);
    host(g);
    reference.embeddingBackward(ids, gy, H, g0);
    // The same additions in the same order as the reference (which sums in float32 too).
    expect(Array.from(g)).toEqual(Array.from(g0));
  });

});

// Every row kernel against the TypeScript reference (reference.ts), bit for bit: random blocks
// (random bytes, random finite f16 scales), random inputs, both variants, tile heights 1 … 4 and
// the leftover tile (alone or two weight rows at a time), rows split at random. The input records come from the module's quantizers.
import { describe, expect, it } from 'vitest';
import { Rng } from '../../../random';
import { wasmApi } from '../../../wasm/api';
import { QUANT_FORMATS, type QuantDType } from '../../../dtypes/index';
import { instantiate, KERNEL_DTYPES } from './module';
import { quantMatmulReference } from './reference';
import { quantizerName } from './quantize-input';
import { record, recordsBytes, traits, TILE, type Variant } from './layout';
import { kernelName, scratchBytes } from './rows';
import { randomBlocks } from './rows.test-helper';

/** y = x·Wᵀ through the module directly: quantize into records, then the tiles of 4 and the leftover tile over row ranges `cuts`. */
function kernelProduct(v: Variant, name: QuantDType, w: Uint8Array, N: number, K: number, x: Float32Array, M: number, cuts: number[], pairs = false): Float32Array {
  const t = traits(name), f = t.format, nb = K / f.blockValues;
  const memory = new wasmApi!.Memory({ initial: 256, maximum: 65536, shared: true });
  const ex = instantiate(v, memory);
  let top = 1024;
  const alloc = (n: number): number => { const a = top; top = Math.ceil((top + n) / 64) * 64; return a; };
  const pw = alloc(w.length), px = alloc(4 * M * K), pr = alloc(recordsBytes(t, v, M, nb)), py = alloc(4 * M * N), ps = alloc(scratchBytes(nb));
  const need = top + 65536;
  if (need > memory.buffer.byteLength) memory.grow(Math.ceil((need - memory.buffer.byteLength) / 65536));
  new Uint8Array(memory.buffer).set(w, pw);
  new Float32Array(memory.buffer).set(x, px / 4);
  ex[quantizerName(t, v)]!(px, K, M, pr);
  const full = Math.floor(M / TILE), rest = M % TILE, rs = nb * f.blockBytes;
  for (let i = 0; i + 1 < cuts.length; i++) {
    const [r0, r1] = [cuts[i]!, cuts[i + 1]!];
    if (full > 0) ex[kernelName(name, TILE)]!(pw, rs, r0, r1, nb, pr, full, py, N, ps);
    const recRest = pr + full * nb * record(t, v, TILE).bytes, yRest = py + 4 * full * TILE * N, r2 = r0 + ((r1 - r0) & ~1);
    if (pairs && rest === 1) {
      if (r2 > r0) ex[kernelName(name, 1, 2)]!(pw, rs, r0, r2, nb, recRest, 1, yRest, N, ps);
      if (r1 > r2) ex[kernelName(name, 1)]!(pw, rs, r2, r1, nb, recRest, 1, yRest, N, ps);
    } else if (rest > 0) ex[kernelName(name, rest)]!(pw, rs, r0, r1, nb, recRest, 1, yRest, N, ps);
  }
  return new Float32Array(memory.buffer, py, M * N).slice();
}

const bits = (a: Float32Array): Uint32Array => new Uint32Array(a.buffer, a.byteOffset, a.length);

describe('row kernels vs the TypeScript reference, bit for bit', () => {
  for (const v of ['relaxed', 'simd'] as const) {
    for (const name of KERNEL_DTYPES) {
      it(`${name} (${v})`, () => {
        const rng = new Rng(name.length * 31 + (v === 'simd' ? 7 : 0));
        const f = QUANT_FORMATS[name];
        for (const [M, N, nb] of [[1, 3, 1], [1, 8, 3], [2, 5, 3], [3, 2, 5], [4, 3, 2], [5, 4, 4], [5, 7, 2], [7, 3, 6], [9, 2, 1]] as const) {
          const K = nb * f.blockValues, w = randomBlocks(name, N * nb, rng);
          const x = Float32Array.from({ length: M * K }, () => rng.normal() * (rng.uniform() < 0.05 ? 20 : 1));
          const cuts = N > 2 ? [0, 1 + Math.floor(rng.uniform() * (N - 1)), N] : [0, N];
          const want = quantMatmulReference(name, w, N, K, x, M);
          // Leftover single rows (M mod 4 = 1) also two weight rows at a time (the _r2 kernels).
          for (const pairs of M % 4 === 1 ? [false, true] : [false]) {
            const got = kernelProduct(v, name, w, N, K, x, M, cuts, pairs);
            const bad = bits(got).findIndex((u, i) => u !== bits(want)[i]);
            expect({ M, N, K, pairs, bad, got: got[bad], want: want[bad] }).toEqual({ M, N, K, pairs, bad: -1, got: undefined, want: undefined });
          }
        }
      });
    }
  }
});

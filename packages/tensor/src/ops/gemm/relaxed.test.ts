import { afterAll, expect, it } from 'vitest';
import fc from 'fast-check';
import { sgemmReference } from './reference';
import { checkGemmArgs } from './args';
import { variantBytes, WasmGemmEngine } from './wasm/engine';
import { wasmApi } from '../../wasm/api';
import { ODD_SIZES, errorBound, randomArray, worstRatio } from './test-util';

const engine = new WasmGemmEngine('relaxed', { threadMinWork: 0, MC: 12, NC: 16, KC: 24, bChunkBytes: 4000, cBlockBytes: 3000, minChunkRows: 5 });
afterAll(() => engine.terminate());

it('the relaxed variant compiles once relaxed SIMD is enabled', () => {
  expect(wasmApi!.validate(variantBytes('relaxed'))).toBe(true);
  expect(engine.mr).toBe(6);
});

it('the relaxed variant matches the reference (f32 and bf16 B, 1 and 2 threads)', () => {
  const size = fc.oneof(fc.constantFrom(...ODD_SIZES), fc.integer({ min: 1, max: 60 }));
  fc.assert(
    fc.property(
      fc.record({ M: size, N: size, K: size, transA: fc.boolean(), transB: fc.boolean(), bf16: fc.boolean(), threads: fc.constantFrom(1, 2), seed: fc.nat() }),
      ({ M, N, K, transA, transB, bf16, threads, seed }) => {
        const A = randomArray(M * K, seed), B = randomArray(K * N, seed + 1), C = randomArray(M * N, seed + 2);
        // A bf16 B is the upper half of each f32 (truncation), so the f32 reference sees the same values.
        const Bt = new Float32Array(Uint32Array.from(new Uint32Array(B.buffer), (x) => x & 0xffff0000).buffer);
        const Bh = Uint16Array.from(new Uint32Array(B.buffer), (x) => x >>> 16);
        const args = { transA, transB, M, N, K, A, B: bf16 ? Bt : B, C: C.slice(), alpha: 0.5, beta: 1 };
        const want = C.slice();
        sgemmReference({ ...args, C: want });
        engine.run(checkGemmArgs(bf16 ? { ...args, B: Bh } : args, bf16), threads);
        expect(worstRatio(args.C, want, errorBound(args))).toBeLessThanOrEqual(1);
      },
    ),
    { numRuns: 80 },
  );
});

import { afterAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { checkGemmArgs, type GemmArgs } from './args';
import { sgemmReference } from './reference';
import { DOT_CLASSES, dotAccBytes, dotNtFn, dotPackFn, dotScratchBytes, type DotClass } from './wasm/dot-nt';
import { encodeModule } from '../../wasm/encoder';
import { variantBytes, WasmGemmEngine } from './wasm/engine';
import { GEMM_VARIANTS, type GemmVariantName } from './wasm/variants';
import { wasmApi } from '../../wasm/api';
import { heapF32, heapRelease, heapU16 } from '../../memory/heap';
import { ODD_SIZES, errorBound, randomArray, worstRatio } from './test-util';

const VARIANTS = ['relaxed', 'simd'] as const;
// threadMinWork 0: even small products are split into column jobs over the threads.
const engines = { relaxed: new WasmGemmEngine('relaxed', { threadMinWork: 0 }), simd: new WasmGemmEngine('simd', { threadMinWork: 0 }) };
afterAll(() => Object.values(engines).forEach((e) => e.terminate()));

/** A bf16 B as the upper halves of f32 values (truncation), and those values as f32 for the reference. */
function bf16Of(B: Float32Array): { bits: Uint16Array; values: Float32Array } {
  const u = new Uint32Array(B.buffer, B.byteOffset, B.length);
  return { bits: Uint16Array.from(u, (x) => x >>> 16), values: new Float32Array(Uint32Array.from(u, (x) => x & 0xffff0000).buffer) };
}

/** Copy into tensor-like storage on the wasm heap (the operands of a decode step live there). */
function onHeap<T extends Float32Array | Uint16Array>(x: T): T {
  const h = (x instanceof Float32Array ? heapF32(x.length) : heapU16(x.length)) as T;
  h.set(x as never);
  return h;
}

/**
 * Lays out a random M×K input A at 0 and an N×K weight W (f32, or bf16 bits) ending at the very
 * end of `memory` (a read past W traps); returns the byte offsets the kernels take and the values.
 */
function placeAtEnd(memory: { buffer: ArrayBufferLike }, M: number, N: number, K: number, bf16: boolean, seed: number) {
  const bytes = memory.buffer.byteLength, oB = bytes - N * K * (bf16 ? 2 : 4);
  const A = randomArray(M * K, seed + 1), W = bf16Of(randomArray(N * K, seed + 2));
  const oC = 4 * M * K, oS = oC + 4 * M * N, oAcc = oS + dotScratchBytes(M, K);
  new Float32Array(memory.buffer).set(A, 0);
  if (bf16) new Uint16Array(memory.buffer, oB, N * K).set(W.bits);
  else new Float32Array(memory.buffer).set(W.values, oB / 4);
  return { A, W, oB, oC, oS, oAcc };
}

type Dot = { dot_pack(...args: number[]): void; dot_nt(...args: number[]): number };

/**
 * The committed module of `variant` and one generated with the classes `table`, on one memory of
 * `pages` 64 KiB pages, and `bits`: C (preset to random values) after dot_pack and dot_nt of a
 * random M×K A against an N×K W placed by {@link placeAtEnd}, as raw bits.
 */
function againstGenerated(variant: GemmVariantName, table: readonly DotClass[], pages: number) {
  const memory = new wasmApi!.Memory({ initial: pages, maximum: pages, shared: true });
  const instance = (bytes: Uint8Array): Dot => new wasmApi!.Instance(new wasmApi!.Module(bytes), { env: { memory } }).exports as unknown as Dot;
  const o = GEMM_VARIANTS[variant];
  const bits = (ex: Dot, M: number, N: number, K: number, bf16: boolean, accumulate: boolean, seed: number): Uint32Array => {
    const { oB, oC, oS, oAcc } = placeAtEnd(memory, M, N, K, bf16, seed);
    new Float32Array(memory.buffer).set(randomArray(M * N, seed + 3), oC / 4);
    ex.dot_pack(M, K, 0, K, 1, oS);
    ex.dot_nt(M, N, K, oS, oB, K, bf16 ? 1 : 0, oC, N, accumulate ? 1 : 0, oAcc);
    return new Uint32Array(memory.buffer.slice(oC, oC + 4 * M * N));
  };
  return { committed: instance(variantBytes(variant)), plain: instance(encodeModule([dotNtFn(o, table), dotPackFn(o, table)], 1, pages)), bits };
}

const rows = fc.oneof(fc.integer({ min: 1, max: 8 }), fc.integer({ min: 9, max: 32 }));
const size = fc.oneof(fc.constantFrom(...ODD_SIZES), fc.integer({ min: 1, max: 200 }));

describe.each(VARIANTS)('x * W^T with few rows, unpacked (dot_nt), %s variant', (variant) => {
  const engine = engines[variant];

  it('matches the double-precision reference: 1..32 rows, odd N and K, alpha, beta, f32 and bf16 W, in place and staged, 1..3 threads', () => {
    fc.assert(
      fc.property(
        fc.record({
          M: rows, N: size, K: size, alpha: fc.constantFrom(1, -0.75, 3.5), beta: fc.constantFrom(0, 1, -0.5),
          bf16: fc.boolean(), heap: fc.boolean(), threads: fc.constantFrom(1, 2, 3), seed: fc.nat(),
        }),
        ({ M, N, K, alpha, beta, bf16, heap, threads, seed }) => {
          const A = randomArray(M * K, seed + 1), W = randomArray(N * K, seed + 2), C0 = randomArray(M * N, seed + 3);
          const w = bf16Of(W);
          const args: GemmArgs = { transA: false, transB: true, M, N, K, A, B: bf16 ? w.values : W, C: C0, alpha, beta };
          const want = C0.slice();
          sgemmReference({ ...args, C: want });
          const B = bf16 ? w.bits : W;
          const run = { ...args, A: heap ? onHeap(A) : A, B: heap ? onHeap(B) : B, C: heap ? onHeap(C0) : C0.slice() };
          engine.run(checkGemmArgs(run as GemmArgs, bf16), threads);
          const got = Float32Array.from(run.C);
          if (heap) [run.A, run.B, run.C].forEach(heapRelease);
          expect(worstRatio(got, want, errorBound(args))).toBeLessThanOrEqual(1);
        },
      ),
      { numRuns: 100 },
    );
  });

  it('handles decode-sized products (a 32768-row weight; K up to 3071, with K % 4 tails) on 2 threads', () => {
    for (const [M, N, K] of [[8, 32768, 67], [3, 771, 3071], [1, 4099, 769]] as const) {
      const A = randomArray(M * K, M), W = onHeap(randomArray(N * K, N)), C = onHeap(new Float32Array(M * N));
      const args: GemmArgs = { transA: false, transB: true, M, N, K, A, B: W, C };
      engine.run(checkGemmArgs(args, false), 2);
      const want = new Float32Array(M * N);
      sgemmReference({ ...args, C: want });
      expect(worstRatio(C, want, errorBound({ ...args, C: want }))).toBeLessThanOrEqual(1);
      heapRelease(W);
      heapRelease(C);
    }
  });

  it('gives every element the same bits on 1, 2 or 3 threads, as the row alone (M = 1) gives it', () => {
    // Each element is one dot product in a fixed order (k lanes, then their sum, then the K % 4
    // tail) whatever the tile, the row group or the thread's column range, so splitting the columns
    // over threads or the rows into groups never changes a bit.
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 32 }), fc.integer({ min: 1, max: 300 }), size, fc.boolean(), fc.nat(), (M, N, K, bf16, seed) => {
        const A = onHeap(randomArray(M * K, seed + 1)), W = randomArray(N * K, seed + 2);
        const B = onHeap(bf16 ? bf16Of(W).bits : W);
        const product = (m: number, a: Float32Array, threads: number): Uint32Array => {
          const C = onHeap(new Float32Array(m * N));
          engine.run(checkGemmArgs({ transA: false, transB: true, M: m, N, K, A: a, B, C, alpha: 0.75 } as GemmArgs, bf16), threads);
          const bits = Uint32Array.from(new Uint32Array(C.buffer, C.byteOffset, C.length));
          heapRelease(C);
          return bits;
        };
        const one = product(M, A, 1);
        expect(product(M, A, 2)).toEqual(one);
        expect(product(M, A, 3)).toEqual(one);
        for (const i of new Set([0, M >> 1, M - 1])) expect(product(1, A.subarray(i * K, (i + 1) * K), 2)).toEqual(one.subarray(i * N, (i + 1) * N));
        [A, B].forEach(heapRelease);
      }),
      { numRuns: 40 },
    );
  });

  it(variant === 'relaxed' ? 'fuses the multiply-adds along k' : 'rounds every product (multiply, then add)', () => {
    // One lane sums 1 * -1 and then a * a with a = 1 + 2^-12: a * a = 1 + 2^-11 + 2^-24 keeps its
    // 2^-24 only when fused. (Every CPU that runs these tests has FMA; see variant.test.ts.)
    const a = 1 + 2 ** -12;
    for (const M of [1, 2, 5]) {
      const A = new Float32Array(M * 8), W = new Float32Array([-1, 0, 0, 0, a, 0, 0, 0]), C = new Float32Array(M);
      for (let i = 0; i < M; i++) A.set([1, 0, 0, 0, a, 0, 0, 0], 8 * i);
      engine.run(checkGemmArgs({ transA: false, transB: true, M, N: 1, K: 8, A, B: W, C }, false), 1);
      expect(Array.from(C)).toEqual(new Array(M).fill(variant === 'relaxed' ? 2 ** -11 + 2 ** -24 : 2 ** -11));
    }
  });

  it('reads no byte past W: W at the very end of the wasm memory (a read past it traps), f32 and bf16', () => {
    const memory = new wasmApi!.Memory({ initial: 8, maximum: 8, shared: true });
    const ex = new wasmApi!.Instance(new wasmApi!.Module(variantBytes(variant)), { env: { memory } }).exports as { dot_pack(...args: number[]): void; dot_nt(...args: number[]): number };
    fc.assert(
      fc.property(rows, size, size, fc.boolean(), fc.nat(), (M, N, K, bf16, seed) => {
        const { A, W, oB, oC, oS, oAcc } = placeAtEnd(memory, M, N, K, bf16, seed);
        ex.dot_pack(M, K, 0, K, 1, oS);
        ex.dot_nt(M, N, K, oS, oB, K, bf16 ? 1 : 0, oC, N, 0, oAcc);
        const args: GemmArgs = { transA: false, transB: true, M, N, K, A, B: W.values, C: new Float32Array(M * N) };
        const want = new Float32Array(M * N);
        sgemmReference({ ...args, C: want });
        expect(worstRatio(new Float32Array(memory.buffer).slice(oC / 4, oC / 4 + M * N), want, errorBound(args))).toBeLessThanOrEqual(1);
      }),
      { numRuns: 60 },
    );
  });

  it('gives the same bits with and without the page touches ahead, which reach the end of W but not past it', () => {
    // The committed classes touch pages `ahead` tiles on; a module generated without touches must
    // agree bit for bit. W ends at the end of the memory, so a touch past its last row would trap.
    const { committed, plain, bits } = againstGenerated(variant, DOT_CLASSES.map((x) => ({ ...x, ahead: 0 })), 16);
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 16 }), fc.integer({ min: 1, max: 700 }), size, fc.boolean(), fc.nat(), (M, N, K, bf16, seed) => {
        expect(bits(committed, M, N, K, bf16, false, seed)).toEqual(bits(plain, M, N, K, bf16, false, seed));
      }),
      { numRuns: 40 },
    );
  });

  it('gives the same bits with the tiles cut into chunks along k as with whole rows per row group', () => {
    // The committed classes above M = 2 run every row group over a chunk of k steps before the
    // next chunk, keeping the accumulators in scratch between chunks; each lane still adds its k
    // steps in order, so a module generated without chunks must agree bit for bit (K up to 700:
    // several chunks, and the K % 4 tail after them).
    expect(DOT_CLASSES.some((x) => (x.chunk ?? 0) > 0)).toBe(true);
    const { committed, plain, bits } = againstGenerated(variant, DOT_CLASSES.map(({ chunk: _, ...x }) => x), 32);
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 16 }), fc.integer({ min: 1, max: 300 }), fc.integer({ min: 1, max: 700 }), fc.boolean(), fc.boolean(), fc.nat(), (M, N, K, bf16, accumulate, seed) => {
        expect(bits(committed, M, N, K, bf16, accumulate, seed)).toEqual(bits(plain, M, N, K, bf16, accumulate, seed));
      }),
      { numRuns: 40 },
    );
  });

  it('reads and writes only its operands and its scratch: row strides lda, ldb, ldc wider than K and N', () => {
    const memory = new wasmApi!.Memory({ initial: 16, maximum: 65536, shared: true });
    const ex = new wasmApi!.Instance(new wasmApi!.Module(variantBytes(variant)), { env: { memory } }).exports as { dot_pack(...args: number[]): void; dot_nt(...args: number[]): number };
    const f32 = new Float32Array(memory.buffer);
    fc.assert(
      fc.property(rows, size, size, fc.nat({ max: 5 }), fc.boolean(), fc.nat(), (M, N, K, pad, accumulate, seed) => {
        const lda = K + pad, ldb = K + 2 * pad, ldc = N + pad;
        // Layout (floats): A [M x lda] | B [N x ldb] | C [M x ldc] | scratch | accumulator scratch, 16-byte aligned, with NaN everywhere else.
        const al = (x: number): number => Math.ceil(x / 4) * 4;
        const oA = 16, oB = oA + al(M * lda), oC = oB + al(N * ldb), oS = oC + al(M * ldc), oAcc = oS + dotScratchBytes(M, K) / 4, end = oAcc + dotAccBytes(M) / 4;
        f32.fill(NaN, 0, end + 64);
        const A = randomArray(M * lda, seed + 1), B = randomArray(N * ldb, seed + 2), C = randomArray(M * ldc, seed + 3);
        f32.set(A, oA); f32.set(B, oB); f32.set(C, oC);
        ex.dot_pack(M, K, 4 * oA, lda, 1.5, 4 * oS);
        ex.dot_nt(M, N, K, 4 * oS, 4 * oB, ldb, 0, 4 * oC, ldc, accumulate ? 1 : 0, 4 * oAcc);
        // The reference on the dense [M, K] and [N, K] views.
        const dense = (x: Float32Array, r: number, ld: number, n: number): Float32Array => {
          const out = new Float32Array(r * n);
          for (let i = 0; i < r; i++) out.set(x.subarray(i * ld, i * ld + n), i * n);
          return out;
        };
        const args: GemmArgs = { transA: false, transB: true, M, N, K, A: dense(A, M, lda, K), B: dense(B, N, ldb, K), C: dense(C, M, ldc, N), alpha: 1.5, beta: accumulate ? 1 : 0 };
        const want = args.C.slice();
        sgemmReference({ ...args, C: want });
        const got = f32.subarray(oC, oC + M * ldc);
        expect(worstRatio(dense(got, M, ldc, N), want, errorBound(args))).toBeLessThanOrEqual(1);
        // Padding columns of C keep their values; nothing before A or past the scratch is written.
        for (let i = 0; i < M; i++) for (let jj = N; jj < ldc; jj++) expect(got[i * ldc + jj]).toBe(C[i * ldc + jj]);
        expect(f32.subarray(0, oA).every(Number.isNaN)).toBe(true);
        expect(f32.subarray(end, end + 64).every(Number.isNaN)).toBe(true);
        // A and B are only read.
        expect(f32.subarray(oA, oA + A.length)).toEqual(A);
        expect(f32.subarray(oB, oB + B.length)).toEqual(B);
      }),
      { numRuns: 60 },
    );
  });
});

import { expect, it } from 'vitest';
import fc from 'fast-check';
import { variantBytes } from './wasm/engine';
import { GEMM_VARIANTS, GEMM_WIDE_TILES, type GemmVariantName } from './wasm/variants';
import { wasmApi } from '../../wasm/api';
import { randomArray } from './test-util';

// The packing routines move data without arithmetic (alpha = 1), so they must reproduce their
// definition exactly (and the edge kernels the full kernel's rows, at the end): pack_b: dst[p][k][j] = op(B)[k, p*NR + j] (0 past nc);
// pack_a: dst[p][k][r] = op(A)[p*MR + r, k] (0 past mc). op(X)[i, k] = X[i * rs + k * cs].

interface PackExports {
  [kernel: `kernel${string}`]: (kc: number, a: number, b: number, c: number, ldcBytes: number, accumulate: number) => void;
  pack_b(src: number, rs: number, cs: number, kc: number, nc: number, dst: number): void;
  pack_b_bf16(src: number, rs: number, cs: number, kc: number, nc: number, dst: number): void;
  pack_a(src: number, rs: number, cs: number, mc: number, kc: number, dst: number, alpha: number): void;
}

function instance(name: GemmVariantName, wide: boolean): { ex: PackExports; f32: Float32Array; u16: Uint16Array } {
  const memory = new wasmApi!.Memory({ initial: 64, maximum: 65536, shared: true });
  const ex = new wasmApi!.Instance(new wasmApi!.Module(variantBytes(name, wide)), { env: { memory } }).exports as unknown as PackExports;
  return { ex, f32: new Float32Array(memory.buffer), u16: new Uint16Array(memory.buffer) };
}

const SRC = 1 << 16, DST = 2 << 20; // byte addresses (source below 2 MiB, panels above)

/** Every committed module: each variant with its 128-bit and its wide micro-tile. */
const MODULES = (Object.keys(GEMM_VARIANTS) as GemmVariantName[]).flatMap((name) => [false, true].map((wide) => ({
  label: `${name}${wide ? ' (wide)' : ''}`, name, wide, ...(wide ? GEMM_WIDE_TILES : GEMM_VARIANTS)[name],
})));

it.each(MODULES)('$label: pack_b and pack_a reproduce their definition for both layouts, f32 and bf16', ({ name, wide, mr, nr }) => {
  const { ex, f32, u16 } = instance(name, wide);
  // nc up to 12 panels: several groups of the non-transposed copy plus a partial panel.
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 40 }), fc.integer({ min: 1, max: 12 * nr + 7 }), fc.boolean(), fc.boolean(), fc.nat(),
      (kc, nc, trans, bf16, seed) => {
        const src = randomArray(kc * nc, seed + 1);
        const bits = Uint16Array.from(new Uint32Array(src.buffer), (x) => x >>> 16);
        // Stored as [kc][nc] (op(B) = B, cs = 1) or [nc][kc] (op(B) = B^T, rs = 1).
        const rs = trans ? 1 : nc, cs = trans ? kc : 1;
        if (bf16) u16.set(bits, SRC / 2);
        else f32.set(src, SRC / 4);
        const panels = Math.ceil(nc / nr);
        f32.fill(NaN, DST / 4, DST / 4 + panels * kc * nr);
        (bf16 ? ex.pack_b_bf16 : ex.pack_b)(SRC, rs, cs, kc, nc, DST);
        const widened = new Float32Array(Uint32Array.from(bits, (b) => b << 16).buffer);
        const want = new Float32Array(panels * kc * nr);
        for (let p = 0; p < panels; p++) {
          for (let k = 0; k < kc; k++) {
            for (let j = 0; j < nr; j++) {
              const col = p * nr + j, at = k * rs + col * cs;
              want[(p * kc + k) * nr + j] = col >= nc ? 0 : (bf16 ? widened : src)[at]!;
            }
          }
        }
        expect(f32.slice(DST / 4, DST / 4 + want.length)).toEqual(want);
      }),
    { numRuns: 60 },
  );
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 40 }), fc.integer({ min: 1, max: 5 * mr + 3 }), fc.boolean(), fc.nat(), (kc, mc, trans, seed) => {
      const src = randomArray(kc * mc, seed + 1);
      // Stored as [mc][kc] (op(A) = A, cs = 1) or [kc][mc] (op(A) = A^T, rs = 1).
      const rs = trans ? 1 : kc, cs = trans ? mc : 1;
      f32.set(src, SRC / 4);
      const panels = Math.ceil(mc / mr);
      f32.fill(NaN, DST / 4, DST / 4 + panels * kc * mr);
      ex.pack_a(SRC, rs, cs, mc, kc, DST, 1);
      const want = new Float32Array(panels * kc * mr);
      for (let p = 0; p < panels; p++) {
        for (let k = 0; k < kc; k++) {
          for (let r = 0; r < mr; r++) {
            const row = p * mr + r;
            want[(p * kc + k) * mr + r] = row >= mc ? 0 : src[row * rs + k * cs]!;
          }
        }
      }
      expect(f32.slice(DST / 4, DST / 4 + want.length)).toEqual(want);
    }),
    { numRuns: 60 },
  );
});

// The last panel of an A block with rows < MR rows runs kernel_<rows> straight into C: its rows
// must be the full kernel's first rows bit for bit (same operations per element), and C below
// them must stay untouched.
it.each(MODULES)('$label: kernel_<rows> gives the first rows of the full kernel exactly and writes nothing else', ({ name, wide, mr, nr }) => {
  const { ex, f32 } = instance(name, wide);
  const A = SRC, B = SRC + 4 * 64 * mr, C = DST, TILE = DST + (1 << 16);
  fc.assert(
    fc.property(fc.integer({ min: 1, max: mr - 1 }), fc.integer({ min: 1, max: 64 }), fc.integer({ min: nr, max: 3 * nr }), fc.boolean(), fc.nat(),
      (rows, kc, ldc, accumulate, seed) => {
        f32.set(randomArray(kc * mr, seed + 1), A / 4);
        f32.set(randomArray(kc * nr, seed + 2), B / 4);
        const c0 = randomArray(mr * ldc, seed + 3);
        f32.set(c0, C / 4);
        // The full kernel on a copy of the C tile (row stride NR).
        for (let r = 0; r < mr; r++) f32.set(c0.subarray(r * ldc, r * ldc + nr), TILE / 4 + r * nr);
        ex.kernel!(kc, A, B, TILE, 4 * nr, accumulate ? 1 : 0);
        ex[`kernel_${rows}`]!(kc, A, B, C, 4 * ldc, accumulate ? 1 : 0);
        const want = Float32Array.from(c0);
        for (let r = 0; r < rows; r++) want.set(f32.subarray(TILE / 4 + r * nr, TILE / 4 + (r + 1) * nr), r * ldc);
        expect(f32.slice(C / 4, C / 4 + mr * ldc)).toEqual(want);
      }),
    { numRuns: 60 },
  );
});

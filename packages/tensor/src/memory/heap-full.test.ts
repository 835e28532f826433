import { afterAll, describe, expect, test } from 'vitest';
import { HeapError } from '../errors';
import { Rng } from '../random';
import { heapAddress, heapF32, heapRelease, heapScratch, heapStats, setHeapMaxBytes, STAGING_RESERVE } from './heap';
import { simdRmsnorm, simdRmsnormBackward } from '../ops/rmsnorm/cpu';

// A heap at its maximum (the 4 GiB of wasm32 in a 0.5B model's batch-8 prefill; here capped at its
// current size and filled): tensors that found no room are plain arrays, and the kernels must
// stage them through the staging reserve in chunks, with the bits they give on the heap.

const rng = new Rng(3);
const randn = (n: number, s = 1): Float32Array => { const a = new Float32Array(n); for (let i = 0; i < n; i++) a[i] = s * rng.normal(); return a; };
/** A heap copy of `a`. */
const onHeap = (a: Float32Array): Float32Array => { const h = heapF32(a.length); h.set(a); expect(heapAddress(h)).toBeGreaterThan(0); return h; };

/** Index of the first element whose bits differ, or -1. */
const firstDiff = (a: Float32Array, b: Float32Array): number => {
  const u = new Uint32Array(a.buffer, a.byteOffset, a.length), v = new Uint32Array(b.buffer, b.byteOffset, b.length);
  if (u.length !== v.length) return 0;
  for (let i = 0; i < u.length; i++) if (u[i] !== v[i]) return i;
  return -1;
};

const held: Float32Array[] = [];
/** Cap the memory at its size and take every byte still free, so no operand can be staged whole. */
function fillHeap(): void {
  setHeapMaxBytes(heapStats().memoryBytes);
  for (let b = 1 << 26; b >= 64; b /= 2) for (let s = heapScratch(b); s !== null; s = heapScratch(b)) held.push(s);
}
afterAll(() => { for (const s of held) heapRelease(s); setHeapMaxBytes(); });

describe('cpu kernels on a full heap', () => {
  const rows = 300, width = 1283;
  const rx = randn(rows * width), rw = randn(width), rgy = randn(rows * width);

  // References: the same kernels on heap operands, before the heap is full.
  const hOut = heapF32(rows * width), hRstd = heapF32(rows), hgx2 = heapF32(rows * width), hgw = heapF32(width);
  simdRmsnorm(onHeap(rx), onHeap(rw), rows, width, 1e-5, hOut, hRstd);
  simdRmsnormBackward(onHeap(rx), onHeap(rw), hRstd, onHeap(rgy), rows, width, hgx2, hgw);
  fillHeap();

  test('the heap is full: no scratch of 64 bytes is left', () => {
    expect(heapScratch(64)).toBeNull();
    expect(heapAddress(heapF32(16))).toBe(-1);
  });

  test('RMSNorm forward and backward by row chunks give the heap bits', () => {
    const out = new Float32Array(rows * width), rstd = new Float32Array(rows), gx = new Float32Array(rows * width), gw = new Float32Array(width);
    simdRmsnorm(rx, rw, rows, width, 1e-5, out, rstd);
    expect(firstDiff(out, hOut)).toBe(-1);
    expect(firstDiff(rstd, hRstd)).toBe(-1);
    simdRmsnormBackward(rx, rw, rstd, rgy, rows, width, gx, gw);
    expect(firstDiff(gx, hgx2)).toBe(-1);
    expect(firstDiff(gw, hgw)).toBe(-1);
  });

  test('a row that cannot fit the staging reserve is a HeapError naming the op and the sizes', () => {
    const wide = STAGING_RESERVE / 4;
    const call = (): void => simdRmsnorm(new Float32Array(wide), new Float32Array(wide).fill(1), 1, wide, 1e-5, new Float32Array(wide), new Float32Array(1));
    expect(call).toThrow(HeapError);
    expect(call).toThrow(/rmsnorm: .*1048576, 1048576, 1048576, 4 bytes/);
  });
});

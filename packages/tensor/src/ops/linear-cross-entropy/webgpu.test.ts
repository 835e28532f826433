// The fused LM-head cross-entropy on the webgpu device against the reference (float64 sums, the
// TypeScript GEMM), within first-order bounds of the device's float32 operations: each logit is
// a float32 dot of H products (in order, or by the matrix-vector kernel's lanes: the larger of the
// two bounds), each row's Σ exp a workgroup sum, exp_/log_ within 6u; dh and dW are float32 sums
// of dlogits products over V and over the rows (one more rounding per chunk for dW's β = 1).
import { describe, expect, test } from 'vitest';
import { bf16ArrayToF32, f32ArrayToBf16 } from '../../dtype';
import { expectWithin, randomF32, randomI32, SLACK, sumErrorBound, treeSumBound, U32 } from '../../kernels/float-testing';
import { webgpuForSuite } from '../../webgpu/testing';
import type { LinearCrossEntropyArgs } from './args';
import { linearCrossEntropyReference } from './reference';
import { linearCrossEntropyWgsl } from './webgpu';

const u = U32;

/** The bound of the device's logit z = h·w (H products): in order, or per lane then across 64 lanes. */
function dotBound(terms: number[]): number {
  const abs = terms.reduce((a, v) => a + Math.abs(v), 0);
  return Math.max(sumErrorBound(terms, 1), u * (4 + Math.ceil(terms.length / 256) + 64) * abs);
}

function bounds(a: LinearCrossEntropyArgs, W: Float32Array, dh0: Float32Array | null, dw0: Float32Array | null): { total: number; dh: Float64Array | null; dw: Float64Array | null } {
  const { rows, V, H, h, targets, weights } = a;
  let eTotal = 0;
  const lossTerms: number[] = [];
  const dlog = Array.from({ length: rows }, () => new Float64Array(V)), edlog = Array.from({ length: rows }, () => new Float64Array(V));
  for (let r = 0; r < rows; r++) {
    const w = weights[r]!;
    if (w === 0) { lossTerms.push(0); continue; }
    const z = new Float64Array(V), dz = new Float64Array(V);
    for (let j = 0; j < V; j++) {
      const terms = Array.from({ length: H }, (_, e) => h[r * H + e]! * W[j * H + e]!);
      z[j] = terms.reduce((x, y) => x + y, 0);
      dz[j] = dotBound(terms);
    }
    const m = Math.max(...z), dm = Math.max(...dz), ex = Array.from(z, (x) => Math.exp(x - m)), s = ex.reduce((x, y) => x + y, 0);
    let relS = treeSumBound(ex) / s;
    z.forEach((x, j) => { relS += (ex[j]! / s) * (dz[j]! + dm + u * (m - x) + 6 * u); });
    const lse = m + Math.log(s), t = targets[r]!;
    const eLse = dm + relS + 6 * u * Math.abs(Math.log(s)) + u * Math.abs(lse);
    lossTerms.push(w * (lse - z[t]!));
    eTotal += w * (eLse + dz[t]! + u * Math.abs(lse - z[t]!)) + u * Math.abs(w * (lse - z[t]!));
    for (let j = 0; j < V; j++) {
      const p = ex[j]! / s;
      dlog[r]![j] = w * p - (j === t ? w : 0);
      // exp_(z − m)·(w/s): z's and m's errors, exp_, the division w/s (2.5 ulp) and s's error, two products; the target's − w once more.
      edlog[r]![j] = w * p * (dz[j]! + dm + u * (m - z[j]!) + 6 * u + relS + 7 * u) + u * Math.abs(dlog[r]![j]!);
    }
  }
  const total = SLACK * (eTotal + treeSumBound(lossTerms));
  const dh = dh0 === null ? null : Float64Array.from({ length: rows * H }, (_, i) => {
    const r = Math.floor(i / H), e = i % H;
    const terms = Array.from({ length: V }, (_, j) => dlog[r]![j]! * W[j * H + e]!);
    let err = 0;
    for (let j = 0; j < V; j++) err += edlog[r]![j]! * Math.abs(W[j * H + e]!);
    return SLACK * (err + dotBound(terms) + u * Math.abs(dh0[i]!));
  });
  const chunks = Math.ceil(rows / a.chunkRows);
  const dw = dw0 === null ? null : Float64Array.from({ length: V * H }, (_, i) => {
    const j = Math.floor(i / H), e = i % H;
    const terms = Array.from({ length: rows }, (_, r) => dlog[r]![j]! * h[r * H + e]!);
    let err = 0;
    for (let r = 0; r < rows; r++) err += edlog[r]![j]! * Math.abs(h[r * H + e]!);
    return SLACK * (err + sumErrorBound(terms, 1) + chunks * u * terms.reduce((x, y) => x + Math.abs(y), 0) + u * Math.abs(dw0[i]!));
  });
  return { total, dh, dw };
}

describe('the fused LM-head loss on the webgpu device', { timeout: 600_000 }, () => {
  const { run, host } = webgpuForSuite();

  test('loss, dh and dW over several chunks and one, masked and ignored rows, f32 and bf16 heads', () => {
    for (const [rows, V, H, chunkRows, bf16] of [[5, 300, 40, 5, false], [70, 97, 64, 32, false], [9, 260, 32, 4, true]] as const) {
      const h = randomF32(rows * H, rows, -1, 1), Wf = randomF32(V * H, V, -0.5, 0.5);
      const Wb = f32ArrayToBf16(Wf), W = bf16 ? bf16ArrayToF32(Wb) : Wf;
      const targets = randomI32(rows, 3, 0, V), weights = new Float32Array(rows).fill(1);
      weights[1] = 0; weights[2] = 0.5;
      const make = (): LinearCrossEntropyArgs => ({
        rows, V, H, h, w: bf16 ? Wb : Wf, targets, weights, chunkRows, sums: new Float64Array(2),
        dh: new Float32Array(rows * H).fill(3), dw: bf16 ? null : new Float32Array(V * H).fill(3),
      });
      const got = make(), want = make();
      run(linearCrossEntropyWgsl)(got);
      host(got.dh!, ...(got.dw ? [got.dw] : []));
      linearCrossEntropyReference(want);
      const b = bounds(want, W, want.dh, want.dw);
      expect(got.sums[1]).toBe(want.sums[1]);
      expectWithin([got.sums[0]!], [want.sums[0]!], [b.total], `loss [${rows}, ${V}, ${H}]`);
      expectWithin(got.dh!, want.dh!, b.dh!, `dh [${rows}, ${V}, ${H}]`);
      if (got.dw) expectWithin(got.dw, want.dw!, b.dw!, `dW [${rows}, ${V}, ${H}]`);
    }
  });
});

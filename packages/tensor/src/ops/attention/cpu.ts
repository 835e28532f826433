import { DECODE_MAX_ROWS, decodeAttention, decodeAttentionRuns } from './cpu-decode';
import { heapRelease, scratchF32 } from '../../memory/heap';
import { expShift, rowMax, scaleRow } from '../linear-cross-entropy/cpu-rows';
import type { F32 } from '../../arrays';
import type { GemmFn } from '../gemm/kernel';
import { wasmGemm } from '../gemm/cpu';
import type { AttentionArgs, AttentionBackwardArgs } from './args';

/**
 * Flash-style attention on the CPU: queries and keys are processed in tiles whose score blocks
 * (BQ × BK) are products computed with the SIMD GEMM; a streaming softmax keeps a running max,
 * normaliser and output per query, so memory stays O(T·d + BQ·BK). The backward pass follows
 * FlashAttention-2: probabilities are recomputed from the saved log-sum-exp tile by tile. The
 * softmax rows of a tile (max, exp and sum, rescaling) run in WebAssembly SIMD (softmax-rows.ts).
 * A few query rows without document ids (decoding) take the SIMD decode kernel instead
 * (decode-attention.ts), which reads keys and values in place.
 */
const BQ = 64;
const BK = 64;

/** Copy head `h` of x [B, L, heads, d] for sequence b, rows [r0, r0 + n), into dst [n, d]. */
function gatherHead(x: F32, b: number, L: number, heads: number, h: number, d: number, r0: number, n: number, dst: F32): void {
  for (let i = 0; i < n; i++) {
    const o = ((b * L + r0 + i) * heads + h) * d;
    dst.set(x.subarray(o, o + d), i * d);
  }
}

/** Add src [n, d] into head h of x [B, L, heads, d] for sequence b, rows [r0, r0 + n). */
function scatterHead(src: F32, b: number, L: number, heads: number, h: number, d: number, r0: number, n: number, x: F32): void {
  for (let i = 0; i < n; i++) {
    const o = ((b * L + r0 + i) * heads + h) * d;
    for (let e = 0; e < d; e++) x[o + e]! += src[i * d + e]!;
  }
}

/** Set masked entries of the score tile to −∞: causal (s > qOffset + t) and, optionally, other documents. */
function maskTile(a: AttentionArgs, b: number, t0: number, n: number, s0: number, nk: number, tile: F32): void {
  for (let i = 0; i < n; i++) {
    const limit = a.qOffset + t0 + i;
    const row = i * nk;
    for (let j = Math.max(0, limit - s0 + 1); j < nk; j++) tile[row + j] = -Infinity;
    if (a.docQ !== undefined) {
      const dq = a.docQ[b * a.T + t0 + i]!;
      const dk = a.docK!;
      for (let j = 0; j < nk; j++) if (dk[b * a.S + s0 + j] !== dq) tile[row + j] = -Infinity;
    }
  }
}

/**
 * Where the causal mask leaves row i of a tile (keys s0 … s0 + nk) at −∞: from its count of
 * visible keys, rounded up to a multiple of 4 (at most nk). The softmax rows stop there and the
 * rest is set to 0: exp(−∞) is 0 either way, but the exp kernel computes it through an underflow
 * (a microcode assist on x86, ~5× the time of a normal lane), and the SIMD lanes of the sums and
 * the max see the same values in the same lanes, so the bits are those of the whole row.
 */
export function visible(a: AttentionArgs, t0: number, i: number, s0: number, nk: number): number {
  const n = Math.max(0, a.qOffset + t0 + i - s0 + 1);
  return Math.min(nk, (n + 3) & ~3);
}

/** How many leading keys of a tile row the softmax rows compute (the rest are 0): {@link visible}, or the whole row (tests). */
type VisibleKeys = typeof visible;

/** The attention kernels on top of the GEMM kernel `sgemm`. */
export function tiledAttention(sgemm: GemmFn, keys: VisibleKeys = visible): { attention(a: AttentionArgs): void; attentionBackward(a: AttentionBackwardArgs): void } {
  return { attention: (a) => attention(sgemm, keys, a), attentionBackward: (a) => attentionBackward(sgemm, keys, a) };
}

function attention(sgemm: GemmFn, visible: VisibleKeys, a: AttentionArgs): void {
  const { B, T, S, nh, nkv, d, scale, out, lse } = a;
  if (a.docQ === undefined && T <= DECODE_MAX_ROWS && a.qOffset >= 0 && a.qOffset + T <= S && decodeAttentionRuns(d)) {
    const qn = T * nh * d, kn = S * nkv * d;
    for (let b = 0; b < B; b++) {
      decodeAttention({
        q: a.q.subarray(b * qn, (b + 1) * qn), out: out.subarray(b * qn, (b + 1) * qn), T, nh, nkv, d, scale, qOffset: a.qOffset,
        kBlocks: [a.k.subarray(b * kn, (b + 1) * kn)], vBlocks: [a.v.subarray(b * kn, (b + 1) * kn)], blockSize: S,
        lse, lseAt: b * nh * T, lseStride: T,
      });
    }
    return;
  }
  const rep = nh / nkv;
  // Tiles live in the cpu device memory, so the GEMM reads and writes them in place.
  const K = scratchF32(S * d), Vv = scratchF32(S * d);
  const Q = scratchF32(BQ * d), acc = scratchF32(BQ * d), tile = scratchF32(BQ * BK);
  const m = new Float64Array(BQ), l = new Float64Array(BQ);
  for (let b = 0; b < B; b++) {
    for (let g = 0; g < nkv; g++) {
      gatherHead(a.k, b, S, nkv, g, d, 0, S, K);
      gatherHead(a.v, b, S, nkv, g, d, 0, S, Vv);
      for (let h = g * rep; h < (g + 1) * rep; h++) {
        for (let t0 = 0; t0 < T; t0 += BQ) {
          const n = Math.min(BQ, T - t0);
          gatherHead(a.q, b, T, nh, h, d, t0, n, Q);
          m.fill(-Infinity); l.fill(0); acc.fill(0, 0, n * d);
          const sEnd = Math.min(S, a.qOffset + t0 + n);
          for (let s0 = 0; s0 < sEnd; s0 += BK) {
            const nk = Math.min(BK, sEnd - s0);
            sgemm({ transA: false, transB: true, M: n, N: nk, K: d, A: Q, B: K.subarray(s0 * d, (s0 + nk) * d), C: tile, alpha: scale });
            maskTile(a, b, t0, n, s0, nk, tile);
            for (let i = 0; i < n; i++) {
              const row = i * nk, nv = visible(a, t0, i, s0, nk);
              const mx = nv === 0 ? -Infinity : rowMax(tile, row, nv);
              if (mx === -Infinity) { tile.fill(0, row, row + nk); continue; }
              const mNew = Math.max(m[i]!, mx);
              const c = Math.exp(m[i]! - mNew);
              l[i] = l[i]! * c + expShift(tile, row, nv, mNew);
              tile.fill(0, row + nv, row + nk);
              m[i] = mNew;
              if (c !== 1) scaleRow(acc, i * d, d, c);
            }
            sgemm({ transA: false, transB: false, M: n, N: d, K: nk, A: tile, B: Vv.subarray(s0 * d, (s0 + nk) * d), C: acc, beta: 1 });
          }
          for (let i = 0; i < n; i++) {
            const o = ((b * T + t0 + i) * nh + h) * d;
            const li = l[i]!;
            if (li === 0) { out.fill(0, o, o + d); lse[(b * nh + h) * T + t0 + i] = -Infinity; continue; }
            for (let e = 0; e < d; e++) out[o + e] = acc[i * d + e]! / li;
            lse[(b * nh + h) * T + t0 + i] = m[i]! + Math.log(li);
          }
        }
      }
    }
  }
  for (const a of [K, Vv, Q, acc, tile]) heapRelease(a);
}

function attentionBackward(sgemm: GemmFn, visible: VisibleKeys, a: AttentionBackwardArgs): void {
  const { B, T, S, nh, nkv, d, scale, out, lse, gout, gq, gk, gv } = a;
  const rep = nh / nkv;
  gq.fill(0); gk.fill(0); gv.fill(0);
  const K = scratchF32(S * d), Vv = scratchF32(S * d), dK = scratchF32(S * d), dV = scratchF32(S * d);
  const Q = scratchF32(T * d), dO = scratchF32(T * d), dQ = scratchF32(T * d);
  const P = scratchF32(BQ * BK), dP = scratchF32(BQ * BK);
  const Dh = new Float64Array(T);
  for (let b = 0; b < B; b++) {
    for (let g = 0; g < nkv; g++) {
      gatherHead(a.k, b, S, nkv, g, d, 0, S, K);
      gatherHead(a.v, b, S, nkv, g, d, 0, S, Vv);
      dK.fill(0); dV.fill(0);
      for (let h = g * rep; h < (g + 1) * rep; h++) {
        gatherHead(a.q, b, T, nh, h, d, 0, T, Q);
        gatherHead(gout, b, T, nh, h, d, 0, T, dO);
        dQ.fill(0);
        for (let t = 0; t < T; t++) {
          // D_t = Σ_e dO·O (the softmax-Jacobian term), per query of this head.
          const o = ((b * T + t) * nh + h) * d;
          let s = 0;
          for (let e = 0; e < d; e++) s += gout[o + e]! * out[o + e]!;
          Dh[t] = s;
        }
        const L = lse.subarray((b * nh + h) * T, (b * nh + h + 1) * T);
        for (let s0 = 0; s0 < S; s0 += BK) {
          const nk = Math.min(BK, S - s0);
          const Ks = K.subarray(s0 * d, (s0 + nk) * d), Vs = Vv.subarray(s0 * d, (s0 + nk) * d);
          for (let t0 = Math.max(0, s0 - a.qOffset); t0 < T; t0 += BQ) {
            const n = Math.min(BQ, T - t0);
            const Qt = Q.subarray(t0 * d, (t0 + n) * d), dOt = dO.subarray(t0 * d, (t0 + n) * d);
            sgemm({ transA: false, transB: true, M: n, N: nk, K: d, A: Qt, B: Ks, C: P, alpha: scale });
            maskTile(a, b, t0, n, s0, nk, P);
            for (let i = 0; i < n; i++) {
              const Li = L[t0 + i]!, row = i * nk, nv = visible(a, t0, i, s0, nk);
              if (Li === -Infinity) { P.fill(0, row, row + nk); continue; }
              expShift(P, row, nv, Li);
              P.fill(0, row + nv, row + nk);
            }
            sgemm({ transA: true, transB: false, M: nk, N: d, K: n, A: P, B: dOt, C: dV.subarray(s0 * d, (s0 + nk) * d), beta: 1 });
            sgemm({ transA: false, transB: true, M: n, N: nk, K: d, A: dOt, B: Vs, C: dP });
            for (let i = 0; i < n; i++) {
              const Di = Dh[t0 + i]!, row = i * nk;
              for (let j = 0; j < nk; j++) dP[row + j] = P[row + j]! * (dP[row + j]! - Di) * scale;
            }
            sgemm({ transA: false, transB: false, M: n, N: d, K: nk, A: dP, B: Ks, C: dQ.subarray(t0 * d, (t0 + n) * d), beta: 1 });
            sgemm({ transA: true, transB: false, M: nk, N: d, K: n, A: dP, B: Qt, C: dK.subarray(s0 * d, (s0 + nk) * d), beta: 1 });
          }
        }
        scatterHead(dQ, b, T, nh, h, d, 0, T, gq);
      }
      scatterHead(dK, b, S, nkv, g, d, 0, S, gk);
      scatterHead(dV, b, S, nkv, g, d, 0, S, gv);
    }
  }
  for (const a of [K, Vv, dK, dV, Q, dO, dQ, P, dP]) heapRelease(a);
}

let tiled: ReturnType<typeof tiledAttention> | null = null;

/** The cpu `attention` kernel: the tiled attention on the WebAssembly GEMM. */
export function cpuAttention(a: AttentionArgs): void {
  (tiled ??= tiledAttention(wasmGemm)).attention(a);
}

/** The cpu `attentionBackward` kernel. */
export function cpuAttentionBackward(a: AttentionBackwardArgs): void {
  (tiled ??= tiledAttention(wasmGemm)).attentionBackward(a);
}

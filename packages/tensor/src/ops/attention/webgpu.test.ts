// Attention on the webgpu device (tiled forward and backward, flash-decoding over the paged KV
// arena) against the reference kernels, every element within a first-order bound derived from
// the kernels' float32 operations: exp_ and log_ within 3 ulp (6·U32), products and sums
// correctly rounded, sums in key order (one more rounding of the running sums per rescale).
import { describe, expect, test } from 'vitest';
import { expectWithin, randomF32, SLACK, sumErrorBound, U32 } from '../../kernels/float-testing';
import { heapRelease } from '../../memory/heap';
import { webgpuForSuite } from '../../webgpu/testing';
import { copyWgsl } from '../copy/webgpu';
import { kvBlockStorage } from '../copy';
import type { AttentionArgs, AttentionBackwardArgs, KVPages } from './args';
import * as reference from './reference';
import { pagedAttention as pagedReference } from './paged-reference';
import { attention, attentionBackward } from './webgpu';
import { pagedAttention } from './webgpu-paged';

const u = U32;

interface Case { B: number; T: number; S: number; nh: number; nkv: number; d: number; qOffset: number; docs: boolean; seed: number }

function argsOf(c: Case): AttentionArgs {
  const { B, T, S, nh, nkv, d } = c;
  const a: AttentionArgs = {
    B, T, S, nh, nkv, d, scale: 1 / Math.sqrt(d), qOffset: c.qOffset,
    q: randomF32(B * T * nh * d, c.seed), k: randomF32(B * S * nkv * d, c.seed + 1), v: randomF32(B * S * nkv * d, c.seed + 2),
    out: new Float32Array(B * T * nh * d), lse: new Float32Array(B * nh * T),
  };
  if (c.docs) {
    // Two documents per sequence, the second starting a third of the way in.
    const doc = (n: number) => Int32Array.from({ length: B * n }, (_, i) => ((i % n) < Math.floor(n / 3) ? 0 : 1) + 2 * Math.floor(i / n));
    a.docK = doc(S);
    a.docQ = Int32Array.from({ length: B * T }, (_, i) => a.docK![Math.floor(i / T) * S + c.qOffset + (i % T)]!);
  }
  return a;
}

/** For each (b, t, h): the visible keys, the scores z_s and their errors, and the rows' offsets. */
function eachRow(a: AttentionArgs, f: (o: { b: number; t: number; h: number; g: number; qo: number; keys: number[]; z: number[]; dz: number[] }) => void): void {
  const rep = a.nh / a.nkv;
  for (let b = 0; b < a.B; b++) {
    for (let t = 0; t < a.T; t++) {
      for (let h = 0; h < a.nh; h++) {
        const g = Math.floor(h / rep), qo = ((b * a.T + t) * a.nh + h) * a.d;
        const keys: number[] = [], z: number[] = [], dz: number[] = [];
        for (let s = 0; s <= Math.min(a.S - 1, a.qOffset + t); s++) {
          if (a.docQ && a.docK![b * a.S + s] !== a.docQ[b * a.T + t]) continue;
          const ko = ((b * a.S + s) * a.nkv + g) * a.d;
          const prods = Array.from({ length: a.d }, (_, e) => a.q[qo + e]! * a.k[ko + e]!);
          keys.push(s);
          z.push(prods.reduce((x, y) => x + y, 0) * a.scale);
          // The dot in order (one rounding per product), then ·scale (scale itself rounded to float32).
          dz.push(a.scale * sumErrorBound(prods, 1) + 2 * u * Math.abs(z[z.length - 1]!));
        }
        f({ b, t, h, g, qo, keys, z, dz });
      }
    }
  }
}

/**
 * Forward bound: each weight p_s = exp(z_s − m)/l is relatively off by the scores' errors (its own
 * and the max's), the difference's rounding, exp_ (6u) and the normaliser's error (relL: every
 * term's error, one rescale per tile of `tile` keys — exp_ and a product — and the additions);
 * out = Σ p_s·v_s/l sums in key order (sumErrorBound, + one rounding per rescale), then divides.
 * lse = m + log_ l: the max's and l's errors, log_ (6u), the addition.
 */
function forwardBound(a: AttentionArgs, out0: Float32Array, lse0: Float32Array, tile: number): { out: Float64Array; lse: Float64Array } {
  const out = new Float64Array(out0.length), lse = new Float64Array(lse0.length);
  eachRow(a, ({ b, t, h, g, qo, keys, z, dz }) => {
    const li = (b * a.nh + h) * a.T + t;
    if (keys.length === 0) return;
    const n = keys.length, m = Math.max(...z), dm = Math.max(...dz), Z = Math.max(...z.map((x) => m - x));
    const p = z.map((x) => Math.exp(x - m)), l = p.reduce((x, y) => x + y, 0);
    const tiles = Math.ceil((a.qOffset + t + 1) / tile) + 1;
    let relL = 0;
    z.forEach((x, s) => { relL += (p[s]! / l) * (dz[s]! + dm + u * (m - x) + 6 * u); });
    relL += (2 * n + 6 * tiles + 2 * Z) * u;
    lse[li] = SLACK * (dm + relL + 6 * u * Math.abs(Math.log(l)) + 2 * u * Math.abs(lse0[li]!));
    for (let e = 0; e < a.d; e++) {
      const terms: number[] = [];
      let err = 0;
      keys.forEach((s, i) => {
        const ve = a.v[((b * a.S + s) * a.nkv + g) * a.d + e]!, w = p[i]! / l;
        terms.push(w * ve);
        err += Math.abs(w * ve) * (dz[i]! + dm + u * (m - z[i]!) + 6 * u + relL + u);
      });
      const absSum = terms.reduce((x, y) => x + Math.abs(y), 0);
      out[qo + e] = SLACK * (err + sumErrorBound(terms) + 2 * tiles * u * absSum + 3 * u * Math.abs(out0[qo + e]!));
    }
  });
  return { out, lse };
}

/**
 * Backward bound, with the forward's out and lse as exact inputs: p = exp(z − lse) is off by z's
 * error and exp_ (6u + the difference's u); dp = gout·v and D = gout·out are float32 dots (in
 * order); ds = p·(dp − D)·scale. gv = Σ p·gout, gk = Σ ds·q, gq = Σ ds·k are sums over the keys
 * or queries in some tile order: (n + 2)·u of the terms' absolute sum (any order), plus the terms'
 * own errors.
 */
function backwardBound(a: AttentionBackwardArgs): { gq: Float64Array; gk: Float64Array; gv: Float64Array } {
  const gq = new Float64Array(a.q.length), gk = new Float64Array(a.k.length), gv = new Float64Array(a.v.length);
  const absK = new Float64Array(a.k.length), absV = new Float64Array(a.v.length), cntK = new Float64Array(a.B * a.S * a.nkv);
  eachRow(a, ({ b, t, h, g, qo, keys, z, dz }) => {
    const L = a.lse[(b * a.nh + h) * a.T + t]!;
    const Dterms = Array.from({ length: a.d }, (_, e) => a.gout[qo + e]! * a.out[qo + e]!);
    const D = Dterms.reduce((x, y) => x + y, 0), eD = sumErrorBound(Dterms, 1);
    keys.forEach((s, i) => {
      const ko = ((b * a.S + s) * a.nkv + g) * a.d;
      const pv = Math.exp(z[i]! - L), ep = pv * (dz[i]! + u * Math.abs(z[i]! - L) + 7 * u);
      const dpTerms = Array.from({ length: a.d }, (_, e) => a.gout[qo + e]! * a.v[ko + e]!);
      const dp = dpTerms.reduce((x, y) => x + y, 0), edp = sumErrorBound(dpTerms, 1);
      const ds = pv * (dp - D) * a.scale;
      const eds = a.scale * (ep * Math.abs(dp - D) + pv * (edp + eD + u * Math.abs(dp - D))) + 3 * u * Math.abs(ds);
      cntK[(b * a.S + s) * a.nkv + g]!++;
      for (let e = 0; e < a.d; e++) {
        const qe = a.q[qo + e]!, ke = a.k[ko + e]!, ge = a.gout[qo + e]!;
        gv[ko + e]! += ep * Math.abs(ge) + u * Math.abs(pv * ge);
        absV[ko + e]! += Math.abs(pv * ge);
        gk[ko + e]! += eds * Math.abs(qe) + u * Math.abs(ds * qe);
        absK[ko + e]! += Math.abs(ds * qe);
        gq[qo + e]! += eds * Math.abs(ke) + u * Math.abs(ds * ke) + (keys.length + 2) * u * Math.abs(ds * ke);
      }
    });
  });
  for (let i = 0; i < gk.length; i++) {
    const n = cntK[Math.floor(i / a.d)]!;
    gk[i] = SLACK * (gk[i]! + (n + 2) * u * absK[i]!);
    gv[i] = SLACK * (gv[i]! + (n + 2) * u * absV[i]!);
  }
  for (let i = 0; i < gq.length; i++) gq[i] = SLACK * gq[i]!;
  return { gq, gk, gv };
}

/** One sequence's keys and values [S, nkv, d] in KV blocks of `bs` tokens (for `layer` of `layers`), written through `copy`. */
function kvBlocks(k: Float32Array, v: Float32Array, S: number, nkv: number, d: number, bs: number, layer: number, layers: number, copy: (src: Float32Array, dst: Float32Array) => void): KVPages {
  const row = nkv * d, nb = Math.ceil(S / bs);
  const keys = layer * 2 * bs * row, values = keys + bs * row;
  const blocks = Array.from({ length: nb }, (_, b) => {
    const blk = kvBlockStorage({ layers, blockSize: bs, rowSize: row });
    const n = Math.min(bs, S - b * bs);
    copy(k.subarray(b * bs * row, (b * bs + n) * row), blk.subarray(keys, keys + n * row));
    copy(v.subarray(b * bs * row, (b * bs + n) * row), blk.subarray(values, values + n * row));
    return blk;
  });
  return { blocks, blockSize: bs, keys, values, heads: nkv, length: S };
}

describe('attention on the webgpu device', { timeout: 600_000 }, () => {
  const { run, host, ctx } = webgpuForSuite();

  const cases: Case[] = [
    { B: 1, T: 20, S: 20, nh: 4, nkv: 2, d: 8, qOffset: 0, docs: false, seed: 1 },
    { B: 2, T: 33, S: 33, nh: 2, nkv: 1, d: 32, qOffset: 0, docs: true, seed: 2 },
    { B: 1, T: 5, S: 40, nh: 3, nkv: 3, d: 64, qOffset: 35, docs: false, seed: 3 },
    { B: 1, T: 1, S: 17, nh: 4, nkv: 1, d: 20, qOffset: 16, docs: false, seed: 4 },
  ];

  test('forward: causal, GQA, document ids, decode rows, head dimensions not a multiple of 16', () => {
    for (const c of cases) {
      const a = argsOf(c), want = { ...a, out: new Float32Array(a.out.length), lse: new Float32Array(a.lse.length) };
      run(attention)(a);
      host(a.out, a.lse);
      reference.attention(want);
      const b = forwardBound(a, want.out, want.lse, 16);
      expectWithin(a.lse, want.lse, b.lse, `lse ${JSON.stringify(c)}`);
      expectWithin(a.out, want.out, b.out, `out ${JSON.stringify(c)}`);
    }
  });

  test('backward: gq, gk, gv from the forward\'s out and lse (no score recomputed per output dimension)', () => {
    for (const c of cases) {
      const a = argsOf(c);
      reference.attention(a);
      const back = (): AttentionBackwardArgs => ({ ...a, gout: randomF32(a.out.length, c.seed + 7), gq: new Float32Array(a.q.length).fill(5), gk: new Float32Array(a.k.length).fill(5), gv: new Float32Array(a.v.length).fill(5) });
      const got = back(), want = { ...got, gq: new Float32Array(a.q.length), gk: new Float32Array(a.k.length), gv: new Float32Array(a.v.length) };
      run(attentionBackward)(got);
      host(got.gq, got.gk, got.gv);
      reference.attentionBackward(want);
      const bnd = backwardBound(want);
      expectWithin(got.gv, want.gv, bnd.gv, `gv ${JSON.stringify(c)}`);
      expectWithin(got.gk, want.gk, bnd.gk, `gk ${JSON.stringify(c)}`);
      expectWithin(got.gq, want.gq, bnd.gq, `gq ${JSON.stringify(c)}`);
    }
  });

  test('paged: over KV blocks in the device arena (decode and prefill rows, several splits, GQA) and over plain pages', () => {
    for (const [T, past, nh, nkv, d, bs] of [[1, 299, 6, 2, 32, 16], [7, 120, 4, 4, 16, 8], [3, 0, 2, 1, 64, 16], [1, 15, 8, 2, 128, 16]] as const) {
      const S = past + T, row = nkv * d, r = 31 * T + past;
      const k = randomF32(S * row, r), v = randomF32(S * row, r + 1), q = randomF32(T * nh * d, r + 2);
      const layers = 3, layer = 1;
      const arena = kvBlocks(k, v, S, nkv, d, bs, layer, layers, run(copyWgsl));
      const plain = kvBlocks(k, v, S, nkv, d, bs, layer, layers, (src, dst) => dst.set(src));
      // Plain pages: host arrays outside the KV storage (gathered on the device for the kernel).
      const loose: KVPages = { ...plain, blocks: plain.blocks.map((b) => b.slice()) };
      const want = new Float32Array(T * nh * d), lse = new Float32Array(nh * T);
      const c: AttentionArgs = { B: 1, T, S, nh, nkv, d, scale: 1 / Math.sqrt(d), qOffset: past, q, k, v, out: want, lse };
      reference.attention(c);
      const bound = forwardBound(c, want, lse, 64).out;
      for (const [name, kv] of [['arena', arena], ['plain pages', loose]] as const) {
        const out = new Float32Array(T * nh * d).fill(NaN);
        run(pagedAttention)({ T, nh, d, q, kv, scale: c.scale, qOffset: past, out });
        host(out);
        const ref = new Float32Array(T * nh * d);
        pagedReference({ T, nh, d, q, kv: plain, scale: c.scale, qOffset: past, out: ref });
        expect(Array.from(ref)).toEqual(Array.from(want));
        expectWithin(out, want, bound, `paged ${name} T ${T} past ${past} nh ${nh} nkv ${nkv} d ${d}`);
      }
      for (const b of [...arena.blocks, ...plain.blocks]) heapRelease(b);
    }
  });

  test('decoding token by token across block boundaries builds no pipeline and uploads only the block table when it grows', () => {
    const nh = 4, nkv = 2, d = 16, bs = 4, row = nkv * d, c = ctx();
    const k = randomF32(40 * row, 9), v = randomF32(40 * row, 10);
    const blocks: Float32Array[] = [];
    const step = (pos: number) => {
      if (pos % bs === 0) blocks.push(kvBlockStorage({ layers: 1, blockSize: bs, rowSize: row }));
      const blk = blocks[Math.floor(pos / bs)]!, o = (pos % bs) * row;
      run(copyWgsl)(k.subarray(pos * row, (pos + 1) * row), blk.subarray(o, o + row));
      run(copyWgsl)(v.subarray(pos * row, (pos + 1) * row), blk.subarray(bs * row + o, bs * row + o + row));
      const out = new Float32Array(nh * d);
      run(pagedAttention)({ T: 1, nh, d, q: randomF32(nh * d, pos), kv: { blocks, blockSize: bs, keys: 0, values: bs * row, heads: nkv, length: pos + 1 }, scale: 0.25, qOffset: pos, out });
      host(out);
    };
    for (let pos = 0; pos < 8; pos++) step(pos);
    const before = c.rt.counters();
    for (let pos = 8; pos < 40; pos++) step(pos);
    const after = c.rt.counters();
    expect(after.pipelineBuilds - before.pipelineBuilds).toBe(0);
    // Per token: the new key and value rows and the query (host arrays of this test) and the
    // attention parameters (one uniform block of 64 bytes); the block table (4 bytes a block) only
    // when a block is added: every 4 tokens, at most 10 blocks.
    const perToken = 4 * (2 * row + nh * d) + 64;
    expect(after.uploadBytes - before.uploadBytes).toBeLessThanOrEqual(32 * perToken + (32 / bs) * 4 * 10);
    for (const b of blocks) heapRelease(b);
  });
});

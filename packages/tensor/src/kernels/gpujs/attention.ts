/**
 * Fused causal attention (GQA, optional document mask) as gpu.js kernels. No T×S score matrix is
 * ever stored: scores are recomputed from q and k inside the loops.
 *
 * Forward, two kernels:
 *  - `attention.lse`: one thread per (b, h, t) streams over the visible keys with the online
 *    softmax recurrence (running max m and normaliser l, rescaled when m grows) and returns
 *    lse = m + log l (-Infinity when the query sees no key).
 *  - `attention.out`: one thread per (b, t, h, e) output element streams over the keys again:
 *    out = sum_s exp(score_s - lse) v[s, e]. gpu.js threads return one number, so the dot
 *    product q·k is recomputed per e; on webasm the four SIMD lanes are four consecutive e of
 *    the same query, so it is computed once per four outputs.
 * Backward, four kernels, each recomputing p = exp(score - lse) from the saved lse:
 *    D[b, h, t] = sum_e gout·out;  gq = scale sum_s p (dp - D) k;  gk = scale sum_{h in group, t} p (dp - D) q;
 *    gv = sum_{h in group, t} p gout,  with dp = gout·v.
 * Layouts: q/out/gout [B, T, nh, d] read as q[b*T + t][h][e]; k/v [B, S, nkv, d] as k[b*S + s][g][e];
 * lse [B, nh, T] as lse[b][h][t]. Query t sits at key position qOffset + t; key s is visible iff
 * s <= qOffset + t and, with document ids, docK[b, s] === docQ[b, t] (without them both are zeros).
 */
import { ShapeError } from '../../errors';
import type { AttentionArgs, AttentionBackwardArgs } from '../types';
import { checkIndexable, expectLength, inp, call, into, kept, type KernelOp } from './runtime';

/** lse[b][h][t] by the online softmax; thread (x, y, z) = (t, h, b). */
const lseKernel = `function (q, k, docs, qOffset, scale) {
  const g = Math.floor(this.thread.y / this.constants.rep);
  const dq = docs[0][this.thread.z][this.thread.x];
  let m = -Infinity;
  let l = 0;
  for (let s = 0; s < this.constants.S; s++) {
    if (s > qOffset + this.thread.x) {
      break;
    }
    if (docs[1][this.thread.z][s] === dq) {
      let dot = 0;
      for (let e = 0; e < this.constants.d; e++) {
        dot += q[this.thread.z * this.constants.T + this.thread.x][this.thread.y][e] * k[this.thread.z * this.constants.S + s][g][e];
      }
      const score = dot * scale;
      if (score > m) {
        l = l * Math.exp(m - score);
        m = score;
      }
      l += Math.exp(score - m);
    }
  }
  if (l === 0) {
    return -Infinity;
  }
  return m + Math.log(l);
}`;

/** out[b, t, h, e]; thread (x, y, z) = (e, h, b*T + t). */
const outKernel = `function (q, k, v, lse, docs, qOffset, scale) {
  const b = Math.floor(this.thread.z / this.constants.T);
  const t = this.thread.z - b * this.constants.T;
  const g = Math.floor(this.thread.y / this.constants.rep);
  const L = lse[b][this.thread.y][t];
  if (L === -Infinity) {
    return 0;
  }
  const dq = docs[0][b][t];
  let acc = 0;
  for (let s = 0; s < this.constants.S; s++) {
    if (s > qOffset + t) {
      break;
    }
    if (docs[1][b][s] === dq) {
      let dot = 0;
      for (let e = 0; e < this.constants.d; e++) {
        dot += q[this.thread.z][this.thread.y][e] * k[b * this.constants.S + s][g][e];
      }
      acc += Math.exp(dot * scale - L) * v[b * this.constants.S + s][g][this.thread.x];
    }
  }
  return acc;
}`;

/** D[b][h][t] = sum_e gout·out; thread (x, y, z) = (t, h, b). */
const deltaKernel = `function (gout, out) {
  let D = 0;
  for (let e = 0; e < this.constants.d; e++) {
    D += gout[this.thread.z * this.constants.T + this.thread.x][this.thread.y][e] * out[this.thread.z * this.constants.T + this.thread.x][this.thread.y][e];
  }
  return D;
}`;

/** gq[b, t, h, e]; thread (x, y, z) = (e, h, b*T + t). */
const gqKernel = `function (q, k, v, gout, lse, delta, docs, qOffset, scale) {
  const b = Math.floor(this.thread.z / this.constants.T);
  const t = this.thread.z - b * this.constants.T;
  const g = Math.floor(this.thread.y / this.constants.rep);
  const L = lse[b][this.thread.y][t];
  if (L === -Infinity) {
    return 0;
  }
  const D = delta[b][this.thread.y][t];
  const dq = docs[0][b][t];
  let acc = 0;
  for (let s = 0; s < this.constants.S; s++) {
    if (s > qOffset + t) {
      break;
    }
    if (docs[1][b][s] === dq) {
      let dot = 0;
      let dp = 0;
      for (let e = 0; e < this.constants.d; e++) {
        dot += q[this.thread.z][this.thread.y][e] * k[b * this.constants.S + s][g][e];
        dp += gout[this.thread.z][this.thread.y][e] * v[b * this.constants.S + s][g][e];
      }
      const p = Math.exp(dot * scale - L);
      acc += p * (dp - D) * scale * k[b * this.constants.S + s][g][this.thread.x];
    }
  }
  return acc;
}`;

/** gk[b, s, g, e]; thread (x, y, z) = (e, g, b*S + s); sums over the rep query heads of group g and the queries that see s. */
const gkKernel = `function (q, k, v, gout, lse, delta, docs, qOffset, scale) {
  const b = Math.floor(this.thread.z / this.constants.S);
  const s = this.thread.z - b * this.constants.S;
  const dk = docs[1][b][s];
  let acc = 0;
  for (let hh = 0; hh < this.constants.rep; hh++) {
    const h = this.thread.y * this.constants.rep + hh;
    for (let t = 0; t < this.constants.T; t++) {
      if (s <= qOffset + t && docs[0][b][t] === dk) {
        let dot = 0;
        let dp = 0;
        for (let e = 0; e < this.constants.d; e++) {
          dot += q[b * this.constants.T + t][h][e] * k[this.thread.z][this.thread.y][e];
          dp += gout[b * this.constants.T + t][h][e] * v[this.thread.z][this.thread.y][e];
        }
        const p = Math.exp(dot * scale - lse[b][h][t]);
        acc += p * (dp - delta[b][h][t]) * scale * q[b * this.constants.T + t][h][this.thread.x];
      }
    }
  }
  return acc;
}`;

/** gv[b, s, g, e]; thread (x, y, z) = (e, g, b*S + s). */
const gvKernel = `function (q, k, gout, lse, docs, qOffset, scale) {
  const b = Math.floor(this.thread.z / this.constants.S);
  const s = this.thread.z - b * this.constants.S;
  const dk = docs[1][b][s];
  let acc = 0;
  for (let hh = 0; hh < this.constants.rep; hh++) {
    const h = this.thread.y * this.constants.rep + hh;
    for (let t = 0; t < this.constants.T; t++) {
      if (s <= qOffset + t && docs[0][b][t] === dk) {
        let dot = 0;
        for (let e = 0; e < this.constants.d; e++) {
          dot += q[b * this.constants.T + t][h][e] * k[this.thread.z][this.thread.y][e];
        }
        acc += Math.exp(dot * scale - lse[b][h][t]) * gout[b * this.constants.T + t][h][this.thread.x];
      }
    }
  }
  return acc;
}`;

/** Validated sizes and gpu.js inputs shared by forward and backward. */
function prepare(op: string, a: AttentionArgs) {
  const { B, T, S, nh, nkv, d } = a;
  checkIndexable(op, { B, T, S, nh, nkv, d, BT: B * T, BS: B * S, docs: 2 * B * Math.max(T, S) });
  if (nkv <= 0 || nh % nkv !== 0) throw new ShapeError(`${op}: nh = ${nh} is not a multiple of nkv = ${nkv}`);
  if (!Number.isInteger(a.qOffset) || a.qOffset < 0) throw new ShapeError(`${op}: qOffset = ${a.qOffset} must be a non-negative integer`);
  expectLength(op, 'q', a.q, B * T * nh * d);
  expectLength(op, 'k', a.k, B * S * nkv * d);
  expectLength(op, 'v', a.v, B * S * nkv * d);
  expectLength(op, 'out', a.out, B * T * nh * d);
  expectLength(op, 'lse', a.lse, B * nh * T);
  if ((a.docQ === undefined) !== (a.docK === undefined)) throw new ShapeError(`${op}: docQ and docK must be given together`);
  const docQ = a.docQ ?? new Int32Array(B * T);
  const docK = a.docK ?? new Int32Array(B * S);
  expectLength(op, 'docQ', docQ, B * T);
  expectLength(op, 'docK', docK, B * S);
  const W = Math.max(T, S);
  const docs = new Int32Array(2 * B * W);
  for (let b = 0; b < B; b++) {
    docs.set(docQ.subarray(b * T, b * T + T), b * W);
    docs.set(docK.subarray(b * S, b * S + S), (B + b) * W);
  }
  return {
    key: `${B},${T},${S},${nh},${nkv},${d}`,
    constants: { T, S, d, rep: nh / nkv },
    q: inp(a.q, [d, nh, B * T]),
    k: inp(a.k, [d, nkv, B * S]),
    v: inp(a.v, [d, nkv, B * S]),
    docs: inp(docs, [W, B, 2]),
    empty: B * T * nh * d === 0,
  };
}

/** Fused causal (GQA, optional document mask) attention forward: writes out and lse. */
export function* attention(a: AttentionArgs): KernelOp {
  const p = prepare('attention', a);
  const { B, T, nh, d } = a;
  if (p.empty) {
    a.out.fill(0);
    if (d === 0 && B * T * nh > 0) throw new ShapeError('attention: d must be positive');
    return;
  }
  const lse = yield* into(a.lse, call('attention.lse', p.key, () => ({
    source: lseKernel, output: [T, nh, B], constants: p.constants,
    argumentTypes: { q: 'Input', k: 'Input', docs: 'Input', qOffset: 'Integer', scale: 'Float' },
  }), [p.q, p.k, p.docs, a.qOffset, a.scale]));
  yield* into(a.out, call('attention.out', p.key, () => ({
    source: outKernel, output: [d, nh, B * T], constants: p.constants,
    argumentTypes: { q: 'Input', k: 'Input', v: 'Input', lse: 'Input', docs: 'Input', qOffset: 'Integer', scale: 'Float' },
  }), [p.q, p.k, p.v, inp(lse, [T, nh, B]), p.docs, a.qOffset, a.scale]));
}

/** Attention backward from the saved lse: overwrites gq, gk, gv. */
export function* attentionBackward(a: AttentionBackwardArgs): KernelOp {
  const p = prepare('attentionBackward', a);
  const { B, T, S, nh, nkv, d } = a;
  expectLength('attentionBackward', 'gout', a.gout, B * T * nh * d);
  expectLength('attentionBackward', 'gq', a.gq, B * T * nh * d);
  expectLength('attentionBackward', 'gk', a.gk, B * S * nkv * d);
  expectLength('attentionBackward', 'gv', a.gv, B * S * nkv * d);
  if (p.empty) { a.gq.fill(0); a.gk.fill(0); a.gv.fill(0); return; }
  const gout = inp(a.gout, [d, nh, B * T]);
  const lse = inp(a.lse, [T, nh, B]);
  const delta = yield* kept(call('attention.delta', p.key, () => ({
    source: deltaKernel, output: [T, nh, B], constants: p.constants,
    argumentTypes: { gout: 'Input', out: 'Input' },
  }), [gout, inp(a.out, [d, nh, B * T])]));
  const D = inp(delta, [T, nh, B]);
  yield* into(a.gq, call('attention.gq', p.key, () => ({
    source: gqKernel, output: [d, nh, B * T], constants: p.constants,
    argumentTypes: { q: 'Input', k: 'Input', v: 'Input', gout: 'Input', lse: 'Input', delta: 'Input', docs: 'Input', qOffset: 'Integer', scale: 'Float' },
  }), [p.q, p.k, p.v, gout, lse, D, p.docs, a.qOffset, a.scale]));
  yield* into(a.gk, call('attention.gk', p.key, () => ({
    source: gkKernel, output: [d, nkv, B * S], constants: p.constants,
    argumentTypes: { q: 'Input', k: 'Input', v: 'Input', gout: 'Input', lse: 'Input', delta: 'Input', docs: 'Input', qOffset: 'Integer', scale: 'Float' },
  }), [p.q, p.k, p.v, gout, lse, D, p.docs, a.qOffset, a.scale]));
  yield* into(a.gv, call('attention.gv', p.key, () => ({
    source: gvKernel, output: [d, nkv, B * S], constants: p.constants,
    argumentTypes: { q: 'Input', k: 'Input', gout: 'Input', lse: 'Input', docs: 'Input', qOffset: 'Integer', scale: 'Float' },
  }), [p.q, p.k, gout, lse, p.docs, a.qOffset, a.scale]));
}

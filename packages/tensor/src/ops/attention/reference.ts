import type { AttentionArgs, AttentionBackwardArgs } from './args';

/** Is key s visible from query t of sequence b? Causal plus the optional document mask. */
function visible(a: AttentionArgs, b: number, t: number, s: number): boolean {
  if (s > a.qOffset + t) return false;
  return a.docQ === undefined || a.docK![b * a.S + s] === a.docQ[b * a.T + t];
}

/**
 * Streaming-softmax attention: for every (b, t, h) one pass over the keys keeps the running max m,
 * the running normaliser l and the running weighted sum of values, so no T×S matrix exists.
 */
export function attention(a: AttentionArgs): void {
  const { B, T, S, nh, nkv, d, q, k, v, scale, out, lse } = a;
  const rep = nh / nkv;
  const acc = new Float64Array(d);
  for (let b = 0; b < B; b++) {
    for (let t = 0; t < T; t++) {
      const sMax = Math.min(S - 1, a.qOffset + t);
      for (let h = 0; h < nh; h++) {
        const g = Math.floor(h / rep);
        const qo = ((b * T + t) * nh + h) * d;
        let m = -Infinity, l = 0;
        acc.fill(0);
        for (let s = 0; s <= sMax; s++) {
          if (!visible(a, b, t, s)) continue;
          const ko = ((b * S + s) * nkv + g) * d;
          let dot = 0;
          for (let e = 0; e < d; e++) dot += q[qo + e]! * k[ko + e]!;
          const score = dot * scale;
          if (score > m) {
            const c = Math.exp(m - score);
            l *= c;
            for (let e = 0; e < d; e++) acc[e]! *= c;
            m = score;
          }
          const p = Math.exp(score - m);
          l += p;
          for (let e = 0; e < d; e++) acc[e]! += p * v[ko + e]!;
        }
        const oo = ((b * T + t) * nh + h) * d;
        if (l === 0) {
          // A query that sees no key (only possible with a document mask that hides its own position).
          for (let e = 0; e < d; e++) out[oo + e] = 0;
          lse[(b * nh + h) * T + t] = -Infinity;
          continue;
        }
        for (let e = 0; e < d; e++) out[oo + e] = acc[e]! / l;
        lse[(b * nh + h) * T + t] = m + Math.log(l);
      }
    }
  }
}

/** Backward of `attention`, recomputing p = exp(score - lse) key by key. */
export function attentionBackward(a: AttentionBackwardArgs): void {
  const { B, T, S, nh, nkv, d, q, k, v, scale, out, lse, gout, gq, gk, gv } = a;
  const rep = nh / nkv;
  gq.fill(0); gk.fill(0); gv.fill(0);
  for (let b = 0; b < B; b++) {
    for (let t = 0; t < T; t++) {
      const sMax = Math.min(S - 1, a.qOffset + t);
      for (let h = 0; h < nh; h++) {
        const L = lse[(b * nh + h) * T + t]!;
        if (L === -Infinity) continue;
        const g = Math.floor(h / rep);
        const qo = ((b * T + t) * nh + h) * d;
        let D = 0;
        for (let e = 0; e < d; e++) D += gout[qo + e]! * out[qo + e]!;
        for (let s = 0; s <= sMax; s++) {
          if (!visible(a, b, t, s)) continue;
          const ko = ((b * S + s) * nkv + g) * d;
          let dot = 0, dp = 0;
          for (let e = 0; e < d; e++) { dot += q[qo + e]! * k[ko + e]!; dp += gout[qo + e]! * v[ko + e]!; }
          const p = Math.exp(dot * scale - L);
          const ds = p * (dp - D) * scale;
          for (let e = 0; e < d; e++) {
            gv[ko + e]! += p * gout[qo + e]!;
            gq[qo + e]! += ds * k[ko + e]!;
            gk[ko + e]! += ds * q[qo + e]!;
          }
        }
      }
    }
  }
}

/**
 * Attention as WGSL kernels of the webgpu device, FlashAttention-2 style: every score q·k is
 * computed once per pass (never once per output element), in tiles of 16 queries × 16 keys held
 * in workgroup memory, with the softmax streamed over key tiles.
 *
 * - Forward: a 256-thread workgroup per (batch, head, 16 queries): thread (row, lane) scores key
 *   `lane` of the tile for query `row`, then updates the running max, normaliser and its d/16
 *   output dimensions from the tile's 16 scores. Writes out and lse.
 * - Backward: D = Σ gout·out per query (and lse beside it, one buffer), then a workgroup per
 *   (batch, kv head, 16 keys) accumulating dK and dV over every query (and every query head of
 *   the group) that sees the keys, and a workgroup per (batch, head, 16 queries) accumulating dQ
 *   over the keys: p = exp(score − lse) and ds = p·(dp − D)·scale recomputed in each.
 * Causal (key s visible from query t iff s ≤ qOffset + t), GQA, optional document ids.
 */
import { ShapeError } from '../../errors';
import type { I32 } from '../../arrays';
import type { WebgpuContext } from '../../webgpu/kernel';
import type { Binding } from '../../webgpu/runtime';
import { MATH, params, wgsl } from '../../webgpu/wgsl';
import type { AttentionArgs, AttentionBackwardArgs } from './args';

const ATT = params(['B', 'u32'], ['T', 'u32'], ['S', 'u32'], ['nh', 'u32'], ['nkv', 'u32'], ['d', 'u32'], ['scale', 'f32'], ['qOffset', 'u32'], ['docs', 'u32']);

/** Largest head dimension (16 lanes × 16 dimensions each). */
export const ATTENTION_MAX_D = 256;

/** Dimensions per lane: d/16 rounded up (the text is specialised by it, so head sizes share kernels). */
const lanesFor = (d: number): number => Math.ceil(d / 16);

/** WGSL: the visibility of key s from query t of batch b (causal, in range, same document). */
const VISIBLE = `fn visible(b: u32, t: u32, s: u32) -> bool {
  if (t >= p.T || s >= p.S || s > p.qOffset + t) { return false; }
  if (p.docs == 0u) { return true; }
  return docs[b * p.T + t] == docs[p.B * p.T + b * p.S + s];
}
`;

function checkArgs(op: string, a: AttentionArgs): void {
  const { B, T, S, nh, nkv, d } = a;
  if (nkv === 0 || nh % nkv !== 0 || d > ATTENTION_MAX_D) throw new ShapeError(`${op}: ${nh} heads, ${nkv} kv heads, d = ${d} (at most ${ATTENTION_MAX_D})`);
  for (const [name, arr, n] of [['q', a.q, B * T * nh * d], ['k', a.k, B * S * nkv * d], ['v', a.v, B * S * nkv * d], ['out', a.out, B * T * nh * d], ['lse', a.lse, B * nh * T]] as const) {
    if (arr.length !== n) throw new ShapeError(`${op}: ${name} has ${arr.length} elements, expected ${n}`);
  }
  if (a.docQ !== undefined && (a.docQ.length !== B * T || a.docK === undefined || a.docK.length !== B * S)) throw new ShapeError(`${op}: document ids must be [B, T] and [B, S]`);
}

/** The document ids of queries then keys in one buffer (a kernel binds few buffers), or a stand-in. */
function docsOf(a: AttentionArgs): I32 {
  if (a.docQ === undefined) return NO_DOCS;
  const docs = new Int32Array(a.docQ.length + a.docK!.length);
  docs.set(a.docQ);
  docs.set(a.docK!, a.docQ.length);
  return docs;
}
const NO_DOCS = new Int32Array(1);

function attParams(a: AttentionArgs): Uint32Array {
  return ATT.pack({ B: a.B, T: a.T, S: a.S, nh: a.nh, nkv: a.nkv, d: a.d, scale: a.scale, qOffset: a.qOffset, docs: a.docQ === undefined ? 0 : 1 });
}

function forwardSource(L: number): string {
  return `${MATH}${VISIBLE}
var<workgroup> Qs: array<f32, ${16 * 16 * L}>;
var<workgroup> Ks: array<f32, ${16 * 16 * L}>;
var<workgroup> Sc: array<f32, 256>;
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let qt = wid.x; let h = wid.y; let b = wid.z;
  let r = li / 16u; let lane = li % 16u;
  let t = qt * 16u + r;
  let g = h / (p.nh / p.nkv);
  let D = p.d;
  let DP = ${16 * L}u;
  // Stage the 16 query rows of the tile.
  for (var c = 0u; c < ${L}u; c = c + 1u) {
    let e = lane + 16u * c;
    Qs[r * DP + e] = select(0.0, q[((b * p.T + t) * p.nh + h) * D + e], t < p.T && e < D);
  }
  var o: array<f32, ${L}>;
  var m = ninf_();
  var l = 0.0;
  let lastKey = min(p.S, p.qOffset + min(qt * 16u + 16u, p.T));
  for (var k0 = 0u; k0 < lastKey; k0 = k0 + 16u) {
    let s = k0 + r;
    for (var c = 0u; c < ${L}u; c = c + 1u) {
      let e = lane + 16u * c;
      Ks[r * DP + e] = select(0.0, k[((b * p.S + s) * p.nkv + g) * D + e], s < p.S && e < D);
    }
    workgroupBarrier();
    let key = k0 + lane;
    var z = ninf_();
    if (visible(b, t, key)) {
      var dot = 0.0;
      for (var e = 0u; e < D; e = e + 1u) { dot = dot + Qs[r * DP + e] * Ks[lane * DP + e]; }
      z = dot * p.scale;
    }
    Sc[r * 16u + lane] = z;
    workgroupBarrier();
    var mt = m;
    for (var j = 0u; j < 16u; j = j + 1u) { mt = max(mt, Sc[r * 16u + j]); }
    if (mt > ninf_()) {
      let alpha = exp_(m - mt);
      l = l * alpha;
      for (var c = 0u; c < ${L}u; c = c + 1u) { o[c] = o[c] * alpha; }
      for (var j = 0u; j < 16u; j = j + 1u) {
        let zj = Sc[r * 16u + j];
        if (zj == ninf_()) { continue; }
        let pj = exp_(zj - mt);
        l = l + pj;
        let vo = ((b * p.S + k0 + j) * p.nkv + g) * D;
        for (var c = 0u; c < ${L}u; c = c + 1u) {
          let e = lane + 16u * c;
          if (e < D) { o[c] = o[c] + pj * v[vo + e]; }
        }
      }
      m = mt;
    }
    workgroupBarrier();
  }
  if (t >= p.T) { return; }
  let oo = ((b * p.T + t) * p.nh + h) * D;
  for (var c = 0u; c < ${L}u; c = c + 1u) {
    let e = lane + 16u * c;
    if (e < D) { out[oo + e] = select(o[c] / l, 0.0, l == 0.0); }
  }
  if (lane == 0u) { lse[(b * p.nh + h) * p.T + t] = select(m + log_(l), ninf_(), l == 0.0); }
}
`;
}

/** Causal (GQA, document-masked) attention forward: out and lse. */
export function attention(ctx: WebgpuContext, a: AttentionArgs): void {
  checkArgs('attention', a);
  if (a.B * a.T * a.nh === 0) return;
  const L = lanesFor(a.d), st = ctx.st;
  const k = ctx.kernel('attention', String(L), () => wgsl(ATT, [['q', 'r', 'f32'], ['k', 'r', 'f32'], ['v', 'r', 'f32'], ['docs', 'r', 'i32'], ['out', 'w', 'f32'], ['lse', 'w', 'f32']], forwardSource(L)));
  ctx.run(k, attParams(a), [st.input(a.q, 'queries'), st.input(a.k, 'keys'), st.input(a.v, 'values'), st.input(docsOf(a), 'document ids'),
    st.output(a.out, 'attention'), st.output(a.lse, 'log-sum-exp')], [Math.ceil(a.T / 16), a.nh, a.B]);
}

/** stats[2i] = lse_i, stats[2i + 1] = D_i = Σ_e gout·out of query-head i ([B, nh, T] order). */
const DELTA = `@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let i = wid.x * 256u + li;
  if (i >= p.B * p.nh * p.T) { return; }
  let t = i % p.T;
  let h = (i / p.T) % p.nh;
  let b = i / (p.T * p.nh);
  let o = ((b * p.T + t) * p.nh + h) * p.d;
  var s = 0.0;
  for (var e = 0u; e < p.d; e = e + 1u) { s = s + gout[o + e] * out[o + e]; }
  stats[2u * i] = lse[i];
  stats[2u * i + 1u] = s;
}
`;

function gradKVSource(L: number): string {
  return `${MATH}${VISIBLE}
var<workgroup> Qs: array<f32, ${16 * 16 * L}>;
var<workgroup> Gs: array<f32, ${16 * 16 * L}>;
var<workgroup> Ps: array<f32, 256>;
var<workgroup> DSs: array<f32, 256>;
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let kt = wid.x; let g = wid.y; let b = wid.z;
  let j = li / 16u; let lane = li % 16u;
  let s = kt * 16u + j;
  let rep = p.nh / p.nkv;
  let D = p.d;
  let DP = ${16 * L}u;
  let ko = ((b * p.S + s) * p.nkv + g) * D;
  var dk: array<f32, ${L}>;
  var dv: array<f32, ${L}>;
  // The first query that sees any key of this tile (causal: t ≥ kt·16 − qOffset).
  let first = select(0u, kt * 16u - p.qOffset, kt * 16u > p.qOffset);
  for (var hh = 0u; hh < rep; hh = hh + 1u) {
    let h = g * rep + hh;
    for (var t0 = (first / 16u) * 16u; t0 < p.T; t0 = t0 + 16u) {
      // Stage 16 query rows and their output gradients (row j of the tile into slot j).
      let tr = t0 + j;
      for (var c = 0u; c < ${L}u; c = c + 1u) {
        let e = lane + 16u * c;
        let ok = tr < p.T && e < D;
        let qo = ((b * p.T + tr) * p.nh + h) * D + e;
        Qs[j * DP + e] = select(0.0, q[qo], ok);
        Gs[j * DP + e] = select(0.0, gout[qo], ok);
      }
      workgroupBarrier();
      // Thread (j, lane): key j of the tile against query t0 + lane.
      let t = t0 + lane;
      var pv = 0.0;
      var ds = 0.0;
      if (visible(b, t, s)) {
        var dot = 0.0;
        var dp = 0.0;
        for (var e = 0u; e < D; e = e + 1u) {
          dot = dot + Qs[lane * DP + e] * k[ko + e];
          dp = dp + Gs[lane * DP + e] * v[ko + e];
        }
        let si = 2u * ((b * p.nh + h) * p.T + t);
        pv = exp_(dot * p.scale - stats[si]);
        ds = pv * (dp - stats[si + 1u]) * p.scale;
      }
      Ps[j * 16u + lane] = pv;
      DSs[j * 16u + lane] = ds;
      workgroupBarrier();
      for (var i = 0u; i < 16u; i = i + 1u) {
        let pi = Ps[j * 16u + i];
        let di = DSs[j * 16u + i];
        for (var c = 0u; c < ${L}u; c = c + 1u) {
          let e = lane + 16u * c;
          dv[c] = dv[c] + pi * Gs[i * DP + e];
          dk[c] = dk[c] + di * Qs[i * DP + e];
        }
      }
      workgroupBarrier();
    }
  }
  if (s >= p.S) { return; }
  for (var c = 0u; c < ${L}u; c = c + 1u) {
    let e = lane + 16u * c;
    if (e < D) { gk[ko + e] = dk[c]; gv[ko + e] = dv[c]; }
  }
}
`;
}

function gradQSource(L: number): string {
  return `${MATH}${VISIBLE}
var<workgroup> Ks: array<f32, ${16 * 16 * L}>;
var<workgroup> Vs: array<f32, ${16 * 16 * L}>;
var<workgroup> DSs: array<f32, 256>;
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let qt = wid.x; let h = wid.y; let b = wid.z;
  let r = li / 16u; let lane = li % 16u;
  let t = qt * 16u + r;
  let g = h / (p.nh / p.nkv);
  let D = p.d;
  let DP = ${16 * L}u;
  let qo = ((b * p.T + t) * p.nh + h) * D;
  let si = 2u * ((b * p.nh + h) * p.T + t);
  let L_ = select(0.0, stats[si], t < p.T);
  let Dt = select(0.0, stats[si + 1u], t < p.T);
  var dq: array<f32, ${L}>;
  let lastKey = min(p.S, p.qOffset + min(qt * 16u + 16u, p.T));
  for (var k0 = 0u; k0 < lastKey; k0 = k0 + 16u) {
    let s = k0 + r;
    for (var c = 0u; c < ${L}u; c = c + 1u) {
      let e = lane + 16u * c;
      let ok = s < p.S && e < D;
      let ko = ((b * p.S + s) * p.nkv + g) * D + e;
      Ks[r * DP + e] = select(0.0, k[ko], ok);
      Vs[r * DP + e] = select(0.0, v[ko], ok);
    }
    workgroupBarrier();
    let key = k0 + lane;
    var ds = 0.0;
    if (visible(b, t, key)) {
      var dot = 0.0;
      var dp = 0.0;
      for (var e = 0u; e < D; e = e + 1u) {
        dot = dot + q[qo + e] * Ks[lane * DP + e];
        dp = dp + gout[qo + e] * Vs[lane * DP + e];
      }
      let pv = exp_(dot * p.scale - L_);
      ds = pv * (dp - Dt) * p.scale;
    }
    DSs[r * 16u + lane] = ds;
    workgroupBarrier();
    for (var j = 0u; j < 16u; j = j + 1u) {
      let dj = DSs[r * 16u + j];
      for (var c = 0u; c < ${L}u; c = c + 1u) { dq[c] = dq[c] + dj * Ks[j * DP + lane + 16u * c]; }
    }
    workgroupBarrier();
  }
  if (t >= p.T) { return; }
  for (var c = 0u; c < ${L}u; c = c + 1u) {
    let e = lane + 16u * c;
    if (e < D) { gq[qo + e] = dq[c]; }
  }
}
`;
}

/** Attention backward: gq, gk, gv (overwritten) from the forward's out and lse. */
export function attentionBackward(ctx: WebgpuContext, a: AttentionBackwardArgs): void {
  checkArgs('attentionBackward', a);
  for (const [name, arr, n] of [['gout', a.gout, a.out.length], ['gq', a.gq, a.q.length], ['gk', a.gk, a.k.length], ['gv', a.gv, a.v.length]] as const) {
    if (arr.length !== n) throw new ShapeError(`attentionBackward: ${name} has ${arr.length} elements, expected ${n}`);
  }
  const st = ctx.st, L = lanesFor(a.d), P = attParams(a);
  const rows = a.B * a.nh * a.T;
  if (a.B * a.S * a.nkv > 0 && rows === 0) {
    for (const g of [a.gk, a.gv]) { const o = st.output(g, 'gradient'); ctx.rt.clear(o.id, o.offset, 4 * g.length); }
    return;
  }
  if (rows === 0) return;
  const q = st.input(a.q, 'queries'), kk = st.input(a.k, 'keys'), v = st.input(a.v, 'values'), gout = st.input(a.gout, 'gradient');
  const docs = st.input(docsOf(a), 'document ids');
  const stats: Binding = st.temp(8 * rows, 'attention statistics');
  const kd = ctx.kernel('attentionBackward.delta', '', () => wgsl(ATT, [['out', 'r', 'f32'], ['gout', 'r', 'f32'], ['lse', 'r', 'f32'], ['stats', 'w', 'f32']], DELTA));
  ctx.run(kd, P, [st.input(a.out, 'attention'), gout, st.input(a.lse, 'log-sum-exp'), stats], [Math.ceil(rows / 256), 1, 1]);
  if (a.S > 0) {
    const kkv = ctx.kernel('attentionBackward.kv', String(L), () => wgsl(ATT,
      [['q', 'r', 'f32'], ['k', 'r', 'f32'], ['v', 'r', 'f32'], ['gout', 'r', 'f32'], ['stats', 'r', 'f32'], ['docs', 'r', 'i32'], ['gk', 'w', 'f32'], ['gv', 'w', 'f32']], gradKVSource(L)));
    ctx.run(kkv, P, [q, kk, v, gout, stats, docs, st.output(a.gk, 'gradient'), st.output(a.gv, 'gradient')], [Math.ceil(a.S / 16), a.nkv, a.B]);
  }
  const kq = ctx.kernel('attentionBackward.q', String(L), () => wgsl(ATT,
    [['q', 'r', 'f32'], ['k', 'r', 'f32'], ['v', 'r', 'f32'], ['gout', 'r', 'f32'], ['stats', 'r', 'f32'], ['docs', 'r', 'i32'], ['gq', 'w', 'f32']], gradQSource(L)));
  ctx.run(kq, P, [q, kk, v, gout, stats, docs, st.output(a.gq, 'gradient')], [Math.ceil(a.T / 16), a.nh, a.B]);
}

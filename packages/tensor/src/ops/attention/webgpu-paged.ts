/**
 * Paged attention as WGSL kernels of the webgpu device: flash-decoding over the device's KV arena.
 *
 * A sequence's keys and values stay where `copyInto` wrote them, in the layer's arena buffer, at
 * the slots its block table lists; the table (one i32 per block) goes up only when it changes,
 * once per `blockSize` tokens. The query rows (t, h) of a kv head's group share every key and
 * value read. The keys are cut into splits of `SPLIT` keys, each split a workgroup of four query
 * rows: thread (row, key) scores one key of a 64-key tile, then each row's 64 lanes update the
 * running max, normaliser and its output dimensions from the tile. A second kernel merges the
 * splits' partial (max, sum, output). Shapes and positions are uniform parameters: decoding across
 * a block boundary, or any number of tokens, builds no pipeline.
 */
import { DTypeError, ShapeError } from '../../errors';
import type { WebgpuContext } from '../../webgpu/kernel';
import type { Binding } from '../../webgpu/runtime';
import { MATH, params, wgsl } from '../../webgpu/wgsl';
import type { PagedAttentionArgs } from './args';

/** Keys per split (a multiple of the 64-key tile). */
export const SPLIT = 128;

const PAGED = params(['T', 'u32'], ['nh', 'u32'], ['nkv', 'u32'], ['d', 'u32'], ['scale', 'f32'], ['qOffset', 'u32'], ['S', 'u32'],
  ['bs', 'u32'], ['row', 'u32'], ['slotStride', 'u32'], ['keyOff', 'u32'], ['valueOff', 'u32'], ['splits', 'u32'], ['rows', 'u32']);

function partialSource(L: number): string {
  return `${MATH}
var<workgroup> Sc: array<f32, 256>;
fn base(s: u32, g: u32) -> u32 { return u32(table[s / p.bs]) * p.slotStride + (s % p.bs) * p.row + g * p.d; }
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let sp = wid.x; let g = wid.z;
  let r = li / 64u; let j = li % 64u;
  let rep = p.nh / p.nkv;
  let ri = wid.y * 4u + r;
  let live = ri < p.rows;
  let t = ri / rep;
  let h = g * rep + ri % rep;
  let qo = (t * p.nh + h) * p.d;
  let lastKey = min(p.S, (sp + 1u) * ${SPLIT}u);
  var o: array<f32, ${L}>;
  var m = ninf_();
  var l = 0.0;
  for (var k0 = sp * ${SPLIT}u; k0 < lastKey; k0 = k0 + 64u) {
    let key = k0 + j;
    var z = ninf_();
    if (live && key < p.S && key <= p.qOffset + t) {
      let kb = base(key, g) + p.keyOff;
      var dot = 0.0;
      for (var e = 0u; e < p.d; e = e + 1u) { dot = dot + q[qo + e] * kv[kb + e]; }
      z = dot * p.scale;
    }
    Sc[r * 64u + j] = z;
    workgroupBarrier();
    var mt = m;
    for (var i = 0u; i < 64u; i = i + 1u) { mt = max(mt, Sc[r * 64u + i]); }
    if (mt > ninf_()) {
      let alpha = exp_(m - mt);
      l = l * alpha;
      for (var c = 0u; c < ${L}u; c = c + 1u) { o[c] = o[c] * alpha; }
      for (var i = 0u; i < 64u; i = i + 1u) {
        let zi = Sc[r * 64u + i];
        if (zi == ninf_()) { continue; }
        let pi = exp_(zi - mt);
        l = l + pi;
        let vb = base(k0 + i, g) + p.valueOff;
        for (var c = 0u; c < ${L}u; c = c + 1u) {
          let e = j + 64u * c;
          if (e < p.d) { o[c] = o[c] + pi * kv[vb + e]; }
        }
      }
      m = mt;
    }
    workgroupBarrier();
  }
  if (!live) { return; }
  let po = ((g * p.rows + ri) * p.splits + sp) * (p.d + 2u);
  for (var c = 0u; c < ${L}u; c = c + 1u) {
    let e = j + 64u * c;
    if (e < p.d) { part[po + e] = o[c]; }
  }
  if (j == 0u) { part[po + p.d] = m; part[po + p.d + 1u] = l; }
}
`;
}

const COMBINE = `${MATH}
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let i = wid.x * 256u + li;
  if (i >= p.nkv * p.rows * p.d) { return; }
  let e = i % p.d;
  let ri = (i / p.d) % p.rows;
  let g = i / (p.d * p.rows);
  let rep = p.nh / p.nkv;
  let t = ri / rep;
  let h = g * rep + ri % rep;
  let pb = (g * p.rows + ri) * p.splits;
  var m = ninf_();
  for (var sp = 0u; sp < p.splits; sp = sp + 1u) { m = max(m, part[(pb + sp) * (p.d + 2u) + p.d]); }
  var l = 0.0;
  var o = 0.0;
  if (m > ninf_()) {
    for (var sp = 0u; sp < p.splits; sp = sp + 1u) {
      let po = (pb + sp) * (p.d + 2u);
      let ms = part[po + p.d];
      if (ms == ninf_()) { continue; }
      let w = exp_(ms - m);
      l = l + w * part[po + p.d + 1u];
      o = o + w * part[po + e];
    }
  }
  out[(t * p.nh + h) * p.d + e] = select(o / l, 0.0, l == 0.0);
}
`;

/** Block tables by content, so that an unchanged table is the same array (uploaded once). */
const tables = new WeakMap<WebgpuContext, Map<string, Int32Array>>();
const TABLE_CACHE = 256;

function tableOf(ctx: WebgpuContext, slots: readonly number[]): Int32Array {
  let m = tables.get(ctx);
  if (m === undefined) { m = new Map(); tables.set(ctx, m); }
  const key = slots.join(',');
  let t = m.get(key);
  if (t !== undefined) { m.delete(key); m.set(key, t); return t; }
  t = Int32Array.from(slots);
  m.set(key, t);
  if (m.size > TABLE_CACHE) m.delete(m.keys().next().value as string);
  return t;
}

/** Attention of T new query rows over paged keys and values (see `PagedAttentionArgs`). */
export function pagedAttention(ctx: WebgpuContext, a: PagedAttentionArgs): void {
  const { T, nh, d, kv } = a, nkv = kv.heads, row = nkv * d, bs = kv.blockSize, S = a.qOffset + T;
  if (kv.dtype === 'f16') throw new DTypeError('pagedAttention: f16 KV pages are read on the cpu device (keep an f32 cache on webgpu)');
  if (nh % nkv !== 0 || a.q.length !== T * nh * d || a.out.length !== T * nh * d || S > kv.length || kv.blocks.length * bs < S) {
    throw new ShapeError(`pagedAttention: q [${T}, ${nh}, ${d}] over ${kv.length} tokens of ${nkv} heads in ${kv.blocks.length} blocks of ${bs} (qOffset ${a.qOffset})`);
  }
  if (T === 0) return;
  const st = ctx.st, nb = Math.ceil(S / bs);
  // The layer's buffer of the arena the blocks live in, when they are KV storage of one layout
  // whose keys and values are those of one layer; otherwise (pages held elsewhere) the pages are
  // gathered on the device into a temporary arena of this call.
  let source: Binding, slots: number[], slotStride: number, keyOff: number, valueOff: number;
  const first = kv.blocks[0]!;
  const placed = nb > 0 ? st.kvSlot(first) : null;
  const layout = placed?.arena.layout;
  const layer = layout ? kv.keys / (2 * bs * row) : -1;
  if (placed && layout && layout.blockSize === bs && layout.rowSize === row && Number.isInteger(layer) && layer < layout.layers && kv.values === kv.keys + bs * row) {
    slots = kv.blocks.slice(0, nb).map((b) => {
      const s = st.kvSlot(b);
      if (s === null || s.arena !== placed.arena) throw new ShapeError('pagedAttention: the pages are not KV blocks of one layout');
      return s.slot;
    });
    source = placed.arena.binding(layer);
    slotStride = 2 * bs * row; keyOff = 0; valueOff = bs * row;
  } else {
    const span = bs * row * 4, tmp = st.temp(2 * nb * span, 'gathered KV pages');
    for (let b = 0; b < nb; b++) {
      const blk = kv.blocks[b]!;
      const k = st.copyRange(blk.subarray(kv.keys, kv.keys + bs * row), false, 'KV pages'), v = st.copyRange(blk.subarray(kv.values, kv.values + bs * row), false, 'KV pages');
      ctx.rt.copy(k.id, k.offset, tmp.id, 2 * b * span, span);
      ctx.rt.copy(v.id, v.offset, tmp.id, (2 * b + 1) * span, span);
    }
    source = tmp; slots = Array.from({ length: nb }, (_, b) => b);
    slotStride = 2 * bs * row; keyOff = 0; valueOff = bs * row;
  }
  const rep = nh / nkv, rows = T * rep, splits = Math.max(1, Math.ceil(S / SPLIT)), L = Math.ceil(d / 64);
  const P = PAGED.pack({ T, nh, nkv, d, scale: a.scale, qOffset: a.qOffset, S, bs, row, slotStride, keyOff, valueOff, splits, rows });
  const part = st.temp(4 * nkv * rows * splits * (d + 2), 'attention partials');
  const k1 = ctx.kernel('pagedAttention', String(L), () => wgsl(PAGED, [['q', 'r', 'f32'], ['table', 'r', 'i32'], ['kv', 'r', 'f32'], ['part', 'w', 'f32']], partialSource(L)));
  ctx.run(k1, P, [st.input(a.q, 'queries'), st.input(tableOf(ctx, slots), 'block table'), source, part], [splits, Math.ceil(rows / 4), nkv]);
  const k2 = ctx.kernel('pagedAttention.combine', '', () => wgsl(PAGED, [['part', 'r', 'f32'], ['out', 'w', 'f32']], COMBINE));
  ctx.run(k2, P, [part, st.output(a.out, 'attention')], [Math.ceil((nkv * rows * d) / 256), 1, 1]);
}

/**
 * Choosing tokens on the webgpu device: one workgroup per row of logits, only the token ids go
 * back. Greedy: the first index of the largest logit. A draw: the reference's candidates —
 * top-k, then top-p, then min-p, in order of the scaled logits y = x/T — found as thresholds on
 * y instead of by sorting: each threshold is a bisection over the order-preserving u32 keys of the
 * float32 values (32 passes over the row, each a count or a sum of exp(y − max) reduced across
 * the workgroup), and the drawn token is the one where the descending cumulative mass passes
 * u·z, found the same way. Logits tied exactly at a threshold count as one candidate group (the
 * reference orders ties by index; the device takes the lowest index of the tie it lands on).
 */
import type { F32, I32 } from '../../arrays';
import type { WebgpuContext } from '../../webgpu/kernel';
import { MATH, params, REDUCE, wgsl } from '../../webgpu/wgsl';
import type { SampleParams } from './args';

const SAMPLE = params(['rows', 'u32'], ['V', 'u32']);

const SOURCE = `${MATH}${REDUCE}
var<workgroup> best_v: array<f32, 256>;
var<workgroup> best_i: array<u32, 256>;
var<workgroup> uni_: array<f32, 5>;
var<workgroup> tot_: f32;
var<workgroup> top_: vec2<f32>;
/** wg_sum as a value the whole workgroup agrees on (uniform control flow may depend on it). */
fn sum_u(v: f32, li: u32) -> f32 {
  let s = wg_sum(v, li);
  if (li == 0u) { tot_ = s; }
  return workgroupUniformLoad(&tot_);
}
fn key(v: f32) -> u32 { let b = bitcast<u32>(v); return select(b | 0x80000000u, ~b, (b >> 31u) == 1u); }
fn unkey(k: u32) -> f32 { return bitcast<f32>(select(~k, k & 0x7fffffffu, (k >> 31u) == 1u)); }
/** Σ over the row of exp(y − m) (mode 0) or 1 (mode 1) for y with key ≥ k. */
fn above(o: u32, li: u32, T: f32, m: f32, k: u32, mode: u32) -> f32 {
  var s = 0.0;
  for (var j = li; j < p.V; j = j + 256u) {
    let y = x[o + j] / T;
    if (key(y) >= k) { s = s + select(exp_(y - m), 1.0, mode == 1u); }
  }
  return sum_u(s, li);
}
/** The largest key K ≥ lo with above(K) ≥ c (\`strict\`: > c); lo itself when none above it. */
fn bisect(o: u32, li: u32, T: f32, m: f32, lo0: u32, c: f32, mode: u32, strict: bool) -> u32 {
  var lo = lo0;
  var hi = 0xffffffffu;
  for (var it = 0u; it < 32u; it = it + 1u) {
    if (lo >= hi) { break; }
    let mid = lo + (hi - lo) / 2u + 1u;
    let s = above(o, li, T, m, mid, mode);
    if ((strict && s > c) || (!strict && s >= c)) { lo = mid; } else { hi = mid - 1u; }
  }
  return lo;
}
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let row = wid.x;
  let o = row * p.V;
  if (li < 5u) { uni_[li] = pr[5u * row + li]; }
  let pv = workgroupUniformLoad(&uni_);
  let T = pv[0];
  let topK = u32(pv[1]);
  let topP = pv[2];
  let minP = pv[3];
  let u = pv[4];
  // The first largest value of y (= x for greedy) and its index.
  var bv = ninf_();
  var bi = 0u;
  for (var j = li; j < p.V; j = j + 256u) {
    let y = select(x[o + j] / T, x[o + j], T == 0.0);
    if (y > bv) { bv = y; bi = j; }
  }
  best_v[li] = bv;
  best_i[li] = bi;
  workgroupBarrier();
  for (var s = 128u; s > 0u; s = s >> 1u) {
    if (li < s) {
      let v2 = best_v[li + s];
      let i2 = best_i[li + s];
      if (v2 > best_v[li] || (v2 == best_v[li] && i2 < best_i[li])) { best_v[li] = v2; best_i[li] = i2; }
    }
    workgroupBarrier();
  }
  if (li == 0u) { top_ = vec2<f32>(best_v[0], bitcast<f32>(best_i[0])); }
  let tv = workgroupUniformLoad(&top_);
  let m = tv.x;
  let mi = bitcast<u32>(tv.y);
  if (T == 0.0) {
    if (li == 0u) { out[row] = i32(mi); }
    return;
  }
  var tk = 0u;
  if (topK > 0u && topK < p.V) { tk = bisect(o, li, T, m, 0u, f32(topK), 1u, false); }
  let zk = above(o, li, T, m, tk, 0u);
  var tp = tk;
  if (topP < 1.0) { tp = bisect(o, li, T, m, tk, topP * zk, 0u, false); }
  var t = tp;
  if (minP > 0.0) { t = max(t, key(m + log_(minP))); }
  t = min(t, key(m));
  let z = above(o, li, T, m, t, 0u);
  let ts = bisect(o, li, T, m, t, u * z, 0u, true);
  // The lowest index whose scaled logit has the key the draw landed on.
  var idx = 0xffffffffu;
  for (var j = li; j < p.V; j = j + 256u) { if (key(x[o + j] / T) == ts) { idx = min(idx, j); } }
  best_i[li] = idx;
  workgroupBarrier();
  for (var s = 128u; s > 0u; s = s >> 1u) {
    if (li < s) { best_i[li] = min(best_i[li], best_i[li + s]); }
    workgroupBarrier();
  }
  if (li == 0u) { out[row] = i32(select(best_i[0], mi, best_i[0] == 0xffffffffu)); }
}
`;

/** Per-row parameter arrays by content, so that unchanged parameters (greedy decoding) are one array (uploaded once). */
const paramArrays = new WeakMap<WebgpuContext, Map<string, Float32Array>>();

function paramsOf(ctx: WebgpuContext, ps: readonly SampleParams[]): Float32Array {
  let m = paramArrays.get(ctx);
  if (m === undefined) { m = new Map(); paramArrays.set(ctx, m); }
  const a = Float32Array.from(ps.flatMap((p) => [p.temperature, p.topK, p.topP, p.minP, p.temperature === 0 ? 0 : p.u]));
  const k = Array.from(a).join(',');
  const have = m.get(k);
  if (have !== undefined) return have;
  m.set(k, a);
  if (m.size > 64) m.delete(m.keys().next().value as string);
  return a;
}

/** out[r] = the token of row r (the ids come back to the host: one read). */
export function sampleWgsl(ctx: WebgpuContext, logits: F32, rows: number, V: number, ps: readonly SampleParams[], out: I32): void {
  if (rows === 0) return;
  const k = ctx.kernel('sample', '', () => wgsl(SAMPLE, [['x', 'r', 'f32'], ['pr', 'r', 'f32'], ['out', 'w', 'i32']], SOURCE));
  ctx.run(k, SAMPLE.pack({ rows, V }), [ctx.st.input(logits, 'logits'), ctx.st.input(paramsOf(ctx, ps), 'sampling parameters'), ctx.st.output(out, 'tokens')], [rows, 1, 1]);
  ctx.st.hostRead(out);
}

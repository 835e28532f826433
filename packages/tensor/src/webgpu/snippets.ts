/** The WGSL snippets kernels share: the grid index, the 1-D and per-row entry points, workgroup reductions. */

/** The workgroup index of a 1-D grid laid out as x + y·(workgroups in x) (see `WebgpuContext.grid`). */
export const GROUP_INDEX = 'fn group_index(wid: vec3<u32>, nwg: vec3<u32>) -> u32 { return wid.x + wid.y * nwg.x; }\n';

/** The index of this thread in a 1-D grid of 256-thread workgroups. */
export const MAIN_1D = `${GROUP_INDEX}
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let i = group_index(wid, nwg) * 256u + li;
  if (i >= p.n) { return; }
`;

/**
 * Workgroup reductions of one f32 per thread, in two levels (16 threads each add 16 values in
 * order, then every thread adds those 16 sums in order): the same order on every run, and three
 * barriers where a tree takes nine (barriers are what a CPU implementation such as SwiftShader
 * pays most for).
 */
export const REDUCE = /* wgsl */ `
var<workgroup> red_: array<f32, 256>;
var<workgroup> red2_: array<f32, 16>;
fn wg_sum(v: f32, li: u32) -> f32 {
  red_[li] = v;
  workgroupBarrier();
  if (li < 16u) {
    var s = 0.0;
    for (var j = 0u; j < 16u; j = j + 1u) { s = s + red_[li * 16u + j]; }
    red2_[li] = s;
  }
  workgroupBarrier();
  var r = 0.0;
  for (var j = 0u; j < 16u; j = j + 1u) { r = r + red2_[j]; }
  workgroupBarrier();
  return r;
}
fn wg_max(v: f32, li: u32) -> f32 {
  red_[li] = v;
  workgroupBarrier();
  if (li < 16u) {
    var s = red_[li * 16u];
    for (var j = 1u; j < 16u; j = j + 1u) { s = max(s, red_[li * 16u + j]); }
    red2_[li] = s;
  }
  workgroupBarrier();
  var r = red2_[0];
  for (var j = 1u; j < 16u; j = j + 1u) { r = max(r, red2_[j]); }
  workgroupBarrier();
  return r;
}
`;


/** The entry point of a kernel with one 256-thread workgroup per row of `p.n` elements (`row`, `li`, `o` its first element; `p.rows` rows). */
export const ROW_MAIN = `${GROUP_INDEX}
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let row = group_index(wid, nwg);
  if (row >= p.rows) { return; }
  let o = row * p.n;
`;

/** In a ROW_MAIN kernel reading row `x`: `m` ← the row's max. */
export const ROW_MAX = `  var m = ninf_();
  for (var j = li; j < p.n; j = j + 256u) { m = max(m, x[o + j]); }
  m = wg_max(m, li);
`;

/** In a ROW_MAIN kernel after ROW_MAX: `s` ← Σ exp_(x − m) over the row. */
export const ROW_EXP_SUM = `  var s = 0.0;
  for (var j = li; j < p.n; j = j + 256u) { s = s + exp_(x[o + j] - m); }
  s = wg_sum(s, li);
`;

/**
 * Embedding gather and its backward, and rotary position embedding on a device table of angles.
 */
import { ShapeError } from '../../errors';
import type { F32, I32 } from '../../kernels/types';
import { GROUP_INDEX, params, wgsl, type WebgpuContext } from '../kernel';
import { MAIN_1D } from './elementwise';

const EMB = params(['n', 'u32'], ['H', 'u32'], ['V', 'u32']);

/** out[t, :] = table[ids[t], :] (an id outside [0, V) reads row 0; the op checks ids first). */
export function embedding(ctx: WebgpuContext, ids: I32, table: F32, H: number, out: F32): void {
  const n = ids.length * H;
  if (out.length !== n || H === 0 || table.length % H !== 0) throw new ShapeError(`embedding: table of ${table.length} elements, H = ${H}, ${ids.length} ids, out of ${out.length}`);
  if (n === 0) return;
  const k = ctx.kernel('embedding', '', () => wgsl(EMB, [['ids', 'r', 'i32'], ['tab', 'r', 'f32'], ['y', 'w', 'f32']],
    `${MAIN_1D}  let t = i / p.H;
  let id = u32(ids[t]);
  y[i] = tab[select(0u, id, id < p.V) * p.H + (i - t * p.H)];
}
`));
  ctx.run(k, EMB.pack({ n, H, V: table.length / H }), [ctx.st.input(ids, 'token ids'), ctx.st.input(table, 'embedding table'), ctx.st.output(out, 'embeddings')],
    ctx.grid(Math.ceil(n / 256)));
}

const EMBB = params(['n', 'u32'], ['H', 'u32'], ['N', 'u32']);

/**
 * gtable[v, :] = Σ gy[t, :] over the tokens t with ids[t] = v, in token order; every cell written
 * (0 for ids that do not occur). The host orders the token positions by id (a stable counting
 * sort of the batch's ids, which it has); each thread (v, j) finds its tokens by binary search.
 */
export function embeddingBackward(ctx: WebgpuContext, ids: I32, gy: F32, H: number, gtable: F32): void {
  const N = ids.length;
  if (gy.length !== N * H || H === 0 || gtable.length % H !== 0) throw new ShapeError(`embeddingBackward: gy of ${gy.length}, ${N} ids, H = ${H}, gtable of ${gtable.length}`);
  const V = gtable.length / H;
  if (gtable.length === 0) return;
  ctx.st.hostRead(ids);
  const count = new Int32Array(V + 1);
  for (let t = 0; t < N; t++) {
    const id = ids[t]!;
    if (!(id >= 0 && id < V)) throw new ShapeError(`embeddingBackward: id ${id} at ${t} outside [0, ${V})`);
    count[id + 1]!++;
  }
  for (let v = 0; v < V; v++) count[v + 1]! += count[v]!;
  const perm = new Int32Array(Math.max(1, N));
  for (let t = 0; t < N; t++) perm[count[ids[t]!]!++] = t;
  const k = ctx.kernel('embeddingBackward', '', () => wgsl(EMBB, [['ids', 'r', 'i32'], ['perm', 'r', 'i32'], ['gy', 'r', 'f32'], ['g', 'w', 'f32']],
    `${MAIN_1D}  let v = i32(i / p.H);
  let j = i - u32(v) * p.H;
  var lo = 0u;
  var hi = p.N;
  while (lo < hi) {
    let mid = (lo + hi) / 2u;
    if (ids[perm[mid]] < v) { lo = mid + 1u; } else { hi = mid; }
  }
  var s = 0.0;
  for (var k = lo; k < p.N; k = k + 1u) {
    let t = u32(perm[k]);
    if (ids[t] != v) { break; }
    s = s + gy[t * p.H + j];
  }
  g[i] = s;
}
`));
  ctx.run(k, EMBB.pack({ n: gtable.length, H, N }), [ctx.st.input(ids.length > 0 ? ids : perm, 'token ids'), ctx.st.input(perm, 'token order'),
    ctx.st.input(gy.length > 0 ? gy : perm, 'gradient'), ctx.st.output(gtable, 'gradient')], ctx.grid(Math.ceil(gtable.length / 256)));
}

/**
 * The [cos a, sin a] table of RoPE for positions [0, capacity), a = fround(p·invFreq[i]), each
 * computed in float64 and rounded once (as the reference does; WGSL's sin and cos promise only
 * 2^-11 near ±π, and the angles reach 10^5 rad at long context). It lives on the device, made
 * once per frequency vector and grown by doubling as positions pass its end.
 */
interface RopeTable { readonly tab: Float32Array; readonly capacity: number }

const ropeTables = new WeakMap<WebgpuContext, Map<string, RopeTable>>();
/** Positions a new table covers at least (a decode of a few thousand tokens never regrows it). */
const ROPE_MIN_CAPACITY = 4096;

function ropeTable(ctx: WebgpuContext, invFreq: F32, needed: number): RopeTable {
  let tables = ropeTables.get(ctx);
  if (tables === undefined) { tables = new Map(); ropeTables.set(ctx, tables); }
  const key = Array.from(invFreq).join(',');
  const have = tables.get(key);
  if (have !== undefined && have.capacity >= needed) return have;
  const half = invFreq.length;
  let capacity = Math.max(ROPE_MIN_CAPACITY, have?.capacity ?? 0);
  while (capacity < needed) capacity *= 2;
  const tab = new Float32Array(capacity * half * 2);
  for (let t = 0; t < capacity; t++) {
    for (let i = 0; i < half; i++) {
      const angle = Math.fround(invFreq[i]! * t);
      tab[2 * (t * half + i)] = Math.cos(angle);
      tab[2 * (t * half + i) + 1] = Math.sin(angle);
    }
  }
  const made = { tab, capacity };
  tables.set(key, made);
  return made;
}

const ROPE = params(['n', 'u32'], ['heads', 'u32'], ['half', 'u32'], ['sign', 'f32']);

/** RoPE (rotate_half) on x [N, heads, d], one position per row; `inverse` rotates by −angle. One thread per pair (i, i + d/2). */
export function rope(ctx: WebgpuContext, x: F32, N: number, heads: number, d: number, positions: I32, invFreq: F32, inverse: boolean, out: F32): void {
  if (d % 2 !== 0) throw new ShapeError(`rope: head dimension d = ${d} must be even`);
  const half = d / 2, n = N * heads * half;
  if (x.length !== N * heads * d || out.length !== x.length || positions.length !== N || invFreq.length !== half) {
    throw new ShapeError(`rope: x and out [${N}, ${heads}, ${d}], positions [${N}], invFreq [${half}] do not match`);
  }
  if (n === 0) return;
  ctx.st.hostRead(positions);
  let top = 0;
  for (let t = 0; t < N; t++) {
    const p = positions[t]!;
    if (!(p >= 0 && Number.isInteger(p))) throw new ShapeError(`rope: position ${p} at ${t} is not a non-negative integer`);
    top = Math.max(top, p);
  }
  const table = ropeTable(ctx, invFreq, top + 1);
  const k = ctx.kernel('rope', '', () => wgsl(ROPE, [['x', 'r', 'f32'], ['pos', 'r', 'i32'], ['tab', 'r', 'f32'], ['y', 'w', 'f32']],
    `${GROUP_INDEX}
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let q = group_index(wid, nwg) * 256u + li;
  if (q >= p.n) { return; }
  let i = q % p.half;
  let row = q / p.half;
  let t = row / p.heads;
  let o = row * 2u * p.half + i;
  let c = 2u * (u32(pos[t]) * p.half + i);
  let cs = tab[c];
  let sn = p.sign * tab[c + 1u];
  let x1 = x[o];
  let x2 = x[o + p.half];
  y[o] = x1 * cs - x2 * sn;
  y[o + p.half] = x2 * cs + x1 * sn;
}
`));
  ctx.run(k, ROPE.pack({ n, heads, half, sign: inverse ? -1 : 1 }), [ctx.st.input(x, 'rope input'), ctx.st.input(positions, 'positions'),
    ctx.st.input(table.tab, 'rope table'), ctx.st.output(out, 'rope')], ctx.grid(Math.ceil(n / 256)));
}

/** Rotary position embedding as a WGSL kernel of the webgpu device, on a device table of angles. */
import { ShapeError } from '../../errors';
import type { F32, I32 } from '../../arrays';
import type { WebgpuContext } from '../../webgpu/kernel';
import { GROUP_INDEX, params, wgsl } from '../../webgpu/wgsl';

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

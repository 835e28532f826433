/** Embedding gather and its backward as WGSL kernels of the webgpu device. */
import { ShapeError } from '../../errors';
import type { F32, I32 } from '../../arrays';
import type { WebgpuContext } from '../../webgpu/kernel';
import { MAIN_1D, params, wgsl } from '../../webgpu/wgsl';

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


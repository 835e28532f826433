/**
 * Row cross-entropy (forward: one workgroup per row; backward: one thread per logit) as WGSL
 * kernels of the webgpu device.
 */
import { ShapeError } from '../../errors';
import type { F32, I32 } from '../../arrays';
import type { WebgpuContext } from '../../webgpu/kernel';
import { GROUP_INDEX, MATH, params, REDUCE, ROW_EXP_SUM, ROW_MAIN, ROW_MAX, wgsl } from '../../webgpu/wgsl';

function check(op: string, rows: number, n: number, arrays: Record<string, ArrayLike<number>>): void {
  for (const [name, a] of Object.entries(arrays)) {
    if (a.length !== rows * n) throw new ShapeError(`${op}: ${name} has ${a.length} elements, [${rows}, ${n}] needs ${rows * n}`);
  }
}

/** The row weights of an unweighted call (never read). */
const NO_WEIGHTS = new Float32Array(1);

const CE = params(['rows', 'u32'], ['n', 'u32'], ['weighted', 'u32']);

/** loss[r] = w[r]·(lse[r] − logits[r, t]) (0 where t < 0 or w = 0), lse written for the backward. */
export function crossEntropy(ctx: WebgpuContext, logits: F32, targets: I32, weights: F32 | null, rows: number, V: number, loss: F32, lse: F32): void {
  check('crossEntropy', rows, V, { logits });
  if (targets.length !== rows || loss.length !== rows || lse.length !== rows || (weights !== null && weights.length !== rows)) {
    throw new ShapeError(`crossEntropy: targets, weights, loss and lse need ${rows} entries`);
  }
  for (let r = 0; r < rows; r++) if (targets[r]! >= V) throw new ShapeError(`crossEntropy: target ${targets[r]} at row ${r} outside [0, ${V})`);
  if (rows === 0) return;
  const k = ctx.kernel('crossEntropy', '', () => wgsl(CE, [['x', 'r', 'f32'], ['tg', 'r', 'i32'], ['wt', 'r', 'f32'], ['loss', 'w', 'f32'], ['lse', 'w', 'f32']],
    `${MATH}${REDUCE}${ROW_MAIN}${ROW_MAX}${ROW_EXP_SUM}  if (li == 0u) {
    let L = m + log_(s);
    lse[row] = L;
    let t = tg[row];
    let w = select(1.0, wt[row], p.weighted == 1u);
    loss[row] = select(w * (L - x[o + u32(max(t, 0))]), 0.0, t < 0 || w == 0.0);
  }
}
`));
  const w = weights ?? NO_WEIGHTS;
  ctx.run(k, CE.pack({ rows, n: V, weighted: weights === null ? 0 : 1 }), [
    ctx.st.input(logits, 'logits'), ctx.st.input(targets, 'targets'), ctx.st.input(w, 'row weights'),
    ctx.st.output(loss, 'losses'), ctx.st.output(lse, 'log-sum-exp'),
  ], ctx.grid(rows));
  // The op sums the row losses on the host: they come back (lse stays for the backward).
  ctx.st.hostRead(loss);
}

const CEB = params(['total', 'u32'], ['n', 'u32'], ['weighted', 'u32']);

/** glogits[r, :] = g[r]·w[r]·(softmax(logits[r]) − onehot(t)); one thread per logit. */
export function crossEntropyBackward(ctx: WebgpuContext, logits: F32, targets: I32, weights: F32 | null, lse: F32, g: F32, rows: number, V: number, glogits: F32): void {
  check('crossEntropyBackward', rows, V, { logits, glogits });
  if (targets.length !== rows || lse.length !== rows || g.length !== rows || (weights !== null && weights.length !== rows)) {
    throw new ShapeError(`crossEntropyBackward: targets, weights, lse and g need ${rows} entries`);
  }
  if (rows * V === 0) return;
  const k = ctx.kernel('crossEntropyBackward', '', () => wgsl(CEB, [['x', 'r', 'f32'], ['tg', 'r', 'i32'], ['wt', 'r', 'f32'], ['lse', 'r', 'f32'], ['g', 'r', 'f32'], ['gx', 'w', 'f32']],
    `${MATH}${GROUP_INDEX}
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let i = group_index(wid, nwg) * 256u + li;
  if (i >= p.total) { return; }
  let r = i / p.n;
  let j = i - r * p.n;
  let t = tg[r];
  let w = select(select(1.0, wt[r], p.weighted == 1u) * g[r], 0.0, t < 0);
  if (w == 0.0) { gx[i] = 0.0; return; }
  var v = w * exp_(x[i] - lse[r]);
  if (i32(j) == t) { v = v - w; }
  gx[i] = v;
}
`));
  const w = weights ?? NO_WEIGHTS;
  ctx.run(k, CEB.pack({ total: rows * V, n: V, weighted: weights === null ? 0 : 1 }), [
    ctx.st.input(logits, 'logits'), ctx.st.input(targets, 'targets'), ctx.st.input(w, 'row weights'), ctx.st.input(lse, 'log-sum-exp'),
    ctx.st.input(g, 'gradient'), ctx.st.output(glogits, 'gradient'),
  ], ctx.grid(Math.ceil((rows * V) / 256)));
}


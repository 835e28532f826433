/**
 * The fused LM-head cross-entropy on the webgpu device, chunk by chunk of rows as the reference:
 * logits = h·Wᵀ (the device GEMM, into a temporary [chunk, V]); one workgroup per row finds the
 * max, Σ exp and the row's weighted loss, and (for the gradients) turns the logits in place into
 * dlogits = w·(softmax − onehot); dh = dlogits·W and dW += dlogitsᵀ·h follow on the GEMM. The
 * [rows, V] logits never exist whole, and only the loss total comes back to the host (one read:
 * the op needs its value); Σ weight is the host's, from the weights it made.
 */
import { ShapeError } from '../../errors';
import type { WebgpuContext } from '../../webgpu/kernel';
import type { Binding } from '../../webgpu/runtime';
import { MATH, params, REDUCE, ROW_EXP_SUM, ROW_MAIN, ROW_MAX, wgsl } from '../../webgpu/wgsl';
import { gemmOn } from '../gemm/webgpu';
import type { LinearCrossEntropyArgs } from './args';

const ROWS = params(['rows', 'u32'], ['n', 'u32'], ['r0', 'u32'], ['grad', 'u32']);

/** Per row of the chunk: loss[r0 + row] = w·(lse − z_t) (0 for w = 0, whose target is not read), and with `grad` the row in place ← w·(softmax − onehot). */
const ROW_LOSS = `${MATH}${REDUCE}${ROW_MAIN.replace('let o = row * p.n;', 'let o = row * p.n;\n  let r = p.r0 + row;\n  let w = wt[r];\n  let t = u32(max(tg[r], 0));')}${ROW_MAX}${ROW_EXP_SUM}  let zt = x[o + t];
  workgroupBarrier();
  if (li == 0u) { loss[r] = select(w * (m + log_(s) - zt), 0.0, w == 0.0); }
  if (p.grad == 0u) { return; }
  let c = w / s;
  for (var j = li; j < p.n; j = j + 256u) {
    let v = select(exp_(x[o + j] - m) * c, 0.0, w == 0.0);
    x[o + j] = select(v, v - w, j == t);
  }
}
`;

const SUM = params(['n', 'u32']);
const TOTAL = `${REDUCE}
@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) li: u32) {
  var s = 0.0;
  for (var j = li; j < p.n; j = j + 256u) { s = s + loss[j]; }
  s = wg_sum(s, li);
  if (li == 0u) { total[0] = s; }
}
`;

/** The fused loss (see `LinearCrossEntropyArgs`): sums, and dh, dw where given. */
export function linearCrossEntropyWgsl(ctx: WebgpuContext, a: LinearCrossEntropyArgs): void {
  const { rows, V, H, dh, dw } = a, bf16 = a.w instanceof Uint16Array;
  if (a.h.length !== rows * H || a.w.length !== V * H || a.targets.length !== rows || a.weights.length !== rows || (dh !== null && dh.length !== rows * H) || (dw !== null && dw.length !== V * H)) {
    throw new ShapeError(`linearCrossEntropy: h [${rows}, ${H}], w [${V}, ${H}], targets, weights [${rows}] and the gradients do not match`);
  }
  if (dw !== null && bf16) throw new ShapeError('linearCrossEntropy: no dW for a bf16 head');
  let weight = 0;
  for (let r = 0; r < rows; r++) weight += a.weights[r]!;
  a.sums[1] = weight;
  if (rows === 0) { a.sums[0] = 0; return; }
  const st = ctx.st, grad = dh !== null || dw !== null;
  const chunk = Math.max(1, Math.min(rows, a.chunkRows));
  const W = st.input(a.w, 'LM head'), tg = st.input(a.targets, 'targets'), wt = st.input(a.weights, 'row weights');
  const loss = st.temp(4 * rows, 'row losses'), logits = st.temp(4 * chunk * V, 'logits');
  const dhb = dh === null ? null : st.output(dh, 'gradient'), dwb = dw === null ? null : st.output(dw, 'gradient');
  const k = ctx.kernel('linearCrossEntropy.rows', '', () => wgsl(ROWS, [['x', 'w', 'f32'], ['tg', 'r', 'i32'], ['wt', 'r', 'f32'], ['loss', 'w', 'f32']], ROW_LOSS));
  const dhTemp = dhb === null ? null : st.temp(4 * chunk * H, 'dh of a chunk');
  for (let r0 = 0; r0 < rows; r0 += chunk) {
    const n = Math.min(chunk, rows - r0);
    const X: Binding = st.input(a.h.subarray(r0 * H, (r0 + n) * H), 'hidden states');
    gemmOn(ctx, { transA: false, transB: true, M: n, N: V, K: H, A: X, B: W, bf16, C: logits, alpha: 1, beta: 0 });
    ctx.run(k, ROWS.pack({ rows: n, n: V, r0, grad: grad ? 1 : 0 }), [logits, tg, wt, loss], ctx.grid(n));
    if (dhb !== null && dhTemp !== null) {
      gemmOn(ctx, { transA: false, transB: false, M: n, N: H, K: V, A: logits, B: W, bf16, C: dhTemp, alpha: 1, beta: 0 });
      ctx.rt.copy(dhTemp.id, dhTemp.offset, dhb.id, dhb.offset + 4 * r0 * H, 4 * n * H);
    }
    if (dwb !== null) gemmOn(ctx, { transA: true, transB: false, M: V, N: H, K: n, A: logits, B: X, bf16: false, C: dwb, alpha: 1, beta: r0 === 0 ? 0 : 1 });
  }
  const total = st.temp(4, 'loss total');
  const kt = ctx.kernel('linearCrossEntropy.total', '', () => wgsl(SUM, [['loss', 'r', 'f32'], ['total', 'w', 'f32']], TOTAL));
  ctx.run(kt, SUM.pack({ n: rows }), [loss, total], [1, 1, 1]);
  const value = new Float32Array(1);
  ctx.rt.read([{ from: total, into: value }]);
  a.sums[0] = value[0]!;
}

/**
 * Device-wide sums in two passes: the first pass of a kernel sums `partialGroups(n)` contiguous
 * chunks, one workgroup each (`wg_sum`), into partials; `sumPartials` adds them in one workgroup.
 */
import type { WebgpuContext } from './kernel';
import type { Binding } from './runtime';
import { params, wgsl } from './kernel';
import { REDUCE } from './snippets';

/** Workgroups of the first pass of a device-wide sum: each sums a contiguous chunk of at least 4096 elements. */
export function partialGroups(n: number): number {
  return Math.max(1, Math.min(1024, Math.ceil(n / 4096)));
}

/** Second pass: slot `at` of `out` (+ its old value when `add`) ← Σ of `count` partials (every `stride`-th from `first`), one workgroup. */
const TOTAL = params(['count', 'u32'], ['at', 'u32'], ['add', 'u32'], ['stride', 'u32'], ['first', 'u32']);
export function sumPartials(ctx: WebgpuContext, parts: Binding, count: number, stride: number, first: number, out: Binding, at: number, add: boolean): void {
  const k = ctx.kernel('sum.partials', '', () => wgsl(TOTAL, [['parts', 'r', 'f32'], ['out', 'w', 'f32']],
    `${REDUCE}
@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) li: u32) {
  var s = 0.0;
  for (var j = li; j < p.count; j = j + 256u) { s = s + parts[j * p.stride + p.first]; }
  s = wg_sum(s, li);
  if (li == 0u) { out[p.at] = select(0.0, out[p.at], p.add == 1u) + s; }
}
`));
  ctx.run(k, TOTAL.pack({ count, at, add: add ? 1 : 0, stride, first }), [parts, out], [1, 1, 1]);
}


/**
 * The strided copy (`copyStrided`) as a gpu.js kernel: one thread per output element, which
 * splits its row-major index into the view's coordinates (fastest axis first) and reads
 * x[offset + Σ coordinate·stride]. Axes are coalesced first (a transpose of [B, T, H, d] keeps
 * three), the sizes and strides are constants and the offset an argument. Every index stays
 * below 2^24 (checked), where the float division that splits it is exact.
 */
import { checkStrided } from '../../ops/view/reference';
import type { F32 } from '../types';
import { coalesce } from './elementwise';
import { call, checkIndexable, into, type KernelOp } from './runtime';

function source(rank: number): string {
  const lines = ['function (x, offset) {', '  const i0 = this.thread.x;'];
  let at = 'offset';
  for (let k = rank - 1; k >= 0; k--) {
    const j = rank - 1 - k;
    if (k > 0) {
      lines.push(`  const i${j + 1} = Math.floor(i${j} / this.constants.n${k});`);
      at += ` + (i${j} - i${j + 1} * this.constants.n${k}) * this.constants.s${k}`;
    } else {
      at += ` + i${j} * this.constants.s0`;
    }
  }
  lines.push(`  return x[${at}];`, '}');
  return lines.join('\n');
}

/** out = the strided view (offset, shape, strides) of x, row-major. */
export function* copyStrided(x: F32, offset: number, shape: readonly number[], strides: readonly number[], out: F32): KernelOp {
  const n = checkStrided(x, offset, shape, strides, out);
  if (n === 0) return;
  checkIndexable('copyStrided', { n, x: x.length });
  const axes = coalesce(shape, strides, shape.map(() => 0));
  if (axes.length === 0) axes.push({ n: 1, sa: 0, sb: 0 });
  const constants: Record<string, number> = {};
  axes.forEach((ax, k) => { constants[`n${k}`] = ax.n; constants[`s${k}`] = ax.sa; });
  const key = `${x.length}|${axes.map((ax) => `${ax.n}:${ax.sa}`).join(',')}`;
  yield* into(out, call('copyStrided', key, () => ({
    source: source(axes.length), output: [n], constants, argumentTypes: { x: 'Array', offset: 'Integer' },
  }), [x, offset]));
}

/**
 * Rotary position embedding (rotate_half / NeoX form) as two gpu.js kernels on x [N, heads, d]:
 *  - `rope.table`: one thread per (t, i < d/2) returns [cos a, ±sin a] with a = fround(pos[t] invFreq[i])
 *    (float32 like HF; sin negated for the inverse rotation, i.e. the backward pass), so the
 *    transcendentals are evaluated N·d/2 times, not N·heads·d times;
 *  - `rope`: one thread per element: out[i] = x[i] cos - x[i + d/2] sin, out[i + d/2] = x[i + d/2] cos + x[i] sin.
 */
import { ShapeError } from '../../errors';
import type { F32, I32 } from '../types';
import { checkIndexable, expectLength, inp, call, type KernelOp } from './runtime';

/** [cos a, sign sin a] for thread (x, y) = (i, t). fround keeps the angle float32 on the cpu backend too. */
const tableKernel = `function (pos, invFreq, sign) {
  const angle = Math.fround(invFreq[this.thread.x] * pos[this.thread.y]);
  return [Math.cos(angle), sign * Math.sin(angle)];
}`;

/** Thread (x, y, z) = (i, h, t); tab[t][i mod d/2] = [cos, sin]. */
const ropeKernel = `function (x, tab) {
  if (this.thread.x < this.constants.half) {
    return x[this.thread.z][this.thread.y][this.thread.x] * tab[this.thread.z][this.thread.x][0] - x[this.thread.z][this.thread.y][this.thread.x + this.constants.half] * tab[this.thread.z][this.thread.x][1];
  }
  const i = this.thread.x - this.constants.half;
  return x[this.thread.z][this.thread.y][this.thread.x] * tab[this.thread.z][i][0] + x[this.thread.z][this.thread.y][i] * tab[this.thread.z][i][1];
}`;
/** Rotary embedding on x [N, heads, d] with one position per row; `inverse` rotates by -angle. */
export function* rope(x: F32, N: number, heads: number, d: number, positions: I32, invFreq: F32, inverse: boolean, out: F32): KernelOp {
  checkIndexable('rope', { N, heads, d });
  if (d % 2 !== 0) throw new ShapeError(`rope: head dimension d = ${d} must be even`);
  const half = d / 2;
  expectLength('rope', 'x', x, N * heads * d);
  expectLength('rope', 'out', out, N * heads * d);
  expectLength('rope', 'positions', positions, N);
  expectLength('rope', 'invFreq', invFreq, half);
  if (N * heads * d === 0) return;
  const tab = yield call('rope.table', `${N},${half}`, () => ({
    source: tableKernel, output: [half, N], components: 2,
    argumentTypes: { pos: 'Array', invFreq: 'Array', sign: 'Float' },
  }), [positions, invFreq, inverse ? -1 : 1]);
  out.set(yield call('rope', `${N},${heads},${d}`, () => ({
    source: ropeKernel, output: [d, heads, N], constants: { half },
    argumentTypes: { x: 'Input', tab: 'Input' },
  }), [inp(x, [d, heads, N]), inp(tab, [2, half, N])]));
}

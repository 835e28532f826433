/**
 * Rotary position embedding (rotate_half / NeoX form) as a gpu.js kernel on x [N, heads, d]:
 *  - the table [cos a, sin a] per (t, i < d/2), a = fround(pos[t] invFreq[i]) (float32 like HF),
 *    is computed on the host in
 *    float64 like the reference: angles reach 1.3e5 rad at long context, and WGSL's sin/cos only
 *    promise an absolute error of 2^-11 inside [-pi, pi] (3e-4 measured at position 131071 on
 *    SwiftShader). It is N·d/2 values, against N·heads·d for the rotation, and a `HostTable`:
 *    the webgpu worker keeps it on the device while the positions stay the same (every layer of a
 *    step, forward and backward, and every step of a fixed sequence length);
 *  - `rope`: one thread per element: out[i] = x[i] cos - s x[i + d/2] sin, out[i + d/2] = x[i + d/2] cos + s x[i] sin,
 *    s = -1 for the inverse rotation (the backward pass; the negation is exact, so both directions share the table).
 */
import { ShapeError } from '../../errors';
import type { F32, I32 } from '../types';
import { HostTable, checkIndexable, expectLength, inp, call, into, type KernelOp } from './runtime';

/** Thread (x, y, z) = (i, h, t); tab[t][i mod d/2] = [cos, sin]. */
const ropeKernel = `function (x, tab, sign) {
  if (this.thread.x < this.constants.half) {
    return x[this.thread.z][this.thread.y][this.thread.x] * tab[this.thread.z][this.thread.x][0] - sign * (x[this.thread.z][this.thread.y][this.thread.x + this.constants.half] * tab[this.thread.z][this.thread.x][1]);
  }
  const i = this.thread.x - this.constants.half;
  return x[this.thread.z][this.thread.y][this.thread.x] * tab[this.thread.z][i][0] + sign * (x[this.thread.z][this.thread.y][i] * tab[this.thread.z][i][1]);
}`;

/** [cos a, sin a] per (t, i), a = fround(invFreq[i] pos[t]), in float64 rounded once to float32. */
function ropeTable(N: number, half: number, positions: I32, invFreq: F32): Float32Array {
  const tab = new Float32Array(2 * N * half);
  for (let t = 0; t < N; t++) {
    for (let i = 0; i < half; i++) {
      const angle = Math.fround(invFreq[i]! * positions[t]!);
      tab[2 * (t * half + i)] = Math.cos(angle);
      tab[2 * (t * half + i) + 1] = Math.sin(angle);
    }
  }
  return tab;
}
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
  const tab = new HostTable(`rope|${N},${half}`, [positions, invFreq], [2, half, N], () => ropeTable(N, half, positions, invFreq));
  yield* into(out, call('rope', `${N},${heads},${d}`, () => ({
    source: ropeKernel, output: [d, heads, N], constants: { half },
    argumentTypes: { x: 'Input', tab: 'Input', sign: 'Float' },
  }), [inp(x, [d, heads, N]), tab, inverse ? -1 : 1]));
}

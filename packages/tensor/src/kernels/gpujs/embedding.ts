/**
 * Embedding lookup and its backward as gpu.js kernels.
 *
 * The backward pass is a scatter (gtable[ids[t]] += gy[t]), which a gather-only kernel language
 * cannot express directly. The ids are host data (the batch): we sort the token positions by id
 * on the host (a counting sort, stable, so each row's tokens stay in token order) into `perm` with
 * row offsets `start` [V + 1], and one gpu.js thread per (row v, column j) sums gy[perm[k], j]
 * for k in [start[v], start[v + 1]), in token order like the reference. Every cell of gtable is
 * written by the kernel, so gtable stays on the device; only `perm` and `start` are uploaded.
 * Work is O(V·H + N·H).
 */
import { ShapeError } from '../../errors';
import type { F32, I32 } from '../types';
import { checkIndexable, inp, call, into, type KernelOp } from './runtime';

/** out[t, j] = table[ids[t], j]. */
const gatherKernel = `function (ids, table) {
  return table[ids[this.thread.y]][this.thread.x];
}`;

/** gtable[v, j] = sum of gy[perm[k], j] for k in [start[v], start[v + 1]), in that order. */
const segmentSumKernel = `function (gy, perm, start) {
  let s = 0;
  const st = start[this.thread.y];
  const c = start[this.thread.y + 1] - st;
  for (let k = 0; k < this.constants.N; k++) {
    if (k >= c) {
      break;
    }
    s += gy[perm[st + k]][this.thread.x];
  }
  return s;
}`;

function checkIds(op: string, ids: I32, V: number): void {
  for (let t = 0; t < ids.length; t++) {
    const id = ids[t]!;
    if (!(id >= 0 && id < V)) throw new ShapeError(`${op}: ids[${t}] = ${id} is outside the table's ${V} rows`);
  }
}

function tableRows(op: string, name: string, table: F32, H: number): number {
  if (!Number.isInteger(H) || H <= 0 || table.length % H !== 0) {
    throw new ShapeError(`${op}: ${name} has ${table.length} elements, not a multiple of H = ${H}`);
  }
  return table.length / H;
}

/** out[t, :] = table[ids[t], :] with table [V, H]. */
export function* embedding(ids: I32, table: F32, H: number, out: F32): KernelOp {
  const V = tableRows('embedding', 'table', table, H);
  const N = ids.length;
  checkIndexable('embedding', { N, H, V });
  if (out.length !== N * H) throw new ShapeError(`embedding: out has ${out.length} elements, expected ${N} x ${H}`);
  checkIds('embedding', ids, V);
  if (N === 0) return;
  yield* into(out, call('embedding', `${N},${H},${V}`, () => ({
    source: gatherKernel, output: [H, N], argumentTypes: { ids: 'Array', table: 'Input' },
  }), [ids, inp(table, [H, V])]));
}

/** gtable[v, :] = sum of gy[t, :] over the positions t with ids[t] = v, in token order (overwritten). */
export function* embeddingBackward(ids: I32, gy: F32, H: number, gtable: F32): KernelOp {
  const V = tableRows('embeddingBackward', 'gtable', gtable, H);
  const N = ids.length;
  checkIndexable('embeddingBackward', { N, H, V });
  if (gy.length !== N * H) throw new ShapeError(`embeddingBackward: gy has ${gy.length} elements, expected ${N} x ${H}`);
  checkIds('embeddingBackward', ids, V);
  if (V * H === 0) return;
  // Host: counting sort of the token positions by id (stable).
  const start = new Int32Array(V + 1);
  for (let t = 0; t < N; t++) start[ids[t]! + 1]!++;
  for (let v = 0; v < V; v++) start[v + 1]! += start[v]!;
  const fill = start.slice(0, V);
  const perm = new Int32Array(Math.max(N, 1));
  for (let t = 0; t < N; t++) perm[fill[ids[t]!]!++] = t;
  yield* into(gtable, call('embeddingBackward', `${N},${H},${V}`, () => ({
    source: segmentSumKernel, output: [H, V], constants: { N },
    argumentTypes: { gy: 'Input', perm: 'Array', start: 'Array' },
  }), [inp(N === 0 ? new Float32Array(H) : gy, [H, Math.max(N, 1)]), perm, start]));
}

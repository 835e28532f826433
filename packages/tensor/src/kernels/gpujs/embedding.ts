/**
 * Embedding lookup and its scatter-add backward as gpu.js kernels.
 *
 * The backward pass is a scatter (gtable[ids[t]] += gy[t]), which a gather-only kernel language
 * cannot express directly. We group the token positions by id on the host (one pass over
 * the N ids), then one gpu.js thread per (unique id, column) sums its tokens' gradient rows in
 * token order, starting from the current gtable row; the host writes the U result rows back.
 * Work is O(N·H) like the reference, not O(V·H·N) as a naive one-thread-per-table-cell kernel.
 */
import { ShapeError } from '../../errors';
import type { F32, I32 } from '../types';
import { checkIndexable, inp, call, into, type KernelOp } from './runtime';

/** out[t, j] = table[ids[t], j]. */
const gatherKernel = `function (ids, table) {
  return table[ids[this.thread.y]][this.thread.x];
}`;

/** row u: base[u, j] + sum over its tokens k of gy[perm[start[u] + k], j], in token order. */
const segmentSumKernel = `function (gy, perm, start, count, base) {
  let s = base[this.thread.y][this.thread.x];
  const st = start[this.thread.y];
  const c = count[this.thread.y];
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

/** gtable[ids[t], :] += gy[t, :] (scatter-add, accumulate). */
export function* embeddingBackward(ids: I32, gy: F32, H: number, gtable: F32): KernelOp {
  const V = tableRows('embeddingBackward', 'gtable', gtable, H);
  const N = ids.length;
  checkIndexable('embeddingBackward', { N, H, V });
  if (gy.length !== N * H) throw new ShapeError(`embeddingBackward: gy has ${gy.length} elements, expected ${N} x ${H}`);
  checkIds('embeddingBackward', ids, V);
  if (N === 0) return;
  // Host: group token positions by id (stable, so each group stays in token order).
  const slot = new Map<number, number>();
  const uniq: number[] = [];
  const count: number[] = [];
  for (let t = 0; t < N; t++) {
    const id = ids[t]!;
    let u = slot.get(id);
    if (u === undefined) { u = uniq.length; slot.set(id, u); uniq.push(id); count.push(0); }
    count[u]!++;
  }
  const U = uniq.length;
  const start = new Int32Array(U);
  for (let u = 1; u < U; u++) start[u] = start[u - 1]! + count[u - 1]!;
  const fill = Int32Array.from(start);
  const perm = new Int32Array(N);
  for (let t = 0; t < N; t++) perm[fill[slot.get(ids[t]!)!]!++] = t;
  const base = new Float32Array(U * H);
  for (let u = 0; u < U; u++) base.set(gtable.subarray(uniq[u]! * H, uniq[u]! * H + H), u * H);
  const res = yield call('embeddingBackward', `${N},${H},${U}`, () => ({
    source: segmentSumKernel, output: [H, U], constants: { N },
    argumentTypes: { gy: 'Input', perm: 'Array', start: 'Array', count: 'Array', base: 'Input' },
  }), [inp(gy, [H, N]), perm, start, Int32Array.from(count), inp(base, [H, U])]);
  for (let u = 0; u < U; u++) gtable.set(res.subarray(u * H, u * H + H), uniq[u]! * H);
}

/**
 * Copies between tensor storages on the current device, and the storage of KV-cache blocks: the
 * model's paged KV cache allocates its blocks with `kvBlockStorage` and writes each step's keys and
 * values into them with `copyInto`, so on the webgpu device they go from the layer's output to
 * the cache without leaving the device.
 */
import type { F32 } from '../../arrays';
import { DTypeError, ShapeError } from '../../errors';
import { kernelDevice } from '../../registry';
import { f16RowsInto, type KvBlockData } from '../../memory/kv-blocks';
import { copyKernel } from './kernel';

export { kvBlockStorage, type KvLayout, type KvDType, type KvBlockData } from '../../memory/kv-blocks';

/**
 * dst ← src (typed arrays of tensor storage, e.g. `kernelF32(t)` views, same length), on the device
 * that holds them: a row range of a layer's keys into a KV block, a block copied on write. Into an
 * f16 block (Uint16Array, cpu device), float32 rows are rounded to f16 (nearest even) and f16 bits
 * copied as they are.
 */
export function copyInto(src: F32 | Uint16Array, dst: KvBlockData): void {
  if (dst instanceof Float32Array && src instanceof Float32Array) { copyKernel.run(src, dst); return; }
  if (!(dst instanceof Uint16Array)) throw new DTypeError('copyInto: f16 bits cannot go into float32 storage');
  if (kernelDevice().device !== 'cpu') throw new DTypeError(`copyInto: f16 KV blocks are written on the cpu device, not on ${kernelDevice().device}`);
  if (src.length !== dst.length) throw new ShapeError(`copyInto: ${src.length} values into ${dst.length}`);
  if (src instanceof Uint16Array) dst.set(src);
  else f16RowsInto(src, dst);
}

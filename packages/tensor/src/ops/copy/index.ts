/**
 * Copies between tensor storages on the current device, and the storage of KV-cache blocks: the
 * model's paged KV cache allocates its blocks with `kvBlockStorage` and writes each step's keys and
 * values into them with `copyInto`, so on the webgpu device they go from the layer's output to
 * the cache without leaving the device.
 */
import type { F32 } from '../../arrays';
import { copyKernel } from './kernel';

export { kvBlockStorage, type KvLayout } from '../../memory/kv-blocks';

/**
 * dst ← src (typed arrays of tensor storage, e.g. `kernelF32(t)` views, same length), on the device
 * that holds them: a row range of a layer's keys into a KV block, a block copied on write.
 */
export function copyInto(src: F32, dst: F32): void {
  copyKernel.run(src, dst);
}

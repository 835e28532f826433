/** dst ← src on the webgpu device: a buffer-to-buffer copy (a KV block's part lands in its arena slot). */
import type { F32 } from '../../arrays';
import type { WebgpuContext } from '../../webgpu/kernel';
import { checkCopy } from './reference';

/** dst ← src, where both live (or go) on the device. */
export function copyWgsl(ctx: WebgpuContext, src: F32, dst: F32): void {
  checkCopy(src, dst);
  if (src.length === 0) return;
  if (ctx.st.copyKvBlock(src, dst)) return;
  const from = ctx.st.copyRange(src, false, 'copy source'), to = ctx.st.copyRange(dst, true, 'copy destination');
  ctx.rt.copy(from.id, from.offset, to.id, to.offset, src.byteLength);
}

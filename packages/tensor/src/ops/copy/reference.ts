import type { F32 } from '../../arrays';
import { ShapeError } from '../../errors';

/** ShapeError unless `src` and `dst` have the same length. */
export function checkCopy(src: F32, dst: F32): void {
  if (src.length !== dst.length) throw new ShapeError(`copy: src has ${src.length} elements, dst ${dst.length}`);
}

/** dst ← src. */
export function copy(src: F32, dst: F32): void {
  checkCopy(src, dst);
  dst.set(src);
}

import type { F32, I32 } from '../../arrays';

export function embedding(ids: I32, table: F32, H: number, out: F32): void {
  for (let t = 0; t < ids.length; t++) out.set(table.subarray(ids[t]! * H, ids[t]! * H + H), t * H);
}

export function embeddingBackward(ids: I32, gy: F32, H: number, gtable: F32): void {
  gtable.fill(0);
  for (let t = 0; t < ids.length; t++) {
    const row = ids[t]! * H, src = t * H;
    for (let j = 0; j < H; j++) gtable[row + j]! += gy[src + j]!;
  }
}

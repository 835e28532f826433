import type { AttentionArgs, PagedAttentionArgs } from './args';
import { attention } from './reference';
import { f16RowsToF32 } from '../../memory/kv-blocks';

/**
 * The `attention` arguments of a paged attention call: the key and value rows of the blocks the
 * queries can see, copied whole block after block into contiguous [1, S, heads, d] keys and
 * values (S = those blocks · blockSize; rows past qOffset + T − 1 are copied but never read, as no
 * query sees them). Whole blocks keep S, and with it the shape a device kernel is built for, the
 * same for blockSize decoding steps in a row. f16 blocks are widened to float32 (exactly) as they
 * are copied, so the result is `attention`'s on the cached values.
 */
export function pagesAsAttention(a: PagedAttentionArgs): AttentionArgs {
  const { T, nh, d, kv } = a, nkv = kv.heads, row = nkv * d, bs = kv.blockSize;
  const nb = Math.ceil((a.qOffset + T) / bs), S = nb * bs, n = bs * row;
  const k = new Float32Array(S * row), v = new Float32Array(S * row);
  for (let b = 0; b < nb; b++) {
    const blk = kv.blocks[b]!;
    if (blk instanceof Uint16Array) {
      f16RowsToF32(blk.subarray(kv.keys, kv.keys + n), k.subarray(b * n, (b + 1) * n));
      f16RowsToF32(blk.subarray(kv.values, kv.values + n), v.subarray(b * n, (b + 1) * n));
    } else {
      k.set(blk.subarray(kv.keys, kv.keys + n), b * n);
      v.set(blk.subarray(kv.values, kv.values + n), b * n);
    }
  }
  return { B: 1, T, S, nh, nkv, d, q: a.q, k, v, scale: a.scale, qOffset: a.qOffset, out: a.out, lse: new Float32Array(nh * T) };
}

/** Paged attention, the reference: the reference `attention` kernel on the gathered pages. */
export function pagedAttention(a: PagedAttentionArgs): void {
  attention(pagesAsAttention(a));
}

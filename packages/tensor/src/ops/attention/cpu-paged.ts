import { cpuAttention } from './cpu';
import { pagesAsAttention } from './paged-reference';
import type { AttentionArgs, PagedAttentionArgs } from './args';
import { DECODE_MAX_ROWS, decodeAttention, decodeAttentionRuns } from './cpu-decode';

/**
 * Paged attention on the CPU: a few query rows (decoding) run the SIMD decode kernel
 * (decode-attention.ts), which reads the keys and values in the pages in place; more rows (a
 * prefill chunk), or a head dimension it does not take, run `cpuAttention` on the gathered pages.
 * The decode kernel is the one `cpuAttention` itself runs for few rows, so the two agree bit for bit.
 */
export function pagedDecodeAttention(cpuAttention: (a: AttentionArgs) => void): (a: PagedAttentionArgs) => void {
  return (a: PagedAttentionArgs) => {
    const { T, nh, d, kv } = a, bs = kv.blockSize;
    if (T > DECODE_MAX_ROWS || !decodeAttentionRuns(d)) {
      cpuAttention(pagesAsAttention(a));
      return;
    }
    const blocks = kv.blocks.slice(0, Math.ceil((a.qOffset + T) / bs));
    decodeAttention({
      q: a.q, out: a.out, T, nh, nkv: kv.heads, d, scale: a.scale, qOffset: a.qOffset, blockSize: bs,
      kBlocks: blocks, vBlocks: blocks, kAt: kv.keys, vAt: kv.values,
    });
  };
}

/** The cpu `pagedAttention` kernel. */
export const cpuPagedAttention = pagedDecodeAttention(cpuAttention);

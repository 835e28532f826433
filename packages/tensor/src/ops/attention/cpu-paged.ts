import { cpuAttention } from './cpu';
import { pagesAsAttention } from './paged-reference';
import type { AttentionArgs, PagedAttentionArgs } from './args';
import { DECODE_MAX_ROWS, decodeAttention, decodeAttentionReads, decodeAttentionRuns } from './cpu-decode';

/**
 * Paged attention on the CPU: a few query rows (decoding) run the SIMD decode kernel
 * (decode-attention.ts), which reads the keys and values in the pages in place; more rows (a
 * prefill chunk), or a head dimension it does not take, run `cpuAttention` on the gathered pages.
 * The decode kernel is the one `cpuAttention` itself runs for few rows, so the two agree bit for bit;
 * f16 pages go through its f16 variant (the same bits as float32 pages of the same values), or,
 * off the heap, are widened while gathered.
 */
export function pagedDecodeAttention(cpuAttention: (a: AttentionArgs) => void): (a: PagedAttentionArgs) => void {
  return (a: PagedAttentionArgs) => {
    const { T, nh, d, kv } = a, bs = kv.blockSize;
    const blocks = kv.blocks.slice(0, Math.ceil((a.qOffset + T) / bs)) as Float32Array[] | Uint16Array[], f16 = kv.dtype === 'f16';
    if (T > DECODE_MAX_ROWS || !decodeAttentionRuns(d) || (f16 && !decodeAttentionReads(blocks as Uint16Array[]))) {
      cpuAttention(pagesAsAttention(a));
      return;
    }
    decodeAttention({
      q: a.q, out: a.out, T, nh, nkv: kv.heads, d, scale: a.scale, qOffset: a.qOffset, blockSize: bs,
      kBlocks: blocks, vBlocks: blocks, kv: f16 ? 'f16' : 'f32', kAt: kv.keys, vAt: kv.values,
    });
  };
}

/** The cpu `pagedAttention` kernel. */
export const cpuPagedAttention = pagedDecodeAttention(cpuAttention);

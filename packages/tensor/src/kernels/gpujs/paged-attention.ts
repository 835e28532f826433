/**
 * Paged attention (one sequence's new queries over its paged KV cache) as gpu.js kernels: the
 * forward attention kernels (attention.ts) on the pages gathered on the host (`pagesAsAttention`).
 * The blocks of a paged KV cache live in host memory (the cpu device heap), so every call copies
 * and uploads the key and value rows of the blocks the queries see, 2 · blocks · blockSize ·
 * heads · d floats (per layer and step when decoding); the kernels are built once per block count,
 * not once per token.
 */
import { pagesAsAttention } from '../../ops/attention/paged-reference';
import type { PagedAttentionArgs } from '../types';
import { attention } from './attention';
import type { KernelOp } from './runtime';

/** Paged attention: the attention forward kernels on the gathered pages. */
export function* pagedAttention(a: PagedAttentionArgs): KernelOp {
  yield* attention(pagesAsAttention(a));
}

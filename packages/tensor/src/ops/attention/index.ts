import { record } from '../../autograd';
import { attentionBackwardKernel, attentionKernel, pagedAttentionKernel } from './kernel';
import { DTypeError, ShapeError } from '../../errors';
import type { KVPages } from './kernel';
import type { Tensor } from '../../tensor';
import { i32, kernelF32, out, zerosF32 } from '../util';

export type { KVPages };

/** Options of `attention`. */
export interface AttentionOptions {
  /** Score scale; default 1/√d. */
  scale?: number;
  /** Absolute position of the first query among the keys (the KV-cache length when decoding); default S − T. */
  qOffset?: number;
  /** Document ids of the queries [B, T] (i32): attention never crosses documents. */
  docQ?: Tensor;
  /** Document ids of the keys [B, S]; defaults to docQ when S = T. */
  docK?: Tensor;
}

/**
 * Causal grouped-query attention with streaming softmax (memory O(T·d), never T×S):
 * q [B, T, nh, d], k and v [B, S, nkv, d] → [B, T, nh, d]. Query head h reads kv head
 * ⌊h / (nh/nkv)⌋. Optional document ids restrict attention to the same document.
 */
export function attention(q: Tensor, k: Tensor, v: Tensor, opts: AttentionOptions = {}): Tensor {
  if (q.rank !== 4 || k.rank !== 4 || v.rank !== 4) throw new ShapeError(`attention: q, k, v must be [B, T, heads, d], got [${q.shape}], [${k.shape}], [${v.shape}]`);
  const [B, T, nh, d] = q.shape as [number, number, number, number];
  const [Bk, S, nkv, dk] = k.shape as [number, number, number, number];
  if (Bk !== B || dk !== d || v.shape.some((x, i) => x !== k.shape[i]) || nh % nkv !== 0) {
    throw new ShapeError(`attention: incompatible q [${q.shape}], k [${k.shape}], v [${v.shape}] (need same B and d, k = v, heads divisible)`);
  }
  const qOffset = opts.qOffset ?? S - T;
  const docQ = opts.docQ ? i32(opts.docQ, 'attention') : undefined;
  const docK = opts.docK ? i32(opts.docK, 'attention') : docQ;
  if (docQ && (docQ.length !== B * T || docK!.length !== B * S)) throw new ShapeError(`attention: document ids must be [B, T] and [B, S]`);
  const args = {
    B, T, S, nh, nkv, d, scale: opts.scale ?? 1 / Math.sqrt(d), qOffset,
    q: kernelF32(q, 'attention'), k: kernelF32(k, 'attention'), v: kernelF32(v, 'attention'),
    ...(docQ ? { docQ, docK: docK! } : {}),
    out: zerosF32(B * T * nh * d), lse: new Float32Array(B * nh * T),
  };
  attentionKernel.run(args);
  const res = out(q.shape, args.out);
  return record(res, 'attention', [q, k, v], (g) => {
    const gq = out(q.shape), gk = out(k.shape), gv = out(v.shape);
    attentionBackwardKernel.run({ ...args, gout: kernelF32(g, 'attention'), gq: gq.data, gk: gk.data, gv: gv.data });
    return [gq, gk, gv];
  });
}

/**
 * `attention` of one sequence's new queries q [1, T, nh, d] over keys and values held in pages
 * (positions continue at `opts.qOffset`, default S − T), without autograd (inference). It is the
 * registry's `pagedAttention` kernel: the cpu one reads the pages in place when decoding (few
 * query rows); the reference and the webgpu one gather the pages into contiguous keys and values
 * and run attention, so every backend's result is the one of `attention` on the gathered keys
 * and values. f16 pages (`kv.dtype`) are read as the float32 values they hold, on the cpu device.
 */
export function pagedAttention(q: Tensor, kv: KVPages, opts: Pick<AttentionOptions, 'scale' | 'qOffset'> = {}): Tensor {
  if (q.rank !== 4 || q.shape[0] !== 1) throw new ShapeError(`pagedAttention: q must be [1, T, heads, d], got [${q.shape}]`);
  const [, T, nh, d] = q.shape as [number, number, number, number];
  const S = kv.length, nkv = kv.heads, row = nkv * d, bs = kv.blockSize;
  const qOffset = opts.qOffset ?? S - T, scale = opts.scale ?? 1 / Math.sqrt(d);
  const Block = (kv.dtype ?? 'f32') === 'f16' ? Uint16Array : Float32Array;
  if (!kv.blocks.every((b) => b instanceof Block)) throw new DTypeError(`pagedAttention: ${kv.dtype ?? 'f32'} pages need ${Block.name} blocks`);
  if (nh % nkv !== 0 || kv.blocks.length * bs < S || qOffset < 0 || qOffset + T > S || kv.blocks.some((b) => b.length < Math.max(kv.keys, kv.values) + bs * row)) {
    throw new ShapeError(`pagedAttention: q [${q.shape}] does not fit ${S} cached tokens of ${nkv} heads in ${kv.blocks.length} blocks of ${bs} (qOffset ${qOffset})`);
  }
  const res = out(q.shape);
  pagedAttentionKernel.run({ T, nh, d, q: kernelF32(q, 'pagedAttention'), kv, scale, qOffset, out: res.data });
  return res;
}

/**
 * Attention for a few new query rows against cached keys and values (decoding), in WebAssembly
 * SIMD, reading the keys and values where they are: a list of blocks of `blockSize` token rows
 * [blockSize, nkv, d] each (the pages of a paged KV cache, or one block holding a whole
 * contiguous [S, nkv, d] sequence). No head is copied and no 1-row GEMM tile is dispatched.
 *
 * For query row t (position qOffset + t) and head h of kv head g = ⌊h / (nh/nkv)⌋:
 *   z_s = f32(Σ_e q_e·k_{s,e}) · scale           s ≤ qOffset + t (causal)
 *   m = max_s z_s,  p_s = exp(z_s − m),  l = Σ_s p_s (f64)
 *   o_e = f32(Σ_s p_s·v_{s,e}) / f32(l)
 * The dot products run in four f32x4 accumulators over 16 floats at a time (d a multiple of 16);
 * exp is the module's `exp_shift` (softmax-rows.ts). The keys and values are read once per query
 * row, whole rows [nkv, d] in memory order: each key row gives the scores of every head, and each
 * value row is added, times each head's weight, into the output rows (in L1), summing over the keys
 * in order as a register accumulator would (the same bits). Walking one kv head at a time instead
 * (a 256-byte run every nkv·d floats, once per query head and per 16 floats of the output) gave
 * the hardware prefetchers little to stream once a decode step's weights have swept the caches: a
 * GGUF Q4_K decode step of `small` (context 128–160) took 7.95–8.01 ms of CPU that way, 7.10–7.36
 * this way.
 * `m` and `l` per row and head come back for the log-sum-exp.
 *
 * `decode_attention_f16` reads f16 blocks (an f16 KV cache: half the bytes of a long-context
 * step) and widens each key or value row once, for all heads, to the float32 values it holds,
 * exactly (bits shifted into place and scaled by 2^112, Inf/NaN exponents restored), before the
 * same float operations: its result is `decode_attention`'s on float32 blocks holding the same
 * values, bit for bit. (Widening each head's run where it is read instead, once per query head,
 * took 3.3× the f32 kernel's time at a 2,048-token context.)
 */
import { block, br, brIf, call, f32, f64, forLoop, get, i32, loop, seq, set, v128, ValType, type Code, type FuncDef, Locals } from '../../wasm/encoder';
import type { F32 } from '../../arrays';
import { heapAddress, heapRelease, scratchF32, staged } from '../../memory/heap';
import { expFn } from '../linear-cross-entropy/cpu-rows';
import { instantiateOnHeap } from '../../wasm/module';
import type { KvDType } from '../../memory/kv-blocks';

/** Query rows per sequence up to which attention takes this path (beyond it the tiled GEMM path is faster). */
export const DECODE_MAX_ROWS = 8;

const { i32: I32, f32: F32T, f64: F64T, v128: V128 } = ValType;
const c = i32.const;
const hsum = (x: Code): Code => f32.add(f32.add(v128.f32x4_extract_lane(x, 0), v128.f32x4_extract_lane(x, 1)), f32.add(v128.f32x4_extract_lane(x, 2), v128.f32x4_extract_lane(x, 3)));

/**
 * decode_attention(q, out, T, nh, nkv, rep, d, qOffset, scale, ktab, vtab, bs, scores, stats, row):
 * pointers in bytes; ktab/vtab hold the byte address of each block's first key/value row; row:
 * nkv·d floats of scratch (the f16 variant widens each key or value row there once, for all heads).
 */
function decodeFn(kv: KvDType): FuncDef {
  const A = { q: 0, out: 1, T: 2, nh: 3, nkv: 4, rep: 5, d: 6, qOffset: 7, scale: 8, ktab: 9, vtab: 10, bs: 11, scores: 12, stats: 13, row: 14 };
  const L = new Locals(15);
  const t = L.add(I32), g = L.add(I32), hh = L.add(I32), h = L.add(I32), sEnd = L.add(I32), s = L.add(I32), bEnd = L.add(I32);
  const tp = L.add(I32), p = L.add(I32), e = L.add(I32), qp = L.add(I32), op = L.add(I32), kp = L.add(I32);
  const rowB = L.add(I32), dB = L.add(I32), sp = L.add(I32), st = L.add(I32), hs = L.add(I32), ss = L.add(I32), q0 = L.add(I32), o0 = L.add(I32);
  const a = [L.add(V128), L.add(V128), L.add(V128), L.add(V128)], pv = L.add(V128), lv = L.add(V128);
  const kdB = L.add(I32), rp = L.add(I32), hx = L.add(V128), hw = L.add(V128);
  const K = { m: L.add(V128), big: L.add(V128), inf: L.add(V128), sign: L.add(V128), scale: L.add(V128) };
  const splat = (x: number): Code => v128.i32x4_splat(c(x | 0));
  /** The constants of the widening, set once (V8 would otherwise rebuild them in the loop). */
  const constants: Code = kv === 'f32' ? seq() : seq(
    set(K.m, splat(0x7fff)), set(K.big, splat(0x7bff)), set(K.inf, splat(0x7f800000)), set(K.sign, splat(0x80000000)),
    set(K.scale, v128.f32x4_splat(f32.const(2 ** 112))),
  );
  /** Four halves (zero-extended in i32 lanes, in hx) as float32: bits moved into place and scaled by 2^112 (exact for normal and subnormal halves), Inf/NaN exponents set, the sign put back. */
  const widen = (x: Code): Code => {
    const em = v128.and(get(hx), get(K.m));
    return seq(set(hx, x), v128.or(v128.or(v128.f32x4_mul(v128.i32x4_shl(em, c(13)), get(K.scale)), v128.and(v128.i32x4_gt_s(em, get(K.big)), get(K.inf))), v128.and(v128.i32x4_shl(get(hx), c(16)), get(K.sign))));
  };
  /** For f16 blocks, key/value row p (rowB bytes) widened into the float32 row at A.row, once per key for all heads; rp: where the heads read the row. */
  const rowAt: Code = kv === 'f32' ? set(rp, get(p)) : seq(
    forLoop(e, c(0), get(rowB), c(16),
      set(hw, v128.load(i32.add(get(p), get(e)))),
      v128.store(i32.add(get(A.row), i32.shl(get(e), c(1))), widen(v128.i32x4_extend_low_i16x8_u(get(hw)))),
      v128.store(i32.add(get(A.row), i32.shl(get(e), c(1))), widen(v128.i32x4_extend_high_i16x8_u(get(hw))), 16)),
    set(rp, get(A.row)),
  );
  const kvLoad = (j: number): Code => v128.load(i32.add(get(kp), get(e)), 16 * j);
  const mx = L.add(F32T), l = L.add(F64T);
  const zero = seq(...a.map((x) => set(x, v128.zero())));
  /** Walk the keys s < sEnd block by block, whole rows [nkv, d] in memory order: p at key s's row, sp at its score of head 0 (`body` runs per key). */
  const keys = (tab: number, body: Code): Code => seq(
    set(s, c(0)), set(tp, get(tab)), set(sp, get(A.scores)),
    block(loop(
      brIf(1, i32.ge_s(get(s), get(sEnd))),
      set(p, i32.load(get(tp))),
      set(bEnd, i32.min_s(i32.add(get(s), get(A.bs)), get(sEnd))),
      forLoop(s, get(s), get(bEnd), c(1),
        rowAt, body,
        set(sp, i32.add(get(sp), c(4))), set(p, i32.add(get(p), get(rowB)))),
      set(tp, i32.add(get(tp), c(4))),
      br(0),
    )),
  );
  /** For each kv head g and each of its query heads (h = g·rep + hh): kp at the key/value row's head g, `body` per head; h counts up. */
  const heads = (body: Code): Code => seq(
    set(h, c(0)),
    forLoop(g, c(0), get(A.nkv), c(1),
      set(kp, i32.add(get(rp), i32.mul(get(g), get(dB)))),
      forLoop(hh, c(0), get(A.rep), c(1), body, set(h, i32.add(get(h), c(1))))),
  );
  return {
    name: kv === 'f32' ? 'decode_attention' : 'decode_attention_f16',
    params: [I32, I32, I32, I32, I32, I32, I32, I32, F32T, I32, I32, I32, I32, I32, I32],
    results: [],
    locals: L.types,
    body: seq(
      // dB: bytes of a query/output head; kdB: of a key/value head in the blocks.
      constants,
      set(dB, i32.shl(get(A.d), c(2))), set(kdB, kv === 'f32' ? get(dB) : i32.shl(get(A.d), c(1))), set(rowB, i32.mul(get(A.nkv), get(kdB))),
      // Scores of head h at scores + h·ss (ss = 4·(qOffset + T) bytes).
      set(ss, i32.shl(i32.add(get(A.qOffset), get(A.T)), c(2))),
      forLoop(t, c(0), get(A.T), c(1),
        set(sEnd, i32.add(i32.add(get(A.qOffset), get(t)), c(1))),
        set(q0, i32.add(get(A.q), i32.mul(i32.mul(get(t), get(A.nh)), get(dB)))),
        set(o0, i32.add(get(A.out), i32.mul(i32.mul(get(t), get(A.nh)), get(dB)))),
        // Scores z_s of every head, one key row (all kv heads) at a time.
        keys(A.ktab, heads(seq(
          set(qp, i32.add(get(q0), i32.mul(get(h), get(dB)))),
          zero,
          forLoop(e, c(0), get(dB), c(64),
            ...a.map((x, j) => set(x, v128.f32x4_add(get(x), v128.f32x4_mul(v128.load(i32.add(get(qp), get(e)), 16 * j), kvLoad(j)))))),
          set(a[0]!, v128.f32x4_add(v128.f32x4_add(get(a[0]!), get(a[1]!)), v128.f32x4_add(get(a[2]!), get(a[3]!)))),
          f32.store(i32.add(get(sp), i32.mul(get(h), get(ss))), f32.mul(hsum(get(a[0]!)), get(A.scale))),
        ))),
        // Per head: m = max z_s, p_s = exp(z_s − m) in place, l = Σ p_s; stats[row] = (l, l | m, m, m, m): 32 bytes.
        forLoop(h, c(0), get(A.nh), c(1),
          set(hs, i32.add(get(A.scores), i32.mul(get(h), get(ss)))),
          set(mx, f32.const(-Infinity)),
          forLoop(s, c(0), get(sEnd), c(1), set(mx, f32.max(get(mx), f32.load(i32.add(get(hs), i32.shl(get(s), c(2))))))),
          set(l, call(0, get(hs), get(hs), get(sEnd), get(mx))),
          set(st, i32.add(get(A.stats), i32.shl(i32.add(i32.mul(get(t), get(A.nh)), get(h)), c(5)))),
          v128.store(get(st), v128.f64x2_splat(get(l))),
          v128.store(get(st), v128.f32x4_splat(get(mx)), 16),
        ),
        // o = Σ_s p_s·v_s, one value row at a time, summed in the output rows (zeroed first).
        forLoop(e, c(0), i32.mul(get(A.nh), get(dB)), c(16), v128.store(i32.add(get(o0), get(e)), v128.zero())),
        keys(A.vtab, heads(seq(
          set(pv, v128.load32_splat(i32.add(get(sp), i32.mul(get(h), get(ss))))),
          set(op, i32.add(get(o0), i32.mul(get(h), get(dB)))),
          forLoop(e, c(0), get(dB), c(64),
            ...a.map((_, j) => v128.store(i32.add(get(op), get(e)), v128.f32x4_add(v128.load(i32.add(get(op), get(e)), 16 * j), v128.f32x4_mul(get(pv), kvLoad(j))), 16 * j))),
        ))),
        // o /= l.
        forLoop(h, c(0), get(A.nh), c(1),
          set(st, i32.add(get(A.stats), i32.shl(i32.add(i32.mul(get(t), get(A.nh)), get(h)), c(5)))),
          set(lv, v128.f32x4_splat(f32.demote_f64(v128.f64x2_extract_lane(v128.load(get(st)), 0)))),
          set(op, i32.add(get(o0), i32.mul(get(h), get(dB)))),
          forLoop(e, c(0), get(dB), c(16), v128.store(i32.add(get(op), get(e)), v128.f32x4_div(v128.load(i32.add(get(op), get(e))), get(lv))))),
      ),
    ),
  };
}

/** The module's functions: `exp_shift` (called by index 0) and `decode_attention` (exported for the validation test). */
export const decodeAttentionFuncs = (): FuncDef[] => [expFn(), decodeFn('f32'), decodeFn('f16')];

type DecodeFn = (q: number, out: number, T: number, nh: number, nkv: number, rep: number, d: number, qOffset: number, scale: number, ktab: number, vtab: number, bs: number, scores: number, stats: number, row: number) => void;
interface DecodeExports {
  decode_attention: DecodeFn;
  decode_attention_f16: DecodeFn;
}

let instance: DecodeExports | null | undefined;
function ex(): DecodeExports | null {
  if (instance === undefined) instance = instantiateOnHeap<DecodeExports>(decodeAttentionFuncs());
  return instance;
}

/** Arguments of {@link decodeAttention}: one sequence. */
export interface DecodeAttentionArgs {
  /** New query rows [T, nh, d]. */
  q: F32;
  /** Output [T, nh, d]. */
  out: F32;
  T: number;
  nh: number;
  nkv: number;
  d: number;
  scale: number;
  /** Position of the first query row (keys s ≤ qOffset + t are visible to row t). */
  qOffset: number;
  /** Key blocks ([blockSize, nkv, d] from element `kAt` of each); block b holds tokens [b·blockSize, (b + 1)·blockSize). */
  kBlocks: readonly F32[] | readonly Uint16Array[];
  /** Value blocks, laid out as the key blocks (from element `vAt`); may be the same arrays as `kBlocks` (a paged cache's blocks hold both). */
  vBlocks: readonly F32[] | readonly Uint16Array[];
  /** Element type of the blocks: float32, or f16 bits on the heap (default 'f32'). */
  kv?: KvDType;
  /** Element offset of the first key row in every key block (default 0). */
  kAt?: number;
  /** Element offset of the first value row in every value block (default 0). */
  vAt?: number;
  blockSize: number;
  /** Where to write the log-sum-exp m + ln l of row t, head h: lse[lseAt + h·lseStride + t]. */
  lse?: F32;
  lseAt?: number;
  lseStride?: number;
}

/** Whether {@link decodeAttention} runs for head dimension d (WebAssembly SIMD present, d a multiple of 16). */
export function decodeAttentionRuns(d: number): boolean {
  return d % 16 === 0 && d > 0 && ex() !== null;
}

/** Whether {@link decodeAttention} reads these f16 blocks: it reads them in place, so all must be on the heap. */
export function decodeAttentionReads(blocks: readonly Uint16Array[]): boolean {
  return blocks.every((b) => heapAddress(b) >= 0);
}

/**
 * Attention of a sequence's new query rows over its cached keys and values (see the file
 * comment). Arrays that are not on the heap are staged into heap scratch, so the bits do not
 * depend on where they live. Call only where {@link decodeAttentionRuns}.
 */
export function decodeAttention(a: DecodeAttentionArgs): void {
  const { T, nh, nkv, d, blockSize } = a, nb = a.kBlocks.length, S = a.qOffset + T, f16 = a.kv === 'f16';
  // Blocks shared by keys and values are staged (and looked up) once; the tables point into them,
  // so no view per block is made. f16 blocks are read where they are (decodeAttentionReads).
  const shared = a.kBlocks === a.vBlocks;
  const blocks = (f16 ? [] : shared ? a.kBlocks : [...a.kBlocks, ...a.vBlocks]) as F32[];
  const io = staged([a.q, a.out, ...blocks], [a.out]);
  const addr = (i: number): number => f16 ? heapAddress((i < nb ? a.kBlocks[i] : a.vBlocks[i - nb])!) : io.at[2 + i]!;
  // One scratch block: the statistics (8 floats per row and head, 32-byte aligned for their f64
  // lanes), one widened key/value row (f16), the scores of one row, then the block tables.
  const R = 8 * T * nh, W = nkv * d, scratch = scratchF32(R + W + nh * S + 2 * nb), stats = scratch.subarray(0, R), scores = scratch.subarray(R + W, R + W + nh * S);
  const tab = scratch.subarray(R + W + nh * S), tabI = new Int32Array(tab.buffer, tab.byteOffset, 2 * nb);
  const es = f16 ? 2 : 4, kAt = es * (a.kAt ?? 0), vAt = es * (a.vAt ?? 0);
  for (let b = 0; b < nb; b++) { tabI[b] = addr(b) + kAt; tabI[nb + b] = addr(shared && !f16 ? b : nb + b) + vAt; }
  const at = heapAddress(tab), run = f16 ? ex()!.decode_attention_f16 : ex()!.decode_attention;
  run(io.at[0]!, io.at[1]!, T, nh, nkv, nh / nkv, d, a.qOffset, a.scale, at, at + 4 * nb, blockSize, heapAddress(scores), heapAddress(stats), heapAddress(stats) + 4 * R);
  io.done();
  if (a.lse) {
    const l = new Float64Array(stats.buffer, stats.byteOffset, 4 * T * nh);
    for (let t = 0; t < T; t++) {
      for (let h = 0; h < nh; h++) {
        const r = t * nh + h;
        a.lse[a.lseAt! + h * a.lseStride! + t] = stats[8 * r + 4]! + Math.log(l[4 * r]!);
      }
    }
  }
  heapRelease(scratch);
}

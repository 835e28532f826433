/**
 * Generator of `dot_nt`, the GEMM module's product for few rows against a weight matrix:
 *
 *   C = alpha * A B^T (+ C),   A [M, K] row-major (stride lda), B [N, K] row-major (stride ldb)
 *
 * i.e. `x * W^T` of a decode step (M = the batch's new tokens). B is read in place, never packed:
 * at decode time each weight element is used M times, so copying W would cost as much as the
 * product. A (small) is first copied (`dot_pack`), times alpha, into scratch, interleaved in
 * blocks of 4 along k (`[K/4][m][4]` per row group, zero-padded), so that one pointer with
 * constant offsets reaches the group's next 4 values of every row; it is packed once, by the
 * calling thread, and every column job of the product (`dot_nt`) reads it.
 *
 * Columns go in tiles of nb B rows (see {@link DOT_CLASSES}); for each tile, every row group
 * runs one pass along k: each f32x4 of the nb B rows is loaded once per group and multiplied into
 * m x nb accumulators with `f32x4.relaxed_madd` (FMA) or mul + add, as the variant says. The
 * first group streams the tile from memory (nb sequential streams for the prefetcher), the others
 * find it in L1, so the weights are read from memory once. The accumulators are reduced
 * horizontally at the end of the pass and the K % 4 tail is added in scalar.
 *
 * Before each tile, `dot_nt` touches (loads 2 bytes of, summed into the value it returns so the
 * loads stay) the first line of every 4 KiB page that starts inside the tile `ahead` tiles
 * further on (WebAssembly has no prefetch instruction). The hardware prefetchers follow each
 * B row's stream, but only within a page: without the touches every new page of every stream
 * starts with demand misses at full memory latency (a 3 KiB row at K = 768 crosses one almost
 * every row), which the passes that find their tile in L1 cannot hide. The touches stay inside
 * W's rows j..N-1 of the call (cut at the end of the last row) and change no result. Every
 * element of C is one dot product in a fixed order (four k lanes, then their sum, then the
 * tail), whatever the tile, row group or column range, so a split of the columns over threads
 * gives the same bits.
 *
 * Signatures: `dot_pack(M, K, pA, lda, alpha, packed)`, then `dot_nt(M, N, K, packed, pB, ldb,
 * bf16, pC, ldc, accumulate, acc)` (returns the touched values' sum): byte pointers, element strides;
 * `bf16` != 0 when B holds bf16 bit patterns (widened as they are loaded); `packed` needs
 * {@link dotScratchBytes}(M, K) bytes, and the same M and K in both calls; `acc` is the call's own
 * scratch of {@link dotAccBytes}(M) bytes (16-byte aligned; concurrent calls need one each).
 */
import { block, br, brIf, f32, forLoop, get, i32, if_, loop, select, seq, set, v128, Locals, ValType, type Code, type FuncDef } from '../../../wasm/encoder';
import { madd, type GemmCodegenOptions } from './options';

/**
 * How `dot_nt` cuts an M-row product: for M up to `maxM` (the first class that fits), column
 * tiles of `nb` B rows, and within a tile row groups of `group` rows. V8 schedules all loads of a
 * k step before its multiply-adds, so group + nb loaded vectors and group x nb accumulators must
 * fit its 15 allocatable xmm registers (8 rows x 1 column spills: 17; so does unrolling k by 2).
 * Measured on x86-64 (AMD EPYC, Zen 3) over the weights of a `small` decode step (400 MB, so W
 * streams from memory): 1 x 6 beats 1 x 4 at M = 1 (more streams in flight), 2 x 4 and 4 x 2 tie
 * for M > 1 (3 x 3 and 1 x 6 slower, 8 x 1 1.7x slower). On an AMD EPYC with AVX-512 (Zen 4,
 * one thread, CPU time, best of 6-10 interleaved rounds on a loaded machine), touching the pages
 * 4 tiles ahead saves 13 % of the time at M = 1, 24 % at M = 2, 18 % at M = 4, 9-13 % at M = 8
 * and 7 % at M = 16 against touching a share of the next tile at every k step (what this file
 * did before; that cost 45 % at M = 1); 2 or 8 tiles ahead do the same as 4, a touch every 2 KiB
 * or 1 KiB, or of 2 or 4 lines per page, less. Cutting K into L1-sized chunks (every row group
 * over one chunk of the tile before the next) gained nothing measurable, even at K = 3072; short
 * chunks do: with several row groups, the whole tile streamed by the first group's pass and then
 * none while the others computed from L1 (memory and compute took turns: at M = 8, 55 ms ≈ the
 * M = 2 streaming time + 3 passes at the in-cache rate). Chunks of 32 k steps (512 bytes of each
 * W row) keep the stream going between the groups' passes: 1.10-1.18x at M = 8 (one thread, CPU
 * time, best of 15 alternating rounds, same machine, `bench/dot-nt.mjs`); 16 does the same, 64
 * less (1.06-1.09x). Line-by-line touches of the next tile in a later group's pass instead were
 * 1.3-1.5x slower (a touch that misses holds up retirement like any load).
 */
export const DOT_CLASSES: readonly DotClass[] = [
  { maxM: 1, group: 1, nb: 6, ahead: 4 },
  { maxM: 2, group: 2, nb: 4, ahead: 4 },
  { maxM: Infinity, group: 2, nb: 4, ahead: 4, chunk: 32 },
];

/** One row of {@link DOT_CLASSES}. */
export interface DotClass {
  /** Largest M of the class (the first class whose maxM fits M runs). */
  maxM: number;
  /** Rows of x per pass along k (a power of 2). */
  group: number;
  /** Rows of W per column tile. */
  nb: number;
  /** Tiles ahead whose pages are touched before each tile (0: none; see the file comment). */
  ahead: number;
  /** k steps (of 4 values) per chunk of a tile that every row group runs before the next chunk (absent: whole rows per group). */
  chunk?: number;
}

/** Bytes of the packed A of M rows and depth K (`dot_pack`'s output, `dot_nt`'s input). */
export function dotScratchBytes(M: number, K: number): number {
  return M * Math.ceil(K / 4) * 16;
}

/** Bytes of one `dot_nt` call's accumulator scratch for M rows (the chunked classes keep a tile's accumulators there). */
export function dotAccBytes(M: number): number {
  return M * Math.max(...DOT_CLASSES.map((x) => x.nb)) * 16;
}

const { i32: I32, f32: F32, v128: V128 } = ValType;
const c = i32.const;

/** The `dot_pack` function (see the file comment), with the row groups of `table`. */
export function dotPackFn(o: GemmCodegenOptions, table: readonly DotClass[] = DOT_CLASSES): FuncDef {
  return dotFn('dot_pack', o, table);
}

/** The `dot_nt` function (see the file comment), cut as `table` says ({@link DOT_CLASSES}: the committed modules). */
export function dotNtFn(o: GemmCodegenOptions, table: readonly DotClass[] = DOT_CLASSES): FuncDef {
  return dotFn('dot_nt', o, table);
}

/** `dot_pack` or `dot_nt`: both choose the class (and so the row groups) by M the same way. */
function dotFn(name: 'dot_pack' | 'dot_nt', o: GemmCodegenOptions, table: readonly DotClass[]): FuncDef {
  const pack = name === 'dot_pack';
  // Parameter indices (-1: not a parameter of this function).
  const P = pack
    ? { M: 0, K: 1, pA: 2, lda: 3, alpha: 4, packed: 5, N: -1, pB: -1, ldb: -1, bf16: -1, pC: -1, ldc: -1, accumulate: -1, acc: -1 }
    : { M: 0, N: 1, K: 2, packed: 3, pB: 4, ldb: 5, bf16: 6, pC: 7, ldc: 8, accumulate: 9, acc: 10, pA: -1, lda: -1, alpha: -1 };
  const L = new Locals(pack ? 6 : 11);
  const kb = L.add(I32), kt = L.add(I32), kBlocks = L.add(I32), es = L.add(I32);
  const r = L.add(I32), k = L.add(I32), src = L.add(I32), dst = L.add(I32), stride = L.add(I32);
  const g0 = L.add(I32), mg = L.add(I32), pa0 = L.add(I32), j = L.add(I32), pa = L.add(I32), dC = L.add(I32);
  const alphaV = L.add(V128), av = L.add(V128), bs = L.add(F32);
  const paEnd = L.add(I32), pf = L.add(I32), pEnd = L.add(I32), wEnd = L.add(I32), sink = L.add(I32), kc = L.add(I32), kcEnd = L.add(I32);
  const maxGroup = Math.max(...table.map((x) => x.group)), maxNb = Math.max(...table.map((x) => x.nb));
  const ptrB = Array.from({ length: maxNb }, () => L.add(I32));
  const bv = Array.from({ length: maxNb }, () => L.add(V128));
  const acc = Array.from({ length: maxGroup }, () => Array.from({ length: maxNb }, () => L.add(V128)));
  const s = Array.from({ length: maxGroup }, () => Array.from({ length: maxNb }, () => L.add(F32)));

  const bLoad = (bf16: boolean, ptr: number): Code =>
    bf16 ? v128.i32x4_shl(v128.load16x4_u(get(ptr)), c(16)) : v128.load(get(ptr));
  const bScalar = (bf16: boolean, ptr: number): Code =>
    bf16 ? f32.reinterpret_i32(i32.shl(i32.load16_u(get(ptr)), c(16))) : f32.load(get(ptr));
  const hsum = (x: number): Code =>
    f32.add(
      f32.add(v128.f32x4_extract_lane(get(x), 0), v128.f32x4_extract_lane(get(x), 1)),
      f32.add(v128.f32x4_extract_lane(get(x), 2), v128.f32x4_extract_lane(get(x), 3)),
    );
  const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i);
  /** Row group g0 (rows g0 .. g0 + mg - 1, mg = min(G, M - g0)) and its packed A at pa0, for each group. */
  const eachGroup = (G: number, ...body: Code[]): Code =>
    forLoop(g0, c(0), get(P.M), c(G),
      set(mg, i32.min_s(c(G), i32.sub(get(P.M), get(g0)))),
      set(pa0, i32.add(get(P.packed), i32.shl(i32.mul(get(kBlocks), get(g0)), c(4)))),
      ...body,
    );

  /** A's rows (stride lda) times alpha into `[kBlocks][mg][4]` at pa0 per group, zero-padded along k. */
  const packA = (G: number): Code =>
    eachGroup(G,
      set(stride, i32.shl(get(mg), c(4))),
      forLoop(r, c(0), get(mg), c(1),
        set(dst, i32.add(get(pa0), i32.shl(get(r), c(4)))),
        set(src, i32.add(get(P.pA), i32.shl(i32.mul(i32.add(get(g0), get(r)), get(P.lda)), c(2)))),
        forLoop(k, c(0), get(kb), c(1),
          v128.store(get(dst), v128.f32x4_mul(v128.load(get(src)), get(alphaV))),
          set(src, i32.add(get(src), c(16))),
          set(dst, i32.add(get(dst), get(stride))),
        ),
        if_(get(kt),
          seq(
            v128.store(get(dst), v128.zero()),
            forLoop(k, c(0), get(kt), c(1),
              f32.store(get(dst), f32.mul(f32.load(get(src)), get(P.alpha))),
              set(src, i32.add(get(src), c(4))),
              set(dst, i32.add(get(dst), c(4))),
            ),
          )),
      ),
    );

  /** B row pointers at k step `step` (a local, or 0 when null) of rows j .. j + nb - 1. */
  const rowPointers = (nb: number, bf16: boolean, step: number | null): Code => seq(...range(nb).map((q) => set(ptrB[q]!,
    i32.add(i32.mul(i32.add(i32.mul(i32.add(get(j), c(q)), get(P.ldb)), step === null ? c(0) : i32.shl(get(step), c(2))), get(es)), get(P.pB)))));
  /** The k steps of the group at pa0 from pa (and ptrB) until paEnd (a bottom-tested loop: one branch per step; at least one step). */
  const kSteps = (m: number, nb: number, bf16: boolean): Code => loop(
    ...range(nb).map((q) => seq(
      set(bv[q]!, bLoad(bf16, ptrB[q]!)),
      set(ptrB[q]!, i32.add(get(ptrB[q]!), c(bf16 ? 8 : 16))),
    )),
    ...range(m).map((i) => seq(
      set(av, v128.load(get(pa), 16 * i)),
      ...range(nb).map((q) => set(acc[i]![q]!, madd(o, get(av), get(bv[q]!), get(acc[i]![q]!)))),
    )),
    set(pa, i32.add(get(pa), c(16 * m))),
    brIf(0, i32.lt_u(get(pa), get(paEnd))),
  );
  /** With pa and ptrB at the tail block: the accumulators' sums plus the K tail, into (or onto) C. */
  const finish = (m: number, nb: number, bf16: boolean): Code => {
    const rows = range(m), cols = range(nb);
    return seq(
      ...rows.flatMap((i) => cols.map((q) => set(s[i]![q]!, hsum(acc[i]![q]!)))),
      // K tail: the last packed block holds each row's last K % 4 values (zero-padded).
      forLoop(k, c(0), get(kt), c(1),
        ...cols.map((q) => seq(
          set(bs, bScalar(bf16, ptrB[q]!)),
          set(ptrB[q]!, i32.add(get(ptrB[q]!), get(es))),
          ...rows.map((i) => set(s[i]![q]!, f32.add(get(s[i]![q]!), f32.mul(f32.load(get(pa), 16 * i), get(bs))))),
        )),
        set(pa, i32.add(get(pa), c(4))),
      ),
      ...rows.map((i) => seq(
        set(dC, i32.add(get(P.pC), i32.shl(i32.add(i32.mul(i32.add(get(g0), c(i)), get(P.ldc)), get(j)), c(2)))),
        ...cols.map((q) =>
          f32.store(get(dC), select(f32.add(f32.load(get(dC), 4 * q), get(s[i]![q]!)), get(s[i]![q]!), get(P.accumulate)), 4 * q)),
      )),
    );
  };

  /** `body(m)` for the current group's row count mg (1 .. m), each size generated with its own registers. */
  const bySize = (m: number, body: (m: number) => Code): Code =>
    (m === 1 ? body(1) : if_(i32.eq(get(mg), c(m)), body(m), bySize(m - 1, body)));

  /** C[g0 .. g0 + m - 1, j .. j + nb - 1]: the m rows of the group at pa0 against B rows j .. j + nb - 1. */
  const tile = (m: number, nb: number, bf16: boolean): Code => seq(
    rowPointers(nb, bf16, null),
    set(pa, get(pa0)),
    ...range(m).flatMap((i) => range(nb).map((q) => set(acc[i]![q]!, v128.zero()))),
    set(paEnd, i32.add(get(pa0), i32.mul(get(kb), c(16 * m)))),
    if_(get(kb), kSteps(m, nb, bf16)),
    finish(m, nb, bf16),
  );

  /** The accumulators of the group's m rows to (`save`) or from the job's scratch (nb vectors per row, from row g0 on). */
  const moveAcc = (m: number, nb: number, save: boolean): Code => seq(
    set(dst, i32.add(get(P.acc), i32.shl(i32.mul(get(g0), c(nb)), c(4)))),
    ...range(m).flatMap((i) => range(nb).map((q) =>
      save ? v128.store(get(dst), get(acc[i]![q]!), 16 * (i * nb + q)) : set(acc[i]![q]!, v128.load(get(dst), 16 * (i * nb + q))))),
  );
  /**
   * Columns j .. j + nb - 1 for every row group, `chunk` k steps at a time: every group runs over
   * a chunk of the tile before the next chunk, its accumulators waiting in the job's scratch in
   * between. The first group reads each chunk from memory and the others find it in L1, so the
   * tile streams in short bursts while the groups compute instead of all at once before them
   * (the hardware prefetchers then keep up). Each lane still adds its k steps in order: the sums
   * are those of `tile`, bit for bit.
   */
  const chunkedTile = (G: number, nb: number, bf16: boolean, chunk: number): Code => {
    const pass = (m: number): Code => seq(
      moveAcc(m, nb, false),
      rowPointers(nb, bf16, kc),
      set(pa, i32.add(get(pa0), i32.mul(get(kc), c(16 * m)))),
      set(paEnd, i32.add(get(pa0), i32.mul(get(kcEnd), c(16 * m)))),
      kSteps(m, nb, bf16),
      moveAcc(m, nb, true),
    );
    const last = (m: number): Code => seq(
      moveAcc(m, nb, false),
      rowPointers(nb, bf16, kb),
      set(pa, i32.add(get(pa0), i32.mul(get(kb), c(16 * m)))),
      finish(m, nb, bf16),
    );
    return seq(
      forLoop(dst, get(P.acc), i32.add(get(P.acc), i32.shl(i32.mul(get(P.M), c(nb)), c(4))), c(16), v128.store(get(dst), v128.zero())),
      forLoop(kc, c(0), get(kb), c(chunk),
        set(kcEnd, i32.min_s(i32.add(get(kc), c(chunk)), get(kb))),
        eachGroup(G, bySize(G, pass)),
      ),
      eachGroup(G, bySize(G, last)),
    );
  };

  /**
   * Touch (load 2 bytes of) the first line of every 4 KiB page that starts inside tile j + ahead
   * (rows j + ahead * nb .. j + (ahead + 1) * nb - 1, cut at row N and at the end of W's last row).
   */
  const touchPages = (nb: number, ahead: number): Code => {
    const rowAt = (row: Code): Code => i32.add(get(P.pB), i32.mul(i32.mul(row, get(P.ldb)), get(es)));
    const clamp = (d: number): Code => i32.min_s(i32.add(get(j), c(d)), get(P.N));
    return seq(
      set(pf, i32.and(i32.add(rowAt(clamp(ahead * nb)), c(4095)), c(-4096))),
      set(pEnd, rowAt(clamp((ahead + 1) * nb))),
      set(pEnd, select(get(pEnd), get(wEnd), i32.lt_u(get(pEnd), get(wEnd)))),
      block(loop(
        brIf(1, i32.ge_u(i32.add(get(pf), c(2)), get(pEnd))),
        set(sink, i32.add(get(sink), i32.load16_u(get(pf)))),
        set(pf, i32.add(get(pf), c(4096))),
        br(0),
      )),
    );
  };
  /** Columns j .. j + nb - 1 for every row group (groups of G rows, the last one mg <= G). */
  const columns = (G: number, nb: number, bf16: boolean, chunk: number): Code =>
    (chunk > 0 ? chunkedTile(G, nb, bf16, chunk) : eachGroup(G, bySize(G, (m) => tile(m, nb, bf16))));
  /** The whole product for one class: tiles of nb columns (touching pages `ahead` tiles on), then single columns. */
  const product = (G: number, nb: number, bf16: boolean, ahead: number, chunk: number): Code => {
    const run = (w: number, touch: boolean): Code => block(
      loop(
        brIf(1, i32.gt_s(i32.add(get(j), c(w)), get(P.N))),
        touch ? touchPages(w, ahead) : [],
        columns(G, w, bf16, w > 1 ? chunk : 0),
        set(j, i32.add(get(j), c(w))),
        br(0),
      ),
    );
    return seq(
      set(j, c(0)),
      // The end of W: where its last row ends (rows are ldb apart, K long).
      set(wEnd, i32.add(get(P.pB), i32.mul(i32.add(i32.mul(i32.sub(get(P.N), c(1)), get(P.ldb)), get(P.K)), get(es)))),
      run(nb, ahead > 0),
      nb > 1 ? run(1, false) : [],
    );
  };
  const classes = (i: number): Code => {
    const { maxM, group, nb, ahead, chunk = 0 } = table[i]!;
    if ((group & (group - 1)) !== 0) throw new RangeError(`dot_nt: group ${group} is not a power of 2`);
    const run = pack ? packA(group) : if_(get(P.bf16), product(group, nb, true, ahead, chunk), product(group, nb, false, ahead, chunk));
    return i === table.length - 1 ? run : if_(i32.le_s(get(P.M), c(maxM)), run, classes(i + 1));
  };

  const blocks = seq(
    set(kb, i32.shr_u(get(P.K), c(2))),
    set(kt, i32.and(get(P.K), c(3))),
    set(kBlocks, i32.add(get(kb), i32.ne(get(kt), c(0)))),
  );
  return pack
    ? {
      name, params: [I32, I32, I32, I32, F32, I32], results: [], locals: L.types,
      body: seq(blocks, set(alphaV, v128.f32x4_splat(get(P.alpha))), classes(0)),
    }
    : {
      // Returns the touched values' sum, so that those loads are not dropped.
      name, params: [I32, I32, I32, I32, I32, I32, I32, I32, I32, I32, I32], results: [I32], locals: L.types,
      body: seq(blocks, set(es, select(c(2), c(4), get(P.bf16))), classes(0), get(sink)),
    };
}

/**
 * Generator of the GEMM WebAssembly module (SIMD, shared memory).
 *
 * The algorithm is the classic Goto/BLIS blocking:
 *
 *   for jc in N by NC:                      B block [KC x NC] lives in L2/L3
 *     for pc in K by KC:
 *       pack B[pc:pc+kc, jc:jc+nc] into NR-wide panels   (k-major: kc rows of NR floats)
 *       for ic in M by MC:                  A block [MC x KC] lives in L2
 *         pack alpha * A[ic:ic+mc, pc:pc+kc] into MR-tall panels (k-major: kc rows of MR floats)
 *         for jr in nc by NR, ir in mc by MR:
 *           micro-kernel: C[MR x NR] (+)= Apanel * Bpanel     (MR x NR/4 f32x4 accumulators)
 *
 * Operands are addressed through element strides, so one routine serves every transpose:
 * op(A)[i, k] = A[i * rsA + k * csA], op(B)[k, j] = B[k * rsB + j * csB], C[i, j] = C[i * ldc + j].
 * B may hold bf16 bit patterns (2-byte elements), widened while packing (`bits << 16`).
 * Packing moves 4 x 4 blocks with SIMD shuffles when the source runs along k (transposed B,
 * non-transposed A), copies whole vectors when it runs along the panel, and walks a non-transposed
 * B row by row so each source row is read once, front to back.
 * Pointers are byte addresses in the shared memory; the host lays out and fills the buffers.
 *
 * Exports (all pointers in bytes, all strides and sizes in elements):
 * - `gemm(M, N, K, pA, rsA, csA, pB, rsB, csB, bf16, pC, ldc, alpha, accumulate, packA, packB, tile, MC, NC, KC)`
 *   C = alpha * op(A) op(B) (+ C when `accumulate` != 0). `packA` needs MC' * KC floats and `packB`
 *   KC * NC' floats, where MC' and NC' are MC and NC rounded up to MR and NR; `tile` MR * NR floats.
 * - `dot_pack(M, K, pA, lda, alpha, packed)` then `dot_nt(M, N, K, packed, pB, ldb, bf16, pC, ldc,
 *   accumulate, acc)`: the same product for op(A) = A and op(B) = B^T with B row-major [N, K], streaming
 *   B in place without packing (few rows against a weight matrix, as in decode steps; generated in
 *   `dot-nt.ts`); A is packed once, then any column ranges of B run on it.
 * - `kernel`, `kernel_<rows>` (rows < MR), `pack_a`, `pack_b`, `pack_b_bf16`, `macro`: the building
 *   blocks, exported for tests.
 */
import {
  block, br, brIf, call, encodeModule, f32, forLoop, get, i32, if_, loop, select, seq, set, v128, ValType,
  type Code, type FuncDef, Locals,
} from '../../../wasm/encoder';
import { dotNtFn, dotPackFn } from './dot-nt';
import { madd, type GemmCodegenOptions } from './options';

export type { GemmCodegenOptions } from './options';

/** The default configuration (the committed `simd` variant; see variants.ts). */
export const DEFAULT_GEMM_CODEGEN: GemmCodegenOptions = { mr: 4, nr: 8, kUnroll: 1, relaxed: false };

/** Smallest and largest memory of the imported shared memory, in 64 KiB pages. */
export const GEMM_MEMORY_PAGES = { min: 1, max: 65536 } as const;

const { i32: I32, v128: V128 } = ValType;
const c = i32.const;

/**
 * Panels of a non-transposed B packed together, k by k (4 x NR floats of a source row; 4 store
 * streams fit the associativity of any L1, measured 11x faster than scattering whole rows).
 */
const PACK_B_GROUP = 4;

/** Function indices inside the module (calls use them); `kernel_<r>` (r = 1 .. MR-1) is `kernel_1 + r - 1`. */
const FN = { kernel: 0, pack_a: 1, pack_b: 2, pack_b_bf16: 3, macro: 4, gemm: 5, dot_nt: 6, dot_pack: 7, kernel_1: 8 } as const;


/**
 * kernel(kc, a, b, c, ldcBytes, accumulate): one MR x NR tile of C from packed panels.
 * The k loop keeps MR * NR/4 accumulators and NR/4 B vectors in locals (V8 keeps them in xmm
 * registers); A values are broadcast straight from memory (`v128.load32_splat`).
 * With `rows` < MR (`kernel_<rows>`, the last panel of an A block whose height is not a multiple
 * of MR): only the first `rows` rows of the panel (still MR floats per k) are computed and
 * stored, each element by the same operations as in the full kernel.
 */
function kernelFn(o: GemmCodegenOptions, rows = o.mr): FuncDef {
  const { mr: panel, nr, kUnroll } = o;
  const mr = rows;
  const nv = nr / 4;
  const P = { kc: 0, a: 1, b: 2, c: 3, ldc: 4, accumulate: 5 };
  const L = new Locals(6);
  const acc: number[][] = [];
  for (let r = 0; r < mr; r++) acc.push(Array.from({ length: nv }, () => L.add(V128)));
  const bv = Array.from({ length: nv }, () => L.add(V128));
  const av = L.add(V128);
  const row = L.add(I32);

  /** One k step reading the panels at byte offsets aOff/bOff from the current pointers. */
  const step = (aOff: number, bOff: number): Code =>
    seq(
      ...bv.map((b, j) => set(b, v128.load(get(P.b), bOff + 16 * j))),
      ...acc.map((accRow, r) =>
        seq(
          set(av, v128.load32_splat(get(P.a), aOff + 4 * r)),
          ...accRow.map((x, j) => set(x, madd(o, get(av), get(bv[j]!), get(x)))),
        ),
      ),
    );

  const zero = acc.flat().map((x) => set(x, v128.zero()));
  // The k loops test at the bottom, against the end address of the A panel: one compare and
  // two pointer increments per iteration. First groups of kUnroll steps, then the rest.
  const end = L.add(I32);
  const kLoop = (steps: number, count: Code): Code =>
    seq(
      set(end, i32.add(get(P.a), i32.mul(count, c(4 * panel * steps)))),
      if_(i32.ne(get(P.a), get(end)),
        loop(
          ...Array.from({ length: steps }, (_, u) => step(4 * panel * u, 4 * nr * u)),
          set(P.a, i32.add(get(P.a), c(4 * panel * steps))),
          set(P.b, i32.add(get(P.b), c(4 * nr * steps))),
          brIf(0, i32.ne(get(P.a), get(end))),
        )),
    );
  const unrolled = kLoop(kUnroll, kUnroll > 1 ? i32.shr_s(get(P.kc), c(Math.log2(kUnroll))) : get(P.kc));
  const tail = kUnroll > 1 ? kLoop(1, i32.and(get(P.kc), c(kUnroll - 1))) : [];
  const store = (add: boolean): Code =>
    seq(
      set(row, get(P.c)),
      ...acc.map((accRow) =>
        seq(
          ...accRow.map((x, j) =>
            v128.store(get(row), add ? v128.f32x4_add(v128.load(get(row), 16 * j), get(x)) : get(x), 16 * j),
          ),
          set(row, i32.add(get(row), get(P.ldc))),
        ),
      ),
    );
  return {
    name: rows === panel ? 'kernel' : `kernel_${rows}`,
    params: [I32, I32, I32, I32, I32, I32],
    results: [],
    locals: L.types,
    body: seq(...zero, unrolled, tail, if_(get(P.accumulate), store(true), store(false))),
  };
}

/** f32 lane indices -> i8x16.shuffle byte indices. */
const lanes = (...ls: number[]): number[] => ls.flatMap((l) => [4 * l, 4 * l + 1, 4 * l + 2, 4 * l + 3]);

/**
 * Code that packs one panel of `width` strided vectors into k-major order with 4 x 4 transposes
 * (vectors past the last multiple of 4 are copied with scalar loads): vector q (q < width) starts at byte address `ptr[q]` and holds its k-th
 * element at `ptr[q] + k * elemBytes`; the panel row of step k is written to `dst + k * width * 4`.
 * Handles `kc & ~3` steps with SIMD and the rest scalar; advances `dst` past the panel. When
 * `scale` is given, every value is multiplied by that f32x4 local (and its lane 0 in the tail).
 */
function transposePanel(
  L: Locals, width: number, ptr: number[], kc: number, dst: number, bf16: boolean, scale?: number,
): Code {
  const es = bf16 ? 2 : 4;
  const k = L.add(I32), k4 = L.add(I32);
  const r = [L.add(V128), L.add(V128), L.add(V128), L.add(V128)];
  const t = [L.add(V128), L.add(V128), L.add(V128), L.add(V128)];
  const loadVec = (p: number): Code => (bf16 ? v128.i32x4_shl(v128.load16x4_u(get(p)), c(16)) : v128.load(get(p)));
  const scaled = (x: Code): Code => (scale === undefined ? x : v128.f32x4_mul(x, get(scale)));
  const group = (g: number): Code =>
    seq(
      ...r.map((rq, q) => set(rq, loadVec(ptr[4 * g + q]!))),
      set(t[0]!, v128.shuffle(get(r[0]!), get(r[1]!), lanes(0, 4, 1, 5))),
      set(t[1]!, v128.shuffle(get(r[2]!), get(r[3]!), lanes(0, 4, 1, 5))),
      set(t[2]!, v128.shuffle(get(r[0]!), get(r[1]!), lanes(2, 6, 3, 7))),
      set(t[3]!, v128.shuffle(get(r[2]!), get(r[3]!), lanes(2, 6, 3, 7))),
      v128.store(get(dst), scaled(v128.shuffle(get(t[0]!), get(t[1]!), lanes(0, 1, 4, 5))), 16 * g),
      v128.store(get(dst), scaled(v128.shuffle(get(t[0]!), get(t[1]!), lanes(2, 3, 6, 7))), 16 * g + 4 * width),
      v128.store(get(dst), scaled(v128.shuffle(get(t[2]!), get(t[3]!), lanes(0, 1, 4, 5))), 16 * g + 8 * width),
      v128.store(get(dst), scaled(v128.shuffle(get(t[2]!), get(t[3]!), lanes(2, 3, 6, 7))), 16 * g + 12 * width),
    );
  const scalarLoadAt = (p: number, offset: number): Code =>
    bf16 ? f32.reinterpret_i32(i32.shl(i32.load16_u(get(p), offset), c(16))) : f32.load(get(p), offset);
  const scalarLoad = (p: number): Code => scalarLoadAt(p, 0);
  const scalarScaled = (x: Code): Code =>
    scale === undefined ? x : f32.mul(x, v128.f32x4_extract_lane(get(scale), 0));
  return seq(
    set(k4, i32.and(get(kc), c(~3))),
    forLoop(k, c(0), get(k4), c(4),
      ...Array.from({ length: Math.floor(width / 4) }, (_, g) => group(g)),
      // Vectors past the last group of 4 (width not a multiple of 4): scalar, 4 k steps each.
      ...ptr.slice(4 * Math.floor(width / 4)).map((p, i) => {
        const q = 4 * Math.floor(width / 4) + i;
        return seq(...[0, 1, 2, 3].map((u) =>
          f32.store(get(dst), scalarScaled(scalarLoadAt(p, u * es)), 4 * q + 4 * width * u)));
      }),
      ...ptr.map((p) => set(p, i32.add(get(p), c(4 * es)))),
      set(dst, i32.add(get(dst), c(16 * width))),
    ),
    forLoop(k, get(k4), get(kc), c(1),
      ...ptr.map((p, q) => f32.store(get(dst), scalarScaled(scalarLoad(p)), 4 * q)),
      ...ptr.map((p) => set(p, i32.add(get(p), c(es)))),
      set(dst, i32.add(get(dst), c(4 * width))),
    ),
  );
}

/**
 * pack_a(src, rs, cs, mc, kc, dst, alpha): alpha * op(A)[0:mc, 0:kc] into ceil(mc/MR) panels of
 * kc x MR floats (dst[p][k][r] = alpha * op(A)[p*MR + r, k]); rows past mc are zero.
 */
function packAFn(o: GemmCodegenOptions): FuncDef {
  const { mr } = o;
  const P = { src: 0, rs: 1, cs: 2, mc: 3, kc: 4, dst: 5, alpha: 6 };
  const L = new Locals(7);
  const p = L.add(I32), k = L.add(I32), r = L.add(I32);
  const rsB = L.add(I32), csB = L.add(I32), base = L.add(I32), addr = L.add(I32), rows = L.add(I32);
  const alphaV = L.add(V128);
  const fullPanel = seq(
    // Row pointers advance by csB per k; MR loads per k step at base + r * rsB.
    forLoop(k, c(0), get(P.kc), c(1),
      set(addr, get(base)),
      ...Array.from({ length: mr }, (_, rr) =>
        seq(
          f32.store(get(P.dst), f32.mul(f32.load(get(addr)), get(P.alpha)), 4 * rr),
          rr < mr - 1 ? set(addr, i32.add(get(addr), get(rsB))) : [],
        ),
      ),
      set(base, i32.add(get(base), get(csB))),
      set(P.dst, i32.add(get(P.dst), c(4 * mr))),
    ),
  );
  // Partial last panel: rows >= `rows` are zero.
  const partialPanel = seq(
    forLoop(k, c(0), get(P.kc), c(1),
      set(addr, get(base)),
      forLoop(r, c(0), c(mr), c(1),
        if_(i32.lt_s(get(r), get(rows)),
          seq(
            f32.store(get(P.dst), f32.mul(f32.load(get(addr)), get(P.alpha))),
            set(addr, i32.add(get(addr), get(rsB))),
          ),
          f32.store(get(P.dst), f32.const(0)),
        ),
        set(P.dst, i32.add(get(P.dst), c(4))),
      ),
      set(base, i32.add(get(base), get(csB))),
    ),
  );
  // Transposed A (rs == 1): a panel row is MR contiguous floats (vector loads, scalar remainder).
  const contiguousPanel = seq(
    forLoop(k, c(0), get(P.kc), c(1),
      ...Array.from({ length: Math.floor(mr / 4) }, (_, q) =>
        v128.store(get(P.dst), v128.f32x4_mul(v128.load(get(base), 16 * q), get(alphaV)), 16 * q),
      ),
      ...Array.from({ length: mr % 4 }, (_, i) => {
        const rr = 4 * Math.floor(mr / 4) + i;
        return f32.store(get(P.dst), f32.mul(f32.load(get(base), 4 * rr), get(P.alpha)), 4 * rr);
      }),
      set(base, i32.add(get(base), get(csB))),
      set(P.dst, i32.add(get(P.dst), c(4 * mr))),
    ),
  );
  // A not transposed (cs == 1): each panel row is a contiguous run of k; transpose 4 x 4 blocks.
  const rowPtr = Array.from({ length: mr }, () => L.add(I32));
  const transposedPanel = seq(
    ...rowPtr.map((rp, rr) => set(rp, i32.add(get(base), i32.mul(get(rsB), c(rr))))),
    transposePanel(L, mr, rowPtr, P.kc, P.dst, false, alphaV),
  );
  return {
    name: 'pack_a',
    params: [I32, I32, I32, I32, I32, I32, ValType.f32],
    results: [],
    locals: L.types,
    body: seq(
      set(rsB, i32.shl(get(P.rs), c(2))),
      set(csB, i32.shl(get(P.cs), c(2))),
      set(alphaV, v128.f32x4_splat(get(P.alpha))),
      forLoop(p, c(0), get(P.mc), c(mr),
        set(base, i32.add(get(P.src), i32.mul(get(p), get(rsB)))),
        set(rows, i32.sub(get(P.mc), get(p))),
        if_(i32.ge_s(get(rows), c(mr)),
          if_(i32.eq(get(P.rs), c(1)), contiguousPanel, if_(i32.eq(get(P.cs), c(1)), transposedPanel, fullPanel)),
          partialPanel,
        ),
      ),
    ),
  };
}

/**
 * pack_b(src, rs, cs, kc, nc, dst) and pack_b_bf16: op(B)[0:kc, 0:nc] into ceil(nc/NR) panels of
 * kc x NR floats (dst[p][k][j] = op(B)[k, p*NR + j]); columns past nc are zero. With cs == 1 (B
 * not transposed) a full panel row is copied with vector loads; otherwise elements are gathered.
 * The bf16 variant reads 2-byte elements and widens them (`bits << 16`).
 */
function packBFn(o: GemmCodegenOptions, bf16: boolean): FuncDef {
  const { nr } = o;
  const es = bf16 ? 2 : 4;
  const P = { src: 0, rs: 1, cs: 2, kc: 3, nc: 4, dst: 5 };
  const L = new Locals(6);
  const p = L.add(I32), k = L.add(I32), j = L.add(I32);
  const rsB = L.add(I32), csB = L.add(I32), base = L.add(I32), addr = L.add(I32), cols = L.add(I32);
  const load = (a: Code): Code => (bf16 ? i32.shl(i32.load16_u(a), c(16)) : i32.load(a));
  // B not transposed (cs == 1): rows of op(B) are contiguous. Panels go in groups of
  // PACK_B_GROUP: within a group k runs outermost, so each source row piece (PACK_B_GROUP * NR
  // floats) is read once, front to back, and scattered into the group's panels. Reading panel by
  // panel would stride through rows (one TLB miss per NR floats); scattering a whole row into all
  // panels would write to every panel at once, kc * NR * 4 bytes apart (a multiple of 4 KiB: all
  // in one L1 set).
  const full = L.add(I32), panelBytes = L.add(I32), out = L.add(I32), g = L.add(I32), gEnd = L.add(I32);
  const copyPiece = (from: number, to: number): Code =>
    bf16
      ? seq(...Array.from({ length: nr / 4 }, (_, q) =>
          v128.store(get(to), v128.i32x4_shl(v128.load16x4_u(get(from), 8 * q), c(16)), 16 * q)))
      : seq(...Array.from({ length: nr / 4 }, (_, q) => v128.store(get(to), v128.load(get(from), 16 * q), 16 * q)));
  const contiguousBlock = seq(
    set(full, i32.and(get(P.nc), c(-nr))),
    set(panelBytes, i32.mul(get(P.kc), c(4 * nr))),
    forLoop(g, c(0), get(full), c(nr * PACK_B_GROUP),
      set(gEnd, i32.min_s(i32.add(get(g), c(nr * PACK_B_GROUP)), get(full))),
      forLoop(k, c(0), get(P.kc), c(1),
        set(addr, i32.add(i32.add(get(P.src), i32.mul(get(k), get(rsB))), i32.mul(get(g), c(es)))),
        // Panel g / NR starts g * kc * 4 bytes into dst (panelBytes / NR = kc * 4).
        set(out, i32.add(i32.add(get(P.dst), i32.mul(get(g), i32.shl(get(P.kc), c(2)))), i32.mul(get(k), c(4 * nr)))),
        forLoop(p, get(g), get(gEnd), c(nr),
          copyPiece(addr, out),
          set(addr, i32.add(get(addr), c(nr * es))),
          set(out, i32.add(get(out), get(panelBytes))),
        ),
      ),
    ),
    // The partial last panel (if any) goes through the generic loop below.
    set(P.dst, i32.add(get(P.dst), i32.mul(get(P.kc), i32.shl(get(full), c(2))))),
  );
  const gatherPanel = forLoop(k, c(0), get(P.kc), c(1),
    set(addr, get(base)),
    ...Array.from({ length: nr }, (_, jj) =>
      seq(
        i32.store(get(P.dst), load(get(addr)), 4 * jj),
        jj < nr - 1 ? set(addr, i32.add(get(addr), get(csB))) : [],
      ),
    ),
    set(base, i32.add(get(base), get(rsB))),
    set(P.dst, i32.add(get(P.dst), c(4 * nr))),
  );
  const partialPanel = forLoop(k, c(0), get(P.kc), c(1),
    set(addr, get(base)),
    forLoop(j, c(0), c(nr), c(1),
      if_(i32.lt_s(get(j), get(cols)),
        seq(i32.store(get(P.dst), load(get(addr))), set(addr, i32.add(get(addr), get(csB)))),
        i32.store(get(P.dst), c(0)),
      ),
      set(P.dst, i32.add(get(P.dst), c(4))),
    ),
    set(base, i32.add(get(base), get(rsB))),
  );
  // B transposed (rs == 1): each panel column is a contiguous run of k; transpose 4 x 4 blocks.
  const colPtr = Array.from({ length: nr }, () => L.add(I32));
  const transposedPanel = seq(
    ...colPtr.map((cp, jj) => set(cp, i32.add(get(base), i32.mul(get(csB), c(jj))))),
    transposePanel(L, nr, colPtr, P.kc, P.dst, bf16),
  );
  return {
    name: bf16 ? 'pack_b_bf16' : 'pack_b',
    params: [I32, I32, I32, I32, I32, I32],
    results: [],
    locals: L.types,
    body: seq(
      set(rsB, i32.mul(get(P.rs), c(es))),
      set(csB, i32.mul(get(P.cs), c(es))),
      set(p, c(0)),
      if_(i32.eq(get(P.cs), c(1)), seq(contiguousBlock, set(p, get(full)))),
      forLoop(p, get(p), get(P.nc), c(nr),
        set(base, i32.add(get(P.src), i32.mul(get(p), get(csB)))),
        set(cols, i32.sub(get(P.nc), get(p))),
        if_(i32.ge_s(get(cols), c(nr)),
          if_(i32.eq(get(P.rs), c(1)), transposedPanel, gatherPanel),
          partialPanel,
        ),
      ),
    ),
  };
}

/**
 * macro(mc, nc, kc, pa, pb, c, ldcBytes, accumulate, tile): C[0:mc, 0:nc] (+)= packed A block x
 * packed B block. A last panel of fewer than MR rows runs `kernel_<rows>` straight into C; a
 * tile with fewer than NR columns runs the micro-kernel into `tile` and copies the valid part.
 */
function macroFn(o: GemmCodegenOptions): FuncDef {
  const { mr, nr } = o;
  const P = { mc: 0, nc: 1, kc: 2, pa: 3, pb: 4, c: 5, ldc: 6, accumulate: 7, tile: 8 };
  const L = new Locals(9);
  const jr = L.add(I32), ir = L.add(I32), rows = L.add(I32), cols = L.add(I32);
  const bp = L.add(I32), ap = L.add(I32), cp = L.add(I32), r = L.add(I32), j = L.add(I32);
  const dst = L.add(I32), src = L.add(I32);
  const copyTile = forLoop(r, c(0), get(rows), c(1),
    set(dst, i32.add(get(cp), i32.mul(get(r), get(P.ldc)))),
    set(src, i32.add(get(P.tile), i32.mul(get(r), c(4 * nr)))),
    forLoop(j, c(0), get(cols), c(1),
      f32.store(get(dst),
        select(f32.add(f32.load(get(dst)), f32.load(get(src))), f32.load(get(src)), get(P.accumulate))),
      set(dst, i32.add(get(dst), c(4))),
      set(src, i32.add(get(src), c(4))),
    ),
  );
  return {
    name: 'macro',
    params: [I32, I32, I32, I32, I32, I32, I32, I32, I32],
    results: [],
    locals: L.types,
    body: seq(
      forLoop(jr, c(0), get(P.nc), c(nr),
        set(cols, i32.sub(get(P.nc), get(jr))),
        set(bp, i32.add(get(P.pb), i32.mul(get(jr), i32.shl(get(P.kc), c(2))))),
        forLoop(ir, c(0), get(P.mc), c(mr),
          set(rows, i32.sub(get(P.mc), get(ir))),
          set(ap, i32.add(get(P.pa), i32.mul(get(ir), i32.shl(get(P.kc), c(2))))),
          set(cp, i32.add(i32.add(get(P.c), i32.mul(get(ir), get(P.ldc))), i32.shl(get(jr), c(2)))),
          if_(i32.and(i32.ge_s(get(rows), c(mr)), i32.ge_s(get(cols), c(nr))),
            call(FN.kernel, get(P.kc), get(ap), get(bp), get(cp), get(P.ldc), get(P.accumulate)),
            if_(i32.ge_s(get(cols), c(nr)),
              seq(...Array.from({ length: mr - 1 }, (_, i) =>
                if_(i32.eq(get(rows), c(i + 1)),
                  call(FN.kernel_1 + i, get(P.kc), get(ap), get(bp), get(cp), get(P.ldc), get(P.accumulate))))),
              seq(
                call(FN.kernel, get(P.kc), get(ap), get(bp), get(P.tile), c(4 * nr), c(0)),
                set(rows, i32.min_s(get(rows), c(mr))),
                set(cols, i32.min_s(get(cols), c(nr))),
                copyTile,
              ),
            ),
          ),
        ),
      ),
    ),
  };
}

/** gemm(...): the blocked driver (see the file comment). */
function gemmFn(): FuncDef {
  const P = {
    M: 0, N: 1, K: 2, pA: 3, rsA: 4, csA: 5, pB: 6, rsB: 7, csB: 8, bf16: 9, pC: 10, ldc: 11,
    alpha: 12, accumulate: 13, packA: 14, packB: 15, tile: 16, MC: 17, NC: 18, KC: 19,
  };
  const L = new Locals(20);
  const jc = L.add(I32), nc = L.add(I32), pc = L.add(I32), kc = L.add(I32), ic = L.add(I32), mc = L.add(I32);
  const es = L.add(I32), src = L.add(I32), acc = L.add(I32), left = L.add(I32);
  const minTo = (dst: number, limit: number, total: number, at: number): Code =>
    seq(set(left, i32.sub(get(total), get(at))), set(dst, i32.min_s(get(limit), get(left))));
  return {
    name: 'gemm',
    params: [I32, I32, I32, I32, I32, I32, I32, I32, I32, I32, I32, I32, ValType.f32, I32, I32, I32, I32, I32, I32, I32],
    results: [],
    locals: L.types,
    body: seq(
      set(es, select(c(2), c(4), get(P.bf16))),
      forLoop(jc, c(0), get(P.N), get(P.NC),
        minTo(nc, P.NC, P.N, jc),
        forLoop(pc, c(0), get(P.K), get(P.KC),
          minTo(kc, P.KC, P.K, pc),
          set(src, i32.add(get(P.pB), i32.mul(get(es),
            i32.add(i32.mul(get(pc), get(P.rsB)), i32.mul(get(jc), get(P.csB)))))),
          if_(get(P.bf16),
            call(FN.pack_b_bf16, get(src), get(P.rsB), get(P.csB), get(kc), get(nc), get(P.packB)),
            call(FN.pack_b, get(src), get(P.rsB), get(P.csB), get(kc), get(nc), get(P.packB)),
          ),
          set(acc, i32.or(get(P.accumulate), i32.gt_s(get(pc), c(0)))),
          forLoop(ic, c(0), get(P.M), get(P.MC),
            minTo(mc, P.MC, P.M, ic),
            call(FN.pack_a,
              i32.add(get(P.pA), i32.shl(i32.add(i32.mul(get(ic), get(P.rsA)), i32.mul(get(pc), get(P.csA))), c(2))),
              get(P.rsA), get(P.csA), get(mc), get(kc), get(P.packA), get(P.alpha)),
            call(FN.macro, get(mc), get(nc), get(kc), get(P.packA), get(P.packB),
              i32.add(get(P.pC), i32.shl(i32.add(i32.mul(get(ic), get(P.ldc)), get(jc)), c(2))),
              i32.shl(get(P.ldc), c(2)), get(acc), get(P.tile)),
          ),
        ),
      ),
    ),
  };
}

/** Generate the module bytes for the given micro-kernel configuration. */
export function generateGemmModule(options: GemmCodegenOptions = DEFAULT_GEMM_CODEGEN): Uint8Array {
  const o = options;
  if (o.nr % 4 !== 0 || o.nr < 4 || o.mr < 1) throw new RangeError(`bad micro-tile ${o.mr}x${o.nr}`);
  if (o.kUnroll < 1 || (o.kUnroll & (o.kUnroll - 1)) !== 0) throw new RangeError(`bad kUnroll ${o.kUnroll}`);
  const funcs: FuncDef[] = [
    kernelFn(o),
    packAFn(o),
    packBFn(o, false),
    packBFn(o, true),
    macroFn(o),
    gemmFn(),
    dotNtFn(o),
    dotPackFn(o),
    ...Array.from({ length: o.mr - 1 }, (_, i) => kernelFn(o, i + 1)),
  ];
  return encodeModule(funcs, GEMM_MEMORY_PAGES.min, GEMM_MEMORY_PAGES.max);
}

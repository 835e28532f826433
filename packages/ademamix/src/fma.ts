// Fused multiply-add, correctly rounded, in float32 and float64.
//
// PyTorch's CPU kernels for `x.add_(y, alpha=a)` and `x.addcmul_(y, z, value=v)` are compiled
// with contraction, so on an FMA-capable CPU they compute `x + a*y` with ONE rounding (CUDA does the
// same). To reproduce torch's optimizer states bit for bit the update kernels use these helpers
// wherever torch fuses (checked against torch 1.13.1 on CPU/AVX2, float32 and float64, see
// test/golden.py). JavaScript has no native FMA, so both are emulated exactly:
//
// fmaF32: a, b, c are float32 values. a*b is exact in double (48 significant bits). s = RN64(a*b + c)
//   can differ from the exact sum only by a tiny error; RN32(s) is then the correct float32 result
//   unless s sits exactly on a float32 rounding midpoint, which is detected and resolved with the
//   exact error of the double addition (TwoSum).
// fmaF64: a*b = uh + ul exactly (Dekker/Veltkamp TwoProduct); uh + c = s + e1 (TwoSum);
//   e1 + ul = t + e2 (TwoSum), so the exact result is s + t + e2 with e2 far below ulp(s + t).
//   RN(s + t) is correct unless s + t is exactly a rounding midpoint, detected and resolved with
//   the sign of e2 (when uh and c cancel, e1 = 0 and the sum is exact).
//   Both are property-tested against exact BigInt arithmetic in fma.test.ts.

const fround = Math.fround;

/** Correctly rounded float32 `a*b + c` for float32 inputs `a`, `b`, `c`. */
export function fmaF32(a: number, b: number, c: number): number {
  const p = a * b; // exact for float32 operands
  const s = p + c;
  const r = fround(s);
  const h = s - r; // exact
  if (h === 0) return r;
  const o = r + 2 * h; // the other float32 neighbour if s is a midpoint
  if (fround(o) !== o) return r; // not a midpoint: RN32(s) is already correct
  const bb = s - p;
  const err = p - (s - bb) + (c - bb); // a*b + c = s + err exactly
  if (err === 0) return r; // a true tie: fround already rounded to even
  return err > 0 === h > 0 ? o : r;
}

const SPLIT = 134217729; // 2^27 + 1

/** Correctly rounded float64 `a*b + c` (no overflow/underflow handling beyond IEEE defaults). */
export function fmaF64(a: number, b: number, c: number): number {
  const uh = a * b;
  if (!Number.isFinite(uh) || uh === 0 || !Number.isFinite(c)) return uh + c;
  // TwoProduct (Dekker): a*b = uh + ul exactly.
  let t = SPLIT * a;
  const ah = t - (t - a);
  const al = a - ah;
  t = SPLIT * b;
  const bh = t - (t - b);
  const bl = b - bh;
  const ul = al * bl - (uh - ah * bh - al * bh - ah * bl);
  // TwoSum: uh + c = s + e1.
  const s = uh + c;
  let bb = s - uh;
  const e1 = uh - (s - bb) + (c - bb);
  // TwoSum: e1 + ul = t2 + e2, so a*b + c = s + t2 + e2 exactly.
  const t2 = e1 + ul;
  bb = t2 - e1;
  const e2 = e1 - (t2 - bb) + (ul - bb);
  const r = s + t2;
  if (e2 === 0) return r; // s + t2 is the exact value: one rounding
  // s + t2 and the rounding midpoints are multiples of ulp(t2) > |e2|, so RN(s + t2) is wrong only
  // when s + t2 is itself a midpoint: detect it as in fmaF32 and round towards e2.
  bb = r - s;
  const err = s - (r - bb) + (t2 - bb); // s + t2 = r + err
  if (err === 0) return r;
  const o = r + 2 * err;
  if (o - r !== 2 * err) return r;
  return e2 > 0 === err > 0 ? o : r;
}

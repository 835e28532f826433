// Exact int64 (two's-complement, wrap-around) window products without BigInt.
//
// A 64-bit value is kept as four 16-bit limbs (l0 least significant) in a Uint16Array, four slots
// per value. A limb product is < 2^32 and a column of four of them plus carries is < 2^35, so every
// intermediate is an exact double. Products of all windows of h consecutive labels are computed
// with the block prefix/suffix trick (≈ 3 limb multiplications per position, whatever h is):
// with blocks [bh, bh + h), the window [j, j + h) is suffix(j .. end of j's block) ×
// prefix(start of the next block .. j + h − 1), or one whole block when j is a block start.
// Multiplication modulo 2^64 is associative and commutative, so this equals the left-to-right
// product torch computes.

/** The Goldfish table size M = 1,000,003. */
const MOD = 1_000_003;
/** 2^64 mod M, to turn the unsigned residue into the residue of the signed value. */
const TWO64_MOD = ((((((1 * 65536) % MOD) * 65536) % MOD) * 65536) % MOD) * 65536 % MOD;

/** Write the 64-bit two's-complement limbs of a safe integer `v` at `out[o..o+3]`. */
export function writeLimbs(v: number, out: Uint16Array, o: number): void {
  if (v >= 0 && v <= 0x7fffffff) {
    out[o] = v & 0xffff;
    out[o + 1] = v >>> 16;
    out[o + 2] = 0;
    out[o + 3] = 0;
    return;
  }
  if (v < 0 && v >= -0x80000000) {
    out[o] = v & 0xffff;
    out[o + 1] = (v >>> 16) & 0xffff;
    out[o + 2] = 0xffff;
    out[o + 3] = 0xffff;
    return;
  }
  // |v| up to 2^53: magnitude limbs, then negate in two's complement if needed.
  let a = Math.abs(v);
  let l0 = a % 65536;
  a = (a - l0) / 65536;
  let l1 = a % 65536;
  a = (a - l1) / 65536;
  let l2 = a % 65536;
  let l3 = (a - l2) / 65536;
  if (v < 0) {
    // ~x + 1
    l0 = (~l0 & 0xffff) + 1;
    l1 = (~l1 & 0xffff) + (l0 >>> 16);
    l2 = (~l2 & 0xffff) + (l1 >>> 16);
    l3 = (~l3 & 0xffff) + (l2 >>> 16);
  }
  out[o] = l0 & 0xffff;
  out[o + 1] = l1 & 0xffff;
  out[o + 2] = l2 & 0xffff;
  out[o + 3] = l3 & 0xffff;
}

/** `out[o] = a[ia] · b[ib]` modulo 2^64 (limb offsets; `out` may alias an input). */
export function mulLimbs(a: Uint16Array, ia: number, b: Uint16Array, ib: number, out: Uint16Array, o: number): void {
  const a0 = a[ia]!, a1 = a[ia + 1]!, a2 = a[ia + 2]!, a3 = a[ia + 3]!;
  const b0 = b[ib]!, b1 = b[ib + 1]!, b2 = b[ib + 2]!, b3 = b[ib + 3]!;
  const c0 = a0 * b0;
  const r0 = c0 & 0xffff;
  const c1 = a0 * b1 + a1 * b0 + (c0 >>> 16);
  const r1 = c1 & 0xffff;
  const c2 = a0 * b2 + a1 * b1 + a2 * b0 + (c1 - r1) / 65536;
  const r2 = c2 & 0xffff;
  const c3 = a0 * b3 + a1 * b2 + a2 * b1 + a3 * b0 + (c2 - r2) / 65536;
  out[o] = r0;
  out[o + 1] = r1;
  out[o + 2] = r2;
  out[o + 3] = c3 & 0xffff;
}

/** 2^32 mod M. */
const TWO32_MOD = 4294967296 % MOD;

function copyLimbs(from: Uint16Array, o: number, to: Uint16Array): void {
  to[o] = from[o]!;
  to[o + 1] = from[o + 1]!;
  to[o + 2] = from[o + 2]!;
  to[o + 3] = from[o + 3]!;
}

/** Python-style (non-negative) residue modulo 1,000,003 of the signed int64 held in `x[o..o+3]`. */
export function signedMod(x: Uint16Array, o: number): number {
  const l3 = x[o + 3]!;
  const hi = l3 * 65536 + x[o + 2]!; // < 2^32
  const lo = x[o + 1]! * 65536 + x[o]!; // < 2^32
  let r = ((hi % MOD) * TWO32_MOD + lo) % MOD; // < 2^40 + 2^32: exact
  if (l3 >= 0x8000) {
    r -= TWO64_MOD; // value = unsigned − 2^64
    if (r < 0) r += MOD;
  }
  return r;
}

let scratch = new Uint16Array(0);

/**
 * Table keys of all windows of `h` consecutive labels in `labels[start .. start+len)`:
 * `keys[i − (h − 1)] = (Π labels[start+i−h+1 .. start+i] as int64) mod 1,000,003` for
 * `i = h − 1 … len − 1`. Returns the number of keys written (`max(0, len − h + 1)`).
 */
export function windowKeys(labels: ArrayLike<number>, start: number, len: number, h: number, keys: Int32Array): number {
  const count = len - h + 1;
  if (count <= 0) return 0;
  const need = 12 * len;
  if (scratch.length < need) scratch = new Uint16Array(need);
  const tok = scratch.subarray(0, 4 * len);
  const pre = scratch.subarray(4 * len, 8 * len);
  const suf = scratch.subarray(8 * len, 12 * len);
  for (let i = 0; i < len; i++) writeLimbs(labels[start + i]!, tok, 4 * i);
  if (h === 1) {
    for (let i = 0; i < len; i++) keys[i] = signedMod(tok, 4 * i);
    return count;
  }
  // prefix products inside each block, left to right
  for (let i = 0; i < len; i++) {
    if (i % h === 0) copyLimbs(tok, 4 * i, pre);
    else mulLimbs(pre, 4 * (i - 1), tok, 4 * i, pre, 4 * i);
  }
  // suffix products inside each block, right to left
  for (let i = len - 1; i >= 0; i--) {
    if (i === len - 1 || (i + 1) % h === 0) copyLimbs(tok, 4 * i, suf);
    else mulLimbs(tok, 4 * i, suf, 4 * (i + 1), suf, 4 * i);
  }
  const w = new Uint16Array(4);
  for (let j = 0; j < count; j++) {
    if (j % h === 0) {
      keys[j] = signedMod(suf, 4 * j);
    } else {
      mulLimbs(suf, 4 * j, pre, 4 * (j + h - 1), w, 0);
      keys[j] = signedMod(w, 0);
    }
  }
  return count;
}

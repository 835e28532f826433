// Numbers with bounds (`minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`; every
// `integer`, which is bounded to ±(2^53 − 1) when the schema says nothing) for constrained
// decoding. The decoder writes a bounded number as `-?(0|[1-9][0-9]*)(\.[0-9]+)?` (no exponent),
// one byte at a time; a byte is allowed only when some completion of the text lands in range, and
// `numberCost` is the fewest bytes of such a completion. All arithmetic is exact (decimals as
// BigInt mantissas), so a bound such as 0.1 is 0.1, not its nearest double.
//
// A prefix stands for a set of values: digits D followed by k more digits are the integers of
// [D·10^k, (D+1)·10^k − 1]; followed by a fraction of j digits, the multiples of 10^−j in
// [D·10^k, (D+1)·10^k); a text D.F followed by j more digits, the multiples of 10^−(|F|+j) in
// [D.F, D.F + 10^−|F|). The cheapest feasible k and j give the cost; they are bounded by the
// digits of the bounds, beyond which the sets only move away from the range.

/** An exact decimal m · 10^e. */
export interface Decimal {
  readonly m: bigint;
  readonly e: number;
}

/** The range of a bounded number node. */
export interface NumberBounds {
  /** Whole numbers only (no fraction is written). */
  readonly integer: boolean;
  /** Lower bound, or null. */
  readonly lo: Decimal | null;
  readonly loOpen: boolean;
  /** Upper bound, or null. */
  readonly hi: Decimal | null;
  readonly hiOpen: boolean;
}

/** The exact decimal a JavaScript number prints as (`0.1` → 1·10^−1). */
export function decimalOf(x: number): Decimal {
  const m = /^(-?)(\d+)(?:\.(\d+))?(?:e([+-]\d+))?$/.exec(String(x));
  if (!m) throw new RangeError(`not a finite number: ${x}`);
  const frac = m[3] ?? '';
  return { m: BigInt(`${m[1]}${m[2]}${frac}`), e: Number(m[4] ?? 0) - frac.length };
}

const pow10 = (n: number): bigint => 10n ** BigInt(n);

/** `d` in units of 10^−p (exact; p ≥ −d.e). */
function units(d: Decimal, p: number): bigint {
  return d.m * pow10(d.e + p);
}

function fractionDigits(d: Decimal | null): number {
  return d === null ? 0 : Math.max(0, -d.e);
}

function negateDec(d: Decimal): Decimal {
  return { m: -d.m, e: d.e };
}

/** A range of magnitudes: [lo, hi] with open ends, hi null = unbounded. */
interface Range {
  lo: Decimal;
  loOpen: boolean;
  hi: Decimal | null;
  hiOpen: boolean;
}

const ZERO: Decimal = { m: 0n, e: 0 };

function cmp(a: Decimal, b: Decimal): number {
  const p = Math.max(fractionDigits(a), fractionDigits(b));
  const x = units(a, p), y = units(b, p);
  return x < y ? -1 : x > y ? 1 : 0;
}

/** The magnitudes M ≥ 0 with ±M in the bounds (`negative`: the number starts with '-'); null when none. */
function magnitudes(b: NumberBounds, negative: boolean): Range | null {
  let lo: Decimal | null, loOpen: boolean, hi: Decimal | null, hiOpen: boolean;
  if (!negative) [lo, loOpen, hi, hiOpen] = [b.lo, b.loOpen, b.hi, b.hiOpen];
  else [lo, loOpen, hi, hiOpen] = [b.hi && negateDec(b.hi), b.hiOpen, b.lo && negateDec(b.lo), b.loOpen];
  if (lo === null || cmp(lo, ZERO) < 0) [lo, loOpen] = [ZERO, false];
  if (hi !== null && (cmp(hi, lo) < 0 || (cmp(hi, lo) === 0 && (hiOpen || loOpen)))) return null;
  return { lo, loOpen, hi, hiOpen };
}

/** True when some multiple of 10^−j lies in [a, b) ∩ r (b null: unbounded; `bClosed`: [a, b]). */
function exists(a: Decimal, b: Decimal | null, bClosed: boolean, j: number, r: Range): boolean {
  const p = Math.max(j, fractionDigits(a), fractionDigits(b), fractionDigits(r.lo), fractionDigits(r.hi));
  const step = pow10(p - j);
  let low = units(a, p);
  const rl = units(r.lo, p) + (r.loOpen ? 1n : 0n);
  if (rl > low) low = rl;
  let high: bigint | null = b === null ? null : units(b, p) - (bClosed ? 0n : 1n);
  if (r.hi !== null) {
    const rh = units(r.hi, p) - (r.hiOpen ? 1n : 0n);
    if (high === null || rh < high) high = rh;
  }
  const first = low <= 0n ? 0n : ((low + step - 1n) / step) * step;
  return high === null || first <= high;
}

const PREFIX = /^(-?)(?:(0|[1-9]\d*)(?:(\.)(\d*))?)?$/;
const COMPLETE = /^-?(0|[1-9]\d*)(\.\d+)?$/;

/** True when `text` is a number the decoder writes (see the file header) that lies in the bounds. */
export function numberComplete(text: string, b: NumberBounds): boolean {
  if (!COMPLETE.test(text) || (b.integer && text.includes('.'))) return false;
  const negative = text.startsWith('-');
  const r = magnitudes(b, negative);
  if (r === null) return false;
  const mag = negative ? text.slice(1) : text;
  const [i, f = ''] = mag.split('.');
  const v: Decimal = { m: BigInt(`${i}${f}`), e: -f.length };
  return exists(v, v, true, f.length, r);
}

/** Fewest bytes that complete `text` to an in-range number (0 when it is one), Infinity when none does. */
export function numberCost(text: string, b: NumberBounds): number {
  const m = PREFIX.exec(text);
  if (!m || (b.integer && m[3] !== undefined)) return Infinity;
  const [, sign, int, dot, frac] = m;
  if (int === undefined) {
    // No digit yet: the best first byte ('-' only when nothing was written).
    let best = Infinity;
    for (const c of sign === '' ? ['-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9'] : ['0', '1', '2', '3', '4', '5', '6', '7', '8', '9']) {
      best = Math.min(best, 1 + numberCost(text + c, b));
      if (best === 1) break;
    }
    return best;
  }
  const r = magnitudes(b, sign === '-');
  if (r === null) return Infinity;
  const J = Math.max(fractionDigits(r.lo), fractionDigits(r.hi), (frac ?? '').length) + 1;
  const D = BigInt(int);
  if (dot !== undefined) {
    const f = frac!;
    const base: Decimal = { m: BigInt(`${int}${f}`), e: -f.length };
    const end: Decimal = { m: base.m + 1n, e: -f.length };
    for (let j = f.length === 0 ? 1 : 0; j <= J; j++) if (exists(base, end, false, f.length + j, r)) return j;
    return Infinity;
  }
  /** The cheapest fraction after k more integer digits (1 + j bytes), or Infinity. */
  const withFraction = (k: number): number => {
    if (b.integer) return Infinity;
    const a: Decimal = { m: D * pow10(k), e: 0 }, z: Decimal = { m: (D + 1n) * pow10(k), e: 0 };
    for (let j = 1; j <= J; j++) if (exists(a, z, false, j, r)) return 1 + j;
    return Infinity;
  };
  if (int === '0') return exists(ZERO, ZERO, true, 0, r) ? 0 : withFraction(0);
  let best = Infinity;
  const maxK = 1 + Math.max(0, Math.max(r.hi ? r.hi.m.toString().length + r.hi.e : 0, r.lo.m.toString().length + r.lo.e) - int.length);
  for (let k = 0; k <= maxK && k < best; k++) {
    const a: Decimal = { m: D * pow10(k), e: 0 };
    if (r.hi !== null && cmp(a, r.hi) > 0) break;
    const z: Decimal = { m: (D + 1n) * pow10(k), e: 0 };
    if (exists(a, z, false, 0, r)) best = Math.min(best, k);
    else best = Math.min(best, k + withFraction(k));
  }
  return best;
}

// How the product kernels see a block format and its activations: which integer dot form the
// weights need (unsigned quants with an offset, or signed values), how a product's input is laid
// out once quantized, and the records the kernels read it from.
//
// Activations are quantized once per product into records: for a tile of T activation rows
// (tiles of 4, the last one of M mod 4) and each block of K, one record holds the T rows' quants
// of that block, their scales (16 bytes: lane t = row t's; for T = 1 all four lanes), and what
// else the format needs per row (aux): the kernels reach every operand of a block from one
// pointer at constant offsets.
import { QUANT_FORMATS, type QuantDType, type QuantFormat } from '../../../dtypes/index';

/**
 * The two builds of the kernels: `relaxed` (the int8 dot product of relaxed SIMD,
 * `i32x4.relaxed_dot_i8x16_i7x16_add_s`, where it validates and a start-up probe finds it exact)
 * and `simd` (the two-step form: widen to i16, `i32x4.dot_i16x8_s`; Safari). Both compute the same
 * integers and the same float operations in the same order, so their results are identical.
 */
export type Variant = 'relaxed' | 'simd';

/**
 * How a product's input is stored per value:
 * - `plain`: int8 (relaxed, unsigned weights: the quants are the 7-bit operand);
 * - `split`: per 32 values, 32 bytes of max(q, 0) then 32 of max(−q, 0) (relaxed, signed weights:
 *   both halves are 7-bit operands and Σ w·q = Σ w·q⁺ − Σ w·q⁻);
 * - `i16p`: int16, each 16 values permuted so that the two-step form's i32 lanes hold the same
 *   values as the relaxed form's (value 4l + k of a 16 in lane l): the 32-value formats, whose
 *   float sums run in those lanes;
 * - `i16`: int16 in order (the k-quants, whose integer sums are reduced whole before any float step).
 */
export type ActLayout = 'plain' | 'split' | 'i16p' | 'i16';

/** What a record holds per row besides quants and scales: canonical-lane sums (Q4_0, Q5_0), Q8_1's s (Q4_1, Q5_1), Q8_K's block sums. */
export type AuxKind = 'none' | 'lanes' | 's' | 'bsums';

/** The kernel-facing traits of a format. */
export interface Traits {
  readonly format: QuantFormat;
  /** The integer weights are signed int8 (Q8_0, IQ4_NL, IQ4_XS); else unsigned quants u with w = u − offset. */
  readonly signed: boolean;
  /** u − offset = w for the unsigned formats (0 where the format has a min instead). */
  readonly offset: number;
  /** Byte offset of the f16 scale d in a block (and of dmin or m, 2 bytes on, where there is one). */
  readonly dAt: number;
}

const TRAITS: Record<QuantDType, Omit<Traits, 'format'>> = {
  q4_0: { signed: false, offset: 8, dAt: 0 },
  q4_1: { signed: false, offset: 0, dAt: 0 },
  q5_0: { signed: false, offset: 16, dAt: 0 },
  q5_1: { signed: false, offset: 0, dAt: 0 },
  q8_0: { signed: true, offset: 0, dAt: 0 },
  iq4_nl: { signed: true, offset: 0, dAt: 0 },
  q2_k: { signed: false, offset: 0, dAt: 80 },
  q3_k: { signed: false, offset: 4, dAt: 108 },
  q4_k: { signed: false, offset: 0, dAt: 0 },
  q5_k: { signed: false, offset: 0, dAt: 0 },
  q6_k: { signed: false, offset: 32, dAt: 208 },
  iq4_xs: { signed: true, offset: 0, dAt: 0 },
};

/** The traits of a quantized dtype. */
export function traits(name: QuantDType): Traits {
  return { format: QUANT_FORMATS[name], ...TRAITS[name] };
}

/** Whether blocks are k-quant super-blocks (256 values, integer sums reduced per super-block) rather than 32-value blocks (float sums in lanes). */
export const isSuper = (t: Traits): boolean => t.format.blockValues === 256;

/** The activation layout of a format in a variant. */
export function actLayout(t: Traits, v: Variant): ActLayout {
  if (v === 'relaxed') return t.signed ? 'split' : 'plain';
  return isSuper(t) ? 'i16' : 'i16p';
}

/** The aux kind of a format. */
export function auxKind(t: Traits): AuxKind {
  if (isSuper(t)) return 'bsums';
  if (t.format.mins) return 's';
  return t.offset !== 0 ? 'lanes' : 'none';
}

/** Bytes per row per block of the quants in a record. */
export const quantBytes = (t: Traits, v: Variant): number => t.format.blockValues * (actLayout(t, v) === 'plain' ? 1 : 2);

/** The offsets in a record of T rows: quants of row t at t·q, scales at `d`, aux of row t at aux + t·auxRow (or the one shared 16-byte region `aux` for s); `bytes` in all. */
export interface Record_ { q: number; d: number; aux: number; auxRow: number; bytes: number }

/** The record layout of a tile of T rows. */
export function record(t: Traits, v: Variant, T: number): Record_ {
  const q = quantBytes(t, v), d = T * q, aux = d + 16;
  switch (auxKind(t)) {
    case 'lanes': return { q, d, aux, auxRow: 16, bytes: aux + 16 * T };
    case 's': return { q, d, aux, auxRow: 0, bytes: aux + 16 };
    case 'bsums': return { q, d, aux, auxRow: 48, bytes: aux + 48 * T };
    default: return { q, d, aux, auxRow: 0, bytes: aux };
  }
}

/** Rows per full tile. */
export const TILE = 4;

/** Bytes of the records of M activation rows of nb blocks: full tiles of TILE rows, then one of M mod TILE. */
export function recordsBytes(t: Traits, v: Variant, M: number, nb: number): number {
  const full = Math.floor(M / TILE), rest = M % TILE;
  return full * nb * record(t, v, TILE).bytes + (rest > 0 ? nb * record(t, v, rest).bytes : 0);
}

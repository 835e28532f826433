// llama.cpp's reference k-quantizers (ggml-quants.c: quantize_row_q{4,5,6}_K_ref, what
// llama-quantize runs without an importance matrix), in float32 arithmetic step by step as the C
// code evaluates it, so that the bytes are llama.cpp's:
//
//   Q4_K, Q5_K  per 32-value sub-block a scale and a min by make_qkx2_quants (a least-squares
//               refinement of min/max over nstep trial scales, weights av|x| + |x|), then 6-bit
//               codes of the scales and mins against their maxima, then the quants against the
//               stored (rounded) scales: 4 bits (Q4_K) or 5 bits with the high bit in qh (Q5_K)
//   Q6_K        per 16-value sub-block a signed scale by make_qx_quants (rmse_type 1: weights x²,
//               19 trial scales), int8 codes of the scales against the largest, 6-bit quants
//               centred at 32 (low 4 bits in ql, high 2 in qh)

import { quantizedBlocks } from './format';
import { toF16 } from './rounding';

const QK_K = 256;
const GROUP_MAX_EPS = 1e-15;
const f = Math.fround;
/** 0.1f. */
const TENTH = Math.fround(0.1);

/** ggml's `nearest_int` (x + 1.5·2^23 in float32, whose last bit is then the integer): round half to even, for |x| < 2^22. */
function nearestInt(x: number): number {
  return f(f(x + 12582912) - 12582912);
}


/** Scratch of makeQkx2: the sub-block and its values minus the min. */
const xs = new Float32Array(32), dx = new Float32Array(32);

/**
 * make_qkx2_quants: scale and min (returned as −min in `out.min`) of x[at…at+n) for codes 0…nmax in
 * L[lat…], with weights w.
 */
function makeQkx2(n: number, nmax: number, x: Float32Array, at: number, w: Float32Array, L: Uint8Array, lat: number, aux: Uint8Array, rmin: number, rdelta: number, nstep: number, out: { min: number }): number {
  for (let i = 0; i < n; i++) xs[i] = x[at + i]!;
  let min = xs[0]!, max = xs[0]!;
  let sumW = w[0]!, sumX = f(sumW * xs[0]!);
  for (let i = 1; i < n; i++) {
    const xi = xs[i]!;
    if (xi < min) min = xi;
    if (xi > max) max = xi;
    sumW = f(sumW + w[i]!);
    sumX = f(sumX + f(w[i]! * xi));
  }
  if (min > 0) min = 0;
  if (max === min) {
    L.fill(0, lat, lat + n);
    out.min = -min;
    return 0;
  }
  for (let i = 0; i < n; i++) dx[i] = f(xs[i]! - min);
  let range = f(max - min);
  let iscale = f(nmax / range);
  let scale = f(1 / iscale);
  let bestError = 0;
  for (let i = 0; i < n; i++) {
    let l = nearestInt(f(iscale * dx[i]!));
    l = l < 0 ? 0 : l > nmax ? nmax : l;
    L[lat + i] = l;
    const diff = f(f(f(scale * l) + min) - xs[i]!);
    bestError = f(bestError + f(w[i]! * f(diff * diff)));
  }
  if (nstep < 1) {
    out.min = -min;
    return scale;
  }
  for (let is = 0; is <= nstep; is++) {
    iscale = f(f(f(rmin + f(rdelta * is)) + nmax) / range);
    let sumL = 0, sumL2 = 0, sumXL = 0;
    for (let i = 0; i < n; i++) {
      let l = nearestInt(f(iscale * dx[i]!));
      l = l < 0 ? 0 : l > nmax ? nmax : l;
      aux[i] = l;
      const wl = f(w[i]! * l);
      sumL = f(sumL + wl);
      sumL2 = f(sumL2 + f(wl * l));
      sumXL = f(sumXL + f(wl * xs[i]!));
    }
    const D = f(f(sumW * sumL2) - f(sumL * sumL));
    if (D > 0) {
      let thisScale = f(f(f(sumW * sumXL) - f(sumX * sumL)) / D);
      let thisMin = f(f(f(sumL2 * sumX) - f(sumL * sumXL)) / D);
      if (thisMin > 0) {
        thisMin = 0;
        thisScale = f(sumXL / sumL2);
      }
      let cur = 0;
      for (let i = 0; i < n; i++) {
        const diff = f(f(f(thisScale * aux[i]!) + thisMin) - xs[i]!);
        cur = f(cur + f(w[i]! * f(diff * diff)));
      }
      if (cur < bestError) {
        for (let i = 0; i < n; i++) L[lat + i] = aux[i]!;
        bestError = cur;
        scale = thisScale;
        min = thisMin;
        // The next trials scale and quantize around the new min, as the C code reads `min` again.
        range = f(max - min);
        for (let i = 0; i < n; i++) dx[i] = f(xs[i]! - min);
      }
    }
  }
  out.min = -min;
  return scale;
}

/** The 12 packed bytes of eight 6-bit scales and mins (ggml's layout, read by get_scale_min_k4). */
function packScalesMins(ls: Uint8Array, lm: Uint8Array, out: Uint8Array, s: number): void {
  for (let j = 0; j < 8; j++) {
    if (j < 4) {
      out[s + j] = ls[j]!;
      out[s + j + 4] = lm[j]!;
    } else {
      out[s + j + 4] = (ls[j]! & 0xf) | ((lm[j]! & 0xf) << 4);
      out[s + j - 4]! |= (ls[j]! >> 4) << 6;
      out[s + j]! |= (lm[j]! >> 4) << 6;
    }
  }
}

function scaleMin(bytes: Uint8Array, s: number, j: number): [number, number] {
  if (j < 4) return [bytes[s + j]! & 63, bytes[s + j + 4]! & 63];
  return [(bytes[s + j + 4]! & 0xf) | ((bytes[s + j - 4]! >> 6) << 4), (bytes[s + j + 4]! >> 4) | ((bytes[s + j]! >> 6) << 4)];
}

/**
 * One Q4_K/Q5_K super-block's header (d, dmin, packed scales/mins at out[o…o+16)) and its codes
 * L[0…256) in 0…nmax, as quantize_row_q{4,5}_K_ref computes them.
 */
const kw = new Float32Array(32), kaux = new Uint8Array(32), kscales = new Float32Array(8), kmins = new Float32Array(8), kls = new Uint8Array(8), klm = new Uint8Array(8), km = { min: 0 };

function quantizeKBlock(x: Float32Array, b: number, nmax: number, rmin: number, nstep: number, out: Uint8Array, o: number, L: Uint8Array): void {
  const w = kw, aux = kaux, scales = kscales, mins = kmins, m = km;
  let maxScale = 0, maxMin = 0;
  for (let j = 0; j < 8; j++) {
    let sumX2 = 0;
    for (let l = 0; l < 32; l++) { const v = x[b + 32 * j + l]!; sumX2 = f(sumX2 + f(v * v)); }
    const avX = f(Math.sqrt(f(sumX2 / 32)));
    for (let l = 0; l < 32; l++) w[l] = f(avX + Math.abs(x[b + 32 * j + l]!));
    scales[j] = makeQkx2(32, nmax, x, b + 32 * j, w, L, 32 * j, aux, rmin, TENTH, nstep, m);
    mins[j] = m.min;
    if (scales[j]! > maxScale) maxScale = scales[j]!;
    if (mins[j]! > maxMin) maxMin = mins[j]!;
  }
  const invScale = maxScale > 0 ? f(63 / maxScale) : 0, invMin = maxMin > 0 ? f(63 / maxMin) : 0;
  const ls = kls, lm = klm;
  for (let j = 0; j < 8; j++) {
    ls[j] = Math.min(63, nearestInt(f(invScale * scales[j]!)) & 0xff);
    lm[j] = Math.min(63, nearestInt(f(invMin * mins[j]!)) & 0xff);
  }
  out.fill(0, o + 4, o + 16);
  packScalesMins(ls, lm, out, o + 4);
  const d = toF16(f(maxScale / 63)), dmin = toF16(f(maxMin / 63));
  out[o] = d.bits & 0xff; out[o + 1] = d.bits >> 8;
  out[o + 2] = dmin.bits & 0xff; out[o + 3] = dmin.bits >> 8;
  for (let j = 0; j < 8; j++) {
    const [sc, mn] = scaleMin(out, o + 4, j);
    const dd = f(d.value * sc);
    if (!dd) continue;
    const dm = f(dmin.value * mn);
    for (let i = 0; i < 32; i++) L[32 * j + i] = Math.max(0, Math.min(nmax, nearestInt(f(f(x[b + 32 * j + i]! + dm) / dd))));
  }
}

/** Q4_K super-blocks of x (length a multiple of 256), bit for bit llama.cpp's quantize_row_q4_K_ref. */
export function quantizeQ4_K(x: Float32Array): Uint8Array {
  const BYTES = 144, out = quantizedBlocks(x, QK_K, BYTES, 'quantizeQ4_K'), L = new Uint8Array(QK_K);
  for (let b = 0, o = 0; b < x.length; b += QK_K, o += BYTES) {
    quantizeKBlock(x, b, 15, -1, 20, out, o, L);
    for (let c = 0; c < 4; c++) for (let l = 0; l < 32; l++) out[o + 16 + 32 * c + l] = L[64 * c + l]! | (L[64 * c + 32 + l]! << 4);
  }
  return out;
}

/** Q5_K super-blocks of x (length a multiple of 256), bit for bit llama.cpp's quantize_row_q5_K_ref. */
export function quantizeQ5_K(x: Float32Array): Uint8Array {
  const BYTES = 176, out = quantizedBlocks(x, QK_K, BYTES, 'quantizeQ5_K'), L = new Uint8Array(QK_K);
  for (let b = 0, o = 0; b < x.length; b += QK_K, o += BYTES) {
    quantizeKBlock(x, b, 31, -0.5, 15, out, o, L);
    // qh[0…32) at o+16 holds bit 4 of every code (value 64c + l in bit 2c, 64c + 32 + l in bit 2c + 1); qs at o+48.
    for (let c = 0; c < 4; c++) {
      for (let l = 0; l < 32; l++) {
        const l1 = L[64 * c + l]!, l2 = L[64 * c + 32 + l]!;
        out[o + 16 + l]! |= ((l1 >> 4) << (2 * c)) | ((l2 >> 4) << (2 * c + 1));
        out[o + 48 + 32 * c + l] = (l1 & 15) | ((l2 & 15) << 4);
      }
    }
  }
  return out;
}

/** Scratch of makeQx: the weights x² and x²·x of the sub-block. */
const wq = new Float32Array(16), wxq = new Float32Array(16);

/** make_qx_quants with rmse_type 1 and no weights: a signed scale of x[at…at+n) for codes −nmax…nmax−1 (stored + nmax in L). */
function makeQx(n: number, nmax: number, x: Float32Array, at: number, L: Int8Array, lat: number): number {
  let max = 0, amax = 0;
  for (let i = 0; i < n; i++) {
    const xi = x[at + i]!, ax = Math.abs(xi);
    if (ax > amax) { amax = ax; max = xi; }
    wq[i] = f(xi * xi);
    wxq[i] = f(wq[i]! * xi);
  }
  if (amax < GROUP_MAX_EPS) {
    L.fill(0, lat, lat + n);
    return 0;
  }
  let iscale = f(-nmax / max);
  let sumlx = 0, suml2 = 0;
  for (let i = 0; i < n; i++) {
    let l = nearestInt(f(iscale * x[at + i]!));
    l = l < -nmax ? -nmax : l > nmax - 1 ? nmax - 1 : l;
    L[lat + i] = l + nmax;
    sumlx = f(sumlx + f(wxq[i]! * l));
    suml2 = f(suml2 + f(f(wq[i]! * l) * l));
  }
  let scale = suml2 ? f(sumlx / suml2) : 0;
  let best = f(scale * sumlx);
  for (let is = -9; is <= 9; is++) {
    if (is === 0) continue;
    iscale = f(-f(nmax + f(TENTH * is)) / max);
    sumlx = 0; suml2 = 0;
    for (let i = 0; i < n; i++) {
      let l = nearestInt(f(iscale * x[at + i]!));
      l = l < -nmax ? -nmax : l > nmax - 1 ? nmax - 1 : l;
      sumlx = f(sumlx + f(wxq[i]! * l));
      suml2 = f(suml2 + f(f(wq[i]! * l) * l));
    }
    if (suml2 > 0 && f(sumlx * sumlx) > f(best * suml2)) {
      for (let i = 0; i < n; i++) L[lat + i] = Math.max(-nmax, Math.min(nmax - 1, nearestInt(f(iscale * x[at + i]!)))) + nmax;
      scale = f(sumlx / suml2);
      best = f(scale * sumlx);
    }
  }
  return scale;
}

/** Q6_K super-blocks of x (length a multiple of 256), bit for bit llama.cpp's quantize_row_q6_K_ref. */
export function quantizeQ6_K(x: Float32Array): Uint8Array {
  const BYTES = 210, out = quantizedBlocks(x, QK_K, BYTES, 'quantizeQ6_K'), L = new Int8Array(QK_K), scales = new Float32Array(16);
  for (let b = 0, o = 0; b < x.length; b += QK_K, o += BYTES) {
    let maxScale = 0, maxAbs = 0;
    for (let ib = 0; ib < 16; ib++) {
      scales[ib] = makeQx(16, 32, x, b + 16 * ib, L, 16 * ib);
      const a = Math.abs(scales[ib]!);
      if (a > maxAbs) { maxAbs = a; maxScale = scales[ib]!; }
    }
    if (maxAbs < GROUP_MAX_EPS) continue; // all zero, d = +0
    const iscale = f(-128 / maxScale);
    const d = toF16(f(1 / iscale));
    out[o + 208] = d.bits & 0xff; out[o + 209] = d.bits >> 8;
    for (let ib = 0; ib < 16; ib++) out[o + 192 + ib] = Math.min(127, nearestInt(f(iscale * scales[ib]!))) & 0xff;
    for (let j = 0; j < 16; j++) {
      const dd = f(d.value * ((out[o + 192 + j]! << 24) >> 24));
      if (!dd) continue;
      for (let i = 0; i < 16; i++) L[16 * j + i] = Math.max(-32, Math.min(31, nearestInt(f(x[b + 16 * j + i]! / dd)))) + 32;
    }
    for (let h = 0; h < 2; h++) {
      const j = 128 * h, ql = o + 64 * h, qh = o + 128 + 32 * h;
      for (let l = 0; l < 32; l++) {
        const q1 = L[j + l]!, q2 = L[j + l + 32]!, q3 = L[j + l + 64]!, q4 = L[j + l + 96]!;
        out[ql + l] = (q1 & 15) | ((q3 & 15) << 4);
        out[ql + l + 32] = (q2 & 15) | ((q4 & 15) << 4);
        out[qh + l] = (q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6);
      }
    }
  }
  return out;
}

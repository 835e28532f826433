/**
 * WGSL functions the kernels share, written with operations whose accuracy WGSL fixes.
 *
 * WGSL rounds `+ − ×` correctly but promises only 2.5 ulp for `/`, 3 + 2·|x| ulp for `exp` and an
 * absolute 2^-21 for `log` near 1 (inside [0.5, 2]). So `exp_`, `log_`, `log1p_`, `expm1_` and
 * `tanh_` are the Cephes single-precision algorithms (range reduction with a split ln 2, then a
 * minimax polynomial; peak errors near 1 ulp, whatever the argument), and the conversions between
 * float formats are done on the bits (exact, subnormals included, ties to even) rather than with
 * `pack2x16float`, whose rounding WGSL leaves to the implementation. `div_rn` is a correctly
 * rounded division, on the integers of the significands, for the per-block scales of quantized
 * activations (which must be the CPU's to the bit). No formula relies on cancellations such as
 * (1 + x) − 1: SwiftShader's compiler was seen to fold that one to x.
 */

/** exp, log, log1p, expm1, tanh, sigmoid, softplus (each within a few ulp; see the tests' bounds). */
export const MATH = /* wgsl */ `
// Infinities and NaN as run-time values (WGSL rejects them in constant expressions; a \`let\` is
// not one, and unlike a private variable it keeps them uniform).
fn inf_() -> f32 { let b = 0x7f800000u; return bitcast<f32>(b); }
fn ninf_() -> f32 { let b = 0xff800000u; return bitcast<f32>(b); }
fn nan_() -> f32 { let b = 0x7fc00000u; return bitcast<f32>(b); }
const LOG2E_: f32 = 1.44269504088896341;
fn exp_(x: f32) -> f32 {
  if (x > 88.72283905206835) { return inf_(); }
  if (x < -103.972) { return 0.0; }
  let n = floor(x * LOG2E_ + 0.5);
  var r = x - n * 0.693359375;
  r = r - n * -2.12194440e-4;
  let z = r * r;
  let px = ((((1.9875691500e-4 * r + 1.3981999507e-3) * r + 8.3334519073e-3) * r + 4.1665795894e-2) * r + 1.6666665459e-1) * r + 5.0000001201e-1;
  let y = px * z + r + 1.0;
  return ldexp(y, i32(n));
}
fn log_(x: f32) -> f32 {
  if (!(x > 0.0)) { return select(nan_(), ninf_(), x == 0.0); }
  if (x == inf_()) { return x; }
  let fr = frexp(x);
  var m = fr.fract;
  var e = f32(fr.exp);
  if (m < 0.707106781186547524) { e = e - 1.0; m = m + m - 1.0; } else { m = m - 1.0; }
  let z = m * m;
  var y = ((((((((7.0376836292e-2 * m - 1.1514610310e-1) * m + 1.1676998740e-1) * m - 1.2420140846e-1) * m + 1.4249322787e-1) * m - 1.6668057665e-1) * m + 2.0000714765e-1) * m - 2.4999993993e-1) * m + 3.3333331174e-1) * m * z;
  y = y + -2.12194440e-4 * e;
  y = y + -0.5 * z;
  return (m + y) + 0.693359375 * e;
}
fn log1p_(x: f32) -> f32 {
  // Near 0 as 2·atanh(s), s = x / (2 + x), |s| <= 1/7 (a series to s^14; no 1 + x that loses x's
  // low bits). Goldberg's log(u)·x/(u − 1) is not used: compilers may fold (1 + x) − 1 to x.
  if (abs(x) < 0.25) {
    let s = x / (2.0 + x);
    let s2 = s * s;
    let q = ((((((s2 / 15.0 + 1.0 / 13.0) * s2 + 1.0 / 11.0) * s2 + 1.0 / 9.0) * s2 + 1.0 / 7.0) * s2 + 1.0 / 5.0) * s2 + 1.0 / 3.0) * s2;
    return 2.0 * s + 2.0 * s * q;
  }
  return log_(1.0 + x);
}
fn expm1_(x: f32) -> f32 {
  if (abs(x) < 0.34657359) {
    let p = ((((1.9875691500e-4 * x + 1.3981999507e-3) * x + 8.3334519073e-3) * x + 4.1665795894e-2) * x + 1.6666665459e-1) * x + 5.0000001201e-1;
    return x + x * x * p;
  }
  return exp_(x) - 1.0;
}
fn tanh_(x: f32) -> f32 {
  let a = abs(x);
  if (a < 0.625) {
    let z = x * x;
    return ((((-5.70498872745e-3 * z + 2.06390887954e-2) * z - 5.37397155531e-2) * z + 1.33314422036e-1) * z - 3.33332819422e-1) * z * x + x;
  }
  if (a > 9.01) { return sign(x); }
  let s = exp_(a + a);
  let y = 1.0 - 2.0 / (s + 1.0);
  return select(y, -y, x < 0.0);
}
fn sigmoid_(v: f32) -> f32 {
  if (v >= 0.0) { return 1.0 / (1.0 + exp_(-v)); }
  let e = exp_(v);
  return e / (1.0 + e);
}
fn softplus_(v: f32) -> f32 {
  // max(v, 0) + log1p(u), u = e^-|v| in (0, 1], as 2·atanh(s), s = u / (2 + u) <= 1/3.
  let u = exp_(-abs(v));
  let s = u / (2.0 + u);
  let s2 = s * s;
  let p = ((((((s2 / 15.0 + 1.0 / 13.0) * s2 + 1.0 / 11.0) * s2 + 1.0 / 9.0) * s2 + 1.0 / 7.0) * s2 + 1.0 / 5.0) * s2 + 1.0 / 3.0) * s2 + 1.0;
  return max(v, 0.0) + 2.0 * s * p;
}
fn isnan_(v: f32) -> bool { return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u; }
`;

/** Exact conversions: f16 and bf16 bits to f32, f32 to f16 and bf16 bits (ties to even). */
export const FLOAT_BITS = /* wgsl */ `
fn bf16_(bits: u32) -> f32 { return bitcast<f32>(bits << 16u); }
fn f16_(h: u32) -> f32 {
  let s = (h & 0x8000u) << 16u;
  let e = (h >> 10u) & 0x1fu;
  let m = h & 0x3ffu;
  if (e == 0u) {
    let v = f32(m) * 5.9604644775390625e-8;
    return select(v, -v, s != 0u);
  }
  if (e == 31u) { return bitcast<f32>(s | 0x7f800000u | (m << 13u)); }
  return bitcast<f32>(s | ((e + 112u) << 23u) | (m << 13u));
}
fn f16_bits_(x: f32) -> u32 {
  let b = bitcast<u32>(x);
  let s = (b >> 16u) & 0x8000u;
  let a = b & 0x7fffffffu;
  if (a > 0x7f800000u) { return s | 0x7e00u; }
  if (a >= 0x477ff000u) { return s | 0x7c00u; }
  if (a < 0x38800000u) {
    let e = a >> 23u;
    if (e < 102u) { return s; }
    let m = (a & 0x7fffffu) | 0x800000u;
    let shift = 126u - e;
    let q = m >> shift;
    let rem = m & ((1u << shift) - 1u);
    let half = 1u << (shift - 1u);
    return s | (q + select(0u, 1u, rem > half || (rem == half && (q & 1u) == 1u)));
  }
  let t = a - 0x38000000u;
  let q = t >> 13u;
  let rem = t & 0x1fffu;
  return s | (q + select(0u, 1u, rem > 0x1000u || (rem == 0x1000u && (q & 1u) == 1u)));
}
fn bf16_round_(x: f32) -> f32 {
  let u = bitcast<u32>(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) { return bitcast<f32>((u & 0x80000000u) | 0x7fc00000u); }
  return bitcast<f32>((u + 0x7fffu + ((u >> 16u) & 1u)) & 0xffff0000u);
}
`;

/** Correctly rounded a / b for finite positive normal a and b with a normal quotient (per-block scales). */
export const DIV_RN = /* wgsl */ `
fn div_rn(a: f32, b: f32) -> f32 {
  let ua = bitcast<u32>(a);
  let ub = bitcast<u32>(b);
  let mb = (ub & 0x7fffffu) | 0x800000u;
  var r = (ua & 0x7fffffu) | 0x800000u;
  var e = i32(ua >> 23u) - i32(ub >> 23u) + 127;
  if (r < mb) { r = r << 1u; e = e - 1; }
  var q = 0u;
  for (var i = 0u; i < 25u; i = i + 1u) {
    q = q << 1u;
    if (r >= mb) { r = r - mb; q = q | 1u; }
    r = r << 1u;
  }
  let guard = q & 1u;
  q = q >> 1u;
  if (guard == 1u && (r != 0u || (q & 1u) == 1u)) {
    q = q + 1u;
    if (q == 0x1000000u) { q = q >> 1u; e = e + 1; }
  }
  return bitcast<f32>((u32(e) << 23u) | (q & 0x7fffffu));
}
`;

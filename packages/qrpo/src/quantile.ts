/**
 * Quantile reward (QRPO §3.1): the fraction of reference-policy rewards at or below r,
 * R_q = (1/n)·#{ j : R(x, y_j) ≤ r }. Ties count as ≤, so a reference completion counts itself.
 */
export function quantileReward(reward: number, refRewards: readonly number[]): number {
  if (refRewards.length === 0) throw new RangeError('quantileReward: at least one reference reward is needed');
  let c = 0;
  for (const r of refRewards) if (r <= reward) c++;
  return c / refRewards.length;
}

/**
 * Inverse of the standard normal CDF, Φ⁻¹(p) for 0 < p < 1 (Wichura's AS 241 algorithm,
 * about 1e-16 relative accuracy).
 */
export function normalIcdf(p: number): number {
  if (!(p > 0 && p < 1)) {
    if (p === 0) return -Infinity;
    if (p === 1) return Infinity;
    throw new RangeError(`normalIcdf: p = ${p} outside [0, 1]`);
  }
  const q = p - 0.5;
  if (Math.abs(q) <= 0.425) {
    const r = 0.180625 - q * q;
    return (q * (((((((2509.0809287301226727 * r + 33430.575583588128105) * r + 67265.770927008700853) * r + 45921.953931549871457) * r + 13731.693765509461125) * r + 1971.5909503065514427) * r + 133.14166789178437745) * r + 3.387132872796366608))
      / (((((((5226.495278852545925 * r + 28729.085735721942674) * r + 39307.89580009271061) * r + 21213.794301586595867) * r + 5394.1960214247511077) * r + 687.1870074920579083) * r + 42.313330701600911252) * r + 1);
  }
  let r = Math.sqrt(-Math.log(q < 0 ? p : 1 - p));
  let x: number;
  if (r <= 5) {
    r -= 1.6;
    x = (((((((7.7454501427834140764e-4 * r + 0.0227238449892691845833) * r + 0.24178072517745061177) * r + 1.27045825245236838258) * r + 3.64784832476320460504) * r + 5.7694972214606914055) * r + 4.6303378461565452959) * r + 1.42343711074968357734)
      / (((((((1.05075007164441684324e-9 * r + 5.475938084995344946e-4) * r + 0.0151986665636164571966) * r + 0.14810397642748007459) * r + 0.68976733498510000455) * r + 1.6763848301838038494) * r + 2.05319162663775882187) * r + 1);
  } else {
    r -= 5;
    x = (((((((2.01033439929228813265e-7 * r + 2.71155556874348757815e-5) * r + 0.0012426609473880784386) * r + 0.026532189526576123093) * r + 0.29656057182850489123) * r + 1.7848265399172913358) * r + 5.4637849111641143699) * r + 6.6579046435011037772)
      / (((((((2.04426310338993978564e-15 * r + 1.4215117583164458887e-7) * r + 1.8463183175100546818e-5) * r + 7.868691311456132591e-4) * r + 0.0148753612908506148525) * r + 0.13692988092273580531) * r + 0.59983220655588793769) * r + 1);
  }
  return q < 0 ? -x : x;
}

/** How the quantile reward is transformed before regression (CLAIRE `transform`). */
export type QuantileTransform = 'identity' | 'log' | 'normal-icdf';

/**
 * R~ = f(R_q) and log Z~(β) for a transform, as CLAIRE's QRPO implements them:
 * identity: R~ = R_q, log Z = log β + 1/β (the small-β approximation, always);
 * log: R~ = log(max(R_q, 1/n)), log Z = log(β / (1 + β));
 * normal-icdf: R~ = Φ⁻¹(clamp(R_q, 1/n, (n−1)/n)), log Z = 1/(2β²).
 */
export function transformReward(rq: number, n: number, beta: number, transform: QuantileTransform): { reward: number; logZ: number } {
  switch (transform) {
    case 'identity': return { reward: rq, logZ: Math.log(beta) + 1 / beta };
    case 'log': return { reward: Math.log(Math.max(rq, 1 / n)), logZ: Math.log(beta / (1 + beta)) };
    case 'normal-icdf': return { reward: normalIcdf(Math.min(Math.max(rq, 1 / n), (n - 1) / n)), logZ: 1 / (2 * beta * beta) };
  }
}

/**
 * Apertus' length-normalised β and β·log Z for one completion of |y| tokens (spec §3.5):
 * β_i = min(β/|y|, 0.1); β_i·log Z_i = β_i log β_i + 1 when β_i ≤ 0.2, else the exact
 * β_i log β_i + β_i log(e^{1/β_i} − 1).
 */
export function apertusBeta(beta: number, length: number): { beta: number; betaLogZ: number } {
  const b = Math.min(beta / length, 0.1);
  const betaLogZ = b <= 0.2 ? b * Math.log(b) + 1 : b * Math.log(b) + b * Math.log(Math.expm1(1 / b));
  return { beta: b, betaLogZ };
}

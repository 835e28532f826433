import { createHash } from 'node:crypto';

/**
 * Deterministic uniform number in [0, 1) from `(seed, key)`: the first 48 bits of
 * SHA-256(`${seed}\u0000${key}`) divided by 2^48. Stable across platforms and runs.
 */
export function unitHash(seed: string | number, key: string): number {
  const digest = createHash('sha256').update(`${seed}\u0000${key}`, 'utf8').digest();
  return digest.readUIntBE(0, 6) / 2 ** 48;
}

/**
 * xoshiro128** pseudo-random generator (32-bit state words), seeded through
 * SplitMix32-style mixing of `(seed, stream)`. Used for epoch shuffles: the
 * same `(seed, stream)` always yields the same sequence.
 */
export class Xoshiro128 {
  private s0: number;
  private s1: number;
  private s2: number;
  private s3: number;

  /** @param seed Non-negative safe integer. @param stream Second key (e.g. the epoch). */
  constructor(seed: number, stream = 0) {
    let x = (mix32((seed >>> 0) ^ 0x9e3779b9) ^ mix32(Math.floor(seed / 2 ** 32) + 0x7f4a7c15) ^ mix32(stream + 0x632be5ab)) >>> 0;
    const next = (): number => {
      x = (x + 0x9e3779b9) >>> 0;
      return mix32(x);
    };
    this.s0 = next();
    this.s1 = next();
    this.s2 = next();
    this.s3 = next();
    if ((this.s0 | this.s1 | this.s2 | this.s3) === 0) this.s0 = 1;
  }

  /** Next uniform 32-bit unsigned integer. */
  nextUint32(): number {
    const result = Math.imul(rotl(Math.imul(this.s1, 5), 7), 9) >>> 0;
    const t = this.s1 << 9;
    this.s2 ^= this.s0;
    this.s3 ^= this.s1;
    this.s1 ^= this.s2;
    this.s0 ^= this.s3;
    this.s2 ^= t;
    this.s3 = rotl(this.s3, 11);
    return result;
  }

  /** Uniform integer in [0, n) for 1 ≤ n ≤ 2^32, unbiased (rejection sampling). */
  nextBelow(n: number): number {
    if (n <= 1) return 0;
    const limit = 2 ** 32 - (2 ** 32 % n);
    for (;;) {
      const r = this.nextUint32();
      if (r < limit) return r % n;
    }
  }
}

function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k));
}

/** 32-bit finaliser (murmur3 fmix32). */
function mix32(h: number): number {
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

// MT19937 (Matsumoto & Nishimura 1998), the 32-bit Mersenne Twister PyTorch's CPU generator uses,
// and torch.rand's float32 conversion: (u32 & 0xFFFFFF) · 2^-24.

const N = 624;
const M = 397;
const UPPER = 0x80000000;
const LOWER = 0x7fffffff;
const MATRIX_A = 0x9908b0df;

/** A 32-bit Mersenne Twister seeded with the reference `init_genrand(seed)`. */
export class MT19937 {
  private readonly mt = new Uint32Array(N);
  private index = N;

  /** @param seed - unsigned 32-bit seed (e.g. 2971215073 for the Goldfish table) */
  constructor(seed: number) {
    const mt = this.mt;
    mt[0] = seed >>> 0;
    for (let i = 1; i < N; i++) {
      const prev = mt[i - 1]!;
      mt[i] = (Math.imul(1812433253, prev ^ (prev >>> 30)) + i) >>> 0;
    }
  }

  /** Regenerate the 624-word state (the "twist"). */
  private twist(): void {
    const mt = this.mt;
    let i = 0;
    for (; i < N - M; i++) {
      const y = (mt[i]! & UPPER) | (mt[i + 1]! & LOWER);
      mt[i] = mt[i + M]! ^ (y >>> 1) ^ (y & 1 ? MATRIX_A : 0);
    }
    for (; i < N - 1; i++) {
      const y = (mt[i]! & UPPER) | (mt[i + 1]! & LOWER);
      mt[i] = mt[i + M - N]! ^ (y >>> 1) ^ (y & 1 ? MATRIX_A : 0);
    }
    const y = (mt[N - 1]! & UPPER) | (mt[0]! & LOWER);
    mt[N - 1] = mt[M - 1]! ^ (y >>> 1) ^ (y & 1 ? MATRIX_A : 0);
    this.index = 0;
  }

  /** Next tempered 32-bit output, as an unsigned integer. */
  nextUint32(): number {
    if (this.index >= N) this.twist();
    let y = this.mt[this.index++]!;
    y ^= y >>> 11;
    y ^= (y << 7) & 0x9d2c5680;
    y ^= (y << 15) & 0xefc60000;
    y ^= y >>> 18;
    return y >>> 0;
  }

  /** Next float in [0, 1) exactly as `torch.rand(..., dtype=float32)` on CPU: `(u32 & 0xFFFFFF) · 2^-24`. */
  nextFloat32(): number {
    return (this.nextUint32() & 0xffffff) * 5.9604644775390625e-8;
  }

  /** Fill `out` with successive {@link nextFloat32} values (same sequence, less call overhead). */
  fillFloat32(out: Float32Array): Float32Array {
    const mt = this.mt;
    for (let k = 0; k < out.length; k++) {
      if (this.index >= N) this.twist();
      let y = mt[this.index++]!;
      y ^= y >>> 11;
      y ^= (y << 7) & 0x9d2c5680;
      y ^= (y << 15) & 0xefc60000;
      y ^= y >>> 18;
      out[k] = (y & 0xffffff) * 5.9604644775390625e-8;
    }
    return out;
  }
}

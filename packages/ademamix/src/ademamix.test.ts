import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ADEMAMIX_F32, ADEMAMIX_F64, N, STEPS } from '../test/torch-golden';
import { AdEMAMix, ademamixCoefficients, APERTUS_PRETRAINING_ADEMAMIX } from './ademamix';
import type { AdEMAMixHyperparameters } from './ademamix';
import { OptimizerError } from './errors';
import { makeParam, sig } from '../test/helpers';

// training-recipe.md §1.6: θ0 = [1, −2, 3], three gradients, lr 0.01, β = (0.9, 0.999, 0.9999), α 8, eps 1e-8.
const THETA0 = [1.0, -2.0, 3.0];
const GRADS = [
  [0.1, -0.2, 0.3],
  [0.05, 0.1, -0.1],
  [-0.2, 0.0, 0.4],
];
const BASE = { lr: 0.01, betas: [0.9, 0.999, 0.9999] as const, alpha: 8, eps: 1e-8, splitWeightDecay: false };

function runSpec(ctor: Float32ArrayConstructor | Float64ArrayConstructor, opts: Partial<AdEMAMixHyperparameters>) {
  const p = makeParam(THETA0, ctor);
  const opt = new AdEMAMix([['theta', p]], { ...BASE, ...opts });
  const steps: number[][] = [];
  for (const g of GRADS) {
    p.grad.data.set(g);
    opt.step();
    steps.push([...p.data]);
  }
  return { steps, state: opt.paramState('theta')! };
}

describe('AdEMAMix — spec vectors (training-recipe.md §1.6)', () => {
  it('(a) T_α = T_β3 = 10, wd 0.1, float64: θ after each step and the state after step 3', () => {
    const { steps, state } = runSpec(Float64Array, { alphaWarmup: 10, beta3Warmup: 10, weightDecay: 0.1 });
    const want = [
      [0.988992073083, -1.98799207258, 2.98699207242],
      [0.978656196802, -1.9833257008, 2.97998519213],
      [0.97973069976, -1.97925601031, 2.9700436023],
    ];
    steps.forEach((row, s) => row.forEach((v, i) => expect(sig(v)).toBe(want[s]![i])));
    expect(state.step).toBe(3);
    expect([...state.buffers.exp_avg_fast!].map((v) => sig(v))).toEqual([-0.0074, -0.0072, 0.0553]);
    expect([...state.buffers.exp_avg_slow!].map((v) => sig(v))).toEqual([5.74014420644e-5, -1.4825392731e-4, 3.80280562374e-4]);
    expect([...state.buffers.exp_avg_sq!].map((v) => sig(v))).toEqual([5.247751e-5, 4.991004e-5, 2.5981009e-4]);
  });

  it('(a) float32: every θ is exactly the float32 value the spec prints (12 digits identify it)', () => {
    const { steps } = runSpec(Float32Array, { alphaWarmup: 10, beta3Warmup: 10, weightDecay: 0.1 });
    const want = [
      [0.988992094994, -1.98799204826, 2.98699212074],
      [0.978656232357, -1.98332571983, 2.97998523712],
      [0.979730725288, -1.9792560339, 2.97004365921],
    ];
    steps.forEach((row, s) =>
      row.forEach((v, i) => {
        expect(v).toBe(Math.fround(want[s]![i]!));
        expect(sig(v)).toBe(want[s]![i]);
      }),
    );
  });

  it('(b) no warm-up (α = 8, β3 = 0.9999 constant), wd 0, float64', () => {
    const { steps, state } = runSpec(Float64Array, { alphaWarmup: null, beta3Warmup: null, weightDecay: 0 });
    const want = [
      [0.989992001001, -1.9899920005, 2.98999200033],
      [0.980655025595, -1.98732357088, 2.98598265902],
      [0.982721620073, -1.98525858061, 2.97903575094],
    ];
    steps.forEach((row, s) => row.forEach((v, i) => expect(sig(v)).toBe(want[s]![i])));
    expect([...state.buffers.exp_avg_slow!].map((v) => sig(v, 8))).toEqual([-5.0024999e-6, -9.9970002e-6, 5.99950003e-5].map((v) => sig(v, 8)));
    expect(sig(state.buffers.exp_avg_slow![2]!, 9)).toBe(5.99950003e-5);
  });

  it('(c) optax index convention (schedulers at the 0-based count) gives the optax vector, and differs from (a)', () => {
    const { steps } = runSpec(Float64Array, { alphaWarmup: 10, beta3Warmup: 10, weightDecay: 0.1, schedulerConvention: 'optax' });
    const want = [
      [0.989000001, -1.9880000005, 2.98700000033],
      [0.977673112924, -1.98234256795, 2.97894189787],
      [0.97755772375, -1.97583770405, 2.96739907469],
    ];
    steps.forEach((row, s) => row.forEach((v, i) => expect(sig(v)).toBe(want[s]![i])));
    const h = { ...BASE, alphaWarmup: 10, beta3Warmup: 10, weightDecay: 0.1, schedulerConvention: 'optax' as const, lr: 0.01 };
    expect(ademamixCoefficients(1, h)).toEqual({ alpha: 0, beta3: 0.9 });
    const a = runSpec(Float64Array, { alphaWarmup: 10, beta3Warmup: 10, weightDecay: 0.1 });
    expect(a.steps[0]![0]).not.toBe(steps[0]![0]);
  });
});

describe('AdEMAMix — bit-exact against PyTorch (test/golden.py, 37 elements × 6 steps, warm-up ends mid-run)', () => {
  const theta0 = Array.from({ length: N }, (_, i) => (((i * 37 + 11) % 200) - 100) / 50);
  const grad = (t: number) => Array.from({ length: N }, (_, i) => (((i * 7919 + t * 104729 + 13) % 1000) - 500) / 1000);
  for (const [label, ctor, gold] of [
    ['float32', Float32Array, ADEMAMIX_F32],
    ['float64', Float64Array, ADEMAMIX_F64],
  ] as const) {
    it(`${label}: parameters and all three state buffers are identical`, () => {
      const p = makeParam(theta0, ctor, [N]);
      // rank-1 parameter: pass one explicit group so it still gets weight decay like the golden run
      const opt = new AdEMAMix([{ params: [['w', p]] }], { ...BASE, alphaWarmup: 4, beta3Warmup: 4, weightDecay: 0.1 });
      for (let t = 1; t <= STEPS; t++) {
        p.grad.data.set(grad(t));
        opt.step();
      }
      const st = opt.paramState('w')!;
      expect([...p.data]).toEqual(gold.param);
      expect([...st.buffers.exp_avg_fast!]).toEqual(gold.exp_avg_fast);
      expect([...st.buffers.exp_avg_slow!]).toEqual(gold.exp_avg_slow);
      expect([...st.buffers.exp_avg_sq!]).toEqual(gold.exp_avg_sq);
    });
  }
});

/** Straightforward float64 AdEMAMix written from the §1.1 formulas (no fused operations). */
function referenceAdemamix(theta: number[], grads: number[][], h: AdEMAMixHyperparameters): number[] {
  const [b1, b2] = h.betas;
  const n = theta.length;
  const m1 = new Array<number>(n).fill(0), m2 = new Array<number>(n).fill(0), nu = new Array<number>(n).fill(0);
  const th = [...theta];
  grads.forEach((g, k) => {
    const t = k + 1;
    const { alpha, beta3 } = ademamixCoefficients(t, h);
    for (let i = 0; i < n; i++) {
      m1[i] = b1 === 0 ? g[i]! : b1 * m1[i]! + (1 - b1) * g[i]!;
      m2[i] = beta3 * m2[i]! + (1 - beta3) * g[i]!;
      nu[i] = b2 * nu[i]! + (1 - b2) * g[i]! * g[i]!;
      const u = (m1[i]! / (1 - b1 ** t) + alpha * m2[i]!) / (Math.sqrt(nu[i]!) / Math.sqrt(1 - b2 ** t) + h.eps) + h.weightDecay * th[i]!;
      th[i] = th[i]! - h.lr * u;
    }
  });
  return th;
}

describe('AdEMAMix — against a plain float64 implementation of the formulas', () => {
  it('agrees to 1e-12 on random parameters, gradients and hyperparameters (incl. β1 = 0)', () => {
    const val = fc.double({ min: -3, max: 3, noNaN: true });
    fc.assert(
      fc.property(
        fc.array(val, { minLength: 1, maxLength: 6 }).chain((th) => fc.tuple(fc.constant(th), fc.array(fc.array(val, { minLength: th.length, maxLength: th.length }), { minLength: 1, maxLength: 5 }))),
        fc.constantFrom(0, 0.5, 0.9),
        fc.constantFrom(null, 1, 3, 7),
        fc.double({ min: 0, max: 0.2, noNaN: true }),
        ([theta, grads], beta1, warm, wd) => {
          const h: AdEMAMixHyperparameters = { lr: 0.01, betas: [beta1, 0.999, 0.9999], alpha: 5, alphaWarmup: warm, beta3Warmup: warm, eps: 1e-8, weightDecay: wd, schedulerConvention: 'torch' };
          const p = makeParam(theta);
          const opt = new AdEMAMix([{ params: [['p', p]] }], h);
          for (const g of grads) {
            p.grad.data.set(g);
            opt.step();
          }
          const ref = referenceAdemamix(theta, grads, h);
          ref.forEach((r, i) => expect(Math.abs(p.data[i]! - r)).toBeLessThanOrEqual(1e-12 * Math.max(1, Math.abs(r))));
        },
      ),
      { numRuns: 200 },
    );
  });

  it('β1 = 0 keeps no fast-EMA buffer and uses m1 := g', () => {
    const p = makeParam([0.5, -0.5]);
    const opt = new AdEMAMix([['p', p]], { ...BASE, betas: [0, 0.999, 0.9999], splitWeightDecay: false });
    p.grad.data.set([0.2, -0.4]);
    opt.step();
    expect(Object.keys(opt.paramState('p')!.buffers).sort()).toEqual(['exp_avg_slow', 'exp_avg_sq']);
    expect(Object.keys(opt.stateDict().tensors).sort()).toEqual(['exp_avg_slow.p', 'exp_avg_sq.p']);
    // step 1 by hand: m1 = g, m2 = (1 − β3)·g, nu = (1 − β2)·g², bc1 = 1, bc2 = 1 − β2, α = 8
    const g = 0.2;
    const u = (g + 8 * (1 - 0.9999) * g) / (Math.sqrt((1 - 0.999) * g * g) / Math.sqrt(1 - 0.999) + 1e-8);
    expect(p.data[0]).toBeCloseTo(0.5 - 0.01 * u, 15);
  });
});

describe('AdEMAMix — hyperparameters and bad input', () => {
  const p = () => makeParam([1, 2, 3, 4], Float64Array, [2, 2]);

  it('rejects betas outside [0, 1), negative lr / eps / alpha / weight decay, bad warm-ups', () => {
    const bad: Array<[Partial<AdEMAMixHyperparameters>, string]> = [
      [{ betas: [1, 0.999, 0.9999] }, 'betas[0]'],
      [{ betas: [0.9, -0.1, 0.9999] }, 'betas[1]'],
      [{ betas: [0.9, 0.999, 1.5] }, 'betas[2]'],
      [{ lr: -1e-3 }, 'lr'],
      [{ lr: Number.NaN }, 'lr'],
      [{ eps: -1 }, 'eps'],
      [{ alpha: -2 }, 'alpha'],
      [{ weightDecay: -0.1 }, 'weightDecay'],
      [{ alphaWarmup: 0 }, 'alphaWarmup'],
      [{ beta3Warmup: 2.5 }, 'beta3Warmup'],
    ];
    for (const [h, field] of bad) {
      let err: unknown;
      try {
        new AdEMAMix([['w', p()]], h);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(OptimizerError);
      expect((err as OptimizerError).code).toBe('InvalidHyperparameter');
      expect((err as OptimizerError).field).toBe(field);
    }
  });

  it('rejects a gradient whose length differs from the parameter, naming it, and changes nothing', () => {
    const a = makeParam([1, 2, 3, 4], Float64Array, [2, 2]);
    const b = makeParam([5, 6], Float64Array, [2]);
    const opt = new AdEMAMix([['a', a], ['b', b]], { lr: 0.1 });
    a.grad.data.fill(0.5);
    b.grad = { data: new Float64Array(3) };
    expect(() => opt.step(0.5)).toThrowError(expect.objectContaining({ code: 'ShapeMismatch', param: 'b' }) as Error);
    expect([...a.data]).toEqual([1, 2, 3, 4]);
    expect(opt.paramState('a')).toBeUndefined();
    expect(opt.groups.every((g) => g.hyperparameters.lr === 0.1)).toBe(true);
  });

  it('rejects a parameter whose data does not match its shape, duplicates, empty lists, negative step lr', () => {
    const wrong = { shape: [3, 3], data: new Float64Array(4), grad: null };
    expect(() => new AdEMAMix([['w', wrong]])).toThrowError(expect.objectContaining({ code: 'ShapeMismatch', param: 'w' }) as Error);
    const q = p();
    expect(() => new AdEMAMix([['w', q], ['w', p()]])).toThrowError(expect.objectContaining({ code: 'InvalidParams', param: 'w' }) as Error);
    expect(() => new AdEMAMix([['w', q], ['v', q]])).toThrowError(expect.objectContaining({ code: 'InvalidParams', param: 'v' }) as Error);
    expect(() => new AdEMAMix([])).toThrowError(expect.objectContaining({ code: 'InvalidParams' }) as Error);
    const opt = new AdEMAMix([['w', q]]);
    expect(() => opt.step(-1)).toThrowError(expect.objectContaining({ code: 'InvalidHyperparameter', field: 'lr' }) as Error);
    expect(() => opt.setLr(Number.POSITIVE_INFINITY)).toThrowError(OptimizerError);
  });

  it('step(lr) sets the lr of every group; parameters without a gradient are skipped', () => {
    const w = makeParam([1, 1, 1, 1], Float64Array, [2, 2]);
    const n = makeParam([1, 1]);
    n.grad = null as never;
    const opt = new AdEMAMix([['w', w], ['norm.weight', n]], { lr: 1 });
    w.grad.data.fill(1);
    opt.step(0.25);
    expect(opt.groups.map((g) => g.hyperparameters.lr)).toEqual([0.25, 0.25]);
    expect([...n.data]).toEqual([1, 1]);
    expect(opt.paramState('norm.weight')).toBeUndefined();
    // step 1 with g = 1: u = 1/(1 + 1e-8)·(1 + α·1e-4·... ) → θ ≈ 1 − 0.25·(1 + 2e-4)/(1 + 1e-8)
    expect(w.data[0]).toBeCloseTo(1 - 0.25 * (1 + 2 * (1 - 0.9999)) / (1 + 1e-8), 14);
  });

  it('zeroGrad fills existing gradients with 0', () => {
    const w = makeParam([1, 2, 3, 4], Float32Array, [2, 2]);
    w.grad.data.fill(3);
    new AdEMAMix([['w', w]]).zeroGrad();
    expect([...w.grad.data]).toEqual([0, 0, 0, 0]);
  });

  it('APERTUS_PRETRAINING_ADEMAMIX holds the §1.5 settings', () => {
    expect(APERTUS_PRETRAINING_ADEMAMIX).toMatchObject({ betas: [0.9, 0.999, 0.9999], alpha: 8, alphaWarmup: 100_000, beta3Warmup: 100_000, eps: 1e-8, weightDecay: 0.1 });
  });
});

import { describe, expect, it } from 'vitest';
import { ADAMW_F32, ADAMW_F64, N, STEPS } from '../test/torch-golden';
import { AdamW } from './adamw';
import { OptimizerError } from './errors';
import { makeParam } from '../test/helpers';

describe('AdamW', () => {
  it('two steps by hand: θ·(1 − lr·λ) − lr·m̂/(sqrt(v̂) + eps)', () => {
    const p = makeParam([1, -2], Float64Array, [1, 2]);
    const opt = new AdamW([['w', p]], { lr: 0.1, betas: [0.9, 0.999], eps: 1e-8, weightDecay: 0.5 });
    p.grad.data.set([0.3, -0.4]);
    opt.step();
    // t = 1: m̂ = g, v̂ = g² → θ1 = θ0·0.95 − 0.1·g/(|g| + 1e-8)
    const th1 = [1 * 0.95 - (0.1 * 0.3) / (0.3 + 1e-8), -2 * 0.95 - (0.1 * -0.4) / (0.4 + 1e-8)];
    th1.forEach((v, i) => expect(p.data[i]).toBeCloseTo(v, 15));
    p.grad.data.set([0.1, 0.2]);
    opt.step();
    // t = 2: m = 0.9·0.1·g1 + 0.1·g2, v = 0.999·0.001·g1² + 0.001·g2²
    const g1 = [0.3, -0.4], g2 = [0.1, 0.2];
    th1.forEach((v, i) => {
      const m = 0.9 * 0.1 * g1[i]! + 0.1 * g2[i]!;
      const s = 0.999 * 0.001 * g1[i]! ** 2 + 0.001 * g2[i]! ** 2;
      const want = v * 0.95 - 0.1 * (m / (1 - 0.81)) / (Math.sqrt(s / (1 - 0.999 ** 2)) + 1e-8);
      expect(p.data[i]).toBeCloseTo(want, 14);
    });
    expect(opt.paramState('w')!.step).toBe(2);
  });

  const theta0 = Array.from({ length: N }, (_, i) => (((i * 37 + 11) % 200) - 100) / 50);
  const grad = (t: number) => Array.from({ length: N }, (_, i) => (((i * 7919 + t * 104729 + 13) % 1000) - 500) / 1000);
  for (const [label, ctor, gold] of [
    ['float32', Float32Array, ADAMW_F32],
    ['float64', Float64Array, ADAMW_F64],
  ] as const) {
    it(`${label}: bit-identical to torch.optim.AdamW (test/golden.py, 37 elements × 6 steps)`, () => {
      const p = makeParam(theta0, ctor, [N]);
      const opt = new AdamW([{ name: 'all', params: [['w', p]] }], { lr: 0.01, betas: [0.9, 0.999], eps: 1e-8, weightDecay: 0.1 });
      for (let t = 1; t <= STEPS; t++) {
        p.grad.data.set(grad(t));
        opt.step();
      }
      expect([...p.data]).toEqual(gold.param);
      expect([...opt.paramState('w')!.buffers.exp_avg!]).toEqual(gold.exp_avg);
      expect([...opt.paramState('w')!.buffers.exp_avg_sq!]).toEqual(gold.exp_avg_sq);
    });
  }

  it('applies the Megatron no-decay groups to named parameters', () => {
    const w = makeParam([1, 1, 1, 1], Float64Array, [2, 2]);
    const b = makeParam([1, 1], Float64Array, [2]);
    const opt = new AdamW(new Map([['proj.weight', w], ['proj.bias', b]]), { lr: 0.1, weightDecay: 0.5 });
    expect(opt.groups.map((g) => [g.name, g.hyperparameters.weightDecay, g.params.map(([n]) => n)])).toEqual([
      ['decay', 0.5, ['proj.weight']],
      ['no_decay', 0, ['proj.bias']],
    ]);
    opt.step(); // gradients are all zero: only the decay moves the weights
    expect([...w.data]).toEqual([0.95, 0.95, 0.95, 0.95]);
    expect([...b.data]).toEqual([1, 1]);
  });

  it('rejects bad betas and eps with a typed error naming the field', () => {
    const w = makeParam([1, 2, 3, 4], Float64Array, [2, 2]);
    for (const [h, field] of [
      [{ betas: [0.9, 1] as const }, 'betas[1]'],
      [{ betas: [-0.1, 0.9] as const }, 'betas[0]'],
      [{ eps: -1e-8 }, 'eps'],
      [{ lr: -1 }, 'lr'],
    ] as const) {
      expect(() => new AdamW([['w', w]], h)).toThrowError(expect.objectContaining({ code: 'InvalidHyperparameter', field }) as Error);
    }
    expect(() => new AdamW([['w', w]], { eps: -1 })).toThrowError(OptimizerError);
  });
});

import { backward, gradcheck, Rng, Tensor } from '@apertus/tensor';
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { dpoLoss, qrpoLoss } from './losses';
import { sequenceLogProbs } from './logprobs';
import { apertusBeta, normalIcdf, quantileReward, transformReward } from './quantile';

// Spec §3.7 (two prompts, float64 reference values).
const V = {
  policyChosen: [-120, -40], refChosen: [-121, -40.5],
  policyRej: [-130, -60], refRej: [-128, -59],
  rewardChosen: [0.9, 2.0], rewardRej: [-0.5, 1.0],
  refRewards: [[0.1, 0.5, 0.9, 1.3, -0.2], [1.0, 1.5, 2.5, 3.0, 0.0]],
  lenChosen: [100, 50], lenRej: [80, 40],
};
const rqChosen = V.rewardChosen.map((r, i) => quantileReward(r, V.refRewards[i]!));
const rqRej = V.rewardRej.map((r, i) => quantileReward(r, V.refRewards[i]!));
// Log-probs as float32 tensors lose nothing here: every value is exactly representable.
const slot = (p: number[], ref: number[], len: number[]) => ({ policyLogps: Tensor.from(p).requireGrad(), refLogps: ref, lengths: len });
const chosen = () => slot(V.policyChosen, V.refChosen, V.lenChosen);
const rejected = () => slot(V.policyRej, V.refRej, V.lenRej);
const near = (a: number, b: number, tol = 1e-6) => expect(Math.abs(a - b)).toBeLessThanOrEqual(tol * Math.max(1, Math.abs(b)));

describe('quantile rewards', () => {
  test('spec §3.7 values, ties count as ≤', () => {
    expect(rqChosen).toEqual([0.8, 0.6]);
    expect(rqRej).toEqual([0, 0.4]);
    expect(quantileReward(0.9, [0.9, 0.9, 1])).toBeCloseTo(2 / 3, 15);
  });
  test('is uniform over the reference rewards themselves', () => {
    // Distinct values: 0 and −0 are one reward (0 ≤ −0), so they must not both be drawn.
    const refsArb = fc.uniqueArray(fc.double({ noNaN: true, min: -1e6, max: 1e6 }), { minLength: 1, maxLength: 40, comparator: 'SameValueZero' });
    fc.assert(fc.property(refsArb, (refs) => {
      const qs = refs.map((r) => quantileReward(r, refs)).sort((a, b) => a - b);
      return qs.every((q, i) => Math.abs(q - (i + 1) / refs.length) < 1e-12);
    }));
  });
  test('normal icdf inverts the normal CDF', () => {
    near(normalIcdf(0.975), 1.959963984540054, 1e-14);
    near(normalIcdf(0.5), 0, 1e-15);
    near(normalIcdf(1e-10), -6.361340902404056, 1e-13);
    expect(transformReward(0.2, 5, 0.1, 'normal-icdf').reward).toBeCloseTo(-0.8416212335729143, 12);
    expect(transformReward(0, 5, 0.1, 'log')).toEqual({ reward: Math.log(0.2), logZ: Math.log(0.1 / 1.1) });
  });
});

describe('QRPO (spec §3.7)', () => {
  test('CLAIRE identity form, β = 0.1', () => {
    near(transformReward(0, 5, 0.1, 'identity').logZ, 7.697414907006, 1e-12);
    const { loss, perPrompt } = qrpoLoss(chosen(), rejected(), { chosen: rqChosen, rejected: rqRej }, { beta: 0.1, variant: 'claire' });
    near(perPrompt.data[0]!, 0.16473462087543903);
    near(perPrompt.data[1]!, 0.06052339727034968);
    near(loss.item(), 0.11262900907289436);
  });
  test('CLAIRE single-completion form on chosen only', () => {
    const c = chosen();
    const { perPrompt } = qrpoLoss(c, c, { chosen: rqChosen, rejected: rqChosen }, { beta: 0.1, variant: 'claire' });
    near(perPrompt.data[0]!, 0.004863875525141243);
    near(perPrompt.data[1]!, 0.0482863227353199);
  });
  test('Apertus length-normalised form, β = 5', () => {
    expect(V.lenChosen.map((l) => apertusBeta(5, l).beta)).toEqual([0.05, 0.1]);
    expect(V.lenRej.map((l) => apertusBeta(5, l).beta)).toEqual([0.0625, 0.1]);
    const { loss, perPrompt } = qrpoLoss(chosen(), rejected(), { chosen: rqChosen, rejected: rqRej }, { beta: 5 });
    near(perPrompt.data[0]!, 0.25122207233654703);
    near(perPrompt.data[1]!, 0.06052339727034968);
    near(loss.item(), 0.15587273480344835);
  });
  test('gradient w.r.t. policy log-probs: analytic and finite differences', () => {
    const c = chosen(), r = rejected();
    const { loss } = qrpoLoss(c, r, { chosen: rqChosen, rejected: rqRej }, { beta: 0.1, variant: 'claire' });
    backward(loss);
    // d/dlogπ of mean_i ½[(t − β(lp − lr))²] = −β·(t − β(lp − lr)) / B for each slot
    const logZ = Math.log(0.1) + 10;
    const resid = (rq: number, lp: number, lr: number) => rq - 0.1 * logZ - 0.1 * (lp - lr);
    near(c.policyLogps.grad!.data[0]!, -0.1 * resid(0.8, -120, -121) / 2, 1e-5);
    near(r.policyLogps.grad!.data[1]!, -0.1 * resid(0.4, -60, -59) / 2, 1e-5);
    for (const lossType of ['mse', 'mae'] as const) {
      const g = gradcheck(([a, b]) => qrpoLoss({ ...chosen(), policyLogps: a! }, { ...rejected(), policyLogps: b! }, { chosen: rqChosen, rejected: rqRej }, { beta: 5, lossType, normalizeByLength: true }).loss,
        [Tensor.from([-120.3, -40.2]).requireGrad(), Tensor.from([-130.1, -60.4]).requireGrad()], { eps: 1e-2 });
      expect(g.maxError).toBeLessThan(1e-3);
    }
  });
});

describe('DPO (spec §3.7)', () => {
  test('β = 0.1 and the Apertus β/|y| variant', () => {
    const d = dpoLoss(chosen(), rejected(), { beta: 0.1 });
    near(d.perPrompt.data[0]!, 0.5543552444685271);
    near(d.perPrompt.data[1]!, 0.6209570477895321);
    const a = dpoLoss(chosen(), rejected(), { beta: 5, lengthNormalized: true });
    near(a.perPrompt.data[0]!, 0.6094704306630468);
    near(a.perPrompt.data[1]!, 0.6094704306630468);
  });
  test('gradients match finite differences', () => {
    const g = gradcheck(([a, b]) => dpoLoss({ ...chosen(), policyLogps: a! }, { ...rejected(), policyLogps: b! }, { beta: 0.1 }).loss,
      [Tensor.from([-120, -40]).requireGrad(), Tensor.from([-130, -60]).requireGrad()], { eps: 1e-2 });
    expect(g.maxError).toBeLessThan(1e-3);
  });
});

describe('sequenceLogProbs', () => {
  test('sums log softmax at the targets over completion tokens only', () => {
    const rng = new Rng(5);
    const B = 2, T = 4, Vv = 6;
    const logits = Tensor.randn([B, T, Vv], rng).requireGrad();
    const targets = Tensor.ints([1, 2, 3, 4, 5, 0, 1, 2], [B, T]);
    const mask = Float32Array.of(0, 1, 1, 0, 0, 0, 1, 1);
    const lp = sequenceLogProbs(logits, targets, mask).data;
    for (let b = 0; b < B; b++) {
      let s = 0;
      for (let t = 0; t < T; t++) {
        if (!mask[b * T + t]) continue;
        const row = Array.from(logits.data.subarray((b * T + t) * Vv, (b * T + t + 1) * Vv));
        const z = Math.log(row.reduce((a, v) => a + Math.exp(v), 0));
        s += row[targets.ints[b * T + t]!]! - z;
      }
      near(lp[b]!, s, 1e-5);
    }
    const g = gradcheck(([l]) => sequenceLogProbs(l!, targets, mask), [logits], { eps: 1e-3 });
    expect(g.maxError).toBeLessThan(1e-2);
  });
});

import { AdEMAMix, LrScheduler, constantSchedule, wsdSchedule } from '@apertus/ademamix';
import { ApertusModel, presetConfig } from '@apertus/model';
import { noGrad, scale } from '@apertus/tensor';
import { describe, expect, it } from 'vitest';
import { causalLmLoss, collateLm, evaluateLm, NonFiniteLossError, NonFiniteWeightError, trainStep, type LmBatch } from './index';
import { syntheticLmRows as rows } from './testing';

const CONFIG = presetConfig('tiny', { vocab_size: 64, hidden_size: 16, intermediate_size: 32, num_hidden_layers: 1, num_attention_heads: 2, num_key_value_heads: 1, head_dim: 8 });


/** Float64 reference of Σ mask·CE / N from logits computed by the model (independent log-softmax). */
function referenceLoss(model: ApertusModel, batches: LmBatch[]): { sum: number; n: number } {
  let sum = 0;
  let n = 0;
  for (const b of batches) {
    const logits = noGrad(() => model.forward(b.ids, { positions: b.positions!, docIds: b.docIds! })).toFloat32();
    const V = CONFIG.vocab_size;
    const tg = b.targets.toArray() as number[];
    for (let r = 0; r < tg.length; r++) {
      if (!b.mask[r]) continue;
      let m = -Infinity;
      for (let v = 0; v < V; v++) m = Math.max(m, logits[r * V + v]!);
      let z = 0;
      for (let v = 0; v < V; v++) z += Math.exp(logits[r * V + v]! - m);
      sum += m + Math.log(z) - logits[r * V + tg[r]!]!;
      n++;
    }
  }
  return { sum, n };
}

/** An optimizer stand-in that records the gradients it is asked to apply. */
function recorder(model: ApertusModel) {
  const seen: { lr: number; grads: Map<string, Float32Array> }[] = [];
  return {
    seen,
    step(lr?: number) {
      seen.push({ lr: lr!, grads: new Map(model.parameters().map(([n, p]) => [n, p.grad!.data.slice()])) });
    },
    zeroGrad() {
      for (const [, p] of model.parameters()) p.grad?.data.fill(0);
    },
  };
}

describe('trainStep', () => {
  it('returns the token-mean masked cross-entropy of the whole batch (float64 reference)', () => {
    const model = ApertusModel.init(CONFIG, 3);
    const micro = [collateLm(rows(2, 12, 1)), collateLm(rows(3, 12, 2))];
    const ref = referenceLoss(model, micro);
    const opt = recorder(model);
    const r = trainStep({ params: model.parameters(), optimizer: opt, scheduler: new LrScheduler(constantSchedule(0.1)), microBatches: micro, weightOf: (b) => b.keptTokens, loss: (b, n) => causalLmLoss(model, b, { normalizer: n }) });
    expect(r.weight).toBe(ref.n);
    expect(r.loss).toBeCloseTo(ref.sum / ref.n, 5);
  });

  it('gradient accumulation over micro-batches gives the gradient of the whole batch', () => {
    const all = rows(4, 10, 7);
    // Goldfish makes the kept counts of the two halves differ, so averaging per-micro-batch means would be wrong.
    const goldfish = { goldfishK: 3, goldfishH: 2 };
    const one = ApertusModel.init(CONFIG, 5);
    const two = ApertusModel.init(CONFIG, 5);
    const optOne = recorder(one);
    const optTwo = recorder(two);
    const sched = () => new LrScheduler(constantSchedule(0.5));
    const a = trainStep({ params: one.parameters(), optimizer: optOne, scheduler: sched(), microBatches: [collateLm(all, { goldfish })], weightOf: (b) => b.keptTokens, loss: (b, n) => causalLmLoss(one, b, { normalizer: n }) });
    const halves = [collateLm(all.slice(0, 1), { goldfish }), collateLm(all.slice(1), { goldfish })];
    expect(halves[0]!.keptTokens).not.toBe(halves[1]!.keptTokens / 3);
    const b = trainStep({ params: two.parameters(), optimizer: optTwo, scheduler: sched(), microBatches: halves, weightOf: (x) => x.keptTokens, loss: (x, n) => causalLmLoss(two, x, { normalizer: n }) });
    expect(b.weight).toBe(a.weight);
    expect(b.loss).toBeCloseTo(a.loss, 5);
    for (const [name, g] of optOne.seen[0]!.grads) {
      const h = optTwo.seen[0]!.grads.get(name)!;
      let num = 0;
      let den = 0;
      for (let i = 0; i < g.length; i++) {
        num += (g[i]! - h[i]!) ** 2;
        den += g[i]! ** 2;
      }
      expect(Math.sqrt(num / Math.max(den, 1e-30))).toBeLessThan(1e-4);
    }
  });

  it('clips the global gradient norm and reports the norm before clipping', () => {
    const model = ApertusModel.init(CONFIG, 11);
    const opt = recorder(model);
    const r = trainStep({ params: model.parameters(), optimizer: opt, scheduler: new LrScheduler(constantSchedule(1)), microBatches: [collateLm(rows(2, 8, 3))], weightOf: (b) => b.keptTokens, loss: (b, n) => causalLmLoss(model, b, { normalizer: n }), clip: 0.05 });
    let sq = 0;
    for (const g of opt.seen[0]!.grads.values()) for (const v of g) sq += v * v;
    expect(r.gradNorm).toBeGreaterThan(0.05);
    expect(Math.sqrt(sq)).toBeCloseTo(0.05 * (r.gradNorm / (r.gradNorm + 1e-6)), 6);
  });

  it('uses the scheduler value for the update and then advances it (lr(0) = 0 first)', () => {
    const model = ApertusModel.init(CONFIG, 1);
    const opt = recorder(model);
    const sched = new LrScheduler(wsdSchedule({ maxLr: 1, warmup: 8, total: 40, cooldown: 8 }));
    const mb = [collateLm(rows(2, 6, 9))];
    const lrs: number[] = [];
    for (let i = 0; i < 3; i++) lrs.push(trainStep({ params: model.parameters(), optimizer: opt, scheduler: sched, microBatches: mb, weightOf: (b) => b.keptTokens, loss: (b, n) => causalLmLoss(model, b, { normalizer: n }), schedulerIncrement: 2 }).lr);
    expect(lrs).toEqual([0, 0.25, 0.5]);
    expect(opt.seen.map((s) => s.lr)).toEqual([0, 0.25, 0.5]);
    expect(sched.count).toBe(6);
  });

  it('a NaN loss throws NonFiniteLossError before the optimizer or the scheduler move', () => {
    const model = ApertusModel.init(CONFIG, 1);
    const before = model.parameters().map(([, p]) => p.data.slice());
    const opt = new AdEMAMix(model.parameters(), { lr: 1 });
    const sched = new LrScheduler(constantSchedule(1));
    const call = () =>
      trainStep({ params: model.parameters(), optimizer: opt, scheduler: sched, microBatches: [collateLm(rows(1, 4, 2))], weightOf: (b) => b.keptTokens, loss: (b, n) => scale(causalLmLoss(model, b, { normalizer: n }), Number.NaN), step: 7 });
    expect(call).toThrow(NonFiniteLossError);
    expect(call).toThrow(/step 7: loss is NaN/);
    expect(sched.count).toBe(0);
    model.parameters().forEach(([, p], i) => expect(p.data).toEqual(before[i]));
  });

  it('a non-finite gradient names its tensor; an update that makes a weight non-finite names it with the step', () => {
    const model = ApertusModel.init(CONFIG, 1);
    const params = model.parameters();
    const [name0, w0] = params.find(([n]) => n.includes('down_proj'))!;
    const sched = new LrScheduler(constantSchedule(1));
    const mb = [collateLm(rows(1, 4, 2))];
    const opt = new AdEMAMix(params, { lr: 1e-3 });
    const lossOf = (b: LmBatch, n: number) => causalLmLoss(model, b, { normalizer: n });
    trainStep({ params, optimizer: opt, scheduler: sched, microBatches: mb, weightOf: (b) => b.keptTokens, loss: lossOf, step: 3 }); // gradients exist now
    // One weight's gradient is NaN (as after an overflow in its backward).
    const nanGrad = { step: () => {}, zeroGrad: () => (opt.zeroGrad(), w0.grad!.data.fill(Number.NaN)) };
    const norm = () => trainStep({ params, optimizer: nanGrad, scheduler: sched, microBatches: mb, weightOf: (b) => b.keptTokens, loss: lossOf, step: 4 });
    expect(norm).toThrow(NonFiniteLossError);
    expect(norm).toThrow(`step 4: gradNorm is NaN (gradient of ${name0})`);
    // An optimizer step that writes ∞ into a weight: the step and the tensor are reported.
    const blowUp = { step: () => void (w0.data[1] = Number.POSITIVE_INFINITY), zeroGrad: () => opt.zeroGrad() };
    let err: unknown = null;
    try {
      trainStep({ params, optimizer: blowUp, scheduler: sched, microBatches: mb, weightOf: (b) => b.keptTokens, loss: lossOf, step: 5 });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(NonFiniteWeightError);
    expect((err as Error).message).toBe(`step 5: parameter ${name0} holds Infinity`);
  });

  it('training on a fixed batch lowers its loss (AdEMAMix end to end)', () => {
    const model = ApertusModel.init(CONFIG, 2);
    const opt = new AdEMAMix(model.parameters(), { lr: 1e-2, alpha: 8, alphaWarmup: 20, beta3Warmup: 20, weightDecay: 0.1 });
    const sched = new LrScheduler(constantSchedule(1e-2, { warmup: 2 }));
    const mb = [collateLm(rows(2, 16, 4))];
    const first = evaluateLm(model, mb).loss;
    for (let i = 0; i < 20; i++) trainStep({ params: model.parameters(), optimizer: opt, scheduler: sched, microBatches: mb, weightOf: (b) => b.keptTokens, loss: (b, n) => causalLmLoss(model, b, { normalizer: n }), clip: 1 });
    expect(evaluateLm(model, mb).loss).toBeLessThan(first - 0.5);
  });
});

describe('evaluateLm', () => {
  it('is the float64 token mean over all batches, independent of how they are cut', () => {
    const model = ApertusModel.init(CONFIG, 9);
    const all = rows(5, 9, 21);
    const ref = referenceLoss(model, [collateLm(all)]);
    const whole = evaluateLm(model, [collateLm(all)]);
    const split = evaluateLm(model, [collateLm(all.slice(0, 2)), collateLm(all.slice(2))]);
    expect(whole.tokens).toBe(ref.n);
    expect(whole.loss).toBeCloseTo(ref.sum / ref.n, 5);
    expect(split.loss).toBeCloseTo(whole.loss, 5);
    expect(whole.perplexity).toBeCloseTo(Math.exp(whole.loss), 8);
  });
});

import { describe, expect, it } from 'vitest';
import { AdEMAMix } from './ademamix';
import { AdamW } from './adamw';
import { OptimizerError } from './errors';
import type { Optimizer, BaseHyperparameters } from './optimizer';
import type { OptimizerStateDict, StateTensor } from './state-dict';
import type { FloatArray, OptimParam } from './types';

type P = OptimParam & { grad: { data: FloatArray } };

function model(ctor: Float32ArrayConstructor | Float64ArrayConstructor): Array<[string, P]> {
  const mk = (shape: number[], seed: number): P => {
    const n = shape.reduce((a, b) => a * b, 1);
    const data: FloatArray = new ctor(n);
    for (let i = 0; i < n; i++) data[i] = Math.sin(seed * 17 + i * 0.37);
    return { shape, data, grad: { data: new ctor(n) } };
  };
  return [
    ['layers.0.mlp.up_proj.weight', mk([4, 3], 1)],
    ['layers.0.mlp.act_fn.alpha_p', mk([1], 2)],
    ['layers.0.post_attention_layernorm.weight', mk([3], 3)],
    ['lm_head.weight', mk([5, 3], 4)],
  ];
}

/** Deterministic gradients for step t. */
function setGrads(params: Array<[string, P]>, t: number): void {
  params.forEach(([, p], k) => p.grad.data.forEach((_, i, a) => (a[i] = Math.cos(t * 1.3 + k * 2.1 + i * 0.71) * 0.1)));
}

/** Serialise as an application would: meta through JSON, tensors through raw little-endian bytes. */
function throughBytes(sd: OptimizerStateDict): OptimizerStateDict {
  const tensors: Record<string, StateTensor> = {};
  for (const [k, t] of Object.entries(sd.tensors)) {
    const bytes = new Uint8Array(t.data.buffer.slice(0));
    tensors[k] = { dtype: t.dtype, shape: [...t.shape], data: t.dtype === 'F32' ? new Float32Array(bytes.buffer) : new Float64Array(bytes.buffer) };
  }
  return { tensors, meta: JSON.parse(JSON.stringify(sd.meta)) as OptimizerStateDict['meta'] };
}

function resumeIsBitIdentical<H extends BaseHyperparameters>(make: (params: Array<[string, P]>) => Optimizer<H>, ctor: Float32ArrayConstructor | Float64ArrayConstructor): void {
  const STEPS = 9, CUT = 4;
  const lr = (t: number) => 0.01 * (t / STEPS);
  // uninterrupted run
  const a = model(ctor);
  const optA = make(a);
  for (let t = 1; t <= STEPS; t++) {
    setGrads(a, t);
    optA.step(lr(t));
  }
  // run to CUT, save, build a fresh optimizer over copied parameters, load, continue
  const b = model(ctor);
  const optB = make(b);
  for (let t = 1; t <= CUT; t++) {
    setGrads(b, t);
    optB.step(lr(t));
  }
  const saved = throughBytes(optB.stateDict());
  const c: Array<[string, P]> = b.map(([n, p]) => [n, { shape: p.shape, data: p.data.slice(), grad: { data: p.grad.data.slice() } }]);
  const optC = make(c);
  optC.loadStateDict(saved);
  for (let t = CUT + 1; t <= STEPS; t++) {
    setGrads(c, t);
    optC.step(lr(t));
  }
  a.forEach(([name, p], i) => {
    expect([name, [...c[i]![1].data]]).toEqual([name, [...p.data]]);
    expect(optC.paramState(name)!.step).toBe(STEPS);
  });
  expect(optC.stateDict()).toEqual(optA.stateDict());
}

describe('state dict', () => {
  const ademamix = (p: Array<[string, P]>) => new AdEMAMix(p, { lr: 0.01, alpha: 8, alphaWarmup: 6, beta3Warmup: 6, weightDecay: 0.1 });
  const adamw = (p: Array<[string, P]>) => new AdamW(p, { lr: 0.01, weightDecay: 0.1 });

  it('AdEMAMix float32 / float64: save → JSON + bytes → load → continue is bit-identical to an uninterrupted run', () => {
    resumeIsBitIdentical(ademamix, Float32Array);
    resumeIsBitIdentical(ademamix, Float64Array);
  });

  it('AdamW float32 / float64: same', () => {
    resumeIsBitIdentical(adamw, Float32Array);
    resumeIsBitIdentical(adamw, Float64Array);
  });

  it('names tensors <buffer>.<param>, tags dtypes, records steps, groups and hyperparameters', () => {
    const p = model(Float32Array);
    const opt = ademamix(p);
    setGrads(p, 1);
    opt.step(0.5);
    const sd = opt.stateDict();
    expect(Object.keys(sd.tensors).sort()).toEqual(
      ['exp_avg_fast', 'exp_avg_slow', 'exp_avg_sq'].flatMap((b) => p.map(([n]) => `${b}.${n}`)).sort(),
    );
    expect(sd.tensors['exp_avg_sq.lm_head.weight']).toMatchObject({ dtype: 'F32', shape: [5, 3] });
    expect(sd.meta).toEqual({
      format: 'apertus-optimizer',
      version: 1,
      optimizer: 'AdEMAMix',
      groups: [
        { name: 'decay', params: ['layers.0.mlp.up_proj.weight', 'lm_head.weight'], hyperparameters: { lr: 0.5, betas: [0.9, 0.999, 0.9999], alpha: 8, alphaWarmup: 6, beta3Warmup: 6, eps: 1e-8, weightDecay: 0.1, schedulerConvention: 'torch' } },
        { name: 'no_decay', params: ['layers.0.mlp.act_fn.alpha_p', 'layers.0.post_attention_layernorm.weight'], hyperparameters: { lr: 0.5, betas: [0.9, 0.999, 0.9999], alpha: 8, alphaWarmup: 6, beta3Warmup: 6, eps: 1e-8, weightDecay: 0, schedulerConvention: 'torch' } },
      ],
      steps: { 'layers.0.mlp.up_proj.weight': 1, 'layers.0.mlp.act_fn.alpha_p': 1, 'layers.0.post_attention_layernorm.weight': 1, 'lm_head.weight': 1 },
    });
    // the snapshot is a copy
    const before = sd.tensors['exp_avg_sq.lm_head.weight']!.data[0];
    setGrads(p, 2);
    opt.step();
    expect(sd.tensors['exp_avg_sq.lm_head.weight']!.data[0]).toBe(before);
  });

  describe('validation: typed error naming the entry, and nothing changes', () => {
    function setup() {
      const p = model(Float64Array);
      const opt = ademamix(p);
      setGrads(p, 1);
      opt.step();
      return { p, opt, sd: opt.stateDict() };
    }
    function expectRejected(opt: AdEMAMix, sd: OptimizerStateDict, entry: string): void {
      const snapshot = opt.stateDict();
      let err: unknown;
      try {
        opt.loadStateDict(sd);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(OptimizerError);
      expect((err as OptimizerError).code).toBe('InvalidState');
      expect((err as OptimizerError).entry).toBe(entry);
      expect(opt.stateDict()).toEqual(snapshot);
    }
    const W = 'lm_head.weight';

    it('missing tensor', () => {
      const { opt, sd } = setup();
      const tensors = { ...sd.tensors };
      delete tensors[`exp_avg_slow.${W}`];
      expectRejected(opt, { ...sd, tensors }, `exp_avg_slow.${W}`);
    });
    it('wrong shape, wrong dtype, unexpected tensor', () => {
      const { opt, sd } = setup();
      const t = sd.tensors[`exp_avg_sq.${W}`]!;
      expectRejected(opt, { ...sd, tensors: { ...sd.tensors, [`exp_avg_sq.${W}`]: { ...t, shape: [3, 5] } } }, `exp_avg_sq.${W}`);
      expectRejected(opt, { ...sd, tensors: { ...sd.tensors, [`exp_avg_sq.${W}`]: { dtype: 'F32', shape: [5, 3], data: new Float32Array(15) } } }, `exp_avg_sq.${W}`);
      expectRejected(opt, { ...sd, tensors: { ...sd.tensors, [`exp_avg_sq.${W}`]: { ...t, data: new Float64Array(14) } } }, `exp_avg_sq.${W}`);
      expectRejected(opt, { ...sd, tensors: { ...sd.tensors, 'exp_avg_sq.ghost': t } }, 'exp_avg_sq.ghost');
    });
    it('other optimizer, other groups, bad hyperparameters, bad step counts', () => {
      const { opt, sd } = setup();
      expectRejected(opt, { ...sd, meta: { ...sd.meta, optimizer: 'AdamW' } }, 'meta.optimizer');
      expectRejected(opt, { ...sd, meta: { ...sd.meta, groups: sd.meta.groups.slice(0, 1) } }, 'meta.groups');
      const g0 = sd.meta.groups[0]!;
      expectRejected(opt, { ...sd, meta: { ...sd.meta, groups: [{ ...g0, params: [...g0.params].reverse() }, sd.meta.groups[1]!] } }, 'meta.groups[0].params');
      expectRejected(opt, { ...sd, meta: { ...sd.meta, groups: [{ ...g0, hyperparameters: { ...g0.hyperparameters, betas: [0.9, 1.2, 0.9999] } }, sd.meta.groups[1]!] } }, 'meta.groups[0].hyperparameters');
      expectRejected(opt, { ...sd, meta: { ...sd.meta, steps: { ...sd.meta.steps, [W]: -2 } } }, `meta.steps.${W}`);
      expectRejected(opt, { ...sd, meta: { ...sd.meta, steps: { ...sd.meta.steps, ghost: 3 } } }, 'meta.steps.ghost');
    });
  });
});

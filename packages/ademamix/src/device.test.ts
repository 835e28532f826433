// AdEMAMix, AdamW and clipping on tensors of the `webgpu` device: the update runs there (through
// the backend registry), with the per-step scalars the optimizer computes on the host, so it is
// bit-identical to calling the registry's update kernel with scalars re-derived from the recipe
// (α_t, β3_t from the schedulers, 1 − β^t); nothing is read back until `stateDict`, and a loaded
// state resumes exactly. Runs on SwiftShader without a GPU; a missing driver fails the test.
import { Rng, SWIFTSHADER_ICD, Tensor, readBack, sumSquares, useDevice, webgpuCounters } from '@apertus/tensor';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdEMAMix, AdamW, ademamixCoefficients, clipGradNorm, powInt, type AdEMAMixHyperparameters } from './index';
import { adamwUpdateKernel, ademamixUpdateKernel } from './update';

if (process.env.VK_ICD_FILENAMES === undefined && process.env.VK_DRIVER_FILES === undefined) process.env.VK_ICD_FILENAMES = SWIFTSHADER_ICD;

const SHAPES = [[7, 5], [33], [1]] as const;
const STEPS = 3;

function params(seed: number): Array<[string, Tensor]> {
  const rng = new Rng(seed);
  return SHAPES.map((s, i) => {
    const p = Tensor.randn([...s], rng);
    p.requiresGrad = true;
    return [`layer.${i}.weight`, p];
  });
}

function gradients(ps: Array<[string, Tensor]>, step: number): void {
  const rng = new Rng(1000 + step);
  for (const [, p] of ps) p.grad = Tensor.randn([...p.shape], rng, 0.1);
}

beforeAll(async () => {
  await useDevice('webgpu');
}, 120_000);
afterAll(async () => {
  await useDevice('cpu');
});

describe('optimizers on webgpu tensors', { timeout: 300_000 }, () => {
  it('AdEMAMix: the registry kernel with the recipe scalars, state on the device, exact resume', () => {
    const h = { lr: 1e-2, betas: [0.9, 0.999, 0.9999] as const, alpha: 8, alphaWarmup: 5, beta3Warmup: 5, eps: 1e-8, weightDecay: 0.1 };
    const ps = params(1);
    const ref = params(1).map(([n, p]) => ({ n, p: p.toFloat32(), m1: new Float32Array(p.size), m2: new Float32Array(p.size), nu: new Float32Array(p.size) }));
    const opt = new AdEMAMix(ps, { ...h, splitWeightDecay: false });
    const full = { ...h, schedulerConvention: 'torch' } as AdEMAMixHyperparameters;
    let half: ReturnType<AdEMAMix['stateDict']> | null = null;
    for (let t = 1; t <= STEPS; t++) {
      gradients(ps, t);
      const before = webgpuCounters();
      opt.step();
      const after = webgpuCounters();
      expect(after.readbacks - before.readbacks).toBe(0);
      // Each parameter, gradient and state array goes up on the first step, then the gradients
      // (stateDict() at t = 1 reads the state and keeps the device copies); and the step's scalars, one
      // uniform block for every parameter (the element counts come from the bindings).
      const floats = ps.reduce((n, [, p]) => n + p.size, 0);
      expect(after.uploads - before.uploads).toBe((t === 1 ? 5 : 1) * ps.length + 1);
      expect(after.uploadBytes - before.uploadBytes - (after.uniformBytes - before.uniformBytes)).toBe((t === 1 ? 5 : 1) * 4 * floats);
      expect(after.uniformBytes - before.uniformBytes).toBeGreaterThan(0);
      expect(after.uniformBytes - before.uniformBytes).toBeLessThanOrEqual(256);
      const { alpha, beta3 } = ademamixCoefficients(t, full);
      ref.forEach((r, i) => ademamixUpdateKernel.run({
        arithmetic: 'torch-exact', param: r.p, grad: ps[i]![1].grad!.toFloat32(), m1: r.m1, m2: r.m2, nu: r.nu,
        beta1: 0.9, beta2: 0.999, beta3, alpha, bc1: 1 - powInt(0.9, t), bc2: 1 - powInt(0.999, t), eps: h.eps, weightDecay: h.weightDecay, lr: h.lr,
      }));
      if (t === 1) half = opt.stateDict();
    }
    const sd = opt.stateDict();
    ref.forEach((r, i) => {
      for (const a of [r.p, r.m1, r.m2, r.nu]) readBack(a);
      expect(ps[i]![1].toFloat32()).toEqual(r.p);
      expect(sd.tensors[`exp_avg_fast.${r.n}`]!.data).toEqual(r.m1);
      expect(sd.tensors[`exp_avg_slow.${r.n}`]!.data).toEqual(r.m2);
      expect(sd.tensors[`exp_avg_sq.${r.n}`]!.data).toEqual(r.nu);
    });
    // Resume from the state saved after step 1: the parameters of step 1 from a fresh optimizer, then
    // a new optimizer loads that state and runs steps 2 and 3.
    const again = params(1);
    gradients(again, 1);
    new AdEMAMix(again, { ...h, splitWeightDecay: false }).step();
    const resumed = new AdEMAMix(again, { ...h, splitWeightDecay: false });
    resumed.loadStateDict(half!);
    for (let t = 2; t <= STEPS; t++) {
      gradients(again, t);
      resumed.step();
    }
    again.forEach(([, p], i) => expect(p.toFloat32()).toEqual(ref[i]!.p));
  });

  it('AdamW: the registry kernel with the recipe scalars; zeroGrad drops device gradients', () => {
    const h = { lr: 1e-2, betas: [0.9, 0.95] as const, eps: 1e-8, weightDecay: 0.1 };
    const ps = params(2);
    const ref = params(2).map(([, p]) => ({ p: p.toFloat32(), m: new Float32Array(p.size), v: new Float32Array(p.size) }));
    const opt = new AdamW(ps, { ...h, splitWeightDecay: false });
    for (let t = 1; t <= STEPS; t++) {
      gradients(ps, t);
      opt.step();
      ref.forEach((r, i) => adamwUpdateKernel.run({ arithmetic: 'torch-exact', param: r.p, grad: ps[i]![1].grad!.toFloat32(), m: r.m, v: r.v, beta1: 0.9, beta2: 0.95, bc1: 1 - powInt(0.9, t), bc2: 1 - powInt(0.95, t), eps: h.eps, weightDecay: h.weightDecay, lr: h.lr }));
    }
    ref.forEach((r, i) => {
      readBack(r.p);
      expect(ps[i]![1].toFloat32()).toEqual(r.p);
    });
    opt.zeroGrad();
    for (const [, p] of ps) expect(p.grad).toBeNull();
  });

  it('clipGradNorm reduces on the device and reads back only the norm', () => {
    const ps = params(3);
    gradients(ps, 7);
    const host = ps.map(([, p]) => p.grad!.toFloat32());
    let sq = 0;
    for (const g of host) for (const v of g) sq += v * v;
    // Put the gradients on the device first (a device op writes them), as backward does.
    for (const [, p] of ps) sumSquares(p.grad!.data, null, new Float32Array(1));
    const before = webgpuCounters();
    const norm = clipGradNorm(ps, 0.05);
    const after = webgpuCounters();
    expect(after.readbacks - before.readbacks).toBe(1);
    expect(after.readbackBytes - before.readbackBytes).toBe(4);
    // float32 sums: each square rounds once, ≤ 256 + parts + tensors additions in any sum (all terms ≥ 0).
    const depth = 1 + 256 + 1 + ps.length;
    expect(Math.abs(norm * norm - sq)).toBeLessThanOrEqual(2 * depth * 2 ** -24 * sq);
    const coef = Math.fround(0.05 / (norm + 1e-6));
    ps.forEach(([, p], i) => expect(p.grad!.toFloat32()).toEqual(Float32Array.from(host[i]!, (v) => v * coef)));
  });
});

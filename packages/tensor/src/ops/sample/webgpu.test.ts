// Choosing tokens on the webgpu device against the reference draw (the model's sampler, float64):
// greedy exactly (ties to the lowest index); draws with temperature, top-k, top-p and min-p on
// logits whose sorted probabilities leave room around every cut, so that the float32 device and
// the float64 reference must pick the same token: top-p and u are placed in the middle of the
// reference's cumulative intervals.
import { describe, expect, test } from 'vitest';
import { randomF32 } from '../../kernels/float-testing';
import { webgpuForSuite } from '../../webgpu/testing';
import type { SampleParams } from './args';
import { drawToken } from './reference';
import { sampleWgsl } from './webgpu';

/** Distinct logits: a shuffled grid of `V` values `step` apart, times a scale. */
function logitsRow(V: number, seed: number, step: number): Float32Array {
  const r = randomF32(V, seed, 0, 1), order = Array.from({ length: V }, (_, i) => i).sort((a, b) => r[a]! - r[b]!);
  const x = new Float32Array(V);
  order.forEach((j, rank) => { x[j] = Math.fround((rank - V / 2) * step); });
  return x;
}

/** The reference's sorted probabilities of y = x/T over the top-k candidates, and the cumulative sums. */
function sorted(x: Float32Array, T: number, topK: number): { idx: number[]; probs: number[]; cum: number[] } {
  const y = Array.from(x, (v) => v / T), idx = y.map((_, i) => i).sort((a, b) => y[b]! - y[a]! || a - b).slice(0, topK > 0 ? topK : x.length);
  const m = y[idx[0]!]!, e = idx.map((i) => Math.exp(y[i]! - m)), z = e.reduce((s, v) => s + v, 0), probs = e.map((v) => v / z);
  const cum: number[] = [];
  probs.reduce((s, v) => { cum.push(s + v); return s + v; }, 0);
  return { idx, probs, cum };
}

describe('sampling on the webgpu device', { timeout: 600_000 }, () => {
  const { run, host } = webgpuForSuite();

  test('greedy: the first largest logit, over V = 131072, ties included', () => {
    const V = 131072, rows = 3;
    const x = randomF32(rows * V, 1, -8, 8);
    x[5] = 9; x[900] = 9; // a tie in row 0: the first wins
    x[V + 131071] = 10;
    const out = new Int32Array(rows);
    const greedy: SampleParams = { temperature: 0, topK: 0, topP: 1, minP: 0, u: 0 };
    run(sampleWgsl)(x, rows, V, [greedy, greedy, greedy], out);
    host(out);
    expect(Array.from(out)).toEqual([0, 1, 2].map((r) => drawToken(x.subarray(r * V, (r + 1) * V), greedy, 0)));
    expect(out[0]).toBe(5);
  });

  test('draws with temperature, top-k, top-p and min-p pick the reference\'s token', () => {
    const V = 3000;
    const cases: Omit<SampleParams, 'u'>[] = [
      { temperature: 1, topK: 0, topP: 1, minP: 0 },
      { temperature: 0.7, topK: 40, topP: 1, minP: 0 },
      { temperature: 1.3, topK: 0, topP: 0, minP: 0 },
      { temperature: 0.8, topK: 200, topP: 0, minP: 0.02 },
      { temperature: 1, topK: 0, topP: 1, minP: 0.3 },
    ];
    let checked = 0;
    cases.forEach((c, ci) => {
      const x = logitsRow(V, 10 + ci, 0.01);
      const s = sorted(x, c.temperature, c.topK);
      // top-p halfway between two cumulative sums (the cut is then far from rounding either way).
      const topP = c.topP === 0 ? (s.cum[30]! + s.cum[31]!) / 2 : c.topP;
      const base = { ...c, topP };
      for (const q of [0.05, 0.37, 0.81]) {
        // u in the middle of one token's interval of the reference's final candidates.
        const probe = drawToken(x, { ...base, u: q }, q);
        const keep = s.idx.indexOf(probe);
        let kept = s.probs.length;
        if (topP < 1) kept = Math.min(kept, s.cum.findIndex((v) => v >= topP) + 1);
        if (c.minP > 0) { const f = s.probs.findIndex((v) => v < c.minP * s.probs[0]!); if (f >= 0) kept = Math.min(kept, Math.max(1, f)); }
        const z = s.cum[kept - 1]!, before = keep === 0 ? 0 : s.cum[keep - 1]!;
        const u = (before + s.probs[keep]! / 2) / z;
        const want = drawToken(x, { ...base, u }, u);
        const out = new Int32Array(1);
        run(sampleWgsl)(x, 1, V, [{ ...base, u }], out);
        host(out);
        expect(out[0], `${JSON.stringify(base)} u ${u}`).toBe(want);
        checked++;
      }
    });
    expect(checked).toBe(15);
  });
});

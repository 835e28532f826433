import { backward, noGrad } from './autograd';
import { Rng } from './random';
import { Tensor } from './tensor';

/** Result of `gradcheck`: the worst disagreement between analytic and numeric gradients. */
export interface GradcheckResult {
  /** Largest |analytic − numeric| / max(1, |numeric|) over all checked elements. */
  readonly maxError: number;
  /** Which input and element it occurred at. */
  readonly worst: { input: number; index: number; analytic: number; numeric: number };
}

/**
 * Compare autograd gradients of `f(inputs)` with central finite differences. A random projection
 * R reduces any output to the scalar Σ f(x)·R so every output element is exercised. Perturbations
 * are made in float64 on copies and evaluated in float32, so pick `eps` ≈ 1e-2…1e-3 and compare
 * with a tolerance of ≈ 1e-2 (float32 round-off dominates below that).
 */
export function gradcheck(f: (inputs: Tensor[]) => Tensor, inputs: Tensor[], opts: { eps?: number; seed?: number; maxElements?: number } = {}): GradcheckResult {
  const eps = opts.eps ?? 1e-2;
  const rng = new Rng(opts.seed ?? 1);
  const probe = noGrad(() => f(inputs));
  const R = Tensor.randn(probe.shape, rng);
  const project = (t: Tensor) => { const a = t.toFloat32(), r = R.data; let s = 0; for (let i = 0; i < a.length; i++) s += a[i]! * r[i]!; return s; };

  for (const x of inputs) if (x.requiresGrad) x.grad = null;
  const y = f(inputs);
  backward(y, R);

  let maxError = 0;
  let worst = { input: -1, index: -1, analytic: 0, numeric: 0 };
  inputs.forEach((x, k) => {
    if (!x.requiresGrad) return;
    const data = x.data;
    const g = x.grad ? x.grad.data : new Float32Array(x.size);
    const n = Math.min(data.length, opts.maxElements ?? data.length);
    const step = data.length / n;
    for (let j = 0; j < n; j++) {
      const i = Math.floor(j * step);
      const orig = data[i]!;
      data[i] = orig + eps;
      const fp = noGrad(() => project(f(inputs)));
      data[i] = orig - eps;
      const fm = noGrad(() => project(f(inputs)));
      data[i] = orig;
      const numeric = (fp - fm) / (2 * eps);
      const err = Math.abs(g[i]! - numeric) / Math.max(1, Math.abs(numeric));
      if (err > maxError || worst.input < 0) { if (err >= maxError) { maxError = err; worst = { input: k, index: i, analytic: g[i]!, numeric }; } }
    }
  });
  return { maxError, worst };
}

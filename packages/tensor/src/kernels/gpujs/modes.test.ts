// Mode selection, silent-fallback detection, gpu.js's loop cap, and lifecycle of the gpu.js backend.
import { GPU } from 'gpu.js';
import { afterAll, describe, expect, it } from 'vitest';
import { BackendError, TensorError } from '../../errors';
import { kernelSet } from '../types';
import { GpujsBackendError, createGpujsKernels, probeGpujsModes } from './index';
import { GpujsRuntime, call } from './runtime';
import { expectClose, randomF32, randomI32 } from './testing';

const jsKernels = kernelSet('reference');

describe('mode selection', () => {
  // This machine has no headless-gl (gl is an optional dependency that did not install) and no
  // browser, so only webasm and cpu work; the GL branches below state what must happen where
  // headless-gl does build, instead of skipping.
  const headless = GPU.isHeadlessGLSupported;

  it('probes webasm and cpu as working, GL modes only where supported', () => {
    const p = probeGpujsModes();
    expect(p.webasm).toEqual({ ok: true, mode: 'webasm' });
    expect(p.cpu).toEqual({ ok: true, mode: 'cpu' });
    for (const m of ['webgl2', 'webgl'] as const) {
      // Browser-only backends: never available under Node.
      expect(p[m].ok).toBe(false);
      expect(p[m].reason).toMatch(/not available/);
    }
    if (headless) {
      expect(p.headlessgl).toEqual({ ok: true, mode: 'headlessgl' });
      expect(p.gpu).toEqual({ ok: true, mode: 'headlessgl' });
    } else {
      expect(p.headlessgl.ok).toBe(false);
      expect(p.headlessgl.reason).toMatch(/not available/);
      // 'gpu' would silently run webasm: reported as such, not as working.
      expect(p.gpu).toMatchObject({ ok: false, mode: 'webasm' });
    }
  });

  it("createGpujsKernels('headlessgl') throws GpujsBackendError where headless-gl is missing, instead of running something else", () => {
    if (headless) {
      const ks = createGpujsKernels('headlessgl');
      expect(ks.mode).toBe('headlessgl');
      ks.dispose();
      return;
    }
    let err: unknown;
    try {
      createGpujsKernels('headlessgl');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(GpujsBackendError);
    expect(err).toBeInstanceOf(BackendError);
    expect(err).toBeInstanceOf(TensorError);
    const e = err as GpujsBackendError;
    expect(e.name).toBe('GpujsBackendError');
    expect(e.requestedMode).toBe('headlessgl');
    expect(e.message).toMatch(/headlessgl/);
  });

  it("createGpujsKernels('gpu') refuses the webasm fallback gpu.js would pick without a GPU backend", () => {
    if (headless) {
      const ks = createGpujsKernels('gpu');
      expect(ks.mode).toBe('headlessgl');
      ks.dispose();
      return;
    }
    let err: unknown;
    try {
      createGpujsKernels('gpu');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(GpujsBackendError);
    expect((err as GpujsBackendError).actualMode).toBe('webasm');
  });

  it('rejects an unknown mode with a typed error', () => {
    expect(() => createGpujsKernels('dev' as never)).toThrow(GpujsBackendError);
  });
});

describe('silent fallback guard', () => {
  function catchError(fn: () => unknown): GpujsBackendError {
    const warn = console.warn;
    console.warn = () => undefined; // gpu.js announces its fallbacks on the console
    try {
      fn();
    } catch (e) {
      expect(e).toBeInstanceOf(GpujsBackendError);
      return e as GpujsBackendError;
    } finally {
      console.warn = warn;
    }
    return expect.fail('expected a GpujsBackendError');
  }

  it('throws when gpu.js swaps a webasm kernel for a working cpu one', () => {
    // Array1D(2) arguments are not supported by the webasm backend: gpu.js silently builds a cpu
    // kernel instead, which computes the right numbers -- exactly the case that must not pass.
    const rt = new GpujsRuntime('webasm');
    const e = catchError(() => rt.run(call('pairs', '2', () => ({
      source: 'function (a) { return a[this.thread.x][0] + a[this.thread.x][1]; }',
      output: [2],
      argumentTypes: { a: 'Array1D(2)' as never },
    }), [[Float32Array.from([1, 2]), Float32Array.from([3, 4])]])));
    expect(e.requestedMode).toBe('webasm');
    expect(e.actualMode).toBe('cpu');
    expect(e.kernel).toBe('pairs');
    expect(e.reason).toMatch(/fell back silently: .*Array1D\(2\)/);
    expect(rt.builtKernels()).toEqual({});
    rt.dispose();
  });

  it('reports the fallback also when the cpu fallback itself fails', () => {
    const rt = new GpujsRuntime('webasm');
    const e = catchError(() => rt.run(call('boolean', '4', () => ({
      source: 'function (a) { return a[this.thread.x] > 0; }',
      output: [4],
      argumentTypes: { a: 'Array' },
    }), [new Float32Array([1, -1, 2, -2])])));
    expect(e.reason).toMatch(/fell back silently: return type Boolean/);
    rt.dispose();
  });
});

describe("gpu.js's 1000-iteration loop cap", () => {
  const ks = createGpujsKernels('webasm');
  afterAll(() => ks.dispose());

  it('exists in raw gpu.js (a loop bounded by an argument stops at 1000)', () => {
    const gpu = new GPU({ mode: 'webasm' });
    const k = gpu.createKernel(function (this: { thread: { x: number } }, a: number[], n: number) {
      let s = 0;
      for (let i = 0; i < n; i++) s += a[i]!;
      return s + this.thread.x * 0;
    }, { output: [1] });
    expect((k(new Float32Array(5000).fill(1), 5000) as Float32Array)[0]).toBe(1000);
    gpu.destroy();
  });

  it('does not cut softmax over 5000 or cross-entropy over V = 3000 (webasm)', () => {
    const rows = 3;
    const n = 5000;
    const x = randomF32(rows * n, 1, -3, 3);
    // Put each row's maximum at the end so a truncated max or sum would show.
    for (let r = 0; r < rows; r++) x[r * n + n - 1] = 8;
    const got = new Float32Array(rows * n);
    const want = new Float32Array(rows * n);
    ks.softmax(x, rows, n, got);
    jsKernels.softmax(x, rows, n, want);
    expectClose(got, want, 'softmax', 1e-4, 1e-9);
    let total = 0;
    for (let j = 0; j < n; j++) total += got[j]!;
    expect(total).toBeCloseTo(1, 4);

    const V = 3000;
    const logits = randomF32(rows * V, 2, -2, 2);
    const targets = Int32Array.from([2999, 1500, 0]);
    for (let r = 0; r < rows; r++) logits[r * V + 2500] = 9;
    const loss = new Float32Array(rows);
    const lse = new Float32Array(rows);
    const loss0 = new Float32Array(rows);
    const lse0 = new Float32Array(rows);
    ks.crossEntropy(logits, targets, null, rows, V, loss, lse);
    jsKernels.crossEntropy(logits, targets, null, rows, V, loss0, lse0);
    expectClose(lse, lse0, 'lse', 1e-5, 1e-5);
    expectClose(loss, loss0, 'loss', 1e-5, 1e-5);
    expect(lse[0]).toBeGreaterThan(9); // the maximum at j = 2500 was seen
  });

  it('runs every kernel it built in webasm', () => {
    const modes = Object.values(ks.builtKernels());
    expect(modes.length).toBeGreaterThanOrEqual(3);
    expect(new Set(modes)).toEqual(new Set(['webasm']));
    expect(ks.mode).toBe('webasm');
  });
});

describe('lifecycle and bad input', () => {
  it('caches one kernel per op and shape', () => {
    const ks = createGpujsKernels('webasm');
    const x = randomF32(12, 3);
    const out = new Float32Array(12);
    ks.unary('exp', x, out);
    ks.unary('exp', x, out);
    ks.unary('exp', randomF32(12, 4), out);
    ks.unary('exp', randomF32(13, 4), new Float32Array(13));
    expect(Object.keys(ks.builtKernels()).sort()).toEqual(['unary.exp|12', 'unary.exp|13']);
    ks.dispose();
  });

  it('throws GpujsBackendError after dispose', () => {
    const ks = createGpujsKernels('cpu');
    ks.dispose();
    expect(() => ks.unary('exp', new Float32Array(2), new Float32Array(2))).toThrow(GpujsBackendError);
  });

  it('rejects mismatched sizes and out-of-range ids with errors naming the buffer, before touching outputs', () => {
    const ks = createGpujsKernels('webasm');
    const out = new Float32Array(6).fill(7);
    expect(() => ks.softmax(new Float32Array(5), 2, 3, out)).toThrow(/softmax: x has 5 elements, expected 6/);
    expect(() => ks.embedding(Int32Array.from([0, 4]), new Float32Array(12), 3, out)).toThrow(/ids\[1\] = 4/);
    expect(() => ks.crossEntropy(new Float32Array(6), Int32Array.from([0, 3]), null, 2, 3, new Float32Array(2), new Float32Array(2))).toThrow(/targets\[1\] = 3/);
    expect(() => ks.binary('add', new Float32Array(3), [1], new Float32Array(2), [1], [3], new Float32Array(3))).toThrow(/strides reach past/);
    expect(() => ks.attention({
      B: 1, T: 2, S: 2, nh: 3, nkv: 2, d: 2, q: new Float32Array(12), k: new Float32Array(8), v: new Float32Array(8),
      scale: 1, qOffset: 0, out: new Float32Array(12), lse: new Float32Array(6),
    })).toThrow(/not a multiple of nkv/);
    expect(Array.from(out)).toEqual([7, 7, 7, 7, 7, 7]);
    ks.dispose();
  });

  it('indexes buffers beyond 2^24 elements exactly (webasm)', () => {
    // 130 rows x 131072 = 17M logits: row offsets exceed float32's exact integer range.
    const ks = createGpujsKernels('webasm');
    const rows = 130;
    const V = 131072;
    const logits = new Float32Array(rows * V);
    const targets = randomI32(rows, 5, 0, V);
    for (let r = 0; r < rows; r++) logits[r * V + targets[r]!] = 5 + r / 10; // a distinct peak per row
    const loss = new Float32Array(rows);
    const lse = new Float32Array(rows);
    const loss0 = new Float32Array(rows);
    const lse0 = new Float32Array(rows);
    ks.crossEntropy(logits, targets, null, rows, V, loss, lse);
    jsKernels.crossEntropy(logits, targets, null, rows, V, loss0, lse0);
    expectClose(loss, loss0, 'loss', 2e-5, 2e-5);
    ks.dispose();
  });
});

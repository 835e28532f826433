// The device runtime on its own: buffers, uploads, a dispatch, a read, and what the counters say.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { WebgpuKernelError, WebgpuMemoryError } from './errors';
import { WebgpuRuntime, type Kernel } from './runtime';
import { useSwiftshaderUnlessDriverNamed } from './testing';

const double: Kernel = {
  name: 'double',
  bindings: 'urw',
  wgsl: `struct P { n: u32, s: f32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) {
  if (g.x < p.n) { y[g.x] = x[g.x] * p.s; }
}`,
};

function params(n: number, s: number): Uint32Array {
  const w = new Uint32Array(2);
  w[0] = n;
  new Float32Array(w.buffer)[1] = s;
  return w;
}

describe('webgpu runtime', { timeout: 120_000 }, () => {
  let rt: WebgpuRuntime;
  beforeAll(async () => {
    useSwiftshaderUnlessDriverNamed();
    rt = await WebgpuRuntime.start();
  }, 60_000);
  afterAll(() => rt?.dispose());

  test('uploads, dispatches and reads back, waiting only on the read', () => {
    const c0 = rt.counters();
    const x = rt.alloc(400, 'x'), y = rt.alloc(400, 'y');
    rt.write(x.id, 0, Float32Array.from({ length: 100 }, (_, i) => i));
    rt.dispatch(double, params(100, 2), [x, y], [2, 1, 1]);
    rt.dispatch(double, params(100, 3), [y, x], [2, 1, 1]);
    const c1 = rt.counters();
    expect(c1.readbacks - c0.readbacks).toBe(0);
    expect(c1.batches - c0.batches).toBe(0);
    const out = new Float32Array(100);
    rt.read([{ from: x, into: out }]);
    expect(Array.from(out)).toEqual(Array.from({ length: 100 }, (_, i) => 6 * i));
    const c2 = rt.counters();
    expect(c2.readbacks - c0.readbacks).toBe(1);
    expect(c2.readbackBytes - c0.readbackBytes).toBe(400);
    expect(c2.batches - c0.batches).toBe(1);
    expect(c2.submits - c0.submits).toBe(1);
    expect(c2.dispatches - c0.dispatches).toBe(2);
    expect(c2.pipelineBuilds - c0.pipelineBuilds).toBe(1);
    // 400 bytes of data and two 16-byte parameter blocks.
    expect(c2.uploadBytes - c0.uploadBytes).toBe(400 + 2 * 16);
    expect(c2.uniformBytes - c0.uniformBytes).toBe(32);
    rt.release(x.id);
    rt.release(y.id);
  });

  test('a repeat sends no pipeline, no parameters and creates no buffer (pool, caches)', () => {
    const run = () => {
      const x = rt.alloc(400, 'x'), y = rt.alloc(400, 'y');
      rt.write(x.id, 0, new Float32Array(100).fill(1));
      rt.dispatch(double, params(100, 2), [x, y], [2, 1, 1]);
      const out = new Float32Array(100);
      rt.read([{ from: y, into: out }]);
      rt.release(x.id);
      rt.release(y.id);
      return out;
    };
    run();
    const c0 = rt.counters();
    expect(run()[99]).toBe(2);
    const c1 = rt.counters();
    expect(c1.pipelineBuilds - c0.pipelineBuilds).toBe(0);
    expect(c1.buffersCreated - c0.buffersCreated).toBe(0);
    expect(c1.uniformBytes - c0.uniformBytes).toBe(0);
    expect(c1.uploadBytes - c0.uploadBytes).toBe(400);
  });

  test('a write to a buffer the pending work reads waits for that work (ordering within a batch)', () => {
    const x = rt.alloc(16, 'x'), y = rt.alloc(16, 'y'), z = rt.alloc(16, 'z');
    rt.write(x.id, 0, Float32Array.of(1, 2, 3, 4));
    rt.dispatch(double, params(4, 10), [x, y], [1, 1, 1]);
    rt.write(x.id, 0, Float32Array.of(5, 6, 7, 8));
    rt.dispatch(double, params(4, 10), [x, z], [1, 1, 1]);
    const a = new Float32Array(4), b = new Float32Array(4);
    rt.read([{ from: y, into: a }, { from: z, into: b }]);
    expect(Array.from(a)).toEqual([10, 20, 30, 40]);
    expect(Array.from(b)).toEqual([50, 60, 70, 80]);
    for (const r of [x, y, z]) rt.release(r.id);
  });

  test('a request beyond the budget is a WebgpuMemoryError with the sizes, before anything is sent', async () => {
    const small = await WebgpuRuntime.start({ memoryBytes: 1 << 20 });
    try {
      const c0 = small.counters();
      expect(() => small.alloc(2 << 20, 'model weights')).toThrow(WebgpuMemoryError);
      expect(() => small.alloc(2 << 20, 'model weights')).toThrow(/model weights needs 2\.00 MiB with 0\.00 MiB already on the device, which exceeds the device memory budget of 1\.00 MiB/);
      expect(small.counters().uploadBytes).toBe(c0.uploadBytes);
      expect(small.counters().buffersCreated).toBe(0);
    } finally {
      small.dispose();
    }
  });

  test('a kernel that does not compile is a WebgpuKernelError naming it, at the next read', () => {
    const bad: Kernel = { name: 'broken', bindings: 'w', wgsl: '@group(0) @binding(0) var<storage, read_write> y: array<f32>; @compute @workgroup_size(1) fn main() { y[0] = nope; }' };
    const y = rt.alloc(4, 'y');
    rt.dispatch(bad, null, [y], [1, 1, 1]);
    expect(() => rt.read([{ from: y, into: new Float32Array(1) }])).toThrow(WebgpuKernelError);
  });
});

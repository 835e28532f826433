// The xIELU op on device `webgpu` (its WGSL kernels; SwiftShader's Vulkan driver without a GPU):
// an Apertus MLP block forward and backward keeps every tensor on the device around xIELU,
// counted with `countWebgpu`, and matches the cpu device.
import { backward, countWebgpu, kernelInfo, linear, Rng, sum, mul, SWIFTSHADER_ICD, Tensor, tidy, useDevice } from '@apertus/tensor';
import { afterAll, describe, expect, test } from 'vitest';
import { initXielu, xielu } from './xielu';

// Without a named Vulkan driver, SwiftShader's (Debian `chromium`); missing, the test fails.
if (process.env.VK_ICD_FILENAMES === undefined && process.env.VK_DRIVER_FILES === undefined) process.env.VK_ICD_FILENAMES = SWIFTSHADER_ICD;
process.env.XDG_RUNTIME_DIR ??= '/tmp';

afterAll(() => useDevice('cpu'));

const T = 6, H = 8, F = 24;

/** down(xielu(up(x))) with a loss Σ out·target, forward and backward; returns the loss and the parameters. */
function block() {
  const r = new Rng(11);
  const x = Tensor.randn([T, H], r).requireGrad();
  const up = Tensor.randn([F, H], r, 0, 0.4).requireGrad();
  const down = Tensor.randn([H, F], r, 0, 0.4).requireGrad();
  const act = initXielu({ alphaPInit: 0.9, alphaNInit: 0.7 });
  const target = Tensor.randn([T, H], r);
  const out = linear(xielu(linear(x, up), act), down);
  const loss = sum(mul(out, target));
  backward(loss);
  return { loss, params: [x, up, down, act.alpha_p, act.alpha_n] };
}

describe('xIELU on the webgpu device', () => {
  test('an MLP block forward and backward reads nothing back around xIELU, and matches the cpu device', async () => {
    const want = block();
    await useDevice('webgpu');
    expect(kernelInfo('xielu')).toEqual(kernelInfo('gemm'));
    expect(kernelInfo('xielu')).toEqual({ device: 'webgpu', impl: 'wgsl' });
    expect(kernelInfo('xieluBackward')).toEqual({ device: 'webgpu', impl: 'wgsl' });
    // The first block inside `tidy`: its storage (and their device buffers) back to the pools when it ends.
    const first = countWebgpu(() => tidy(() => { block(); })).counters;
    const { result: got, counters: c } = countWebgpu(block);
    // What goes up is the host-created tensors, each once: x, up, down, target, a_p, a_n and the
    // loss gradient spread over [T, H] by sum's backward. Every activation, xIELU's input and
    // output, αp and softplus(a_n), its parameter sums and every gradient stay on the device:
    // nothing is read back.
    const data = (k: typeof c) => k.uploadBytes - k.uniformBytes;
    expect(data(first)).toBe(4 * (T * H + F * H + H * F + T * H + 1 + 1 + T * H));
    expect([first.readbacks, first.readbackBytes]).toEqual([0, 0]);
    // The second block: the same uploads; its kernels and parameter blocks are the first one's.
    expect({ data: data(c), readbacks: c.readbacks, dispatches: c.dispatches, pipelineBuilds: c.pipelineBuilds, uniformBytes: c.uniformBytes })
      .toEqual({ data: data(first), readbacks: 0, dispatches: first.dispatches, pipelineBuilds: 0, uniformBytes: 0 });
    // Reading the loss is its readback.
    const { result: loss, counters: r } = countWebgpu(() => got.loss.item());
    expect([r.readbacks, r.readbackBytes]).toEqual([1, 4]);
    // Sums of at most F = 24 products of O(1) values, f32 against the cpu backend's: ≲ 24·2⁻²⁴
    // relative per step, over four GEMMs and xIELU; 1e-5 / 1e-4 leave a wide margin.
    expect(Math.abs(loss - want.loss.item())).toBeLessThanOrEqual(1e-5 * Math.abs(want.loss.item()));
    for (const [i, p] of got.params.entries()) {
      const g = p.grad!.data, g0 = want.params[i]!.grad!.data;
      for (let j = 0; j < g.length; j++) expect(Math.abs(g[j]! - g0[j]!), `${p} [${j}]`).toBeLessThanOrEqual(1e-4 * (1 + Math.abs(g0[j]!)));
    }
  }, 300_000);
});

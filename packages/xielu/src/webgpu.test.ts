// The xIELU op on backend `webgpu` (gpu.js WGSL kernels; SwiftShader's Vulkan driver without a
// GPU): an Apertus MLP block forward and backward keeps every tensor on the GPU around xIELU,
// counted with `webgpuTransfers()`, and matches the cpu device.
import { backward, kernelInfo, linear, Rng, sum, mul, SWIFTSHADER_ICD, Tensor, useDevice } from '@apertus/tensor';
import { webgpuTransfers } from '@apertus/tensor/gpujs';
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
    expect(kernelInfo('xielu')).toEqual({ device: 'webgpu', impl: 'gpujs' });
    expect(kernelInfo('xieluBackward')).toEqual({ device: 'webgpu', impl: 'gpujs' });
    const t0 = webgpuTransfers();
    const got = block();
    const t1 = webgpuTransfers();
    // Uploads are the host-created tensors, once per op that reads them: forward x and up (192 +
    // 768 B), a_p and a_n (4 B each, by softplus: αp and softplus(a_n) are computed on the GPU),
    // down (768), target (192); backward the loss gradient spread over [T, H] (192, twice: once
    // per product of mul's backward), target (192), down (768), a_p and a_n (sigmoid), up (768)
    // and x (192). Every activation, xIELU's input and output, αp and softplus(a_n), its parameter
    // sums and every gradient stay on the GPU: nothing is read back. The two softplus kernels are
    // the price (21 kernel calls).
    expect({ ...t1, calls: t1.calls - t0.calls, uploads: t1.uploads - t0.uploads, uploadBytes: t1.uploadBytes - t0.uploadBytes, readbacks: t1.readbacks - t0.readbacks, readbackBytes: t1.readbackBytes - t0.readbackBytes })
      .toEqual({ calls: 21, uploads: 14, uploadBytes: 4240, readbacks: 0, readbackBytes: 0 });
    // Reading the loss is its readback.
    const w0 = webgpuTransfers();
    const loss = got.loss.item();
    const w1 = webgpuTransfers();
    expect([w1.readbacks - w0.readbacks, w1.readbackBytes - w0.readbackBytes]).toEqual([1, 4]);
    // Sums of at most F = 24 products of O(1) values, f32 against the cpu backend's: ≲ 24·2⁻²⁴
    // relative per step, over four GEMMs and xIELU; 1e-5 / 1e-4 leave a wide margin.
    expect(Math.abs(loss - want.loss.item())).toBeLessThanOrEqual(1e-5 * Math.abs(want.loss.item()));
    for (const [i, p] of got.params.entries()) {
      const g = p.grad!.data, g0 = want.params[i]!.grad!.data;
      for (let j = 0; j < g.length; j++) expect(Math.abs(g[j]! - g0[j]!), `${p} [${j}]`).toBeLessThanOrEqual(1e-4 * (1 + Math.abs(g0[j]!)));
    }
  }, 300_000);
});

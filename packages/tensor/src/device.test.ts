// useDevice: the one switch behind the apps' --device flag. `webgpu` runs on SwiftShader here
// (set by the test when no Vulkan driver is named); a missing driver fails the test, never skips it.
import { afterAll, describe, expect, test } from 'vitest';
import { DEVICES, currentDevice, describeDevice, useDevice, type Device } from './device';
import { onWebgpu, type WebgpuKernelApi } from './device-hooks';
import { BackendError } from './errors';
import { useSwiftshaderUnlessDriverNamed } from './webgpu/testing';
import * as wgsl from './webgpu/wgsl';
import { TENSOR_KERNELS } from './kernels/types';
import { kernelF32 } from './ops/util';
import { defineKernel, kernelInfo, kernelOp, selectKernels } from './registry';
import { Tensor } from './tensor';

useSwiftshaderUnlessDriverNamed();
afterAll(() => useDevice('cpu'));

const names = Object.keys(TENSOR_KERNELS);

describe('useDevice', () => {
  test('webgpu moves every registry op and names the adapter; cpu restores the default choice per op', async () => {
    const defaults = names.map((op) => kernelInfo(op));
    expect(DEVICES).toEqual(['cpu', 'webgpu']);
    const gpu = await useDevice('webgpu');
    expect(gpu.device).toBe('webgpu');
    expect(gpu.adapter).toMatch(/\S/);
    expect(currentDevice()).toEqual(gpu);
    expect(describeDevice()).toBe(`webgpu (${gpu.adapter})`);
    for (const op of names) expect(kernelInfo(op), op).toEqual({ device: 'webgpu', impl: 'wgsl' });
    // An implementation chosen by hand is undone by selecting a device again.
    await useDevice('cpu');
    selectKernels('reference', ['gemm']);
    expect(await useDevice('webgpu')).toEqual(gpu);
    expect(kernelInfo('gemm')?.device).toBe('webgpu');
    expect(await useDevice('cpu')).toEqual({ device: 'cpu', adapter: null });
    expect(describeDevice()).toBe('cpu');
    expect(names.map((op) => kernelInfo(op))).toEqual(defaults);
  }, 300_000);

  test('packages bring their own kernels to webgpu through onWebgpu, before or after the device starts', async () => {
    // out = 2·x + 1 as a WGSL kernel, as another package would write it with the public helpers.
    const N = wgsl.params(['n', 'u32']);
    const affine = (gpu: WebgpuKernelApi, x: Float32Array, out: Float32Array): void => {
      const k = gpu.kernel('test.affine', '', () => wgsl.wgsl(N, [['x', 'r', 'f32'], ['y', 'w', 'f32']], `${wgsl.MAIN_1D}  y[i] = 2.0 * x[i] + 1.0;\n}\n`));
      gpu.run(k, N.pack({ n: x.length }), [gpu.st.input(x, 'x'), gpu.st.output(out, 'y')], gpu.grid(Math.ceil(x.length / 256)));
    };
    const op = kernelOp<(x: Float32Array, out: Float32Array) => void>('test.affine');
    defineKernel(op, { device: 'cpu', impl: 'reference', run: (x, out) => { for (let i = 0; i < x.length; i++) out[i] = 2 * x[i]! + 1; } });
    const seen: WebgpuKernelApi[] = [];
    onWebgpu((gpu) => { seen.push(gpu); defineKernel(op, { device: 'webgpu', impl: 'wgsl', run: gpu.record(affine) }); });
    await useDevice('webgpu');
    expect(seen.length).toBe(1);
    expect(kernelInfo(op)).toEqual({ device: 'webgpu', impl: 'wgsl' });
    // Tensor storage in and out: the output stays on the device until the host reads it.
    const x = Tensor.from(Float32Array.of(1, -2, 0.5)), out = Tensor.zeros([3]);
    op.run(kernelF32(x, 'test'), kernelF32(out, 'test'));
    expect([...out.data]).toEqual([3, -3, 2]);
    // A hook registered after the start runs at once.
    let late = 0;
    onWebgpu(() => { late++; });
    expect(late).toBe(1);
    await useDevice('cpu');
    expect(kernelInfo(op)).toEqual({ device: 'cpu', impl: 'reference' });
  }, 300_000);

  test('an unknown device is a BackendError naming the choices', async () => {
    await expect(useDevice('tpu' as Device)).rejects.toThrow(BackendError);
    await expect(useDevice('tpu' as Device)).rejects.toThrow(/unknown device 'tpu' \(expected cpu or webgpu\)/);
  });
});

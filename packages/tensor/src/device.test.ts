// useDevice: the one switch behind the apps' --device flag. `webgpu` runs on SwiftShader here
// (set by the test when no Vulkan driver is named); a missing driver fails the test, never skips it.
import { afterAll, describe, expect, test } from 'vitest';
import { DEVICES, currentDevice, describeDevice, useDevice, type Device } from './device';
import { onWebgpu, type WebgpuKernelApi } from './device-hooks';
import { BackendError } from './errors';
import { call, into, type KernelOp } from './kernels/gpujs/ops';
import { useSwiftshaderUnlessDriverNamed } from './kernels/gpujs/testing';
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
    for (const op of names) expect(kernelInfo(op), op).toEqual({ device: 'webgpu', impl: 'gpujs' });
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
    // out = 2·x + 1 as a gpu.js op, as another package would write it with the public helpers.
    function* affine(x: Float32Array, out: Float32Array): KernelOp {
      yield* into(out, call('test.affine', `${x.length}`, () => ({
        source: 'function (x) { return 2 * x[this.thread.x] + 1; }', output: [x.length], argumentTypes: { x: 'Array' },
      }), [x]));
    }
    const op = kernelOp<(x: Float32Array, out: Float32Array) => void>('test.affine');
    defineKernel(op, { device: 'cpu', impl: 'reference', run: (x, out) => { for (let i = 0; i < x.length; i++) out[i] = 2 * x[i]! + 1; } });
    const seen: WebgpuKernelApi[] = [];
    onWebgpu((gpu) => { seen.push(gpu); defineKernel(op, { device: 'webgpu', impl: 'gpujs', run: (x, out) => gpu.run(affine(x, out)) }); });
    await useDevice('webgpu');
    expect(seen.length).toBe(1);
    expect(kernelInfo(op)).toEqual({ device: 'webgpu', impl: 'gpujs' });
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

// useDevice: the one switch behind the apps' --device flag. `webgpu` runs on SwiftShader here
// (set by the test when no Vulkan driver is named); a missing driver fails the test, never skips it.
import { afterAll, describe, expect, test } from 'vitest';
import { backendOf, kernelNames, setBackend } from './backend';
import { DEVICES, currentDevice, describeDevice, useDevice, webgpuKernelApi, type Device } from './device';
import { enableWebgpu, runWebgpuOp } from './gpujs-backend';
import { BackendError } from './errors';
import { useSwiftshaderUnlessDriverNamed } from './kernels/gpujs/testing';

useSwiftshaderUnlessDriverNamed();
afterAll(() => useDevice('cpu'));

describe('useDevice', () => {
  test('webgpu moves every registry op and names the adapter; cpu restores the default choice per op', async () => {
    const defaults = kernelNames().map((op) => backendOf(op).name);
    expect(DEVICES).toEqual(['cpu', 'webgpu']);
    const gpu = await useDevice('webgpu');
    expect(gpu.device).toBe('webgpu');
    expect(gpu.adapter).toMatch(/\S/);
    expect(currentDevice()).toEqual(gpu);
    expect(describeDevice()).toBe(`webgpu (${gpu.adapter})`);
    for (const op of kernelNames()) expect(backendOf(op).name, op).toBe('webgpu');
    // A backend chosen by hand for one op is undone by selecting a device again.
    setBackend('js', ['gemm']);
    expect(await useDevice('webgpu')).toBe(gpu);
    expect(backendOf('gemm').name).toBe('webgpu');
    expect(await useDevice('cpu')).toEqual({ device: 'cpu', adapter: null });
    expect(describeDevice()).toBe('cpu');
    expect(kernelNames().map((op) => backendOf(op).name)).toEqual(defaults);
  }, 300_000);

  test('enableWebgpu() makes webgpu the current device too, and hands packages the kernel-op API', async () => {
    await useDevice('cpu');
    const info = await enableWebgpu();
    expect(currentDevice()).toEqual({ device: 'webgpu', adapter: info.adapter });
    expect((webgpuKernelApi() as { runWebgpuOp: unknown }).runWebgpuOp).toBe(runWebgpuOp);
    // Registered without being selected, it leaves the device as it was.
    await useDevice('cpu');
    await enableWebgpu(false);
    expect(currentDevice().device).toBe('cpu');
    expect(backendOf('gemm').name).not.toBe('webgpu');
  }, 300_000);

  test('an unknown device is a BackendError naming the choices', async () => {
    await expect(useDevice('tpu' as Device)).rejects.toThrow(BackendError);
    await expect(useDevice('tpu' as Device)).rejects.toThrow(/unknown device 'tpu' \(expected cpu or webgpu\)/);
  });
});

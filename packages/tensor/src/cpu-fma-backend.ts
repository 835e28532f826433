import { registerBackend, setBackend, type BackendInfo } from './backend';
import { BackendError } from './errors';
import { cpuFmaKernels } from './kernels/cpu/index';
import { relaxedSimdAvailable } from './kernels/gemm/index';

/**
 * Register the `cpu-fma` backend — GEMM, tiled attention and the fused LM-head loss on the
 * relaxed-SIMD GEMM (`f32x4.relaxed_madd`, a fused multiply-add where the CPU has FMA; about 1.4×
 * the `cpu` GEMM) — and, by default, run those ops on it. Opt-in because its results differ from
 * the `cpu` backend's in the last bits, and from CPU to CPU where one lacks FMA: the default `cpu`
 * backend gives the same bits everywhere. On Node 20 this turns on relaxed SIMD in-process.
 * Throws `BackendError` where relaxed SIMD cannot be enabled.
 */
export function enableCpuFma(select = true): BackendInfo {
  if (!relaxedSimdAvailable()) throw new BackendError('cpu-fma: this runtime has no relaxed SIMD (needs Node >= 20 with WebAssembly SIMD)');
  const info = { name: 'cpu-fma', device: 'cpu (WebAssembly relaxed SIMD, fused multiply-add, worker threads)' };
  registerBackend(info.name, info.device, cpuFmaKernels());
  if (select) setBackend(info.name);
  return info;
}

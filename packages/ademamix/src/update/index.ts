/**
 * The AdEMAMix and AdamW updates on every device: the TypeScript reference and the WebAssembly
 * SIMD kernel on the cpu device, WGSL kernels on the webgpu device (registered when it starts).
 */
import { defineKernel, onWebgpu } from '@apertus/tensor/kernels';
import { adamwCpu, ademamixCpu, simdStepAvailable } from './cpu';
import { adamwUpdateKernel, ademamixUpdateKernel } from './kernel';
import { adamwReference, ademamixReference } from './reference';
import { adamwUpdateWgsl, ademamixUpdateWgsl } from './webgpu';

defineKernel(ademamixUpdateKernel, { device: 'cpu', impl: 'reference', run: ademamixReference });
defineKernel(ademamixUpdateKernel, { device: 'cpu', impl: 'wasm', dtypes: ['f32'], available: simdStepAvailable, run: ademamixCpu });
defineKernel(adamwUpdateKernel, { device: 'cpu', impl: 'reference', run: adamwReference });
defineKernel(adamwUpdateKernel, { device: 'cpu', impl: 'wasm', dtypes: ['f32'], available: simdStepAvailable, run: adamwCpu });
onWebgpu((gpu) => {
  defineKernel(ademamixUpdateKernel, { device: 'webgpu', impl: 'wgsl', dtypes: ['f32'], run: gpu.record(ademamixUpdateWgsl) });
  defineKernel(adamwUpdateKernel, { device: 'webgpu', impl: 'wgsl', dtypes: ['f32'], run: gpu.record(adamwUpdateWgsl) });
});

export { adamwUpdateKernel, ademamixUpdateKernel, type AdamwUpdateArgs, type AdemamixUpdateArgs } from './kernel';

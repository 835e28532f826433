/**
 * What the device's kernels are written with (and packages bringing their own webgpu kernels,
 * through `wgsl` of `@apertus/tensor/kernels`): uniform parameters and the kernel text builder,
 * the grid index, entry points and workgroup reductions, the math and float-format functions,
 * and device-wide sums.
 */
export { params, wgsl, Params, type FieldType, type Buffer } from './kernel';
export { MATH, FLOAT_BITS, DIV_RN } from './wgsl-math';
export { GROUP_INDEX, MAIN_1D, REDUCE, ROW_MAIN, ROW_MAX, ROW_EXP_SUM } from './snippets';
export { partialGroups, sumPartials } from './partials';

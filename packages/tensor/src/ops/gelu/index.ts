import { record } from '../../autograd';
import type { Tensor } from '../../tensor';
import { kernelF32, out } from '../util';
import { geluBackwardKernel, geluKernel } from './kernel';

/** GELU, tanh form (GPT-2's, `gelu_pytorch_tanh`): ½·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), elementwise. */
export function gelu(x: Tensor): Tensor {
  const xs = kernelF32(x, 'gelu');
  const res = out(x.shape);
  geluKernel.run(xs, res.data);
  return record(res, 'gelu', [x], (g) => {
    const gx = out(x.shape);
    geluBackwardKernel.run(xs, kernelF32(g, 'gelu'), gx.data);
    return [gx];
  });
}

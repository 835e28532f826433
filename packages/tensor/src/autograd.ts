import { binaryKernel, scaleByKernel } from './ops/elementwise/kernel';
import { AutogradError, ShapeError } from './errors';
import { heapF32, heapKeep, heapRelease } from './memory/heap';
import { sameShape } from './shape';
import { Tensor, type GradNode } from './tensor';
import { kernelF32 } from './ops/util';

let gradEnabled = true;

/** Whether ops are currently recorded for autograd. */
export function isGradEnabled(): boolean {
  return gradEnabled;
}

/** Run `fn` without recording ops (inference, optimizer updates, evaluation). */
export function noGrad<T>(fn: () => T): T {
  const prev = gradEnabled;
  gradEnabled = false;
  try {
    return fn();
  } finally {
    gradEnabled = prev;
  }
}

/**
 * Record `out = op(inputs)` on the tape when grad mode is on and any input requires grad.
 * `backward` maps dLoss/dOut to dLoss/dInput per input. Returns `out`.
 */
export function record(out: Tensor, op: string, inputs: readonly Tensor[], backward: GradNode['backward']): Tensor {
  if (gradEnabled && inputs.some((t) => t.requiresGrad)) {
    out.requiresGrad = true;
    out.node = { op, inputs, backward };
  }
  return out;
}

/** A copy of `src` in the cpu device memory. */
function copy(src: Float32Array): Float32Array {
  const a = heapF32(src.length);
  a.set(src);
  return a;
}

/** A fresh copy of `g`'s values, made where its storage lives (`scaleBy` with s = 1 is exact). */
function deviceCopy(g: Tensor): Float32Array {
  const a = heapF32(g.size);
  scaleByKernel.run(kernelF32(g, 'backward'), 1, a);
  return a;
}

/** Add `g` into `acc` elementwise (same size), with the `binary` kernel: where the storage lives. */
function accumulate(acc: Float32Array, g: Tensor): void {
  binaryKernel.run('add', acc, [1], kernelF32(g, 'backward'), [1], [acc.length], acc);
}

/**
 * Reverse-mode differentiation from `root`: topological order over recorded nodes, gradients
 * summed where a tensor is used several times, and added into `.grad` of every leaf that
 * requires grad (so calling backward several times accumulates, as in gradient accumulation).
 * `grad` defaults to 1 for a one-element root. Intermediate gradients are owned by this loop and
 * go back to the cpu device's buffer pool as soon as they have been propagated (so a custom op's
 * backward must not keep its `grad` argument beyond the call).
 */
export function backward(root: Tensor, grad?: Tensor): void {
  if (!root.requiresGrad) throw new AutogradError(`backward: ${root} does not require grad (was it computed under noGrad, or from constants only?)`);
  if (!grad) {
    if (root.size !== 1) throw new AutogradError(`backward: ${root} is not a scalar; pass the output gradient`);
    grad = Tensor.full(root.shape, 1);
  } else if (!sameShape(grad.shape, root.shape)) {
    throw new ShapeError(`backward: gradient shape [${grad.shape}] differs from output shape [${root.shape}]`);
  }

  // Topological order (iterative DFS: graphs of deep models would overflow a recursive one).
  const order: Tensor[] = [];
  const seen = new Set<Tensor>();
  const stack: [Tensor, number][] = [[root, 0]];
  seen.add(root);
  while (stack.length > 0) {
    const top = stack[stack.length - 1]!;
    const [t, i] = top;
    const inputs = t.node?.inputs ?? [];
    if (i < inputs.length) {
      top[1]++;
      const c = inputs[i]!;
      if (c.requiresGrad && !seen.has(c)) { seen.add(c); stack.push([c, 0]); }
    } else {
      stack.pop();
      order.push(t);
    }
  }

  const grads = new Map<Tensor, Float32Array>();
  grads.set(root, copy(grad.materialize().data));
  const prev = gradEnabled;
  gradEnabled = false;
  try {
    for (let i = order.length - 1; i >= 0; i--) {
      const t = order[i]!;
      const g = grads.get(t);
      if (!g) continue;
      grads.delete(t);
      if (!t.node) {
        if (t.grad === null) { t.grad = new Tensor(g, t.shape, 'f32'); heapKeep(g); }
        else { accumulate(kernelF32(t.grad, 'backward'), new Tensor(g, t.shape, 'f32')); heapRelease(g); }
        continue;
      }
      const gin = t.node.backward(new Tensor(g, t.shape, 'f32'));
      // Backward functions return fresh arrays or views of `g` (which this loop owns), so a
      // gradient that spans its whole storage is taken without a copy — once per storage.
      const taken = new Set<unknown>();
      t.node.inputs.forEach((inp, k) => {
        const gi = gin[k];
        if (!gi || !inp.requiresGrad) return;
        if (!sameShape(gi.shape, inp.shape)) {
          throw new AutogradError(`backward of ${t.node!.op}: gradient [${gi.shape}] for input ${k} of shape [${inp.shape}]`);
        }
        const acc = grads.get(inp);
        if (acc) { accumulate(acc, gi); return; }
        const whole = gi.dtype === 'f32' && gi.offset === 0 && gi.size === gi.raw.length && gi.isContiguous();
        if (whole && !taken.has(gi.raw)) { taken.add(gi.raw); grads.set(inp, gi.raw as Float32Array); }
        else grads.set(inp, deviceCopy(gi));
      });
      // g has been propagated; unless an input took it over as its gradient, nothing refers to it.
      if (!taken.has(g)) heapRelease(g);
    }
  } finally {
    gradEnabled = prev;
  }
}

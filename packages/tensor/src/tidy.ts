import { heapCloseScope, heapOpenScope } from './memory/heap';
import { Tensor } from './tensor';

/**
 * Run `fn` and return the storage of every tensor it created to the cpu device's buffer pool
 * when it returns (or throws), except the tensors it returns (a tensor, or an array or plain
 * object of tensors) and the gradients `backward` accumulated into leaves (`.grad`). Tensors
 * created inside must not be used afterwards, so call `backward` inside: a returned tensor's
 * autograd graph is released with the rest. Without `tidy`, storage is recycled when it is
 * garbage-collected, which in a tight loop can be much later.
 *
 * @example
 * ```ts
 * const loss = tidy(() => { const l = model.loss(ids, targets); backward(l); return l.item(); });
 * optimizer.step();
 * ```
 */
export function tidy<T>(fn: () => T): T {
  const outer = heapOpenScope();
  let result: T;
  try {
    result = fn();
  } catch (e) {
    heapCloseScope(outer, []);
    throw e;
  }
  heapCloseScope(outer, storagesOf(result));
  return result;
}

function storagesOf(x: unknown): object[] {
  if (x instanceof Tensor) return [x.raw];
  if (Array.isArray(x)) return x.flatMap(storagesOf);
  if (x !== null && typeof x === 'object' && Object.getPrototypeOf(x) === Object.prototype) return Object.values(x).flatMap(storagesOf);
  return [];
}

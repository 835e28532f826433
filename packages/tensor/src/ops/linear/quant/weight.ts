// Weight tensors stored for the product kernels: a [N, K] matrix of any WeightDType whose bytes
// were copied once into a WeightStore (memory.ts), where `linear` and `embedding` read them in
// place through `packedLinear` / `packedRows` on the current device. Such a tensor computes what
// llama.cpp computes on the same blocks (its input rounded to bf16/f16 or quantized to the
// format's activation blocks), and it is inference-only: no gradient flows through it.
//
// A quantized tensor made any other way (`Tensor.to('q8_0')`, `new Tensor(bytes, …)`) is stored
// on its first product, once. Without shared WebAssembly memory (a page that is not cross-origin
// isolated) the bytes stay where they are and the registry runs the TypeScript reference.
import type { Storage } from '../../../dtype';
import { isQuantDType, QUANT_FORMATS } from '../../../dtypes/index';
import { ShapeError } from '../../../errors';
import { Tensor } from '../../../tensor';
import type { WasmMemory } from '../../../wasm/api';
import { WeightStore } from './memory';
import { weightRowBytes, type PackedWeight, type WeightDType } from './product';

/** The kernels' handle of each stored weight, by its storage (a view of it is not the weight). */
const handles = new WeakMap<Storage, PackedWeight>();
/** Where quantized tensors that were not made by `weightTensor` are stored on first use. */
let lazyStore: WeightStore | null = null;

/** The typed array a weight of `dtype` exposes as its tensor storage, over `bytes` bytes at `byteOffset` of `buffer`. */
function storageOf(dtype: WeightDType, buffer: ArrayBufferLike, byteOffset: number, bytes: number): Storage {
  if (dtype === 'f32') return new Float32Array(buffer, byteOffset, bytes / 4);
  if (dtype === 'bf16' || dtype === 'f16') return new Uint16Array(buffer, byteOffset, bytes / 2);
  return new Uint8Array(buffer, byteOffset, bytes);
}

/** Copy `bytes` where the kernels read them: a handle, and the storage of the tensor over them. */
function place(dtype: WeightDType, N: number, K: number, bytes: Uint8Array, store: WeightStore | undefined): { handle: PackedWeight; storage: Storage } {
  if (WeightStore.available()) {
    const at = (store ?? (lazyStore ??= new WeightStore())).store(bytes);
    // A shared memory never detaches its views when it grows: the storage stays valid.
    return { handle: { dtype, N, K, ...at }, storage: storageOf(dtype, at.memory.buffer, at.byteOffset, bytes.byteLength) };
  }
  const copy = bytes.slice();
  const memory = { buffer: copy.buffer } as WasmMemory;
  return { handle: { dtype, N, K, memory, byteOffset: 0 }, storage: storageOf(dtype, copy.buffer, 0, copy.byteLength) };
}

/**
 * A weight [N, K] of `dtype` from its stored bytes (GGUF blocks row by row, or little-endian
 * f32/bf16/f16 values), copied once into `store` (a model shares one; default: a store of the
 * package). `linear(x, w)` and `embedding(ids, w)` then run the product kernels on those bytes.
 * @throws ShapeError when K is not a whole number of blocks or `bytes` is not N rows of them
 */
export function weightTensor(dtype: WeightDType, shape: readonly [number, number], bytes: Uint8Array, store?: WeightStore): Tensor {
  const [N, K] = shape;
  const block = isQuantDType(dtype) ? QUANT_FORMATS[dtype].blockValues : 1;
  if (!(Number.isInteger(N) && N >= 0 && Number.isInteger(K) && K > 0 && K % block === 0)) throw new ShapeError(`weightTensor: a ${dtype} weight of shape [${shape}] needs rows of whole ${block}-value blocks`);
  const want = N * weightRowBytes(dtype, K);
  if (bytes.byteLength !== want) throw new ShapeError(`weightTensor: ${bytes.byteLength} bytes for a ${dtype} weight [${N}, ${K}] (expected ${want})`);
  const { handle, storage } = place(dtype, N, K, bytes, store);
  handles.set(storage, handle);
  return new Tensor(storage, [N, K], dtype);
}

/**
 * The product kernels' handle of `t`: for a tensor made by `weightTensor` (not a view of it), and
 * for any 2-D quantized tensor (stored now, on first use); null for every other tensor.
 */
export function storedWeight(t: Tensor): PackedWeight | null {
  const h = handles.get(t.raw);
  if (h !== undefined) return t.rank === 2 && t.offset === 0 && t.shape[0] === h.N && t.shape[1] === h.K && t.isContiguous() ? h : null;
  if (!isQuantDType(t.dtype) || t.rank !== 2) return null;
  const [N, K] = t.shape as [number, number], bytes = t.raw as Uint8Array;
  const { handle } = place(t.dtype, N, K, bytes.subarray(0, N * weightRowBytes(t.dtype, K)), undefined);
  handles.set(t.raw, handle);
  return handle;
}

/** Whether `t` multiplies through the product kernels (see `weightTensor`, and any 2-D quantized tensor): inference only. */
export function isStoredWeight(t: Tensor): boolean {
  return t.rank === 2 && (isQuantDType(t.dtype) || storedWeight(t) !== null);
}

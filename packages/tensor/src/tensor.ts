import { allocStorage, bf16ArrayToF32, f16ArrayToF32, f32ArrayToBf16, f32ArrayToF16, type DType, type ElementDType, type Storage } from './dtype';
import { isQuantDType, QUANT_FORMATS, QUANTIZERS } from './dtypes/index';
import { DTypeError, ShapeError, TensorError } from './errors';
import { contiguousStrides, numel, type Shape } from './shape';
import { Rng } from './random';
import { heapRelease, heapView } from './memory/heap';
import { hostAccess, hostRead } from './residency';
import { copyStridedKernel } from './ops/view/kernel';
import { gatherStrided } from './ops/view/reference';

/** What a recorded op keeps for the backward pass. */
export interface GradNode {
  /** Op name, for error messages and debugging. */
  readonly op: string;
  /** The inputs of the op (only those may receive gradients). */
  readonly inputs: readonly Tensor[];
  /** Given dLoss/dOutput, return dLoss/dInput for each input (null where an input needs none). */
  backward(grad: Tensor): (Tensor | null)[];
}

/** Nested number arrays accepted by `Tensor.from`. */
export type NestedArray = number | readonly NestedArray[];

/** Bytes of `n` elements of a quantized dtype whose rows hold `cols` values (a whole number of blocks). */
function quantBytes(dtype: DType, shape: Shape): number {
  const f = QUANT_FORMATS[dtype as keyof typeof QUANT_FORMATS], cols = shape.length === 0 ? 1 : shape[shape.length - 1]!;
  if (cols % f.blockValues !== 0) throw new ShapeError(`a ${dtype} tensor's rows are whole ${f.blockValues}-value blocks: shape [${shape}]`);
  return (numel(shape) / f.blockValues) * f.blockBytes;
}

/** Zeroed storage for a contiguous tensor of `dtype` and `shape`. */
function storageFor(dtype: DType, shape: Shape): Storage {
  return isQuantDType(dtype) ? new Uint8Array(quantBytes(dtype, shape)) : allocStorage(dtype, numel(shape));
}

/**
 * An n-dimensional array: a typed-array storage plus shape, strides and offset (views share
 * storage). Float compute is float32; `bf16`/`f16` tensors are storage that ops convert on use;
 * a quantized tensor (`q8_0`, `q4_k`, …) holds its GGUF blocks, row by row, and is never a view.
 */
export class Tensor {
  /** Size of each axis. */
  readonly shape: readonly number[];
  /** Element stride of each axis in `storage`. */
  readonly strides: readonly number[];
  /** Index of element [0, …, 0] in `storage`. */
  readonly offset: number;
  /** Element type. */
  readonly dtype: DType;
  /**
   * The backing typed array as the kernels see it, with no copy from a device (see `storage`);
   * for ops and views inside this package.
   * @internal
   */
  readonly raw: Storage;
  /** Whether gradients flow to this tensor. */
  requiresGrad = false;
  /** Accumulated gradient (leaf tensors), filled by `backward()`. */
  grad: Tensor | null = null;
  /** The op that produced this tensor when it was recorded for autograd. */
  node: GradNode | null = null;
  /** Optional name (parameters carry their checkpoint name). */
  name: string | undefined;

  /** Wrap a storage; prefer the static constructors. */
  constructor(storage: Storage, shape: Shape, dtype: DType, strides?: readonly number[], offset = 0) {
    this.raw = storage;
    this.shape = shape.slice();
    this.dtype = dtype;
    this.strides = strides ? strides.slice() : contiguousStrides(shape);
    this.offset = offset;
    for (const d of shape) if (!Number.isInteger(d) || d < 0) throw new ShapeError(`invalid shape [${shape}]`);
    if (isQuantDType(dtype)) {
      if (offset !== 0 || !this.isContiguous()) throw new ShapeError(`a ${dtype} tensor is stored whole: no strided or offset view of shape [${shape}]`);
      if (storage.length < quantBytes(dtype, shape)) throw new ShapeError(`${storage.length} bytes are too few for a ${dtype} tensor of shape [${shape}]`);
    } else if (!strides && offset === 0 && storage.length < numel(shape)) {
      throw new ShapeError(`storage of ${storage.length} elements is too small for shape [${shape}]`);
    }
  }

  /**
   * The backing typed array (possibly shared with other views), current on the host: where a
   * device backend holds newer values (backend `webgpu`), they are read back first and the
   * storage belongs to the host again (this is the explicit readback; see `residency.ts`).
   */
  get storage(): Storage {
    hostAccess(this.raw);
    return this.raw;
  }

  /** A float32 tensor of zeros. */
  static zeros(shape: Shape, dtype: DType = 'f32'): Tensor {
    return new Tensor(storageFor(dtype, shape), shape, dtype);
  }

  /** A float32 tensor filled with `value`. */
  static full(shape: Shape, value: number): Tensor {
    return new Tensor(allocStorage('f32', numel(shape)).fill(value), shape, 'f32');
  }

  /** A float32 tensor of ones. */
  static ones(shape: Shape): Tensor {
    return Tensor.full(shape, 1);
  }

  /** A float32 scalar (rank 0). */
  static scalar(value: number): Tensor {
    return new Tensor(Float32Array.of(value), [], 'f32');
  }

  /** Normal(mean, std²) samples from a seeded generator. */
  static randn(shape: Shape, rng: Rng, std = 1, mean = 0): Tensor {
    const t = Tensor.zeros(shape);
    const d = t.storage as Float32Array;
    for (let i = 0; i < d.length; i++) d[i] = mean + std * rng.normal();
    return t;
  }

  /** Uniform [lo, hi) samples from a seeded generator. */
  static rand(shape: Shape, rng: Rng, lo = 0, hi = 1): Tensor {
    const t = Tensor.zeros(shape);
    const d = t.storage as Float32Array;
    for (let i = 0; i < d.length; i++) d[i] = lo + (hi - lo) * rng.uniform();
    return t;
  }

  /** From a typed array (taken without copy) or nested numbers; `shape` defaults to the flat length or the nesting. */
  static from(data: Float32Array | Int32Array | NestedArray, shape?: Shape): Tensor {
    if (data instanceof Float32Array || data instanceof Int32Array) {
      const s = shape ?? [data.length];
      if (numel(s) !== data.length) throw new ShapeError(`Tensor.from: ${data.length} values do not fill shape [${s}]`);
      return new Tensor(data, s, data instanceof Float32Array ? 'f32' : 'i32');
    }
    const inferred: number[] = [];
    let probe: NestedArray = data;
    while (Array.isArray(probe)) { inferred.push(probe.length); probe = (probe as readonly NestedArray[])[0] ?? 0; }
    const flat: number[] = [];
    const walk = (x: NestedArray): void => { if (typeof x === 'number') flat.push(x); else for (const y of x) walk(y); };
    walk(data);
    const s = shape ?? inferred;
    if (numel(s) !== flat.length) throw new ShapeError(`Tensor.from: ${flat.length} values do not fill shape [${s}]`);
    return new Tensor(Float32Array.from(flat), s, 'f32');
  }

  /** Integer ids (token ids, positions) as an i32 tensor. */
  static ints(data: ArrayLike<number>, shape?: Shape): Tensor {
    return Tensor.from(Int32Array.from(data), shape ?? [data.length]);
  }

  /** Number of elements. */
  get size(): number {
    return numel(this.shape);
  }

  /** Number of axes. */
  get rank(): number {
    return this.shape.length;
  }

  /** Whether the elements are laid out row-major without gaps. */
  isContiguous(): boolean {
    let st = 1;
    for (let i = this.shape.length - 1; i >= 0; i--) {
      if (this.shape[i] !== 1 && this.strides[i] !== st) return false;
      st *= this.shape[i]!;
    }
    return true;
  }

  /**
   * The elements as a contiguous float32 array. For a contiguous f32 tensor this is a live view of
   * the storage (writes change the tensor); otherwise throws: call `contiguous()` or `toFloat32()`.
   * The storage lives in the cpu device's memory and is recycled once neither the tensor nor this
   * array is reachable any more; a `subarray` cut from it does not keep it alive on its own, so
   * keep the tensor or this array while such a piece is in use (or copy it with `slice`).
   */
  get data(): Float32Array {
    if (this.dtype !== 'f32') throw new DTypeError(`data: tensor is ${this.dtype}; use toFloat32()`);
    if (!this.isContiguous()) throw new TensorError('data: tensor is not contiguous; call contiguous() first');
    return heapView(this.storage as Float32Array, this.offset, this.offset + this.size);
  }

  /** The elements of an i32 tensor as a contiguous Int32Array view. */
  get ints(): Int32Array {
    if (this.dtype !== 'i32') throw new DTypeError(`ints: tensor is ${this.dtype}, expected i32`);
    if (!this.isContiguous()) throw new TensorError('ints: tensor is not contiguous; call contiguous() first');
    return (this.storage as Int32Array).subarray(this.offset, this.offset + this.size);
  }

  /** A contiguous copy (or this tensor if already contiguous); no autograd (use `contiguous` from ops for that). */
  materialize(): Tensor {
    if (this.isContiguous()) return this;
    const out = allocStorage(this.dtype as ElementDType, this.size);
    // float32 views are copied by the backend registry's kernel (on a device backend, where the
    // storage lives); the other dtypes on the host.
    if (this.dtype === 'f32') copyStridedKernel.run(this.raw as Float32Array, this.offset, this.shape, this.strides, out as Float32Array);
    else gatherStrided(this.storage as Exclude<Storage, Uint8Array>, this.offset, this.shape, this.strides, out);
    return new Tensor(out, this.shape, this.dtype);
  }

  /** A fresh contiguous float32 copy of the values (converting bf16/f16/i32, dequantizing blocks). */
  toFloat32(): Float32Array {
    const t = this.materialize();
    // A copy: the host only reads, so a device copy (webgpu) stays where it is.
    hostRead(t.raw);
    if (isQuantDType(t.dtype)) {
      const values = new Float32Array(t.size);
      QUANT_FORMATS[t.dtype].dequantize(t.raw as Uint8Array, values);
      return values;
    }
    const s = t.raw.subarray(t.offset, t.offset + t.size);
    switch (t.dtype) {
      case 'f32': return (s as Float32Array).slice();
      case 'bf16': return bf16ArrayToF32(s as Uint16Array);
      case 'f16': return f16ArrayToF32(s as Uint16Array);
      case 'i32': return Float32Array.from(s as Int32Array);
    }
    throw new DTypeError(`toFloat32: unknown dtype ${t.dtype}`);
  }

  /** Values as nested JS arrays (for tests and printing). */
  toArray(): NestedArray {
    const m = this.materialize();
    hostRead(m.raw);
    const flat = Array.from(this.dtype === 'i32' ? (m.raw as Int32Array).subarray(m.offset, m.offset + m.size) : this.toFloat32());
    const build = (axis: number, start: number): NestedArray => {
      if (axis === this.rank) return flat[start]!;
      const stride = numel(this.shape.slice(axis + 1));
      return Array.from({ length: this.shape[axis]! }, (_, i) => build(axis + 1, start + i * stride));
    };
    return build(0, 0);
  }

  /** The value of a one-element tensor. */
  item(): number {
    if (this.size !== 1) throw new ShapeError(`item: tensor has ${this.size} elements`);
    // f32 and i32: the one element read where it is, without copying it out (ops read scalars such
    // as xIELU's β on every call); a device copy stays (the host only reads).
    if (this.dtype !== 'f32' && this.dtype !== 'i32') return this.toFloat32()[0]!;
    hostRead(this.raw);
    return this.raw[this.offset]!;
  }

  /**
   * A copy converted to `dtype` (round to nearest even for bf16/f16; llama.cpp's reference
   * quantization for the quantized dtypes that have one, rows of whole blocks); no autograd.
   */
  to(dtype: DType): Tensor {
    if (dtype === this.dtype) return this.materialize() === this ? this.clone() : this.materialize();
    const f = this.toFloat32();
    if (isQuantDType(dtype)) {
      const quantize = QUANTIZERS[dtype];
      if (!quantize) throw new DTypeError(`to(${dtype}): no quantizer for ${dtype} (quantizers: ${Object.keys(QUANTIZERS).join(', ')})`);
      quantBytes(dtype, this.shape);
      return new Tensor(quantize(f), this.shape, dtype);
    }
    switch (dtype) {
      case 'f32': return new Tensor(f, this.shape, 'f32');
      case 'bf16': return new Tensor(f32ArrayToBf16(f), this.shape, 'bf16');
      case 'f16': return new Tensor(f32ArrayToF16(f), this.shape, 'f16');
      case 'i32': return new Tensor(Int32Array.from(f, Math.trunc), this.shape, 'i32');
    }
  }

  /** A contiguous copy with its own storage; no autograd. */
  clone(): Tensor {
    const m = this.materialize();
    if (isQuantDType(this.dtype)) return new Tensor((m.storage as Uint8Array).slice(0, quantBytes(this.dtype, this.shape)), this.shape, this.dtype);
    const s = allocStorage(this.dtype as ElementDType, m.size);
    s.set(m.storage.subarray(m.offset, m.offset + m.size) as never);
    return new Tensor(s, this.shape, this.dtype);
  }

  /**
   * Return the storage to the cpu device's buffer pool now instead of when it is
   * garbage-collected. The storage is shared by every view of this tensor: none of them (nor any
   * `.data` array taken from them) may be used afterwards. A no-op for storage outside the pool.
   */
  dispose(): void {
    heapRelease(this.raw);
  }

  /** The same values cut from the autograd graph (shares storage). */
  detach(): Tensor {
    return new Tensor(this.raw, this.shape, this.dtype, this.strides, this.offset);
  }

  /** Mark as a trainable leaf and return this. */
  requireGrad(flag = true): this {
    if (flag && this.dtype !== 'f32') throw new DTypeError(`requireGrad: only f32 tensors can require gradients (got ${this.dtype})`);
    this.requiresGrad = flag;
    return this;
  }

  /** Reset the accumulated gradient. */
  zeroGrad(): void {
    this.grad = null;
  }

  /** Short description for errors and logs. */
  toString(): string {
    return `Tensor(${this.name ? this.name + ', ' : ''}[${this.shape}], ${this.dtype})`;
  }
}


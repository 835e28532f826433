// Writing a GGUF (version 3) file: header built in memory, tensor data streamed one tensor at a
// time, written under a temporary name and renamed into place.

import { writeFileAtomic } from '@apertus/atomic-file';
import { GgufIoError, GgufWriteError } from './errors';
import { GGUF_VALUE_TYPE, type GgufScalarType } from './header';
import { GGML_TYPES, rowBytes, type GgmlTypeName } from './types';

/** A metadata value with its stored type. */
export type GgufEntry =
  | { readonly type: GgufScalarType; readonly value: number | boolean | string }
  | { readonly type: 'array'; readonly elem: GgufScalarType; readonly value: readonly (number | boolean | string)[] };

/** A tensor to write: its row-major (PyTorch) shape and a producer of its stored bytes. */
export interface GgufTensorEntry {
  readonly name: string;
  readonly type: GgmlTypeName;
  readonly shape: readonly number[];
  /**
   * Called once, when the writer reaches the tensor: its bytes, or its bytes in consecutive pieces
   * (each written before the next is asked for, so a tensor never needs to be in memory whole).
   */
  readonly data: () => Uint8Array | Iterable<Uint8Array>;
}

class ByteSink {
  private buf = new Uint8Array(1 << 16);
  private view = new DataView(this.buf.buffer);
  length = 0;
  private grow(n: number): void {
    if (this.length + n <= this.buf.length) return;
    let cap = this.buf.length * 2;
    while (cap < this.length + n) cap *= 2;
    const next = new Uint8Array(cap);
    next.set(this.buf.subarray(0, this.length));
    this.buf = next;
    this.view = new DataView(next.buffer);
  }
  u32(v: number): void { this.grow(4); this.view.setUint32(this.length, v, true); this.length += 4; }
  u64(v: number): void { this.grow(8); this.view.setBigUint64(this.length, BigInt(v), true); this.length += 8; }
  bytes(b: Uint8Array): void { this.grow(b.length); this.buf.set(b, this.length); this.length += b.length; }
  string(s: string): void { const b = new TextEncoder().encode(s); this.u64(b.length); this.bytes(b); }
  scalar(type: GgufScalarType, v: number | boolean | string, key: string): void {
    const bad = () => new GgufWriteError(`value ${JSON.stringify(v)} is not a ${type}`, { key });
    if (type === 'string') { if (typeof v !== 'string') throw bad(); this.string(v); return; }
    if (type === 'bool') { if (typeof v !== 'boolean') throw bad(); this.grow(1); this.buf[this.length++] = v ? 1 : 0; return; }
    if (typeof v !== 'number') throw bad();
    const n = { u8: 1, i8: 1, u16: 2, i16: 2, u32: 4, i32: 4, f32: 4, u64: 8, i64: 8, f64: 8 }[type];
    this.grow(n);
    const p = this.length, w = this.view;
    if (type !== 'f32' && type !== 'f64' && !Number.isInteger(v)) throw bad();
    switch (type) {
      case 'u8': w.setUint8(p, v); break;
      case 'i8': w.setInt8(p, v); break;
      case 'u16': w.setUint16(p, v, true); break;
      case 'i16': w.setInt16(p, v, true); break;
      case 'u32': w.setUint32(p, v, true); break;
      case 'i32': w.setInt32(p, v, true); break;
      case 'f32': w.setFloat32(p, v, true); break;
      case 'u64': w.setBigUint64(p, BigInt(v), true); break;
      case 'i64': w.setBigInt64(p, BigInt(v), true); break;
      case 'f64': w.setFloat64(p, v, true); break;
    }
    this.length += n;
  }
  result(): Uint8Array { return this.buf.subarray(0, this.length); }
}

/**
 * Write a GGUF v3 file: `metadata` in the given order (`general.alignment` is added when
 * `alignment` is not 32), then the tensor table and the tensor data, each tensor at an offset
 * aligned to `alignment`. Throws GgufWriteError naming the key or tensor for bad input.
 */
export function writeGguf(path: string, metadata: readonly (readonly [string, GgufEntry])[], tensors: readonly GgufTensorEntry[], alignment = 32): void {
  const h = new ByteSink();
  const meta = alignment === 32 ? metadata : [...metadata, ['general.alignment', { type: 'u32', value: alignment }] as const];
  h.bytes(Uint8Array.of(0x47, 0x47, 0x55, 0x46));
  h.u32(3);
  h.u64(tensors.length);
  h.u64(meta.length);
  for (const [key, e] of meta) {
    h.string(key);
    if (e.type === 'array') {
      h.u32(GGUF_VALUE_TYPE.array);
      h.u32(GGUF_VALUE_TYPE[e.elem]);
      h.u64(e.value.length);
      for (const v of e.value) h.scalar(e.elem, v, key);
    } else {
      h.u32(GGUF_VALUE_TYPE[e.type]);
      h.scalar(e.type, e.value, key);
    }
  }
  const sizes: number[] = [];
  let offset = 0;
  for (const t of tensors) {
    const type = GGML_TYPES[t.type];
    if (!type) throw new GgufWriteError(`unknown type ${t.type}`, { tensor: t.name });
    const dims = [...t.shape].reverse();
    if (dims.length < 1 || dims.length > 4 || dims.some((d) => !Number.isInteger(d) || d < 1)) throw new GgufWriteError(`invalid shape [${t.shape}]`, { tensor: t.name });
    if (dims[0]! % type.blockSize !== 0) throw new GgufWriteError(`row length ${dims[0]} is not a multiple of the ${t.type} block size ${type.blockSize}`, { tensor: t.name });
    h.string(t.name);
    h.u32(dims.length);
    for (const d of dims) h.u64(d);
    h.u32(type.id);
    h.u64(offset);
    const size = rowBytes(type, dims[0]!) * dims.slice(1).reduce((a, b) => a * b, 1);
    sizes.push(size);
    offset += Math.ceil(size / alignment) * alignment;
  }
  const header = h.result();
  const dataStart = Math.ceil(header.length / alignment) * alignment;
  try {
    writeFileAtomic(path, (write) => {
      write(header);
      write(new Uint8Array(dataStart - header.length));
      tensors.forEach((t, i) => {
        const data = t.data();
        let n = 0;
        for (const piece of data instanceof Uint8Array ? [data] : data) {
          n += piece.length;
          if (n > sizes[i]!) break;
          write(piece);
        }
        if (n !== sizes[i]) throw new GgufWriteError(`data has ${n > sizes[i]! ? 'more than ' : ''}${n} bytes, shape [${t.shape}] as ${t.type} needs ${sizes[i]}`, { tensor: t.name });
        write(new Uint8Array(Math.ceil(n / alignment) * alignment - n));
      });
    });
  } catch (e) {
    // A failed system call (open, write, fsync, rename) names the file; anything else is the data's.
    if (typeof (e as NodeJS.ErrnoException).syscall !== 'string') throw e;
    throw new GgufIoError(`cannot write (${(e as Error).message})`, { file: path, cause: e });
  }
}

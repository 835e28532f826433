// A GGUF weight matrix kept in its stored (float, bf16 or quantized) blocks, never expanded whole.
// The bytes are copied once, at load, into a weights memory of @apertus/tensor (a WeightStore, one
// per model) and multiplied there by its cpu kernels (`packedLinear`: every GGUF type, the input
// rounded or quantized as llama.cpp does it, so a GGUF model computes what llama.cpp computes on
// the same file). Where those kernels cannot run (no WebAssembly SIMD or no shared memory) a tile
// of rows at a time is dequantized into a float32 buffer for the GEMM. On device webgpu every
// product and row lookup runs in the device's kernels (`packedProduct`, `packedRows`) on a copy of
// the stored bytes the device keeps, taken on first use (or when the model is placed).

import type { PackedMatrix } from '@apertus/model';
import { currentDevice, packedLinear, packedLinearAvailable, packedProduct, packedRows, sgemm, sgemmBf16, Tensor, WeightStore, type PackedWeight, type WeightBytes, type WeightDType } from '@apertus/tensor';
import { roundActivations, roundBf16Into } from './quant/activations';
import { dequantizeInto } from './quant/index';
import { rowBytes, type GgmlType } from './types';

/** Float32 values per dequantized tile (1 MiB). */
const TILE_FLOATS = 1 << 18;

/** The tensor dtype of a ggml type. */
const dtypeOf = (t: GgmlType): WeightDType => t.name.toLowerCase() as WeightDType;

/** A [out, in] matrix held as ggml blocks (any supported type). */
export class QuantMatrix implements PackedMatrix {
  readonly shape: readonly [number, number];
  readonly format: string;
  /** Bytes of one stored row. */
  readonly rowBytes: number;
  /** Where the kernels read the bytes (null where they cannot run: then `plain` holds them). */
  private readonly weight: PackedWeight | null;
  private readonly plain: Uint8Array | null;
  private readonly byteLength: number;
  private tile: Float32Array | null = null;
  /** The weight as the device kernels take it (where the cpu kernels cannot run, over the plain bytes). */
  private device: PackedWeight | null = null;

  /** Copy the stored bytes of a [out, in] matrix of type `type` into `store` (a model shares one). */
  constructor(readonly type: GgmlType, shape: readonly [number, number], data: Uint8Array, store: WeightStore | null = WeightStore.available() ? new WeightStore() : null) {
    this.shape = [shape[0], shape[1]];
    this.format = type.name;
    this.rowBytes = rowBytes(type, shape[1]);
    this.byteLength = data.byteLength;
    const dtype = dtypeOf(type);
    const at: WeightBytes | null = store !== null && packedLinearAvailable(dtype, shape[1]) ? store.store(data) : null;
    this.weight = at === null ? null : { dtype, N: shape[0], K: shape[1], ...at };
    this.plain = at === null ? data.slice() : null;
  }

  /** Bytes held. */
  get bytes(): number {
    return this.byteLength;
  }

  /** The stored bytes (a view: valid until the next product or load grows the memory). */
  private stored(): Uint8Array {
    return this.plain ?? new Uint8Array(this.weight!.memory.buffer, this.weight!.byteOffset, this.byteLength);
  }

  /** Rows [start, start + count) as float32 into `out`. */
  dequantizeRows(start: number, count: number, out: Float32Array): void {
    const K = this.shape[1];
    dequantizeInto(this.type, this.stored().subarray(start * this.rowBytes, (start + count) * this.rowBytes), out.subarray(0, count * K));
  }

  /** The weight for the device kernels (the store's bytes, or the plain copy). */
  deviceWeight(): PackedWeight {
    if (this.weight !== null) return this.weight;
    this.device ??= { dtype: dtypeOf(this.type), N: this.shape[0], K: this.shape[1], memory: { buffer: this.plain!.buffer } as PackedWeight['memory'], byteOffset: this.plain!.byteOffset };
    return this.device;
  }

  /**
   * y [M, N] = input [M, K] · Wᵀ. On device `webgpu` (`useDevice`), every type runs in the device's
   * kernels (`packedProduct`) and y's values stay there (a tensor's storage is read back when the
   * host reads it; a plain array needs `readBack(y)`); on `cpu`, in @apertus/tensor's `packedLinear`, or by dequantized
   * tiles on the GEMM where those kernels cannot run.
   */
  matmulT(input: Float32Array, M: number, y: Float32Array): void {
    const [N, K] = this.shape, name = this.type.name;
    if (currentDevice().device === 'webgpu') {
      packedProduct(this.deviceWeight(), input.subarray(0, M * K), M, y.subarray(0, M * N));
      return;
    }
    if (this.weight !== null) {
      packedLinear(this.weight, input.subarray(0, M * K), M, y);
      return;
    }
    const bytes = this.stored();
    if (name === 'F32') {
      sgemm({ transA: false, transB: true, M, N, K, A: input.subarray(0, M * K), B: new Float32Array(bytes.buffer, bytes.byteOffset, N * K), C: y });
      return;
    }
    if (name === 'BF16') {
      // The rounded input in tensor storage (cpu device memory), which the GEMM reads in place;
      // its block goes back to the pool at once.
      const t = Tensor.zeros([M * K]);
      try {
        sgemmBf16({ transA: false, transB: true, M, N, K, A: roundBf16Into(input.subarray(0, M * K), t.data as Float32Array), B: new Uint16Array(bytes.buffer, bytes.byteOffset, N * K), C: y });
      } finally {
        t.dispose();
      }
      return;
    }
    const x = roundActivations(this.type, input.subarray(0, M * K));
    const nt = Math.max(1, Math.min(N, Math.floor(TILE_FLOATS / K)));
    if (!this.tile || this.tile.length < nt * K) this.tile = new Float32Array(nt * K);
    const C = M > 1 ? new Float32Array(M * nt) : null;
    for (let n0 = 0; n0 < N; n0 += nt) {
      const n = Math.min(nt, N - n0);
      this.dequantizeRows(n0, n, this.tile);
      if (!C) {
        sgemm({ transA: false, transB: true, M: 1, N: n, K, A: x, B: this.tile, C: y.subarray(n0, n0 + n) });
        continue;
      }
      sgemm({ transA: false, transB: true, M, N: n, K, A: x, B: this.tile, C });
      for (let m = 0; m < M; m++) y.set(C.subarray(m * n, (m + 1) * n), m * N + n0);
    }
  }

  rows(ids: Int32Array, out: Float32Array): void {
    if (currentDevice().device === 'webgpu') {
      packedRows(this.deviceWeight(), ids, out);
      return;
    }
    const K = this.shape[1];
    ids.forEach((id, i) => this.dequantizeRows(id, 1, out.subarray(i * K, (i + 1) * K)));
  }
}

// A GGUF weight matrix kept in its stored (quantized or bf16) blocks, never expanded whole.
// Q8_0 and Q4_K products run in the WebAssembly SIMD integer kernels (kernels/), which read the
// blocks as stored; the other types dequantize a tile of rows at a time into a small float32
// buffer for the WebAssembly SIMD GEMM of @apertus/tensor (bf16 rows go to its bf16 GEMM as
// stored). The input is rounded as llama.cpp rounds it (int8 activations for the kernels,
// `roundActivations` otherwise), so a GGUF model computes what llama.cpp computes on the same file.

import type { PackedMatrix } from '@apertus/model';
import { sgemm, sgemmBf16 } from '@apertus/tensor';
import { hasKernel, quantMatmulT } from './kernels/qmatmul';
import { roundActivations } from './quant/activations';
import { dequantizeInto } from './quant/index';
import { rowBytes, type GgmlType } from './types';

/** Float32 values per dequantized tile (1 MiB). */
const TILE_FLOATS = 1 << 18;

/** A [out, in] matrix held as ggml blocks (any supported type). */
export class QuantMatrix implements PackedMatrix {
  readonly shape: readonly [number, number];
  readonly format: string;
  /** Bytes of one stored row. */
  readonly rowBytes: number;
  private readonly data: Uint8Array;
  private tile: Float32Array | null = null;
  private tileOut: Float32Array | null = null;

  /** Wrap the stored bytes of a [out, in] matrix of type `type`. */
  constructor(readonly type: GgmlType, shape: readonly [number, number], data: Uint8Array) {
    this.shape = [shape[0], shape[1]];
    this.format = type.name;
    this.rowBytes = rowBytes(type, shape[1]);
    this.data = data;
  }

  /** Bytes held. */
  get bytes(): number {
    return this.data.byteLength;
  }

  /** Rows [start, start + count) as float32 into `out`. */
  dequantizeRows(start: number, count: number, out: Float32Array): void {
    const K = this.shape[1];
    dequantizeInto(this.type, this.data.subarray(start * this.rowBytes, (start + count) * this.rowBytes), out.subarray(0, count * K));
  }

  matmulT(input: Float32Array, M: number, y: Float32Array): void {
    const [N, K] = this.shape;
    if (hasKernel(this.type)) {
      quantMatmulT(this.type, this.data, N, K, input, M, y);
      return;
    }
    const x = roundActivations(this.type, input.subarray(0, M * K));
    if (this.type.name === 'BF16') {
      const bits = new Uint16Array(this.data.buffer, this.data.byteOffset, N * K);
      sgemmBf16({ transA: false, transB: true, M, N, K, A: x, B: bits, C: y });
      return;
    }
    const nt = Math.max(1, Math.min(N, Math.floor(TILE_FLOATS / K)));
    if (!this.tile || this.tile.length < nt * K) this.tile = new Float32Array(nt * K);
    if (M > 1 && (!this.tileOut || this.tileOut.length < M * nt)) this.tileOut = new Float32Array(M * nt);
    for (let n0 = 0; n0 < N; n0 += nt) {
      const n = Math.min(nt, N - n0);
      this.dequantizeRows(n0, n, this.tile);
      if (M === 1) {
        sgemm({ transA: false, transB: true, M: 1, N: n, K, A: x, B: this.tile, C: y.subarray(n0, n0 + n) });
        continue;
      }
      const C = this.tileOut!;
      sgemm({ transA: false, transB: true, M, N: n, K, A: x, B: this.tile, C });
      for (let m = 0; m < M; m++) y.set(C.subarray(m * n, (m + 1) * n), m * N + n0);
    }
    if (M > 1) this.tileOut = null;
  }

  rows(ids: Int32Array, out: Float32Array): void {
    const K = this.shape[1];
    ids.forEach((id, i) => this.dequantizeRows(id, 1, out.subarray(i * K, (i + 1) * K)));
  }
}

// A GGUF weight matrix kept in its stored (float, bf16 or quantized) blocks, never expanded whole.
// The bytes are copied once, at load, into the memory of the WebAssembly kernels (a WeightArena)
// and multiplied there: F32, BF16, Q8_0, Q4_K and Q6_K by the kernels of kernels/ (every product
// for the quantized types; matrix-vector products and batches under 16 rows for F32/BF16, whose larger
// products go to the GEMM of @apertus/tensor); the other types dequantize a tile of rows at a
// time into a small float32 buffer for that GEMM. The input is rounded as llama.cpp rounds it
// (int8 activations for the quantized kernels, `roundActivations` otherwise), so a GGUF model
// computes what llama.cpp computes on the same file. On device webgpu, Q8_0, Q4_0, Q4_K and Q6_K
// products run in the gpu.js kernels of kernels/webgpu.ts on a packed copy that the device keeps
// (packed from the stored bytes when it needs one), F32 and BF16 in the registry's (webgpu) GEMM.

import type { PackedMatrix } from '@apertus/model';
import { currentDevice, sgemm, sgemmBf16, Tensor } from '@apertus/tensor';
import { onWebgpu, type WebgpuKernelApi } from '@apertus/tensor/kernels';
import { hasKernel, residentBytes, residentMatmulT, WeightArena, type Resident } from './kernels/qmatmul';
import { quantMatmulT, webgpuWeights, type WebgpuWeights } from './kernels/webgpu';
import { hasWebgpuKernel } from './kernels/webgpu-pack';
import { roundActivations, roundBf16Into } from './quant/activations';
import { dequantizeInto } from './quant/index';
import { rowBytes, type GgmlType } from './types';

/** Float32 values per dequantized tile (1 MiB). */
const TILE_FLOATS = 1 << 18;
/** From this many activation rows on, F32/BF16 products run in the packed GEMM of @apertus/tensor. */
export const FLOAT_GEMM_MIN_ROWS = 16;

/** The webgpu device's kernel API, once the device has started. */
let webgpu: WebgpuKernelApi | null = null;
onWebgpu((gpu) => { webgpu = gpu; });

/** A [out, in] matrix held as ggml blocks (any supported type). */
export class QuantMatrix implements PackedMatrix {
  readonly shape: readonly [number, number];
  readonly format: string;
  /** Bytes of one stored row. */
  readonly rowBytes: number;
  private readonly stored: Resident;
  private tile: Float32Array | null = null;
  /** The matrix as the webgpu kernels take it (its device copy's key), made on the first product on device webgpu. */
  private webgpu: WebgpuWeights | null = null;

  /** Copy the stored bytes of a [out, in] matrix of type `type` into `arena` (a model shares one). */
  constructor(readonly type: GgmlType, shape: readonly [number, number], data: Uint8Array, arena: WeightArena = new WeightArena()) {
    this.shape = [shape[0], shape[1]];
    this.format = type.name;
    this.rowBytes = rowBytes(type, shape[1]);
    this.stored = arena.store(data);
  }

  /** Bytes held. */
  get bytes(): number {
    return this.stored.byteLength;
  }

  /** Rows [start, start + count) as float32 into `out`. */
  dequantizeRows(start: number, count: number, out: Float32Array): void {
    const K = this.shape[1];
    dequantizeInto(this.type, residentBytes(this.stored).subarray(start * this.rowBytes, (start + count) * this.rowBytes), out.subarray(0, count * K));
  }

  /**
   * y [M, N] = input [M, K] · Wᵀ. On device `webgpu` (`useDevice`, `enableWebgpu`), Q8_0, Q4_0,
   * Q4_K and Q6_K run in the webgpu kernels on the packed blocks (packed when the device needs a
   * copy; the device keeps it), F32 and BF16 in the GEMM of the backend registry (webgpu's), F16
   * dequantized by tiles for that GEMM; on `cpu`, in the kernels of this package.
   */
  matmulT(input: Float32Array, M: number, y: Float32Array): void {
    const [N, K] = this.shape, name = this.type.name, float = name === 'F32' || name === 'BF16';
    const onWebgpuDevice = currentDevice().device === 'webgpu';
    if (onWebgpuDevice && webgpu !== null && hasWebgpuKernel(this.type)) {
      this.webgpu ??= webgpuWeights(this.type, N, K, () => residentBytes(this.stored));
      webgpu.run(quantMatmulT(webgpu, this.webgpu, input, M, y));
      return;
    }
    const kernel = this.stored.slab !== null && hasKernel(this.type, K);
    if (kernel && !(float && (M >= FLOAT_GEMM_MIN_ROWS || onWebgpuDevice))) {
      // The kernels round BF16's input to bf16 as they copy it in.
      residentMatmulT(this.type, this.stored, N, K, input.subarray(0, M * K), M, y);
      return;
    }
    const bytes = residentBytes(this.stored);
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
    const K = this.shape[1];
    ids.forEach((id, i) => this.dequantizeRows(id, 1, out.subarray(i * K, (i + 1) * K)));
  }
}

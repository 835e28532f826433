// Quantized products y = x·Wᵀ on device `webgpu`: gpu.js kernels (one GPU thread per output
// element) that read the packed blocks of `webgpu-pack.ts` — never a dequantized matrix — and run
// through the webgpu device's kernel API (`onWebgpu` of `@apertus/tensor/kernels`, the main
// entry once backend webgpu is selected). The activations are
// quantized on the host exactly as the CPU kernels quantize them (`quant/activations.ts`: Q8_0
// blocks for Q8_0 and Q4_0 weights, Q8_K super-blocks for Q4_K and Q6_K) and go up as float32 integers; each
// block's dot product is an integer sum, exact in float32 (every partial sum stays below 2^24),
// scaled once per block, as ggml does. Only the order of the float32 block sums and the
// association of the scale products differ from the CPU kernels.
import { gpujs, type WebgpuKernelApi } from '@apertus/tensor/kernels';
import { ShapeError } from '@apertus/tensor';
import { quantizeActivationsQ8_0, quantizeActivationsQ8_K } from '../quant/activations';
import { QK_K } from '../types';
import type { GgmlType } from '../types';
import { GROUP_FLOATS, packForWebgpu, packedRowFloats, Q4_0_BLOCK_FLOATS, Q4_K_BLOCK_FLOATS, Q6_K_BLOCK_FLOATS, Q8_0_BLOCK_FLOATS, type WebgpuQuantType } from './webgpu-pack';


// The three bytes u0, u1, u2 of the packed float W[n][at] (exact: the float is an integer below
// 2^24 and the multiplications are by powers of two).
const bytesOf = (at: string): string => `
      const v = W[n][${at}];
      const v1 = Math.floor(v * 0.00390625);
      const u2 = Math.floor(v1 * 0.00390625);
      const u0 = v - v1 * 256;
      const u1 = v1 - u2 * 256;`;

/**
 * A kernel of one thread per output y[m][n] (thread (x, y) = (n, m)) that walks the NB blocks of
 * row n: `body` computes the block's exact integer sums from W[n][o …] (the packed block) and
 * X[m][…] (the activation quants), `scaled` the block's float32 term. XD[m][b]: the activation
 * scale of block b.
 */
function blockKernel(args: string, stride: number, body: string, scaled: string): string {
  return `function (${args}) {
  const n = this.thread.x;
  const m = this.thread.y;
  let acc = 0;
  for (let b = 0; b < this.constants.NB; b++) {
    const o = b * ${stride};${body}
    acc += ${scaled};
  }
  return acc;
}`;
}

// |isum| ≤ 32·128·127 < 2^24.
const Q8_0_SOURCE = blockKernel('W, X, XD', Q8_0_BLOCK_FLOATS, `
    let isum = 0;
    for (let t = 0; t < ${GROUP_FLOATS}; t++) {${bytesOf('o + t')}
      const j = b * 32 + t * 3;
      isum += (u0 - 128) * X[m][j] + (u1 - 128) * X[m][j + 1];
      if (t < ${GROUP_FLOATS - 1}) {
        isum += (u2 - 128) * X[m][j + 2];
      }
    }`, `(W[n][o + ${GROUP_FLOATS}] * XD[m][b]) * isum`);

// Byte j holds quants j (low nibble) and j + 16; |isum| ≤ 32·8·127.
const Q4_0_SOURCE = blockKernel('W, X, XD', Q4_0_BLOCK_FLOATS, `
    let isum = 0;
    for (let t = 0; t < 6; t++) {${bytesOf('o + t')}
      const h0 = Math.floor(u0 * 0.0625);
      const j = b * 32 + t * 3;
      isum += (u0 - h0 * 16 - 8) * X[m][j] + (h0 - 8) * X[m][j + 16];
      if (t < 5) {
        const h1 = Math.floor(u1 * 0.0625);
        const h2 = Math.floor(u2 * 0.0625);
        isum += (u1 - h1 * 16 - 8) * X[m][j + 1] + (h1 - 8) * X[m][j + 17];
        isum += (u2 - h2 * 16 - 8) * X[m][j + 2] + (h2 - 8) * X[m][j + 18];
      }
    }`, `(W[n][o + 6] * XD[m][b]) * isum`);

// XS[m][s]: the sum of the activation quants of sub-block s (32 values). Per super-block:
// lo, hi = Σ sc_s·(Σ q4·q8) over sub-blocks 0–3 and 4–7 (each ≤ 4·63·15·127·32 < 2^24, exact;
// lo + hi rounds once, to the float32 of ggml's int32 sum), mins = Σ m_s·XS (≤ 8·63·4064, exact).
const Q4_K_SOURCE = blockKernel('W, X, XD, XS', Q4_K_BLOCK_FLOATS, `
    let lo = 0;
    let hi = 0;
    let mins = 0;
    let sw = W[n][o + 46];
    let mw = W[n][o + 48];
    for (let c = 0; c < 4; c++) {
      if (c === 2) {
        sw = W[n][o + 47];
        mw = W[n][o + 49];
      }
      const sw1 = Math.floor(sw * 0.015625);
      const sw2 = Math.floor(sw1 * 0.015625);
      const scA = sw - sw1 * 64;
      const scB = sw1 - sw2 * 64;
      sw = sw2;
      const mw1 = Math.floor(mw * 0.015625);
      const mw2 = Math.floor(mw1 * 0.015625);
      const mA = mw - mw1 * 64;
      const mB = mw1 - mw2 * 64;
      mw = mw2;
      let iA = 0;
      let iB = 0;
      for (let t = 0; t < ${GROUP_FLOATS}; t++) {${bytesOf(`o + c * ${GROUP_FLOATS} + t`)}
        const h0 = Math.floor(u0 * 0.0625);
        const h1 = Math.floor(u1 * 0.0625);
        const j = b * 256 + c * 64 + t * 3;
        iA += (u0 - h0 * 16) * X[m][j] + (u1 - h1 * 16) * X[m][j + 1];
        iB += h0 * X[m][j + 32] + h1 * X[m][j + 33];
        if (t < ${GROUP_FLOATS - 1}) {
          const h2 = Math.floor(u2 * 0.0625);
          iA += (u2 - h2 * 16) * X[m][j + 2];
          iB += h2 * X[m][j + 34];
        }
      }
      if (c < 2) {
        lo += scA * iA + scB * iB;
      } else {
        hi += scA * iA + scB * iB;
      }
      mins += mA * XS[m][b * 8 + c * 2] + mB * XS[m][b * 8 + c * 2 + 1];
    }`, `(W[n][o + 44] * XD[m][b]) * (lo + hi) - (W[n][o + 45] * XD[m][b]) * mins`);

// Per pair p of 16-weight sub-blocks: P = s0·Σ(q − 32)·q8 + s1·Σ(q − 32)·q8 (|P| ≤ 2·128·16·32·128
// = 2^24, exact). The eight P of a super-block are split as 4096·a + r (a = floor(P / 4096)) and
// the a and the r summed apart (both exact), so 4096·Σa + Σr rounds once: the float32 of ggml's
// int32 sum, as in the CPU kernels.
const Q6_K_SOURCE = blockKernel('W, X, XD', Q6_K_BLOCK_FLOATS, `
    let ha = 0;
    let hr = 0;
    for (let p = 0; p < 8; p++) {
      const sv = W[n][o + 64 + p];
      const s1 = Math.floor(sv * 0.00390625);
      const s0 = sv - s1 * 256 - 128;
      let i0 = 0;
      let i1 = 0;
      for (let t = 0; t < 8; t++) {
        const v = W[n][o + p * 8 + t];
        const v1 = Math.floor(v * 0.015625);
        const v2 = Math.floor(v1 * 0.015625);
        const q3 = Math.floor(v2 * 0.015625);
        const j = b * 256 + p * 32 + t * 4;
        const d = (v - v1 * 64 - 32) * X[m][j] + (v1 - v2 * 64 - 32) * X[m][j + 1] + (v2 - q3 * 64 - 32) * X[m][j + 2] + (q3 - 32) * X[m][j + 3];
        if (t < 4) {
          i0 += d;
        } else {
          i1 += d;
        }
      }
      const P = s0 * i0 + (s1 - 128) * i1;
      const a = Math.floor(P * 0.000244140625);
      ha += a;
      hr += P - a * 4096;
    }`, `(W[n][o + 72] * XD[m][b]) * (ha * 4096 + hr)`);

const SOURCES: Readonly<Record<WebgpuQuantType, string>> = { Q8_0: Q8_0_SOURCE, Q4_0: Q4_0_SOURCE, Q4_K: Q4_K_SOURCE, Q6_K: Q6_K_SOURCE };

/** A quantized [N, K] matrix as the webgpu kernels take it: its type, shape and packed rows (a `HostTable` the device keeps by key). */
export interface WebgpuWeights {
  readonly type: WebgpuQuantType;
  readonly N: number;
  readonly K: number;
  /** One key per matrix, so the device copy is found again on the next product. */
  readonly key: string;
  /** The packed rows (`packForWebgpu`), made anew at each call: the device keeps its copy, the host none. */
  packed(): Float32Array;
}

/** Coordinates the kernels compute in float32 stay below this. */
const MAX_COORD = 2 ** 24;

/** Numbers the matrices' device copies (the webgpu worker keeps each by key). */
let nextKey = 0;

/**
 * The webgpu view of a [N, K] matrix whose ggml blocks `bytes()` returns. The rows are packed when
 * the device needs them (its first product, or again after the webgpu worker dropped its copy to
 * stay in its table budget) and not kept on the host: a packed copy is 1.4× the stored bytes
 * (for an 8B model in Q4_K, 6.3 GB beside the 4.5 GB it is loaded in).
 */
export function webgpuWeights(type: GgmlType & { name: WebgpuQuantType }, N: number, K: number, bytes: () => Uint8Array): WebgpuWeights {
  return { type: type.name, N, K, key: `gguf.weights#${nextKey++}`, packed: () => packForWebgpu(type, bytes(), N, K) };
}

/** y [M, N] = x [M, K] · Wᵀ as a gpu.js kernel op (run it with the device's `WebgpuKernelApi.run`). */
export function* quantMatmulT(g: WebgpuKernelApi, w: WebgpuWeights, x: Float32Array, M: number, y: Float32Array): gpujs.KernelOp {
  const { type, N, K } = w;
  if (M * N === 0) return;
  // The kernels compute each coordinate (row, column) in float32, exact below 2^24.
  for (const [name, v] of Object.entries({ N, M, 'packed row': packedRowFloats(type, K) })) {
    if (v >= MAX_COORD) throw new ShapeError(`${type} product on webgpu: ${name} = ${v} must stay below 2^24`);
  }
  const q8k = type === 'Q4_K' || type === 'Q6_K';
  const a = q8k ? quantizeActivationsQ8_K(x.subarray(0, M * K)) : quantizeActivationsQ8_0(x.subarray(0, M * K));
  const nb = K / (q8k ? QK_K : 32);
  const table = new gpujs.HostTable(w.key, [], [packedRowFloats(type, K), N], () => w.packed());
  const args: unknown[] = [table, g.inp(Float32Array.from(a.q), [K, M]), g.inp(a.d, [nb, M])];
  if (type === 'Q4_K') args.push(g.inp(Float32Array.from(a.sums!), [K / 32, M]));
  const out = yield gpujs.call(`gguf.${type.toLowerCase()}`, `${N},${K},${M}`, () => ({
    source: SOURCES[type], output: [N, M], constants: { NB: nb },
    argumentTypes: Object.fromEntries(['W', 'X', 'XD', 'XS'].slice(0, args.length).map((k) => [k, 'Input' as const])),
  }), args);
  y.set(out.subarray(0, M * N));
}

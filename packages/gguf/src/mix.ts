// llama-quantize's per-tensor type choice (src/llama-quant.cpp: llama_tensor_get_type and
// tensor_type_fallback) for the Apertus tensors and the mixes users download, so that a file we
// write is the file llama-quantize writes:
//
//   quantized      2-D tensors whose name ends in "weight" but not "_norm.weight" (token_embd,
//                  output and the layer matrices); everything else keeps its type (F32 here)
//   default        the mix's base type: Q4_K_M → Q4_K, Q5_K_M → Q5_K, Q6_K → Q6_K, Q8_0 → Q8_0
//   output         Q6_K (Q8_0 in Q8_0 files, or when its rows are not a multiple of the block);
//                  with tied embeddings (no output.weight) token_embd is the output and takes its type
//   attn_v         Q4_K_M/Q5_K_M: Q6_K in the layers use_more_bits picks
//   ffn_down       Q4_K_M/Q5_K_M: Q6_K in the layers use_more_bits picks
//   fallback       rows not a multiple of the type's block: Q4_K → Q5_0, Q5_K → Q5_1, Q6_K → Q8_0,
//                  and F16 when even that block does not divide them
//
// use_more_bits(i, n): the first n/8 layers, the last n/8, and every third layer between. Apertus
// has one attn_v and one ffn_down per layer, so llama.cpp's running counters are the layer index.
// (Its 70B and expert rules never apply: llama.cpp types no Apertus size but 8B, and there are no
// experts.)

/** The mixes `apertus-quantize --type` writes as llama-quantize does (its `ftype` names). */
export type QuantMix = 'Q4_K_M' | 'Q5_K_M' | 'Q6_K' | 'Q8_0';

/** The ggml types a mix can give a tensor. */
export type MixType = 'F32' | 'F16' | 'BF16' | 'Q8_0' | 'Q4_0' | 'Q5_0' | 'Q5_1' | 'Q4_K' | 'Q5_K' | 'Q6_K';

/** llama.cpp's `general.file_type` (llama_ftype) of each mix. */
export const MIX_FILE_TYPE: Readonly<Record<QuantMix, number>> = { Q8_0: 7, Q4_K_M: 15, Q5_K_M: 17, Q6_K: 18 };

const DEFAULT: Readonly<Record<QuantMix, MixType>> = { Q4_K_M: 'Q4_K', Q5_K_M: 'Q5_K', Q6_K: 'Q6_K', Q8_0: 'Q8_0' };
const BLOCK: Readonly<Record<MixType, number>> = { F32: 1, F16: 1, BF16: 1, Q8_0: 32, Q4_0: 32, Q5_0: 32, Q5_1: 32, Q4_K: 256, Q5_K: 256, Q6_K: 256 };
const FALLBACK: Readonly<Partial<Record<MixType, MixType>>> = { Q4_K: 'Q5_0', Q5_K: 'Q5_1', Q6_K: 'Q8_0' };

/** A tensor as the mix sees it: its GGUF name, its row-major shape and its stored type. */
export interface MixTensor {
  readonly name: string;
  readonly shape: readonly number[];
  readonly type: MixType;
}

/** llama.cpp's use_more_bits: layers that get more bits in the _M mixes. */
export function useMoreBits(layer: number, layers: number): boolean {
  const e = Math.trunc(layers / 8);
  return layer < e || layer >= Math.trunc((7 * layers) / 8) || (layer - e) % 3 === 2;
}

/** Whether llama-quantize quantizes a tensor: 2-D, named …weight but not …_norm.weight. */
export function isQuantized(name: string, shape: readonly number[]): boolean {
  return shape.length >= 2 && name.endsWith('weight') && !name.includes('_norm.weight');
}

/** `type` with llama.cpp's fallback applied for rows of `cols` values (tensor_type_fallback). */
export function fallbackType(type: MixType, cols: number): MixType {
  if (cols % BLOCK[type] === 0) return type;
  const next = FALLBACK[type] ?? type;
  return cols % BLOCK[next] === 0 ? next : 'F16';
}

/**
 * The type llama-quantize gives each tensor of an Apertus file for `mix`, by GGUF name: `tensors`
 * are the file's (their order does not matter), `layers` its block count.
 */
export function mixTypes(tensors: readonly MixTensor[], mix: QuantMix, layers: number): Map<string, MixType> {
  const tied = !tensors.some((t) => t.name === 'output.weight');
  const base = DEFAULT[mix], more = mix === 'Q4_K_M' || mix === 'Q5_K_M';
  const out = new Map<string, MixType>();
  for (const t of tensors) {
    if (!isQuantized(t.name, t.shape)) { out.set(t.name, t.type); continue; }
    const cols = t.shape[t.shape.length - 1]!, layer = /^blk\.(\d+)\./.exec(t.name);
    let type = base;
    if (t.name === 'output.weight' || (tied && t.name === 'token_embd.weight')) {
      if (cols % BLOCK[type] !== 0) type = 'Q8_0';
      else if (type !== 'Q8_0') type = 'Q6_K';
    } else if (more && layer && (t.name.endsWith('.attn_v.weight') || t.name.endsWith('.ffn_down.weight')) && useMoreBits(Number(layer[1]), layers)) {
      type = 'Q6_K';
    }
    out.set(t.name, fallbackType(type, cols));
  }
  return out;
}

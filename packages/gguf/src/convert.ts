// Writing an Apertus model as GGUF (what `apertus-quantize` does): llama.cpp's converter layout
// (tensor names, hyper-parameter keys, xIELU arrays, rope_freqs, tokenizer.ggml.*), the matrices
// in llama-quantize's per-tensor types for the chosen mix (mix.ts) and its quantizers' bytes.
//
// A checkpoint is converted streaming: the tensors are read from the safetensors files a block of
// rows at a time, converted to float32, quantized and written, so the process holds a few MiB of
// weights at any moment, not the model (an 8B bf16 checkpoint is 16 GB). Tied models (Apertus
// Mini) have no output.weight, as llama.cpp's converter writes them; a split vocabulary (Apertus
// 1.5) has a token_embd of vocab_size rows, an output of vocab_size_out rows.

import { checkpointReader, expectedTensors, parameterShapes, readCheckpointConfig, type ApertusConfig, type ApertusModel } from '@apertus/model';
import { openCheckpoint, type TensorReader } from '@apertus/safetensors';
import { bf16ArrayToF32, f16ArrayToF32, isQuantDType, type Tensor } from '@apertus/tensor';
import { Tokenizer, withSpecialTokensMap, type TokenizerConfigJson, type TokenizerJson } from '@apertus/tokenizer';
import fs from 'node:fs';
import path from 'node:path';
import { ARCH, configMetadata, ggufTensorName, ropeFactors, XIELU_KEYS } from './apertus';
import { GgufWriteError } from './errors';
import { fallbackType, isQuantized, MIX_FILE_TYPE, mixTypes, type MixType, type QuantMix } from './mix';
import { quantize } from './quant/index';
import { tokenizerMetadata } from './vocab';
import { writeGguf, type GgufEntry, type GgufTensorEntry } from './writer';

/**
 * How `apertus-quantize` stores the matrices: one of llama-quantize's mixes (Q4_K_M, Q5_K_M, Q6_K,
 * Q8_0, with its per-tensor choice), or one type for every matrix (F32, F16, BF16, and Q4_0 / Q4_K
 * as `llama-quantize --pure`). Vectors stay F32.
 */
export type QuantizeType = QuantMix | 'F32' | 'F16' | 'BF16' | 'Q4_0' | 'Q4_K';

/** The types `apertus-quantize --type` offers (llama-quantize's names). */
export const QUANTIZE_TYPES: readonly QuantizeType[] = ['Q4_K_M', 'Q5_K_M', 'Q6_K', 'Q8_0', 'BF16', 'F16', 'F32'];

/** llama.cpp's `general.file_type` of the pure types. */
const PURE_FILE_TYPE: Readonly<Record<Exclude<QuantizeType, QuantMix>, number>> = { F32: 0, F16: 1, BF16: 32, Q4_0: 2, Q4_K: 14 };

/** Options of {@link writeModelGguf}. */
export interface WriteModelGgufOptions {
  /** Storage of the matrices (see {@link QuantizeType}). */
  type: QuantizeType;
  /** tokenizer.json and tokenizer_config.json contents (written as `tokenizer.ggml.*` and the chat template). */
  tokenizer?: { json: TokenizerJson; config: TokenizerConfigJson };
  /** `general.name`. */
  name?: string;
}

/** The model's tensors by Hugging Face name, read a block of rows at a time. */
interface WeightSource {
  /** Rows [r0, r1) of a tensor (its values when it is a vector or scalar) as float32. */
  rows(hf: string, r0: number, r1: number): Float32Array;
  /** The stored bf16 bits of rows [r0, r1), when the tensor is stored bf16 (written unchanged to a BF16 file). */
  bf16Rows(hf: string, r0: number, r1: number): Uint16Array | null;
}

/** Float32 values per converted block of rows (16 MiB): the working memory of a conversion. */
const BLOCK_FLOATS = 1 << 22;

function isMix(type: QuantizeType): type is QuantMix {
  return type in MIX_FILE_TYPE;
}

/** The type of every GGUF tensor of a model of `c` stored as `type`, by GGUF name, in writing order. */
export function tensorTypes(c: ApertusConfig, type: QuantizeType): Map<string, MixType> {
  const tensors = [...ggufTensors(c)].map(([name, { shape }]) => ({ name, shape, type: 'F32' as MixType }));
  if (isMix(type)) return mixTypes(tensors, type, c.num_hidden_layers);
  // A pure type (llama-quantize --pure): every quantized tensor in it, with llama.cpp's fallback.
  return new Map(tensors.map((t) => [t.name, isQuantized(t.name, t.shape) ? fallbackType(type, t.shape[1]!) : t.type]));
}

/** The GGUF tensors of a model of `c` (rope_freqs first, then the checkpoint's order), with their Hugging Face names and shapes. */
function ggufTensors(c: ApertusConfig): Map<string, { hf: string | null; shape: readonly number[] }> {
  const out = new Map<string, { hf: string | null; shape: readonly number[] }>();
  if (c.rope_scaling?.rope_type === 'llama3') out.set('rope_freqs.weight', { hf: null, shape: [c.head_dim / 2] });
  for (const [hf, shape] of parameterShapes(c)) {
    const name = ggufTensorName(hf);
    if (name !== null) out.set(name, { hf, shape });
  }
  return out;
}

/** bos/eos/pad ids for tokenizer.ggml.*: the tokenizer's (its files), else the config's, as llama.cpp's converter takes them. */
function specialIds(c: ApertusConfig, t: Tokenizer | null): { bos: number; eos: number; pad: number } {
  const eos = Array.isArray(c.eos_token_id) ? c.eos_token_id[0]! : c.eos_token_id;
  return { bos: t?.bosTokenId ?? c.bos_token_id, eos: t?.eosTokenId ?? eos, pad: t?.padTokenId ?? c.pad_token_id };
}

/**
 * Write the GGUF file of a model of `c` whose tensors `source` reads (`tokenizer`: the Tokenizer of
 * `options.tokenizer`); returns the stored type of every tensor.
 */
function writeApertusGguf(c: ApertusConfig, source: WeightSource, file: string, options: WriteModelGgufOptions, tokenizer: Tokenizer | null): Map<string, MixType> {
  const type = options.type;
  if (!(isMix(type) || type in PURE_FILE_TYPE)) throw new GgufWriteError(`type ${type} is not one of ${[...QUANTIZE_TYPES, 'Q4_0', 'Q4_K'].join(', ')}`, { file });
  const L = c.num_hidden_layers;
  const xielu = Object.fromEntries(Object.keys(XIELU_KEYS).map((k) => [k, Array.from({ length: L }, (_, l) => source.rows(`model.layers.${l}.mlp.act_fn.${k}`, 0, 1)[0]!)])) as Record<keyof typeof XIELU_KEYS, number[]>;
  const tok = options.tokenizer;
  const metadata: [string, GgufEntry][] = [
    ['general.architecture', { type: 'string', value: ARCH }],
    ['general.type', { type: 'string', value: 'model' }],
    ['general.name', { type: 'string', value: options.name ?? 'Apertus' }],
    ...configMetadata(c, xielu),
    ['general.file_type', { type: 'u32', value: isMix(type) ? MIX_FILE_TYPE[type] : PURE_FILE_TYPE[type] }],
    ['general.quantization_version', { type: 'u32', value: 2 }],
    ...(tok ? tokenizerMetadata(tok.json, tok.config, c.vocab_size, specialIds(c, tokenizer)) : []),
  ];
  const types = tensorTypes(c, type);
  const tensors: GgufTensorEntry[] = [];
  for (const [name, { hf, shape }] of ggufTensors(c)) {
    const t = types.get(name)!;
    if (hf === null) {
      tensors.push({ name, type: 'F32', shape, data: () => quantize('F32', ropeFactors(c)) });
      continue;
    }
    const rows = shape.length === 2 ? shape[0]! : 1, cols = shape.length === 2 ? shape[1]! : shape.reduce((a, b) => a * b, 1);
    const step = Math.max(1, Math.floor(BLOCK_FLOATS / cols));
    tensors.push({
      name, type: t, shape,
      *data() {
        for (let r0 = 0; r0 < rows; r0 += step) {
          const r1 = Math.min(rows, r0 + step);
          const bits = t === 'BF16' ? source.bf16Rows(hf, r0, r1) : null;
          yield bits ? new Uint8Array(bits.buffer, bits.byteOffset, bits.byteLength) : quantize(t, source.rows(hf, r0, r1), name);
        }
      },
    });
  }
  writeGguf(file, metadata, tensors);
  return types;
}

/** Rows [r0, r1) of a [rows, cols] (or flat) tensor's stored values, converted to float32. */
function tensorRows(t: Tensor, r0: number, r1: number): Float32Array {
  const cols = t.rank === 2 ? t.shape[1]! : t.size, view = t.materialize();
  const s = view.storage.subarray(view.offset + r0 * cols, view.offset + r1 * cols);
  return view.dtype === 'bf16' ? bf16ArrayToF32(s as Uint16Array) : view.dtype === 'f16' ? f16ArrayToF32(s as Uint16Array) : Float32Array.from(s as Float32Array);
}

/** Write `model` to `file` as GGUF; returns the stored type of every tensor (GGUF name → type). */
export function writeModelGguf(model: ApertusModel, file: string, options: WriteModelGgufOptions): Map<string, MixType> {
  const weight = (hf: string): Tensor => {
    const w = model.params.get(hf)!;
    if (isQuantDType(w.dtype)) throw new GgufWriteError(`is already quantized (${w.dtype}); write from a float model`, { tensor: hf });
    return w;
  };
  const tok = options.tokenizer ? Tokenizer.fromJSON(options.tokenizer.json, options.tokenizer.config) : null;
  return writeApertusGguf(model.config, {
    rows: (hf, r0, r1) => tensorRows(weight(hf), r0, r1),
    bf16Rows: (hf, r0, r1) => {
      const w = weight(hf).materialize(), cols = w.shape[1]!;
      return w.dtype === 'bf16' ? (w.storage as Uint16Array).subarray(w.offset + r0 * cols, w.offset + r1 * cols) : null;
    },
  }, file, options, tok);
}

/** A checkpoint's tensors read from its files a block of rows at a time (`view`: the decoder under the model's names). */
function checkpointSource(view: TensorReader, file: string): WeightSource {
  const raw = (hf: string, r0: number, r1: number) => {
    const info = view.info(hf), cols = info.shape.length === 2 ? info.shape[1]! : info.numel, size = info.byteLength / info.numel;
    if (info.dtype !== 'BF16' && info.dtype !== 'F16' && info.dtype !== 'F32') throw new GgufWriteError(`dtype ${info.dtype} is not supported (BF16, F16, F32)`, { file, tensor: hf });
    const bytes = view.readBytesRange(hf, r0 * cols * size, r1 * cols * size).slice();
    return { dtype: info.dtype, bytes };
  };
  return {
    rows(hf, r0, r1) {
      const { dtype, bytes } = raw(hf, r0, r1);
      if (dtype === 'F32') return new Float32Array(bytes.buffer);
      return dtype === 'BF16' ? bf16ArrayToF32(new Uint16Array(bytes.buffer)) : f16ArrayToF32(new Uint16Array(bytes.buffer));
    },
    bf16Rows(hf, r0, r1) {
      const { dtype, bytes } = raw(hf, r0, r1);
      return dtype === 'BF16' ? new Uint16Array(bytes.buffer) : null;
    },
  };
}

function readJson(file: string): unknown {
  return JSON.parse(fs.readFileSync(file, 'utf8')) as unknown;
}

/**
 * Convert a Hugging Face Apertus checkpoint directory (2509, Apertus Mini or an Apertus 1.5 text
 * tower; weights + tokenizer) to a GGUF file, streaming (see the file header). The checkpoint is
 * checked as a load checks it (config, tensor names and shapes) before anything is written.
 */
export function convertCheckpoint(dir: string, out: string, type: QuantizeType, name: string = path.basename(path.resolve(dir))): Map<string, MixType> {
  const { config, json } = readCheckpointConfig(dir);
  const tokFile = path.join(dir, 'tokenizer.json'), cfgFile = path.join(dir, 'tokenizer_config.json'), mapFile = path.join(dir, 'special_tokens_map.json');
  let tokenizer: WriteModelGgufOptions['tokenizer'];
  let tok: Tokenizer | null = null;
  if (fs.existsSync(tokFile)) {
    const cfg = (fs.existsSync(cfgFile) ? readJson(cfgFile) : {}) as TokenizerConfigJson;
    tokenizer = { json: readJson(tokFile) as TokenizerJson, config: withSpecialTokensMap(cfg, fs.existsSync(mapFile) ? readJson(mapFile) : null, mapFile) };
    tok = Tokenizer.fromJSON(tokenizer.json, tokenizer.config, { file: tokFile, configFile: cfgFile }); // validates the files before anything is written
  }
  const reader = openCheckpoint(dir);
  try {
    const file = path.join(dir, 'model.safetensors');
    const { view } = checkpointReader(json, config, reader, file);
    expectedTensors(view, config, file);
    return writeApertusGguf(config, checkpointSource(view, dir), out, { type, name, ...(tokenizer ? { tokenizer } : {}) }, tok);
  } finally {
    reader.close();
  }
}

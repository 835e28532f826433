// Writing an Apertus model as GGUF (what `apertus-quantize` does): llama.cpp's converter layout
// (tensor names, hyper-parameter keys, xIELU arrays, rope_freqs, tokenizer.ggml.*), with the
// matrices stored as F32, BF16, Q8_0 or Q4_K and vectors as F32.

import { isPacked, loadCheckpoint, parameterShapes, type ApertusModel } from '@apertus/model';

import { loadTokenizerFromDirectory, type TokenizerConfigJson, type TokenizerJson } from '@apertus/tokenizer';
import fs from 'node:fs';
import path from 'node:path';
import { ARCH, configMetadata, ggufTensorName, ropeFactors, XIELU_KEYS } from './apertus';
import { GgufWriteError } from './errors';
import { quantize } from './quant/index';
import { GGML_TYPES, type GgmlTypeName } from './types';
import { tokenizerMetadata } from './vocab';
import { writeGguf, type GgufEntry, type GgufTensorEntry } from './writer';

/** Types `apertus-quantize` writes for the matrices. */
export type QuantizeType = 'F32' | 'BF16' | 'Q8_0' | 'Q4_K';

/** llama.cpp's `general.file_type` of each. */
const FILE_TYPE: Record<QuantizeType, number> = { F32: 0, BF16: 32, Q8_0: 7, Q4_K: 14 };

/** Options of {@link writeModelGguf}. */
export interface WriteModelGgufOptions {
  /** Storage of the matrices (vectors are always F32). Rows whose length is not a multiple of the block size fall back to Q8_0, then BF16. */
  type: QuantizeType;
  /** tokenizer.json and tokenizer_config.json contents (written as `tokenizer.ggml.*` and the chat template). */
  tokenizer?: { json: TokenizerJson; config: TokenizerConfigJson };
  /** `general.name`. */
  name?: string;
}

/** The type a matrix with rows of `k` values is stored as for the requested type. */
export function matrixType(type: QuantizeType, k: number): GgmlTypeName {
  for (const t of [type, 'Q8_0', 'BF16'] as const) if (k % GGML_TYPES[t].blockSize === 0) return t;
  return 'BF16';
}

/** Write `model` to `file` as GGUF; returns the stored type of every tensor (GGUF name → type). */
export function writeModelGguf(model: ApertusModel, file: string, options: WriteModelGgufOptions): Map<string, GgmlTypeName> {
  const c = model.config;
  if (!(options.type in FILE_TYPE)) throw new GgufWriteError(`type ${options.type} is not one of ${Object.keys(FILE_TYPE).join(', ')}`, { file });
  const xielu = Object.fromEntries(Object.keys(XIELU_KEYS).map((k) => [k, Array.from({ length: c.num_hidden_layers }, (_, l) => model.params.get(`model.layers.${l}.mlp.act_fn.${k}`)!.item())])) as Record<keyof typeof XIELU_KEYS, number[]>;
  const eos = Array.isArray(c.eos_token_id) ? c.eos_token_id[0]! : c.eos_token_id;
  const ids = { bos: c.bos_token_id, eos, pad: c.pad_token_id };
  const metadata: [string, GgufEntry][] = [
    ['general.architecture', { type: 'string', value: ARCH }],
    ['general.type', { type: 'string', value: 'model' }],
    ['general.name', { type: 'string', value: options.name ?? 'Apertus' }],
    ...configMetadata(c, xielu),
    ['general.file_type', { type: 'u32', value: FILE_TYPE[options.type] }],
    ['general.quantization_version', { type: 'u32', value: 2 }],
    ...(options.tokenizer ? tokenizerMetadata(options.tokenizer.json, options.tokenizer.config, c.vocab_size, ids) : []),
  ];
  const types = new Map<string, GgmlTypeName>();
  const tensors: GgufTensorEntry[] = [];
  if (c.rope_scaling?.rope_type === 'llama3') {
    tensors.push({ name: 'rope_freqs.weight', type: 'F32', shape: [c.head_dim / 2], data: () => quantize('F32', ropeFactors(c)) });
    types.set('rope_freqs.weight', 'F32');
  }
  for (const [hf, shape] of parameterShapes(c)) {
    const name = ggufTensorName(hf);
    if (name === null) continue;
    const w = model.params.get(hf) ?? model.packed.get(hf)!;
    if (isPacked(w)) throw new GgufWriteError(`is already packed (${w.format}); write from a float model`, { tensor: hf });
    const type = shape.length === 2 ? matrixType(options.type, shape[1]!) : 'F32';
    types.set(name, type);
    tensors.push({
      name, type, shape,
      data: () => (type === 'BF16' && w.dtype === 'bf16' ? new Uint8Array(w.materialize().storage.slice().buffer) : quantize(type, w.toFloat32(), name)),
    });
  }
  writeGguf(file, metadata, tensors);
  return types;
}

/** Convert a Hugging Face Apertus checkpoint directory (weights + tokenizer) to a GGUF file. */
export function convertCheckpoint(dir: string, out: string, type: QuantizeType, name: string = path.basename(path.resolve(dir))): Map<string, GgmlTypeName> {
  const { model } = loadCheckpoint(dir);
  const tokFile = path.join(dir, 'tokenizer.json');
  const cfgFile = path.join(dir, 'tokenizer_config.json');
  const tokenizer = fs.existsSync(tokFile)
    ? { json: JSON.parse(fs.readFileSync(tokFile, 'utf8')) as TokenizerJson, config: (fs.existsSync(cfgFile) ? JSON.parse(fs.readFileSync(cfgFile, 'utf8')) : {}) as TokenizerConfigJson }
    : undefined;
  if (tokenizer) loadTokenizerFromDirectory(dir); // validates the files before anything is written
  return writeModelGguf(model, out, { type, name, ...(tokenizer ? { tokenizer } : {}) });
}


// Loading an Apertus GGUF file into ApertusModel: vectors and f16 matrices as float32 tensors,
// f32, bf16 and quantized matrices as stored weights of their dtype (`weightTensor`: the bytes
// copied once into the model's WeightStore, where @apertus/tensor's kernels multiply them; nothing
// is expanded whole, and products round their input as llama.cpp does).

import { ApertusModel, parameterShapes, type GenerationConfig } from '@apertus/model';
import { Tensor, weightTensor, WeightStore, type WeightDType } from '@apertus/tensor';
import type { Tokenizer } from '@apertus/tokenizer';
import { configFromMetadata, ggufTensorName, XIELU_KEYS } from './apertus';
import { GgufMetadataError } from './errors';
import type { GgufFile } from './file';
import { dequantize } from './quant/index';
import { specialIds, tokenizerFromMetadata } from './vocab';

/** A loaded GGUF model. */
export interface LoadedGguf {
  model: ApertusModel;
  /** The tokenizer rebuilt from `tokenizer.ggml.*` (null when the file has none and `tokenizer: false`). */
  tokenizer: Tokenizer | null;
  /** bos/eos/pad ids from the file. */
  generationConfig: GenerationConfig;
  /** Storage type of each GGUF tensor, by GGUF name. */
  types: Map<string, string>;
  /** The file it came from. */
  path: string;
}

/** Options of {@link loadGguf}. */
export interface LoadGgufOptions {
  /** Rebuild the tokenizer from the metadata (default true). */
  tokenizer?: boolean;
}

/**
 * Load an Apertus GGUF file (as llama.cpp's converter or `apertus-quantize` writes it). Checks:
 * `general.architecture` is `apertus` (GgufArchitectureError), every tensor the hyper-parameters
 * imply is present with their shape and nothing else is (GgufMetadataError naming the tensor),
 * the xIELU arrays have one value per layer (naming the key), types are supported
 * (GgufQuantTypeError). Tensors are read one at a time; the file is closed at the end.
 */
export function loadGgufFile(file: GgufFile, options: LoadGgufOptions = {}): LoadedGguf {
  const path = file.path;
  try {
    const meta = file.metadata;
    const ropeFreqs = file.has('rope_freqs.weight') ? dequantize(file.info('rope_freqs.weight').type, file.read('rope_freqs.weight'), file.info('rope_freqs.weight').shape[0]!) : null;
    const ids = specialIds(meta);
    // Without output.weight the head is the embedding (a tied model, as llama.cpp's converter writes Apertus Mini).
    const config = configFromMetadata(meta, ropeFreqs, ids, path, !file.has('output.weight'));
    const xielu = Object.fromEntries(Object.entries(XIELU_KEYS).map(([k, key]) => {
      const v = meta.get(key);
      if (!Array.isArray(v) || v.length !== config.num_hidden_layers || v.some((x) => typeof x !== 'number')) {
        throw new GgufMetadataError(v === undefined ? 'missing' : `expected ${config.num_hidden_layers} numbers (one per layer)`, { file: path, key });
      }
      return [k, v as readonly number[]];
    })) as Record<keyof typeof XIELU_KEYS, readonly number[]>;
    const expected = parameterShapes(config);
    const wanted = new Set<string>(['rope_freqs.weight']);
    const store = WeightStore.available() ? new WeightStore() : undefined;
    const params = new Map<string, Tensor>(), types = new Map<string, string>();
    for (const [hf, shape] of expected) {
      const name = ggufTensorName(hf);
      if (name === null) {
        const layer = Number(/^model\.layers\.(\d+)\./.exec(hf)![1]);
        const k = hf.slice(hf.lastIndexOf('.') + 1) as keyof typeof XIELU_KEYS;
        params.set(hf, new Tensor(Float32Array.of(xielu[k][layer]!), shape, 'f32'));
        continue;
      }
      wanted.add(name);
      if (!file.has(name)) throw new GgufMetadataError('missing (the hyper-parameters imply it)', { file: path, tensor: name });
      const info = file.info(name);
      if (info.shape.length !== shape.length || info.shape.some((d, i) => d !== shape[i])) {
        throw new GgufMetadataError(`shape [${info.shape}] disagrees with the metadata (expected [${shape}])`, { file: path, tensor: name });
      }
      types.set(name, info.type.name);
      const bytes = file.read(name);
      const t = info.type.name;
      if (shape.length === 2 && t !== 'F16') params.set(hf, weightTensor(t.toLowerCase() as WeightDType, shape as [number, number], bytes, store));
      else if (t === 'F32' || t === 'F16' || t === 'BF16') {
        const values = dequantize(info.type, bytes, info.bytes / info.type.typeSize);
        params.set(hf, shape.length === 1 ? vectorTensor(values) : new Tensor(values, shape, 'f32'));
      } else throw new GgufMetadataError(`${t} is only supported for matrices`, { file: path, tensor: name });
      params.get(hf)?.requireGrad(false);
    }
    const extra = file.tensors.filter((t) => !wanted.has(t.name)).map((t) => t.name);
    if (extra.length > 0) throw new GgufMetadataError(`unexpected tensor for the hyper-parameters (${extra.length} in all)`, { file: path, tensor: extra[0]! });
    return {
      model: new ApertusModel(config, params),
      tokenizer: options.tokenizer === false ? null : tokenizerFromMetadata(meta, path),
      generationConfig: { bos_token_id: ids.bos, eos_token_id: ids.eos, pad_token_id: ids.pad },
      types,
      path,
    };
  } finally {
    file.close();
  }
}

/** A vector (a norm weight) in tensor storage on the cpu device memory, where the kernels read it without staging. */
function vectorTensor(values: Float32Array): Tensor {
  const t = Tensor.zeros([values.length]);
  t.data.set(values);
  return t;
}

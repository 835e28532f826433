/**
 * The Hugging Face checkpoint layout of an Apertus model, independent of where the files live:
 * the weights checked against the config and turned into tensors (from any safetensors reader:
 * a file, a shard set, or bytes in memory), and the files a checkpoint consists of (config.json,
 * generation_config.json, the weight entries). `checkpoint.ts` puts these on disk; in a browser
 * they come from `fetch` or a file picker and go to a download.
 */
import { serialize, SINGLE_FILE_NAME, type Tensor as StTensor, type TensorEntry, type TensorReader } from '@apertus/safetensors';
import { bf16ArrayToF32, f16ArrayToF32, f32ArrayToBf16, Tensor } from '@apertus/tensor';
import { checkModelType, parseConfig, type ApertusConfig } from './config';
import { CheckpointError } from './errors';
import type { GenerationConfig } from './generation-config';
import { carriedTensors, checkSplitVocabulary, decoderView, layoutConfigJson, layoutOfConfig, renamedReader, storedName, type CheckpointLayout } from './layout';
import { ApertusModel } from './model';
import { isBuffer, parameterShapes } from './params';

/** How weights are held in memory after loading. */
export type WeightPrecision =
  /** Matrices stay bf16 as stored (inference: 8B fits in ≈16 GB); vectors and scalars become f32. */
  | 'auto'
  /** Everything converted to f32 (training, fine-tuning). */
  | 'f32';

/**
 * Index of the first NaN or ±Inf among stored values (an all-ones exponent: 0x7f80 in bf16,
 * 0x7c00 in f16, 0x7f800000 in f32), or −1. One pass over the bits, no conversion.
 */
export function firstNonFinite(data: Uint16Array | Float32Array, dtype: 'BF16' | 'F16' | 'F32'): number {
  if (dtype === 'F32') {
    const u = new Uint32Array(data.buffer, data.byteOffset, data.length);
    for (let i = 0; i < u.length; i++) if ((u[i]! & 0x7f800000) === 0x7f800000) return i;
    return -1;
  }
  const u = data as Uint16Array, e = dtype === 'BF16' ? 0x7f80 : 0x7c00;
  for (let i = 0; i < u.length; i++) if ((u[i]! & e) === e) return i;
  return -1;
}

/** A stored tensor as a parameter: bf16 matrices kept under 'auto', the rest f32 (trainable under 'f32'); a NaN or ±Inf is a CheckpointError naming the tensor. */
function toParam(st: StTensor, name: string, precision: WeightPrecision, file: string): Tensor {
  if (st.dtype === 'BF16' || st.dtype === 'F16' || st.dtype === 'F32') {
    const at = firstNonFinite(st.data as Uint16Array | Float32Array, st.dtype);
    if (at >= 0) throw new CheckpointError(`holds a non-finite value (NaN or ±Inf) at element ${at} of [${st.shape}]: the weights are corrupt`, name, file);
  }
  const keepBf16 = precision === 'auto' && st.shape.length === 2;
  let t: Tensor;
  switch (st.dtype) {
    case 'BF16': t = keepBf16 ? new Tensor(st.data, st.shape, 'bf16') : new Tensor(bf16ArrayToF32(st.data), st.shape, 'f32'); break;
    case 'F16': t = new Tensor(f16ArrayToF32(st.data), st.shape, 'f32'); break;
    case 'F32': t = new Tensor(st.data, st.shape, 'f32'); break;
    default: throw new CheckpointError(`dtype ${st.dtype} is not supported (BF16, F16, F32)`, name, file);
  }
  t.name = name;
  if (t.dtype === 'f32' && !isBuffer(name)) t.requireGrad(precision === 'f32');
  return t;
}

/**
 * The sizes config.json states, checked against the weights' header before anything is sized by
 * them: the number of layers the tensor names hold, and the embedding table's [vocab_size, hidden_size].
 */
function checkConfigAgainstHeader(reader: TensorReader, config: ApertusConfig, file: string): void {
  let layers = 0;
  for (const k of reader.keys()) {
    const m = /^model\.layers\.(\d+)\./.exec(k);
    if (m) layers = Math.max(layers, Number(m[1]) + 1);
  }
  if (layers !== config.num_hidden_layers) throw new CheckpointError(`the weights hold ${layers} layers, config.json says num_hidden_layers = ${config.num_hidden_layers}`, undefined, file);
  const embed = 'model.embed_tokens.weight';
  if (!reader.has(embed)) throw new CheckpointError('missing tensor', embed, file);
  const [V, H] = reader.info(embed).shape;
  if (V !== config.vocab_size || H !== config.hidden_size) throw new CheckpointError(`shape [${reader.info(embed).shape}] does not match config.json's vocab_size ${config.vocab_size} and hidden_size ${config.hidden_size}`, embed, file);
}

/**
 * The tensor names `config` expects, checked against `reader`: every one present with the
 * config's shape, and no other (`CheckpointError` naming the tensor and `file` otherwise).
 */
export function expectedTensors(reader: TensorReader, config: ApertusConfig, file: string): string[] {
  checkConfigAgainstHeader(reader, config, file);
  const expected = parameterShapes(config);
  const unexpected = reader.keys().filter((k) => !expected.has(k));
  if (unexpected.length > 0) throw new CheckpointError(`unexpected tensors for an Apertus config: ${unexpected.slice(0, 5).join(', ')}${unexpected.length > 5 ? ', …' : ''}`, undefined, file);
  for (const [name, shape] of expected) {
    if (!reader.has(name)) throw new CheckpointError('missing tensor', name, file);
    const info = reader.info(name);
    if (info.shape.length !== shape.length || info.shape.some((d, i) => d !== shape[i])) {
      throw new CheckpointError(`shape [${info.shape}] does not match config.json (expected [${shape}])`, name, file);
    }
  }
  return [...expected.keys()];
}

/**
 * The model whose weights `reader` holds, checked against the config (see `expectedTensors`).
 * Tensors are read one at a time. With precision 'f32' the float parameters require gradients.
 */
export function modelFromWeights(config: ApertusConfig, reader: TensorReader, file: string, precision: WeightPrecision = 'auto'): ApertusModel {
  const params = new Map(expectedTensors(reader, config, file).map((name) => [name, toParam(reader.read(name), name, precision, file)]));
  return new ApertusModel(config, params);
}

/** How far a load has come: bytes of the weights read so far, of all. */
export interface LoadProgress {
  /** Bytes read. */
  readonly loadedBytes: number;
  /** Bytes of all weights. */
  readonly totalBytes: number;
  /** The tensor just read. */
  readonly tensor: string;
}

/** {@link modelFromWeights} with asynchronous reads, one tensor at a time; `onProgress` is told after each. */
export async function modelFromWeightsAsync(config: ApertusConfig, reader: TensorReader, file: string, precision: WeightPrecision = 'auto', onProgress?: (p: LoadProgress) => void): Promise<ApertusModel> {
  const params = new Map<string, Tensor>();
  const names = expectedTensors(reader, config, file);
  let totalBytes = 0, loadedBytes = 0;
  for (const name of names) totalBytes += reader.info(name).byteLength;
  for (const name of names) {
    params.set(name, toParam(await reader.readAsync(name), name, precision, file));
    loadedBytes += reader.info(name).byteLength;
    onProgress?.({ loadedBytes, totalBytes, tensor: name });
  }
  return new ApertusModel(config, params);
}

/** A checkpoint's weights as the model reads them (see {@link checkpointReader}). */
export interface CheckpointReader {
  /** The decoder's tensors under the model's names. */
  readonly view: TensorReader;
  /** The layout, without its carried tensors (see `carriedTensors`). */
  readonly layout: CheckpointLayout;
}

/**
 * The decoder of a checkpoint whose config.json is `json` (parsed as `config`) and whose weights
 * `reader` holds, under the model's names: a 1.5 checkpoint's `model.language_model.*` renamed and
 * its vocabulary sizes checked against its tensors, its image and audio tokenizers left to the
 * layout; a tied checkpoint's stored `lm_head.weight`, if any, left out (the head is the embedding,
 * as transformers ties it). An untied config without `lm_head.weight` is a CheckpointError naming
 * the tensor and `tie_word_embeddings`.
 */
export function checkpointReader(json: unknown, config: ApertusConfig, reader: TensorReader, file: string): CheckpointReader {
  const layout = layoutOfConfig(json, file);
  let view = decoderView(reader, layout);
  checkSplitVocabulary(view, config, layout, file);
  if (!config.tie_word_embeddings && !view.has('lm_head.weight') && view.has('model.embed_tokens.weight')) {
    throw new CheckpointError('missing tensor (config.json says tie_word_embeddings: false; a checkpoint whose head is its embedding says true)', 'lm_head.weight', file);
  }
  if (config.tie_word_embeddings && view.has('lm_head.weight')) view = renamedReader(view, new Map(view.keys().filter((k) => k !== 'lm_head.weight').map((k) => [k, k])));
  return { view, layout };
}

/**
 * The model in a checkpoint held in memory: `config` is the parsed config.json, `weights` the
 * bytes of model.safetensors (a single file). For a browser, which reads them from `fetch` or a
 * File (see `readSafetensors` of @apertus/safetensors). A 1.5 checkpoint's image and audio
 * tokenizers stay in `weights`, which the model's layout reads when it is saved.
 */
export function modelFromHfFiles(config: unknown, weights: TensorReader, precision: WeightPrecision = 'auto'): ApertusModel {
  checkModelType(config, 'config.json');
  const parsed = parseConfig(config, 'config.json');
  const { view, layout } = checkpointReader(config, parsed, weights, SINGLE_FILE_NAME);
  const model = modelFromWeights(parsed, view, SINGLE_FILE_NAME, precision);
  model.layout = { ...layout, carried: carriedTensors(weights, layout, () => weights, SINGLE_FILE_NAME, false) };
  return model;
}

/** The text of config.json for `c` with weights stored as `dtype`, in `layout` (default the 2509 one). */
export function configJson(c: ApertusConfig, dtype: 'bf16' | 'f32', layout?: CheckpointLayout): string {
  return JSON.stringify(layoutConfigJson(c, layout ?? { architecture: 'ApertusForCausalLM', configJson: null, carried: null }, dtype), null, 2) + '\n';
}

/** The text of generation_config.json (default: bos/eos/pad from the config). */
export function generationConfigJson(c: ApertusConfig, gen?: GenerationConfig): string {
  const g = gen ?? { bos_token_id: c.bos_token_id, eos_token_id: c.eos_token_id, pad_token_id: c.pad_token_id };
  return JSON.stringify({ _from_model_config: true, ...g, transformers_version: '4.56.2' }, null, 2) + '\n';
}

/**
 * The weight entries of a checkpoint in the model's layout, each converted to `dtype` only when
 * the writer reaches it; the layout's carried tensors (1.5's image and audio tokenizers) as
 * stored, read when the writer reaches them.
 */
export function weightEntries(model: ApertusModel, dtype: 'bf16' | 'f32'): [string, TensorEntry][] {
  const entries: [string, TensorEntry][] = [];
  for (const [name] of parameterShapes(model.config)) {
    const t = model.params.get(name)!;
    entries.push([storedName(model.layout, name), {
      dtype: dtype === 'bf16' ? 'BF16' : 'F32',
      shape: [...t.shape],
      data: () => (dtype === 'bf16'
        ? (t.dtype === 'bf16' ? t.materialize().storage as Uint16Array : f32ArrayToBf16(t.toFloat32()))
        : t.toFloat32()),
    }]);
  }
  const carried = model.layout.carried;
  for (const name of carried?.names ?? []) {
    const info = carried!.info(name);
    entries.push([name, { dtype: info.dtype, shape: [...info.shape], data: () => carried!.read(name).data }]);
  }
  return entries;
}

/**
 * A whole single-file Hugging Face checkpoint in memory (file name → contents: config.json,
 * generation_config.json, model.safetensors with `format: pt`, plus `files`), e.g. for a download
 * from a browser. The model's attached adapter, if any, is not included (merge it first).
 */
export function hfCheckpointFiles(model: ApertusModel, opts: { dtype?: 'bf16' | 'f32'; generationConfig?: GenerationConfig; files?: Record<string, string | Uint8Array> } = {}): Map<string, string | Uint8Array> {
  const dtype = opts.dtype ?? 'bf16';
  const out = new Map<string, string | Uint8Array>();
  out.set('config.json', configJson(model.config, dtype, model.layout));
  out.set('generation_config.json', generationConfigJson(model.config, opts.generationConfig));
  out.set(SINGLE_FILE_NAME, serialize(weightEntries(model, dtype), { format: 'pt' }));
  for (const [name, contents] of Object.entries(opts.files ?? {})) out.set(name, contents);
  return out;
}

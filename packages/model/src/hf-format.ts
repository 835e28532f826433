/**
 * The Hugging Face checkpoint layout of an Apertus model, independent of where the files live:
 * the weights checked against the config and turned into tensors (from any safetensors reader:
 * a file, a shard set, or bytes in memory), and the files a checkpoint consists of (config.json,
 * generation_config.json, the weight entries). `checkpoint.ts` puts these on disk; in a browser
 * they come from `fetch` or a file picker and go to a download.
 */
import { serialize, SINGLE_FILE_NAME, type Tensor as StTensor, type TensorEntry, type TensorReader } from '@apertus/safetensors';
import { bf16ArrayToF32, f16ArrayToF32, f32ArrayToBf16, Tensor } from '@apertus/tensor';
import { parseConfig, type ApertusConfig } from './config';
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

/** A stored tensor as a parameter: bf16 matrices kept under 'auto', the rest f32 (trainable under 'f32'). */
function toParam(st: StTensor, name: string, precision: WeightPrecision, file: string): Tensor {
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
 * The tensor names `config` expects, checked against `reader`: every one present with the
 * config's shape, and no other (`CheckpointError` naming the tensor and `file` otherwise).
 */
export function expectedTensors(reader: TensorReader, config: ApertusConfig, file: string): string[] {
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

/** {@link modelFromWeights} with asynchronous reads, one tensor at a time. */
export async function modelFromWeightsAsync(config: ApertusConfig, reader: TensorReader, file: string, precision: WeightPrecision = 'auto'): Promise<ApertusModel> {
  const params = new Map<string, Tensor>();
  for (const name of expectedTensors(reader, config, file)) params.set(name, toParam(await reader.readAsync(name), name, precision, file));
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

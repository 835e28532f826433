// How a Hugging Face checkpoint holds an Apertus decoder.
//
//   ApertusForCausalLM (2509, Apertus Mini)      model.embed_tokens, model.layers.N.*, model.norm,
//                                                lm_head (absent when tie_word_embeddings)
//   Apertus1p5ForConditionalGeneration (1.5)     the same under model.language_model., lm_head at
//                                                the root, beside model.vision_tokenizer.* and
//                                                model.audio_tokenizer.* (the image and audio
//                                                tokenizers), and config.json nesting the decoder
//                                                under text_config
//
// The model names its tensors the 2509 way everywhere; a layout renames them at the file boundary
// (`decoderView` for reading, `storedName` for writing). Tensors that are not the decoder's are
// carried: kept where they are, read only when asked for (image and audio input will need them),
// and written back unchanged when the model is saved.

import type { TensorInfo, Tensor as StTensor, TensorReader } from '@apertus/safetensors';
import { isApertus1p5Config, toHfConfig, type ApertusConfig } from './config';
import { CheckpointError, ConfigError } from './errors';

/** The Hugging Face architecture a checkpoint's config.json names. */
export type CheckpointArchitecture = 'ApertusForCausalLM' | 'Apertus1p5ForConditionalGeneration';

/** Tensors of a checkpoint beside the decoder, read on demand as stored (dtype, shape and bytes unchanged). */
export interface CarriedTensors {
  /** Their names, as stored. */
  readonly names: readonly string[];
  /** Header information of one (as it was when the model was loaded). */
  info(name: string): TensorInfo;
  /** One of them as stored; CheckpointError when the file changed since the model was loaded. */
  read(name: string): StTensor;
}

/** How a checkpoint holds a model (see the file header). */
export interface CheckpointLayout {
  /** The architecture config.json names. */
  readonly architecture: CheckpointArchitecture;
  /** config.json as read, written back around the model's config (1.5: everything but `text_config`'s decoder fields); null: the 2509 config alone. */
  readonly configJson: Readonly<Record<string, unknown>> | null;
  /** Tensors beside the decoder (1.5's image and audio tokenizers); null when there are none. */
  readonly carried: CarriedTensors | null;
}

/** The 2509 layout (`ApertusForCausalLM`): what models trained here are saved as. */
export const CAUSAL_LM_LAYOUT: CheckpointLayout = Object.freeze({ architecture: 'ApertusForCausalLM', configJson: null, carried: null });

/** Prefix of the 1.5 decoder's tensors in the files (`lm_head.weight` excepted). */
export const LANGUAGE_MODEL_PREFIX = 'model.language_model.';

/** Prefixes of the tensors a 1.5 checkpoint carries beside the decoder. */
export const CARRIED_PREFIXES: readonly string[] = ['model.vision_tokenizer.', 'model.audio_tokenizer.'];

function nested(layout: CheckpointLayout): boolean {
  return layout.architecture === 'Apertus1p5ForConditionalGeneration';
}

/** The name a layout stores model tensor `name` (2509 naming) under. */
export function storedName(layout: CheckpointLayout, name: string): string {
  return nested(layout) && name.startsWith('model.') ? LANGUAGE_MODEL_PREFIX + name.slice('model.'.length) : name;
}

/** The model's name (2509 naming) of stored tensor `stored`, or null when it is not the decoder's. */
export function decoderName(layout: CheckpointLayout, stored: string): string | null {
  if (!nested(layout)) return stored;
  if (stored === 'lm_head.weight') return stored;
  return stored.startsWith(LANGUAGE_MODEL_PREFIX) ? 'model.' + stored.slice(LANGUAGE_MODEL_PREFIX.length) : null;
}

/** Whether a layout carries stored tensor `stored` beside the decoder. */
export function isCarried(layout: CheckpointLayout, stored: string): boolean {
  return nested(layout) && CARRIED_PREFIXES.some((p) => stored.startsWith(p));
}

/**
 * The architecture of a config.json object: Apertus 1.5 when its `model_type` or `architectures`
 * say so, else `ApertusForCausalLM`.
 */
export function architectureOf(json: unknown): CheckpointArchitecture {
  return isApertus1p5Config(json) ? 'Apertus1p5ForConditionalGeneration' : 'ApertusForCausalLM';
}

/**
 * `reader` with only the tensors `toStored` lists, under its keys (the stored name of each its
 * value): the reader the model loads from, whatever the files call the tensors.
 */
export function renamedReader(reader: TensorReader, toStored: ReadonlyMap<string, string>): TensorReader {
  const s = (name: string): string => toStored.get(name) ?? name;
  return {
    keys: () => [...toStored.keys()],
    has: (name) => toStored.has(name),
    info: (name) => reader.info(s(name)),
    readBytes: (name) => reader.readBytes(s(name)),
    readBytesRange: (name, begin, end) => reader.readBytesRange(s(name), begin, end),
    read: (name) => reader.read(s(name)),
    readBytesAsync: (name) => reader.readBytesAsync(s(name)),
    readAsync: (name) => reader.readAsync(s(name)),
    close: () => reader.close(),
  };
}

/**
 * The decoder's tensors of `reader` under the model's names: a 1.5 checkpoint's
 * `model.language_model.*` become `model.*`, its carried tensors are left out. Everything else
 * (an unexpected tensor) stays visible, so the loader's checks name it.
 */
export function decoderView(reader: TensorReader, layout: CheckpointLayout): TensorReader {
  if (!nested(layout)) return reader;
  const toStored = new Map<string, string>();
  for (const k of reader.keys()) if (!isCarried(layout, k)) toStored.set(decoderName(layout, k) ?? k, k);
  return renamedReader(reader, toStored);
}

/**
 * The carried tensors of `reader` (null when there are none), read later through `open()` (which
 * may reopen the files: the reader the model was loaded from is closed by then). A tensor whose
 * header changed since is a CheckpointError naming it and `file`.
 */
export function carriedTensors(reader: TensorReader, layout: CheckpointLayout, open: () => TensorReader, file: string, closeAfterRead: boolean): CarriedTensors | null {
  const infos = new Map(reader.keys().filter((k) => isCarried(layout, k)).map((k) => [k, reader.info(k)] as const));
  if (infos.size === 0) return null;
  return {
    names: [...infos.keys()],
    info(name) {
      const i = infos.get(name);
      if (!i) throw new CheckpointError('not a carried tensor of the checkpoint', name, file);
      return i;
    },
    read(name) {
      const want = this.info(name);
      const r = open();
      try {
        const now = r.has(name) ? r.info(name) : null;
        if (!now || now.dtype !== want.dtype || now.byteLength !== want.byteLength || now.shape.join() !== want.shape.join()) {
          throw new CheckpointError(`changed since the model was loaded (was ${want.dtype} [${want.shape}]): the checkpoint's files were replaced`, name, file);
        }
        return r.read(name);
      } finally {
        if (closeAfterRead) r.close();
      }
    },
  };
}

/**
 * Check a 1.5 checkpoint's vocabulary sizes against its tensors before anything is sized by them:
 * `text_config.vocab_size` is the embedding's rows, `text_config.output_vocab_size` the head's
 * (CheckpointError naming the tensor and the key, in `file`).
 */
export function checkSplitVocabulary(view: TensorReader, config: ApertusConfig, layout: CheckpointLayout, file: string): void {
  if (!nested(layout)) return;
  const rows = (name: string): number | null => (view.has(name) ? view.info(name).shape[0] ?? null : null);
  const embed = rows('model.embed_tokens.weight'), head = rows('lm_head.weight');
  if (embed !== null && embed !== config.vocab_size) {
    throw new CheckpointError(`has ${embed} rows, config.json's text_config.vocab_size says ${config.vocab_size}`, storedName(layout, 'model.embed_tokens.weight'), file);
  }
  const out = config.output_vocab_size ?? config.vocab_size;
  if (head !== null && head !== out) {
    throw new CheckpointError(`has ${head} rows, config.json's text_config.${config.output_vocab_size === undefined ? 'vocab_size (there is no output_vocab_size)' : 'output_vocab_size'} says ${out}`, 'lm_head.weight', file);
  }
}

/**
 * The config.json object of a model in `layout`, its weights stored as `dtype`: the 2509 config
 * (`toHfConfig`), or for 1.5 the config.json it was read from with `text_config` rewritten from the
 * model's config (keys the model does not know are kept) and the stored dtype updated.
 */
export function layoutConfigJson(c: ApertusConfig, layout: CheckpointLayout, dtype: 'bf16' | 'f32'): Record<string, unknown> {
  const torchDtype = dtype === 'bf16' ? 'bfloat16' : 'float32';
  const hf: Record<string, unknown> = { ...toHfConfig(c), torch_dtype: torchDtype };
  if (!nested(layout)) return hf;
  const outer = layout.configJson ?? { architectures: ['Apertus1p5ForConditionalGeneration'], model_type: 'apertus1p5', tie_word_embeddings: c.tie_word_embeddings };
  const text = typeof outer.text_config === 'object' && outer.text_config !== null ? (outer.text_config as Record<string, unknown>) : {};
  const { architectures: _a, transformers_version: _v, torch_dtype: _d, rope_theta, rope_scaling, ...decoder } = hf;
  // 1.5 states RoPE as rope_parameters only (transformers 5's form), the decoder's type as apertus1p5_text.
  const rope_parameters = rope_scaling ? { ...(rope_scaling as object), rope_theta } : { rope_type: 'default', rope_theta };
  delete (rope_parameters as Record<string, unknown>).type;
  const merged: Record<string, unknown> = { ...text, ...decoder, model_type: 'apertus1p5_text', rope_parameters };
  delete merged.rope_theta;
  delete merged.rope_scaling;
  if (merged.output_vocab_size === undefined) merged.output_vocab_size = c.vocab_size;
  const result: Record<string, unknown> = { ...outer, text_config: merged };
  if ('dtype' in outer) result.dtype = torchDtype;
  else result.torch_dtype = torchDtype;
  if (text.dtype !== undefined) merged.dtype = torchDtype;
  if (text.torch_dtype !== undefined) merged.torch_dtype = torchDtype;
  return result;
}

/** The layout of a checkpoint's config.json object (`file` names it in errors), without carried tensors yet. */
export function layoutOfConfig(json: unknown, file?: string): CheckpointLayout {
  const architecture = architectureOf(json);
  if (architecture === 'ApertusForCausalLM') return CAUSAL_LM_LAYOUT;
  const j = json as Record<string, unknown>;
  if (j.tie_word_embeddings === true) throw new ConfigError('tie_word_embeddings', 'an Apertus 1.5 LM head is untied (its output vocabulary is smaller than the input one)', file);
  return { architecture, configJson: structuredClone(j), carried: null };
}

// Loading a checkpoint directory for serving: weights, generation_config.json and the tokenizer.
//
// The weights are read with async file I/O, one tensor at a time, so a server that is already
// listening keeps answering (`GET /health` → 503) while an 8B checkpoint loads. A GGUF file is
// parsed synchronously by @apertus/gguf, after one asynchronous pass over its bytes (see
// `prefetch`), so most of its load time does not block the server either. The checks are those
// of `loadCheckpoint` from @apertus/model (which reads synchronously): every expected tensor present
// with the config's shape, nothing unexpected; matrices stay bf16 as stored, vectors become f32.

import fs from 'node:fs';
import path from 'node:path';
import {
  ADAPTER_CONFIG_FILE,
  ApertusModel,
  CheckpointError,
  loadAdapter,
  mergeAdapter,
  ConfigError,
  parameterShapes,
  parseConfig,
  type ApertusConfig,
  type GenerationConfig,
} from '@apertus/model';
import { INDEX_FILE_NAME, openCheckpointAsync, SafetensorsFile, type Tensor as StTensor } from '@apertus/safetensors';
import { bf16ArrayToF32, f16ArrayToF32, Tensor } from '@apertus/tensor';
import { loadGguf } from '@apertus/gguf';
import { loadTokenizerFromDirectory, type Tokenizer } from '@apertus/tokenizer';
import { ChatPrompt } from './chat-prompt';
import { ModelLoadError, PromptError } from './errors';

/** A model ready to be served: weights, tokenizer, and the name clients use in `model`. */
export interface ServedModel {
  /** The network. */
  model: ApertusModel;
  /** Its tokenizer (chat template tokens included). */
  tokenizer: Tokenizer;
  /** The chat template (the checkpoint's, or the built-in Apertus renderer). */
  chat: ChatPrompt;
  /** generation_config.json, when the checkpoint has one (eos ids, default temperature/top_p). */
  generationConfig: GenerationConfig | null;
  /** Model id reported by `/v1/models` and expected in requests. */
  name: string;
  /** Unix seconds when it was loaded (`created` in `/v1/models`). */
  created: number;
}

/** Options of {@link loadServedModel}. */
export interface LoadServedModelOptions {
  /** Model id; default the directory's base name. */
  name?: string;
  /** 'auto' keeps bf16 matrices as stored (half the memory); 'f32' converts everything. Default 'auto'. */
  precision?: 'auto' | 'f32';
  /** A PEFT LoRA adapter directory merged into the weights at load (`--adapter`). */
  adapter?: string;
  /** Told about loadable oddities (a chat template that is not the Apertus one). */
  onWarning?: (message: string) => void;
}

/**
 * The checkpoint's chat template: `chat_template.jinja`, else `chat_template` of
 * tokenizer_config.json (a string, or Hugging Face's list of `{name, template}`: the `default`
 * one); null when there is none.
 */
function readChatTemplate(dir: string, tokenizer: Tokenizer): { template: string | null; file: string } {
  const jinja = path.join(dir, 'chat_template.jinja');
  if (fs.existsSync(jinja)) return { template: fs.readFileSync(jinja, 'utf8'), file: jinja };
  const file = path.join(dir, 'tokenizer_config.json');
  const t = (tokenizer.config as { chat_template?: unknown }).chat_template;
  if (t === undefined || t === null) return { template: null, file };
  if (typeof t === 'string') return { template: t, file };
  if (Array.isArray(t)) {
    const named = t.find((x: unknown) => x !== null && typeof x === 'object' && (x as { name?: unknown }).name === 'default') as { template?: unknown } | undefined;
    if (named && typeof named.template === 'string') return { template: named.template, file };
    throw new ModelLoadError(file, 'a list of templates must hold one {"name": "default", "template": "..."}', { field: 'chat_template' });
  }
  throw new ModelLoadError(file, `must be a string or a list of {name, template}, got ${typeof t}`, { field: 'chat_template' });
}

function loadChatPrompt(dir: string, tokenizer: Tokenizer, warn: (message: string) => void): ChatPrompt {
  const { template, file } = readChatTemplate(dir, tokenizer);
  try {
    return ChatPrompt.fromTemplate(tokenizer, template, (m) => warn(`${file}: ${m}`));
  } catch (e) {
    if (e instanceof PromptError) throw new ModelLoadError(file, e.message, { field: e.field, cause: e });
    throw e;
  }
}

function readJson(file: string): unknown {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    throw new CheckpointError(`cannot read (${(e as Error).message})`, undefined, file);
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new ConfigError('(json)', `invalid JSON: ${(e as Error).message}`, file);
  }
}

/**
 * Validate `generation_config.json` against the model: token ids are integers inside the
 * vocabulary, sampling defaults are in range. Throws ConfigError naming the file and field, so a
 * bad file fails at load instead of making every request a 400. Fields it does not use are kept.
 */
export function parseGenerationConfig(json: unknown, config: ApertusConfig, file: string): GenerationConfig {
  if (json === null || typeof json !== 'object' || Array.isArray(json)) throw new ConfigError('(root)', 'must be a JSON object', file);
  const j = json as Record<string, unknown>;
  const V = config.vocab_size;
  const tokenId = (field: string, v: unknown): number => {
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v >= V) throw new ConfigError(field, `must be a token id in [0, ${V}) (vocab_size of config.json), got ${JSON.stringify(v)}`, file);
    return v;
  };
  const number = (field: string, ok: (x: number) => boolean, range: string): void => {
    const v = j[field];
    if (v === undefined || v === null) return;
    if (typeof v !== 'number' || !Number.isFinite(v) || !ok(v)) throw new ConfigError(field, `must be ${range}, got ${JSON.stringify(v)}`, file);
  };
  for (const field of ['bos_token_id', 'pad_token_id'] as const) if (j[field] !== undefined && j[field] !== null) tokenId(field, j[field]);
  const eos = j.eos_token_id;
  if (eos !== undefined && eos !== null) {
    if (Array.isArray(eos)) {
      if (eos.length === 0) throw new ConfigError('eos_token_id', 'must not be an empty list', file);
      eos.forEach((e, i) => tokenId(`eos_token_id[${i}]`, e));
    } else tokenId('eos_token_id', eos);
  }
  number('temperature', (x) => x >= 0, 'a number ≥ 0');
  number('top_p', (x) => x > 0 && x <= 1, 'a number in (0, 1]');
  number('top_k', (x) => Number.isInteger(x) && x >= 0, 'an integer ≥ 0');
  number('max_new_tokens', (x) => Number.isInteger(x) && x >= 1, 'a positive integer');
  number('repetition_penalty', (x) => x > 0, 'a number > 0');
  if (j.do_sample !== undefined && j.do_sample !== null && typeof j.do_sample !== 'boolean') throw new ConfigError('do_sample', `must be a boolean, got ${JSON.stringify(j.do_sample)}`, file);
  return j as GenerationConfig;
}

/** The tokenizer must fit the model: every token id below config.json's vocab_size. */
function checkTokenizerFits(tokenizer: Tokenizer, config: ApertusConfig, dir: string): void {
  const V = config.vocab_size;
  if (tokenizer.vocabSize <= V) return;
  const file = path.join(dir, 'tokenizer.json');
  const added = tokenizer.addedTokens.tokens.find((t) => t.id >= V);
  const field = added ? 'added_tokens' : 'model.vocab';
  const id = added ? added.id : tokenizer.vocabSize - 1;
  throw new ModelLoadError(file, `token ${JSON.stringify(tokenizer.idToToken(id))} has id ${id}, beyond vocab_size ${V} of config.json (the model has no embedding for it)`, { field });
}

function toTensor(st: StTensor, name: string, precision: 'auto' | 'f32', file: string): Tensor {
  const keepBf16 = precision === 'auto' && st.shape.length === 2;
  switch (st.dtype) {
    case 'BF16':
      return keepBf16 ? new Tensor(st.data, st.shape, 'bf16') : new Tensor(bf16ArrayToF32(st.data), st.shape, 'f32');
    case 'F16':
      return new Tensor(f16ArrayToF32(st.data), st.shape, 'f32');
    case 'F32':
      return new Tensor(st.data, st.shape, 'f32');
    default:
      throw new CheckpointError(`dtype ${st.dtype} is not supported (BF16, F16, F32)`, name, file);
  }
}

/**
 * Load a Hugging Face Apertus checkpoint directory for serving: `config.json`, the safetensors
 * weights (single file or sharded), `generation_config.json` if present, and `tokenizer.json`
 * (+ `tokenizer_config.json`). Works for the released Apertus-8B-Instruct directory and for
 * checkpoints written by `saveCheckpoint`; LoRA adapters (beside the weights, or `adapter`) are
 * merged into the weights. Throws ModelLoadError (no tokenizer), or the typed
 * errors of @apertus/model, @apertus/safetensors and @apertus/tokenizer naming the file at fault.
 */
export async function loadServedModel(dir: string, options: LoadServedModelOptions = {}): Promise<ServedModel> {
  if (dir.endsWith('.gguf')) {
    await prefetch(dir);
    return loadServedGguf(dir, options);
  }
  if (!fs.existsSync(path.join(dir, 'tokenizer.json'))) throw new ModelLoadError(dir, 'no tokenizer.json in the checkpoint directory');
  const tokenizer = loadTokenizerFromDirectory(dir);
  const chat = loadChatPrompt(dir, tokenizer, options.onWarning ?? (() => {}));
  const configFile = path.join(dir, 'config.json');
  const config = parseConfig(readJson(configFile), configFile);
  checkTokenizerFits(tokenizer, config, dir);
  const genFile = path.join(dir, 'generation_config.json');
  const generationConfig = fs.existsSync(genFile) ? parseGenerationConfig(readJson(genFile), config, genFile) : null;
  const reader = await openCheckpointAsync(dir);
  const file = reader instanceof SafetensorsFile ? reader.path : path.join(dir, INDEX_FILE_NAME);
  const precision = options.precision ?? 'auto';
  try {
    const expected = parameterShapes(config);
    const unexpected = reader.keys().filter((k) => !expected.has(k));
    if (unexpected.length > 0) {
      throw new CheckpointError(`unexpected tensors for an Apertus config: ${unexpected.slice(0, 5).join(', ')}${unexpected.length > 5 ? ', …' : ''}`, undefined, file);
    }
    const params = new Map<string, Tensor>();
    for (const [name, shape] of expected) {
      if (!reader.has(name)) throw new CheckpointError('missing tensor', name, file);
      const info = reader.info(name);
      if (info.shape.length !== shape.length || info.shape.some((d, i) => d !== shape[i])) {
        throw new CheckpointError(`shape [${info.shape}] does not match config.json (expected [${shape}])`, name, file);
      }
      const t = toTensor(await reader.readAsync(name), name, precision, file);
      t.name = name;
      params.set(name, t);
    }
    // LoRA adapters, merged into the weights: one saved beside them (a LoRA run's model/), then `adapter`.
    let model = new ApertusModel(config, params);
    const adapters = [...(fs.existsSync(path.join(dir, ADAPTER_CONFIG_FILE)) ? [dir] : []), ...(options.adapter !== undefined ? [options.adapter] : [])];
    for (const a of adapters) model = mergeAdapter(model, loadAdapter(a, config).adapter);
    return {
      model,
      tokenizer,
      chat,
      generationConfig,
      name: options.name ?? path.basename(path.resolve(dir)),
      created: Math.floor(Date.now() / 1000),
    };
  } finally {
    reader.close();
  }
}

/**
 * Read `file` once with asynchronous I/O, 16 MiB at a time, so that the synchronous GGUF load that
 * follows finds its bytes in the OS page cache: the disk reads, the slow part, happen while the
 * event loop keeps serving. Errors are left to the loader, which reports them typed.
 */
async function prefetch(file: string): Promise<void> {
  let fh: fs.promises.FileHandle | null = null;
  try {
    fh = await fs.promises.open(file, 'r');
    const buf = Buffer.allocUnsafe(16 << 20);
    while ((await fh.read(buf, 0, buf.length, null)).bytesRead > 0);
  } catch {
    // loadGguf names the file and what is wrong with it.
  } finally {
    await fh?.close();
  }
}

/**
 * A GGUF file (llama.cpp's format; see @apertus/gguf): weights, tokenizer and bos/eos ids all come
 * from the file; quantized matrices stay quantized. `precision` does not apply.
 */
function loadServedGguf(file: string, options: LoadServedModelOptions): ServedModel {
  const { model, tokenizer, generationConfig } = loadGguf(file);
  if (!tokenizer) throw new ModelLoadError(file, 'the GGUF file has no tokenizer');
  const template = (tokenizer.config as { chat_template?: unknown }).chat_template;
  const chat = ChatPrompt.fromTemplate(tokenizer, typeof template === 'string' ? template : null, (m) => (options.onWarning ?? (() => {}))(`${file}: tokenizer.chat_template: ${m}`));
  return { model, tokenizer, chat, generationConfig, name: options.name ?? path.basename(file, '.gguf'), created: Math.floor(Date.now() / 1000) };
}

// Loading a checkpoint directory for serving: weights, generation_config.json and the tokenizer.
//
// The weights are read with async file I/O, one tensor at a time, so a server that is already
// listening keeps answering (`GET /health` → 503) while an 8B checkpoint loads. The weights come from
// `loadCheckpointAsync` of @apertus/model (matrices stay bf16 as stored, vectors become f32). A GGUF
// file is parsed synchronously by @apertus/gguf, after one asynchronous pass over its bytes (see
// `prefetch`), so most of its load time does not block the server either.

import fs from 'node:fs';
import path from 'node:path';
import { checkpointName, loadCheckpointAsync, readCheckpointConfig, type ApertusConfig, type ApertusModel, type GenerationConfig, type LoadProgress } from '@apertus/model';
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
  /** Model id reported by `/v1/models` and in every response (`udhr-tiny` for `runs/udhr-tiny/model`). */
  name: string;
  /** Unix seconds when it was loaded (`created` in `/v1/models`). */
  created: number;
  /**
   * The checkpoint directory or GGUF file whose files are exactly this model (what `--studio`
   * publishes for the page to load), or null when loading changed it (a merged LoRA adapter).
   */
  source?: string | null;
}

/** Options of {@link loadServedModel}. */
export interface LoadServedModelOptions {
  /** Model id; default the checkpoint's name (`checkpointName` of @apertus/model: a run's `model/` is named after the run). */
  name?: string;
  /** 'auto' keeps bf16 matrices as stored (half the memory); 'f32' converts everything. Default 'auto'. */
  precision?: 'auto' | 'f32';
  /** A PEFT LoRA adapter directory merged into the weights at load (`--adapter`). */
  adapter?: string;
  /** Told about loadable oddities (a chat template that is not the Apertus one, a vocabulary padded beyond the tokenizer). */
  onWarning?: (message: string) => void;
  /** Told after each tensor read (safetensors checkpoints). */
  onProgress?: (p: LoadProgress) => void;
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

/**
 * The tokenizer must fit the model: every token id below config.json's vocab_size. A tokenizer
 * with fewer ids is fine (vocabularies are often padded to a multiple of 64 or 128): the ids past
 * it are never sampled (see `Scheduler.sampleableVocab`), and `warn` says so.
 */
function checkTokenizerFits(tokenizer: Tokenizer, config: ApertusConfig, dir: string, warn: (message: string) => void): void {
  const V = config.vocab_size;
  if (tokenizer.vocabSize < V) warn(`${path.join(dir, 'tokenizer.json')}: ${tokenizer.vocabSize} tokens for vocab_size ${V}: ids ${tokenizer.vocabSize}–${V - 1} have no text and are never sampled`);
  if (tokenizer.vocabSize <= V) return;
  const file = path.join(dir, 'tokenizer.json');
  const added = tokenizer.addedTokens.tokens.find((t) => t.id >= V);
  const field = added ? 'added_tokens' : 'model.vocab';
  const id = added ? added.id : tokenizer.vocabSize - 1;
  throw new ModelLoadError(file, `token ${JSON.stringify(tokenizer.idToToken(id))} has id ${id}, beyond vocab_size ${V} of config.json (the model has no embedding for it)`, { field });
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
  const warn = options.onWarning ?? (() => {});
  const tokenizer = loadTokenizerFromDirectory(dir);
  const chat = loadChatPrompt(dir, tokenizer, warn);
  const { config } = readCheckpointConfig(dir);
  checkTokenizerFits(tokenizer, config, dir, warn);
  const { model, generationConfig } = await loadCheckpointAsync(dir, {
    precision: options.precision ?? 'auto', adapters: options.adapter !== undefined ? [options.adapter] : [], ...(options.onProgress ? { onProgress: options.onProgress } : {}),
  });
  const merged = options.adapter !== undefined || fs.existsSync(path.join(dir, 'adapter_config.json'));
  return { model, tokenizer, chat, generationConfig, name: options.name ?? checkpointName(dir), created: Math.floor(Date.now() / 1000), source: merged ? null : path.resolve(dir) };
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
  return { model, tokenizer, chat, generationConfig, name: options.name ?? checkpointName(file), created: Math.floor(Date.now() / 1000), source: path.resolve(file) };
}

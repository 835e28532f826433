// The one model loader of the apps, the server and the quantizer, in Node: a `--model` value (a
// model directory, a run directory or checkpoints folder, a .gguf file, or a Hub id
// `owner/name[@revision][:QUANT]`, downloaded into the Hugging Face cache by @apertus/hub) →
// network, tokenizer, chat template, generation config and name.
//
// A checkpoint's weights are read with async file I/O, one tensor at a time, so a server that is
// already listening keeps answering (`GET /health` → 503) while an 8B checkpoint loads (matrices
// stay bf16 as stored unless `precision: 'f32'`; LoRA adapters beside the weights or given are
// merged). A GGUF file is parsed synchronously by @apertus/gguf after one asynchronous pass over its
// bytes (see `prefetch`), so most of its load time does not block the server either.

import fs from 'node:fs';
import path from 'node:path';
import { GgufError, loadGguf } from '@apertus/gguf';
import { resolveModel, type HubOptions, type ModelLocation } from '@apertus/hub';
import { ModelError, loadCheckpointAsync, readCheckpointConfig } from '@apertus/model';
import { TokenizerError, loadTokenizerFromDirectory, type Tokenizer } from '@apertus/tokenizer';
import { chatPromptOf, checkTokenizerFits } from './chat-template';
import { ModelLoadError } from './errors';
import { TOKENIZER_FILES, type Pretrained, type PretrainedSource } from './pretrained';

/** Options of {@link loadPretrained}: the Hub's (token, cache, offline, progress…) and these. */
export interface LoadPretrainedOptions extends HubOptions {
  /** The name the model goes by; default the checkpoint's (see {@link Pretrained.name}). */
  readonly name?: string;
  /** 'auto' keeps bf16 matrices as stored (half the memory); 'f32' converts everything (training). Default 'auto'. */
  readonly precision?: 'auto' | 'f32';
  /** A PEFT LoRA adapter directory merged into the weights at load. */
  readonly adapter?: string;
  /** The weights will be trained: refuse a GGUF file (its matrices are quantized, or at least not trainable here). */
  readonly trainable?: boolean;
  /** Told about loadable oddities (a chat template that is not the Apertus one). */
  readonly onWarning?: (message: string) => void;
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

/** The tokenizer files present in a directory (see {@link TOKENIZER_FILES}). */
export function readTokenizerFiles(dir: string): Record<string, string> {
  const files: Record<string, string> = {};
  for (const name of TOKENIZER_FILES) {
    const p = path.join(dir, name);
    if (fs.statSync(p, { throwIfNoEntry: false })?.isFile()) files[name] = fs.readFileSync(p, 'utf8');
  }
  return files;
}

/**
 * The tokenizer of a checkpoint directory and its files (to carry into the checkpoints of a run),
 * without the weights: what a resumed run needs.
 * @throws ModelLoadError when there is no tokenizer.json; the tokenizer's typed errors naming the file
 */
export function checkpointTokenizer(dir: string): { tokenizer: Tokenizer; tokenizerFiles: Record<string, string> } {
  if (!fs.existsSync(path.join(dir, 'tokenizer.json'))) throw new ModelLoadError(dir, 'no tokenizer.json in the checkpoint directory');
  return { tokenizer: loadTokenizerFromDirectory(dir), tokenizerFiles: readTokenizerFiles(dir) };
}

async function loadCheckpointDir(dir: string, o: LoadPretrainedOptions): Promise<Omit<Pretrained, 'name' | 'source'>> {
  const { tokenizer, tokenizerFiles } = checkpointTokenizer(dir);
  const jinja = path.join(dir, 'chat_template.jinja');
  const hasJinja = fs.existsSync(jinja);
  const chat = chatPromptOf(tokenizer, hasJinja ? fs.readFileSync(jinja, 'utf8') : null, hasJinja ? jinja : path.join(dir, 'tokenizer_config.json'), o.onWarning ?? (() => {}));
  const { config } = readCheckpointConfig(dir);
  checkTokenizerFits(tokenizer, config.vocab_size, path.join(dir, 'tokenizer.json'));
  const { model, generationConfig } = await loadCheckpointAsync(dir, { precision: o.precision ?? 'auto', adapters: o.adapter !== undefined ? [o.adapter] : [] });
  return { model, tokenizer, chat, generationConfig, tokenizerFiles };
}

async function loadGgufFile(file: string, o: LoadPretrainedOptions): Promise<Omit<Pretrained, 'name' | 'source'>> {
  if (o.trainable) throw new ModelLoadError(file, 'a GGUF file cannot be trained here (its weights are quantized for inference); start from the Hugging Face checkpoint (config.json + model.safetensors)');
  if (o.adapter !== undefined) throw new ModelLoadError(file, 'a LoRA adapter is merged into a Hugging Face checkpoint, not into a GGUF file');
  await prefetch(file);
  const { model, tokenizer, generationConfig } = loadGguf(file);
  if (!tokenizer) throw new ModelLoadError(file, 'the GGUF file has no tokenizer (tokenizer.ggml.*)');
  const template = (tokenizer.config as { chat_template?: unknown }).chat_template;
  const chat = chatPromptOf(tokenizer, typeof template === 'string' ? template : null, `${file}: tokenizer.chat_template`, o.onWarning ?? (() => {}));
  return { model, tokenizer, chat, generationConfig, tokenizerFiles: {} };
}

/** Errors of a Hub model name it by its id and the file in the repository, not by its cache path. */
function hubError(e: unknown, location: ModelLocation): unknown {
  if (location.hub === null || !(e instanceof GgufError || e instanceof ModelError || e instanceof TokenizerError || e instanceof ModelLoadError)) return e;
  const message = e.message.split(`${location.hub.dir}${path.sep}`).join('').split(location.hub.dir).join('.');
  return new ModelLoadError(location.name, message, { cause: e });
}

/**
 * Load the model `spec` designates: a model directory, a run directory (its `model/`, else its
 * latest checkpoint) or checkpoints folder, a `.gguf` file, or a Hub id `owner/name[@revision][:QUANT]`
 * (downloaded into the Hugging Face cache with `options.onProgress`; see @apertus/hub for the
 * environment it reads: HF_TOKEN, HF_HUB_OFFLINE, HF_ENDPOINT, HF_HUB_CACHE).
 * @throws ModelSpecError and the Hub's typed errors (@apertus/hub), ModelLoadError (no tokenizer,
 * a bad chat template, a GGUF file to train), and the typed errors of @apertus/model,
 * @apertus/safetensors, @apertus/gguf and @apertus/tokenizer naming the file at fault (for a Hub
 * model: ModelLoadError naming the id and the file, the original as its cause)
 */
export async function loadPretrained(spec: string, options: LoadPretrainedOptions = {}): Promise<Pretrained> {
  const location = await resolveModel(spec, options);
  const source: PretrainedSource = { format: location.format, path: location.path, hub: location.hub ? { repo: location.hub.repo, revision: location.hub.revision, commit: location.hub.commit } : null };
  try {
    const loaded = location.format === 'gguf' ? await loadGgufFile(location.path, options) : await loadCheckpointDir(location.path, options);
    return { ...loaded, name: options.name ?? location.name, source };
  } catch (e) {
    throw hubError(e, location);
  }
}

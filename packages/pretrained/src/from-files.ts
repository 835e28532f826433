// A model from files in memory or fetched, with nothing from Node: the browser's way in (a picked
// folder, a URL, the Hub through the browser cache) — a Hugging Face checkpoint (config.json,
// model.safetensors, tokenizer.json and the optional files beside them), or a GGUF file's bytes.

import { GgufFile, loadGgufFile } from '@apertus/gguf';
import { modelFromHfFiles, parseGenerationConfig, parseConfig } from '@apertus/model';
import { readSafetensors, type SafetensorsSource } from '@apertus/safetensors';
import { Tokenizer, withSpecialTokensMap } from '@apertus/tokenizer';
import { chatPromptOf, checkTokenizerFits } from './chat-template';
import { ModelLoadError } from './errors';
import { TOKENIZER_FILES, type Pretrained, type PretrainedSource } from './pretrained';

/** A file of a model: its text, or its bytes (a fetch Response, a File, a Blob). */
export type ModelFile = Exclude<SafetensorsSource, ArrayBuffer | Uint8Array> & { text(): Promise<string> };

/** Options of the in-memory loaders. */
export interface FromFilesOptions {
  /** 'auto' keeps bf16 matrices as stored; 'f32' converts everything (training). Default 'auto'. */
  readonly precision?: 'auto' | 'f32';
  /** Told about loadable oddities (a chat template that is not the Apertus one). */
  readonly onWarning?: (message: string) => void;
  /** Where the files came from (default: a checkpoint at `name`). */
  readonly source?: PretrainedSource;
}

/**
 * The Hugging Face checkpoint whose files `get` returns by name (null when absent); `name` names it
 * on the page and in errors.
 * @throws ModelLoadError naming the missing file, and the readers' typed errors
 */
export async function pretrainedFromFiles(name: string, get: (file: string) => Promise<ModelFile | null>, options: FromFilesOptions = {}): Promise<Pretrained> {
  const need = async (file: string): Promise<ModelFile> => {
    const f = await get(file);
    if (f === null) throw new ModelLoadError(`${name}/${file}`, 'missing (a Hugging Face model directory has config.json, model.safetensors and tokenizer.json)');
    return f;
  };
  const text = async (file: string): Promise<string | null> => (await get(file))?.text() ?? null;
  const parseJson = (t: string, file: string): unknown => {
    try {
      return JSON.parse(t);
    } catch (e) {
      throw new ModelLoadError(`${name}/${file}`, `invalid JSON: ${(e as Error).message}`);
    }
  };
  if ((await get('model.safetensors')) === null && (await get('model.safetensors.index.json')) !== null) {
    throw new ModelLoadError(`${name}/model.safetensors.index.json`, 'a sharded checkpoint is not read in a browser (one model.safetensors is)');
  }
  const configJson = parseJson(await (await need('config.json')).text(), 'config.json');
  const files: Record<string, string> = {};
  for (const f of TOKENIZER_FILES) {
    const t = await text(f);
    if (t !== null) files[f] = t;
  }
  if (files['tokenizer.json'] === undefined) await need('tokenizer.json');
  const tokenizerConfig = files['tokenizer_config.json'] === undefined ? {} : parseJson(files['tokenizer_config.json'], 'tokenizer_config.json');
  const tokensMap = files['special_tokens_map.json'] === undefined ? null : parseJson(files['special_tokens_map.json'], 'special_tokens_map.json');
  const tokenizer = Tokenizer.fromJSON(files['tokenizer.json']!, withSpecialTokensMap(tokenizerConfig as never, tokensMap, `${name}/special_tokens_map.json`), { file: `${name}/tokenizer.json`, configFile: `${name}/tokenizer_config.json` });
  const jinja = files['chat_template.jinja'] ?? null;
  const chat = chatPromptOf(tokenizer, jinja, `${name}/${jinja !== null ? 'chat_template.jinja' : 'tokenizer_config.json'}`, options.onWarning ?? (() => {}));
  const config = parseConfig(configJson, `${name}/config.json`);
  checkTokenizerFits(tokenizer, config.vocab_size, `${name}/tokenizer.json`);
  const gen = await text('generation_config.json');
  const generationConfig = gen === null ? null : parseGenerationConfig(parseJson(gen, 'generation_config.json'), config, `${name}/generation_config.json`);
  const model = modelFromHfFiles(configJson, await readSafetensors(await need('model.safetensors'), `${name}/model.safetensors`), options.precision ?? 'auto');
  return { model, tokenizer, chat, generationConfig, name, source: options.source ?? { format: 'safetensors', path: name, hub: null }, tokenizerFiles: files };
}

/**
 * The model in the GGUF bytes `bytes` (quantized matrices stay packed: the model is for chat);
 * `name` names it on the page and in errors.
 * @throws ModelLoadError when the file has no tokenizer, and @apertus/gguf's typed errors
 */
export function pretrainedFromGguf(bytes: Uint8Array, name: string, options: FromFilesOptions = {}): Pretrained {
  const loaded = loadGgufFile(GgufFile.fromBytes(bytes, name));
  if (loaded.tokenizer === null) throw new ModelLoadError(name, 'the GGUF file has no tokenizer (tokenizer.ggml.*)');
  const template = (loaded.tokenizer.config as { chat_template?: unknown }).chat_template;
  const chat = chatPromptOf(loaded.tokenizer, typeof template === 'string' ? template : null, `${name}: tokenizer.chat_template`, options.onWarning ?? (() => {}));
  return {
    model: loaded.model, tokenizer: loaded.tokenizer, chat, generationConfig: loaded.generationConfig, name: name.replace(/\.gguf$/i, ''),
    source: options.source ?? { format: 'gguf', path: name, hub: null }, tokenizerFiles: {},
  };
}

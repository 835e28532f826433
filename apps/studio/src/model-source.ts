// A model for the tab: a Hugging Face model directory picked from disk (a file input with
// `webkitdirectory`) or fetched from a URL, or the tiny preset initialised in the tab. Weights are
// loaded as f32 so that the same model can be fine-tuned.

import { ApertusModel, modelFromHfFiles, presetConfig } from '@apertus/model';
import { readSafetensors, type SafetensorsSource } from '@apertus/safetensors';
import { buildApertusTokenizerConfig, buildApertusTokenizerJson, Tokenizer } from '@apertus/tokenizer';

/** A model with its tokenizer, and the tokenizer files to put into a download. */
export interface StudioModel {
  name: string;
  model: ApertusModel;
  tokenizer: Tokenizer;
  tokenizerFiles: Record<string, string>;
}

/** A picked or fetched file: its text or its bytes on demand. */
interface FileLike extends Exclude<SafetensorsSource, ArrayBuffer | Uint8Array> { text(): Promise<string> }

async function fromFiles(name: string, get: (file: string) => Promise<FileLike | null>): Promise<StudioModel> {
  const need = async (file: string): Promise<FileLike> => {
    const f = await get(file);
    if (f === null) throw new Error(`${name}: ${file} is missing (a Hugging Face model directory has config.json, model.safetensors and tokenizer.json)`);
    return f;
  };
  const config = JSON.parse(await (await need('config.json')).text()) as unknown;
  const tokJson = await (await need('tokenizer.json')).text();
  const cfgFile = await get('tokenizer_config.json');
  const tokCfg = cfgFile ? await cfgFile.text() : null;
  const model = modelFromHfFiles(config, await readSafetensors(await need('model.safetensors')), 'f32');
  const tokenizer = Tokenizer.fromJSON(tokJson, tokCfg, { file: `${name}/tokenizer.json` });
  return { name, model, tokenizer, tokenizerFiles: { 'tokenizer.json': tokJson, ...(tokCfg !== null ? { 'tokenizer_config.json': tokCfg } : {}) } };
}

/** The model directory the user picked (`<input type=file webkitdirectory>`) named `dir`: files matched by name. */
export function modelFromPicked(files: FileList | readonly File[], dir: string): Promise<StudioModel> {
  const list = [...files];
  return fromFiles(dir, async (file) => list.find((f) => f.name === file) ?? null);
}

/** The model directory at `baseUrl` (config.json, model.safetensors, tokenizer.json under it), named `name` (default: the URL). */
export function modelFromUrl(baseUrl: string, name = baseUrl): Promise<StudioModel> {
  const base = baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`;
  return fromFiles(name, async (file) => {
    const r = await fetch(new URL(file, new URL(base, location.href)));
    return r.ok ? r : null;
  });
}

/** The tiny preset initialised in the tab (seeded), with the byte-level Apertus tokenizer (no merges) and its vocabulary. */
export function tinyModel(seed: number): StudioModel {
  const json = buildApertusTokenizerJson({ merges: [] });
  const cfg = buildApertusTokenizerConfig({ instruct: true });
  const tokenizer = Tokenizer.fromJSON(json, cfg);
  const model = ApertusModel.init(presetConfig('tiny', { vocab_size: tokenizer.vocabSize }), seed);
  return { name: 'tiny preset (new)', model, tokenizer, tokenizerFiles: { 'tokenizer.json': JSON.stringify(json), 'tokenizer_config.json': JSON.stringify(cfg, null, 2) } };
}

// A model for the tab: a Hugging Face model directory picked from disk (a file input with
// `webkitdirectory`), fetched from a URL, or a Hub id downloaded into the browser cache — all
// through @apertus/pretrained's browser loader — or the tiny preset initialised in the tab.
// Checkpoint weights are loaded as f32 so that the same model can be fine-tuned.

import { ApertusModel, presetConfig } from '@apertus/model';
import { fetchPretrained, pretrainedFromFiles, type BrowserLoadOptions } from '@apertus/pretrained';
import { buildApertusTokenizerConfig, buildApertusTokenizerJson, Tokenizer } from '@apertus/tokenizer';

/** A model with its tokenizer, and the tokenizer files to put into a download. */
export interface StudioModel {
  name: string;
  model: ApertusModel;
  tokenizer: Tokenizer;
  tokenizerFiles: Readonly<Record<string, string>>;
}

/** The model directory the user picked (`<input type=file webkitdirectory>`) named `dir`: files matched by name. */
export function modelFromPicked(files: FileList | readonly File[], dir: string): Promise<StudioModel> {
  const list = [...files];
  return pretrainedFromFiles(dir, async (file) => list.find((f) => f.name === file) ?? null, { precision: 'f32' });
}

/** The model directory or .gguf file at `url`, or the Hub model `url` names (`owner/name[@revision][:QUANT]`). */
export function modelFromUrl(url: string, hub: Omit<BrowserLoadOptions, 'precision'> = {}): Promise<StudioModel> {
  return fetchPretrained(url, { ...hub, precision: 'f32' });
}

/** The tiny preset initialised in the tab (seeded), with the byte-level Apertus tokenizer (no merges) and its vocabulary. */
export function tinyModel(seed: number): StudioModel {
  const json = buildApertusTokenizerJson({ merges: [] });
  const cfg = buildApertusTokenizerConfig({ instruct: true });
  const tokenizer = Tokenizer.fromJSON(json, cfg);
  const model = ApertusModel.init(presetConfig('tiny', { vocab_size: tokenizer.vocabSize }), seed);
  return { name: 'tiny preset (new)', model, tokenizer, tokenizerFiles: { 'tokenizer.json': JSON.stringify(json), 'tokenizer_config.json': JSON.stringify(cfg, null, 2) } };
}

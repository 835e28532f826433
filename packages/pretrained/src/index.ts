/**
 * @apertus/pretrained — the one model loader of Apertus.ts: `loadPretrained(spec)` turns a model
 * directory, a run folder, a GGUF file or a Hugging Face Hub id (`owner/name[@revision][:QUANT]`)
 * into the network, its tokenizer, its chat template (the built-in Apertus renderer where the
 * checkpoint's template renders as it does, @huggingface/jinja otherwise), its generation config and
 * its name. `@apertus/pretrained` under the `browser` condition is ./browser.ts: the same from
 * fetched, picked or Hub files.
 * @packageDocumentation
 */
// The Node entry: everything of the browser entry, and loadPretrained for paths and the Hugging Face cache.
export { fetchPretrained, fetchPretrainedUrl, type BrowserLoadOptions } from './browser-load';
export { pretrainedFromFiles, pretrainedFromGguf, type ModelFile, type FromFilesOptions } from './from-files';
export { TOKENIZER_FILES, type Pretrained, type PretrainedSource } from './pretrained';
export { ChatPrompt, type ChatPromptOptions } from './chat-prompt';
export { chatPromptOf, templateOfConfig, checkTokenizerFits } from './chat-template';
export { PretrainedError, ModelLoadError, PromptError } from './errors';
export { loadPretrained, checkpointTokenizer, readTokenizerFiles, type LoadPretrainedOptions } from './load';

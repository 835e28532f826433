/**
 * @apertus/pretrained — the one model loader of Apertus.ts: `loadPretrained(spec)` turns a model
 * directory, a run folder, a GGUF file or a Hugging Face Hub id (`owner/name[@revision][:QUANT]`)
 * into the network, its tokenizer, its chat template (the built-in Apertus renderer where the
 * checkpoint's template renders as it does, @huggingface/jinja otherwise), its generation config and
 * its name. `@apertus/pretrained` under the `browser` condition is ./browser.ts: the same from
 * fetched, picked or Hub files.
 * @packageDocumentation
 */
export * from './browser';
export { loadPretrained, checkpointTokenizer, readTokenizerFiles, type LoadPretrainedOptions } from './load';

// @apertus/pretrained, browser entry: the loader without Node — a model by Hub id (the browser's
// Cache API) or URL, from files in memory (a picked folder) or a GGUF file's bytes (the package's
// `browser` export).

export { pretrainedFromFiles, pretrainedFromGguf, type ModelFile, type FromFilesOptions } from './from-files';
export { TOKENIZER_FILES, type Pretrained, type PretrainedSource } from './pretrained';
export { ChatPrompt, type ChatPromptOptions } from './chat-prompt';
export { chatPromptOf, templateOfConfig, checkTokenizerFits } from './chat-template';
export { PretrainedError, ModelLoadError, PromptError } from './errors';
export { fetchPretrained, fetchPretrainedUrl, type BrowserLoadOptions } from './browser-load';

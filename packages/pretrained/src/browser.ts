// @apertus/pretrained, browser entry: the loader without Node — a model from files in memory or
// fetched (a picked folder, a URL) or from a GGUF file's bytes (the package's `browser` export).

export { pretrainedFromFiles, pretrainedFromGguf, type ModelFile, type FromFilesOptions } from './from-files';
export { TOKENIZER_FILES, type Pretrained, type PretrainedSource } from './pretrained';
export { ChatPrompt, type ChatPromptOptions } from './chat-prompt';
export { chatPromptOf, templateOfConfig, checkTokenizerFits } from './chat-template';
export { PretrainedError, ModelLoadError, PromptError } from './errors';
export { loadPretrained, loadPretrainedUrl, type BrowserLoadOptions } from './browser-load';

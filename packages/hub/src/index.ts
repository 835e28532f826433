/**
 * @apertus/hub — models by Hugging Face Hub id, in the Hugging Face cache layout that Python
 * huggingface_hub shares: model specs (a model directory, a run folder, a .gguf file,
 * `owner/name[@revision][:QUANT]`), resumable checked downloads with progress, HF_TOKEN /
 * HF_HUB_OFFLINE / HF_ENDPOINT / HF_HUB_CACHE, and a terminal progress bar. `@apertus/hub` under the
 * `browser` condition is ./browser.ts: the same downloads into the browser's Cache API.
 * @packageDocumentation
 */
// The Node entry: everything in ./browser, plus the Hugging Face cache on disk and the environment.
export * from './browser';
export { hubSettings, hubCacheDir, hubToken, hfHome, envFlag, type HubSettings } from './env';
export { RepoCache, repoFolderName } from './cache';
export { downloadModel, type HubOptions, type HubSnapshot } from './snapshot';
export { resolveModel, MODEL_SPEC_HELP, type ModelLocation } from './resolve';
export { findModelDir, isModelDir, checkpointName, noModelReason, LATEST_POINTER } from './model-dir';
export { downloadProgressBar, withDownloadDisplay, formatBytes, type DownloadDisplay } from './progress-bar';

/**
 * @apertus/hub — models by Hugging Face Hub id, in the Hugging Face cache layout that Python
 * huggingface_hub shares: model specs (a model directory, a run folder, a .gguf file,
 * `owner/name[@revision][:QUANT]`), resumable checked downloads with progress, HF_TOKEN /
 * HF_HUB_OFFLINE / HF_ENDPOINT / HF_HUB_CACHE, and a terminal progress bar. `@apertus/hub` under the
 * `browser` condition is ./browser.ts: the same downloads into the browser's Cache API.
 * @packageDocumentation
 */
export { HubError, ModelSpecError, HubNotFoundError, HubAccessError, HubNoWeightsError, HubOfflineError, HubDownloadError, HubHttpError, type HubMissing } from './errors';
export { parseHubId, formatHubId, hubModelName, isRepoId, DEFAULT_REVISION, type HubModelId } from './spec';
export { selectModelFiles, chooseGguf, isModelGguf, shardFiles, CHECKPOINT_FILES, SHARD_INDEX, type RepoFile, type ModelFiles } from './select';
export { hubSettings, hubCacheDir, hubToken, hfHome, envFlag, DEFAULT_ENDPOINT, type HubSettings } from './env';
export { RepoCache, repoFolderName } from './cache';
export { downloadModel, type HubOptions, type HubSnapshot, type DownloadProgress } from './snapshot';
export { resolveModel, MODEL_SPEC_HELP, type ModelLocation } from './resolve';
export { findModelDir, isModelDir, checkpointName, noModelReason, LATEST_POINTER } from './model-dir';
export { downloadProgressBar, withDownloadDisplay, formatBytes, type DownloadDisplay } from './progress-bar';

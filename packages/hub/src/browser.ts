// @apertus/hub, browser entry: Hub model ids and their files with nothing from Node — the same
// parsing, file choice, checked and resumable downloads and typed errors, stored in the browser's
// Cache API instead of the Hugging Face cache directory (the package's `browser` export).

export { HubError, ModelSpecError, HubNotFoundError, HubAccessError, HubNoWeightsError, HubOfflineError, HubDownloadError, HubHttpError, type HubMissing } from './errors';
export { parseHubId, formatHubId, hubModelName, isRepoId, DEFAULT_REVISION, type HubModelId } from './spec';
export { selectModelFiles, chooseGguf, isModelGguf, isSafeRepoPath, shardFiles, CHECKPOINT_FILES, SHARD_INDEX, type RepoFile, type ModelFiles } from './select';
export { DEFAULT_ENDPOINT } from './http';
export { downloadModelToCache, BROWSER_CACHE_NAME, type BrowserHubOptions, type BrowserSnapshot, type ResponseCache } from './browser-download';
export type { DownloadProgress } from './fetch-file';

// The loader over fetch, for a browser: a Hub id (`owner/name[@revision][:QUANT]`, downloaded into
// the Cache API by @apertus/hub's `downloadModelToCache`) or the URL of a model directory or .gguf
// file → the loaded model. (In Node, `loadPretrained` reads paths and the Hugging Face cache.)

import { downloadModelToCache, parseHubId, hubModelName, ModelSpecError, type BrowserHubOptions } from '@apertus/hub';
import { pretrainedFromFiles, pretrainedFromGguf, type FromFilesOptions, type ModelFile } from './from-files';
import type { Pretrained } from './pretrained';

/** Options of {@link fetchPretrained}: the Hub's (endpoint, token, cache, progress) and the loader's. */
export type BrowserLoadOptions = BrowserHubOptions & Omit<FromFilesOptions, 'source'>;

/** The model directory or .gguf file at `url` (relative to the page). */
export async function fetchPretrainedUrl(url: string, options: Omit<FromFilesOptions, 'source'> = {}): Promise<Pretrained> {
  const base = new URL(url, (globalThis as { location?: { href: string } }).location?.href);
  const name = base.pathname.replace(/\/+$/, '').split('/').pop() || base.href;
  if (/\.gguf$/i.test(base.pathname)) {
    const r = await fetch(base);
    if (!r.ok) throw new ModelSpecError(url, `HTTP ${r.status}`);
    return pretrainedFromGguf(new Uint8Array(await r.arrayBuffer()), name, options);
  }
  const dir = base.href.endsWith('/') ? base.href : `${base.href}/`;
  return pretrainedFromFiles(name, async (file) => {
    const r = await fetch(new URL(file, dir));
    return r.ok ? r : null;
  }, options);
}

/**
 * A model by Hub id (see @apertus/hub's `downloadModelToCache` for the cache and the errors) or,
 * for anything that is not a Hub id, by URL ({@link fetchPretrainedUrl}).
 */
export async function fetchPretrained(spec: string, options: BrowserLoadOptions = {}): Promise<Pretrained> {
  const id = parseHubId(spec);
  if (id === null) return fetchPretrainedUrl(spec, options);
  const snap = await downloadModelToCache(id, options);
  const name = hubModelName(id);
  const source = { format: snap.model.format, path: spec, hub: { repo: snap.repo, revision: snap.revision, commit: snap.commit } } as const;
  if (snap.model.format === 'gguf') return pretrainedFromGguf(new Uint8Array(await (await snap.file(snap.model.file))!.arrayBuffer()), name, { ...options, source });
  const get = async (file: string): Promise<ModelFile | null> => {
    const blob = await snap.file(file);
    return blob === null ? null : Object.assign(blob, { name: `${name}/${file}` });
  };
  return pretrainedFromFiles(name, get, { ...options, source });
}

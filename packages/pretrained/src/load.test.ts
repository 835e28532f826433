// loadPretrained: every form of spec gives the same model, named as the issue asks (the checkpoint's
// name, the GGUF file's, the Hub id), with its tokenizer files; fetchPretrained (the browser's
// loader, over fetch and a Cache-shaped store) gives the same greedy tokens as loadPretrained; bad
// input is one typed line naming the id, file or key.

import fs from 'node:fs';
import path from 'node:path';
import { convertCheckpoint, writeGguf } from '@apertus/gguf';
import { startHubServer, type HubServer } from '@apertus/hub/testing';
import os from 'node:os';
import { ApertusModel, generate, saveCheckpoint } from '@apertus/model';
import { testModelConfig } from '@apertus/model/testing';
import { buildApertusTokenizerConfig, buildApertusTokenizerJson } from '@apertus/tokenizer';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { fetchPretrained } from './browser-load';
import { ModelLoadError } from './errors';
import { loadPretrained } from './load';

const tmp = { dir: fs.mkdtempSync(path.join(os.tmpdir(), 'apertus-pretrained-')), remove: () => fs.rmSync(tmp.dir, { recursive: true, force: true }) };

/** A random tiny checkpoint with the byte-level Apertus tokenizer, saved at `out`. */
function writeCheckpoint(out: string): string {
  const model = ApertusModel.init(testModelConfig({ vocab_size: 1256 }), 3);
  saveCheckpoint(model, out, { dtype: 'f32', files: { 'tokenizer.json': JSON.stringify(buildApertusTokenizerJson({ merges: [] })), 'tokenizer_config.json': JSON.stringify(buildApertusTokenizerConfig({ instruct: true })) } });
  return out;
}
let hub: HubServer;
let dir: string;
let gguf: string;
const env = () => ({ HF_ENDPOINT: hub.url, HF_HUB_CACHE: path.join(tmp.dir, 'hf-cache') });
const greedy = (m: ApertusModel) => generate(m, [1, 500, 600, 700], { temperature: 0, maxTokens: 6, stopTokenIds: [] }).tokens;
const filesOf = (d: string) => Object.fromEntries(fs.readdirSync(d).map((f) => [f, new Uint8Array(fs.readFileSync(path.join(d, f)))]));

beforeAll(async () => {
  const runs = path.join(tmp.dir, 'runs');
  dir = writeCheckpoint(path.join(runs, 'udhr-tiny', 'model'));
  gguf = path.join(tmp.dir, 'tiny.Q8_0.gguf');
  convertCheckpoint(dir, gguf, 'Q8_0');
  const llama = path.join(tmp.dir, 'llama.gguf');
  writeGguf(llama, [['general.architecture', { type: 'string', value: 'llama' }]], []);
  hub = await startHubServer({
    repos: {
      'acme/tiny': { files: filesOf(dir) },
      'acme/tiny-GGUF': { files: { 'tiny-Q8_0.gguf': new Uint8Array(fs.readFileSync(gguf)) } },
      'acme/llama-GGUF': { files: { 'llama-Q4_K_M.gguf': new Uint8Array(fs.readFileSync(llama)) } },
    },
  });
});
afterAll(async () => {
  await hub.close();
  tmp.remove();
});

describe('loadPretrained', () => {
  test('a run directory, its model/ and a Hub id: one model, named udhr-tiny or by the Hub id, with its tokenizer files', async () => {
    const run = path.dirname(dir);
    const [a, b, c] = [await loadPretrained(run), await loadPretrained(dir), await loadPretrained('acme/tiny', { env: env() })];
    expect([a.name, b.name, c.name]).toEqual(['udhr-tiny', 'udhr-tiny', 'acme/tiny']);
    expect(a.source).toEqual({ format: 'safetensors', path: dir, hub: null });
    expect(c.source).toEqual({ format: 'safetensors', path: path.join(env().HF_HUB_CACHE, 'models--acme--tiny', 'snapshots', hub.commit('acme/tiny')), hub: { repo: 'acme/tiny', revision: 'main', commit: hub.commit('acme/tiny') } });
    expect(Object.keys(a.tokenizerFiles).sort()).toEqual(['tokenizer.json', 'tokenizer_config.json']);
    expect(c.tokenizerFiles).toEqual(a.tokenizerFiles);
    expect(greedy(c.model)).toEqual(greedy(a.model));
    expect((await loadPretrained(run, { name: 'mine' })).name).toBe('mine');
    expect(a.chat.kind).toBe('apertus');
  });

  test('GGUF: a path and owner/name:TYPE, named after the file or the id; not trainable, no adapter', async () => {
    const file = await loadPretrained(gguf);
    const byId = await loadPretrained('acme/tiny-GGUF:Q8_0', { env: env() });
    expect([file.name, byId.name, file.source.format]).toEqual(['tiny.Q8_0', 'acme/tiny-GGUF:Q8_0', 'gguf']);
    expect(greedy(byId.model)).toEqual(greedy(file.model));
    expect(file.tokenizerFiles).toEqual({});
    await expect(loadPretrained(gguf, { trainable: true })).rejects.toThrow(new ModelLoadError(gguf, 'a GGUF file cannot be trained here (its weights are quantized for inference); start from the Hugging Face checkpoint (config.json + model.safetensors)'));
    await expect(loadPretrained(gguf, { adapter: dir })).rejects.toBeInstanceOf(ModelLoadError);
  });

  test('a Hub GGUF of another architecture: one line naming the id, the file and the key', async () => {
    const e = await loadPretrained('acme/llama-GGUF', { env: env() }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ModelLoadError);
    expect((e as Error).message).toBe('acme/llama-GGUF: llama-Q4_K_M.gguf: key "general.architecture": "llama" is not supported (expected "apertus")');
  });
});

test('fetchPretrained (the browser loader, over fetch and a Cache-shaped store) gives loadPretrained\'s tokens', async () => {
  const store = new Map<string, ArrayBuffer>();
  const cache = {
    match: async (k: string) => (store.has(k) ? new Response(store.get(k)!.slice(0)) : undefined),
    put: async (k: string, r: Response) => void store.set(k, await r.arrayBuffer()),
    delete: async (k: string) => store.delete(k),
  };
  const fetched = await fetchPretrained('acme/tiny', { endpoint: hub.url, cache });
  const local = await loadPretrained(dir);
  expect(fetched.name).toBe('acme/tiny');
  expect(greedy(fetched.model)).toEqual(greedy(local.model));
  const fetchedGguf = await fetchPretrained('acme/tiny-GGUF:q8_0', { endpoint: hub.url, cache });
  expect(greedy(fetchedGguf.model)).toEqual(greedy((await loadPretrained(gguf)).model));
});

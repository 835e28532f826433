// Interop with Python huggingface_hub (the peers venv, `npm run peers`), over the loopback Hub
// with HF_HUB_DISABLE_XET=1: it reads our cache (offline snapshot_download and hf_hub_download
// return our files, scan_cache_dir finds the repository whole), we read its cache (offline, no
// request), and it downloads from the test Hub as from the real one (the routes are right).
// Without the venv this test fails (peerPython() says how to make it); it never skips.

import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { peerPython } from '@apertus/peers';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { downloadModel } from './snapshot';
import { parseHubId } from './spec';
import { startHubServer, type HubServer } from './testing';

const WEIGHTS = new Uint8Array(randomBytes(200_000));
const GGUF = new Uint8Array(randomBytes(30_000));
let hub: HubServer;
let root: string;

beforeAll(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'hub-python-'));
  hub = await startHubServer({
    repos: {
      'acme/tiny': { files: { 'config.json': '{"model_type": "apertus"}', 'model.safetensors': WEIGHTS, 'tokenizer.json': '{}', 'tokenizer_config.json': '{}', 'nested/notes.txt': 'hello' } },
      'acme/tiny-GGUF': { files: { 'tiny-Q4_K_M.gguf': GGUF, 'tiny-Q8_0.gguf': 'other' } },
    },
  });
});
afterAll(async () => {
  await hub.close();
  fs.rmSync(root, { recursive: true, force: true });
});

/** Run `code` in the peers' Python with `env` (asynchronously: the test Hub answers from this process); its last stdout line parsed as JSON. */
function python(code: string, env: Record<string, string>): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const p = spawn(peerPython(), ['-c', code], { env: { PATH: process.env.PATH ?? '', HOME: root, HF_HUB_DISABLE_XET: '1', HF_HUB_DISABLE_TELEMETRY: '1', HF_HUB_DISABLE_PROGRESS_BARS: '1', ...env }, timeout: 120_000 });
    let out = '', err = '';
    p.stdout.on('data', (d: Buffer) => (out += d));
    p.stderr.on('data', (d: Buffer) => (err += d));
    p.on('error', reject);
    p.on('close', (status) => (status === 0 ? resolve(JSON.parse(out.trim().split('\n').at(-1)!)) : reject(new Error(`python exited with ${status}: ${err}`))));
  });
}

test('Python huggingface_hub reads our cache offline: the same snapshot, files and commit; scan_cache_dir sees no problem', async () => {
  const cache = path.join(root, 'ours');
  const env = { HF_ENDPOINT: hub.url, HF_HUB_CACHE: cache };
  const snap = await downloadModel(parseHubId('acme/tiny')!, { env });
  const gguf = await downloadModel(parseHubId('acme/tiny-GGUF:Q4_K_M')!, { env });
  hub.requests.length = 0;
  const got = await python(`
import json, huggingface_hub as h
snap = h.snapshot_download('acme/tiny', allow_patterns=['config.json', 'model.safetensors', 'tokenizer*'])
weights = h.hf_hub_download('acme/tiny', 'model.safetensors')
gguf = h.hf_hub_download('acme/tiny-GGUF', 'tiny-Q4_K_M.gguf')
info = h.scan_cache_dir()
repos = sorted((r.repo_id, sorted(c.commit_hash for c in r.revisions), sorted(sorted(f.file_name for f in c.files) for c in r.revisions), r.refs.get('main') is not None and sorted(r.refs.keys())) for r in info.repos)
print(json.dumps({'snap': snap, 'weights': weights, 'gguf': gguf, 'warnings': [str(w) for w in info.warnings], 'repos': repos, 'size': open(weights, 'rb').read() == open(weights, 'rb').read() and len(open(weights, 'rb').read())}))
`, { ...env, HF_HUB_OFFLINE: '1' }) as { snap: string; weights: string; gguf: string; warnings: string[]; repos: unknown[]; size: number };
  expect(got.snap).toBe(snap.dir);
  expect(got.weights).toBe(path.join(snap.dir, 'model.safetensors'));
  expect(got.gguf).toBe(gguf.path);
  expect(got.size).toBe(WEIGHTS.length);
  expect(got.warnings).toEqual([]);
  expect(got.repos).toEqual([
    ['acme/tiny', [hub.commit('acme/tiny')], [['config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json']], ['main']],
    ['acme/tiny-GGUF', [hub.commit('acme/tiny-GGUF')], [['tiny-Q4_K_M.gguf']], ['main']],
  ]);
  expect(hub.requests).toEqual([]);
});

test('we read the cache Python huggingface_hub downloaded (from the loopback Hub), offline and without a request', async () => {
  const cache = path.join(root, 'theirs');
  const env = { HF_ENDPOINT: hub.url, HF_HUB_CACHE: cache };
  const got = await python(`
import json, huggingface_hub as h
snap = h.snapshot_download('acme/tiny')
gguf = h.hf_hub_download('acme/tiny-GGUF', 'tiny-Q4_K_M.gguf')
print(json.dumps({'snap': snap, 'gguf': gguf}))
`, env) as { snap: string; gguf: string };
  expect(new Uint8Array(fs.readFileSync(path.join(got.snap, 'model.safetensors')))).toEqual(WEIGHTS);
  expect(fs.readFileSync(path.join(got.snap, 'nested', 'notes.txt'), 'utf8')).toBe('hello');
  hub.requests.length = 0;
  const snap = await downloadModel(parseHubId('acme/tiny')!, { env: { ...env, HF_HUB_OFFLINE: '1' } });
  expect(snap).toMatchObject({ dir: got.snap, fromCache: true, model: { format: 'safetensors', files: ['config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json'] } });
  const gguf = await downloadModel(parseHubId('acme/tiny-GGUF:Q4_K_M')!, { env: { ...env, HF_HUB_OFFLINE: '1' } });
  expect(gguf.path).toBe(got.gguf);
  // Online, what Python downloaded is reused: one request for the commit of main, no file downloaded.
  const online = await downloadModel(parseHubId('acme/tiny')!, { env });
  expect(online.dir).toBe(got.snap);
  expect(hub.requests.map((r) => r.url.split('?')[0])).toEqual(['/api/models/acme/tiny/revision/main']);
});

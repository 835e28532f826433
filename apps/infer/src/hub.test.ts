// apertus-generate with Hub ids and GGUF files, against the loopback Hub of @apertus/hub/testing:
// the first run downloads with a progress display and prints the reference continuation; a second
// run starts without the network (Hub gone, or HF_HUB_OFFLINE=1: no request at all); a dropped
// connection resumes with a Range request; a gated repository without a token is one line naming
// HF_TOKEN; `owner/name:Q8_0` and a .gguf path load GGUF files; and Python huggingface_hub reads
// the cache the app wrote (scan_cache_dir, snapshot_download offline).

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { convertCheckpoint, loadGguf } from '@apertus/gguf';
import { startHubServer, type HubServer } from '@apertus/hub/testing';
import { generate, loadCheckpoint, type ApertusModel } from '@apertus/model';
import { peerPython } from '@apertus/peers';
import { tempDir, testTokenizer, writeRandomCheckpoint } from '@apertus/serve/testing';
import type { Tokenizer } from '@apertus/tokenizer';
import { afterAll, beforeAll, beforeEach, expect, test } from 'vitest';
import { runGenerate } from './generate';

const tmp = tempDir('apertus-infer-hub-');
const PROMPT = 'Once upon a time';
const saved = { ...process.env };
let hub: HubServer;
let tok: Tokenizer;
let ref: ApertusModel;
let ggufFile: string;
let n = 0;

/** The files of a directory, by relative path. */
const filesOf = (dir: string): Record<string, Uint8Array> => Object.fromEntries(fs.readdirSync(dir).map((f) => [f, new Uint8Array(fs.readFileSync(path.join(dir, f)))]));

beforeAll(async () => {
  tok = testTokenizer();
  const dir = writeRandomCheckpoint(tmp.dir, 'tiny');
  ref = loadCheckpoint(dir).model;
  ggufFile = path.join(tmp.dir, 'tiny-Q8_0.gguf');
  convertCheckpoint(dir, ggufFile, 'Q8_0');
  const files = filesOf(dir);
  hub = await startHubServer({
    repos: {
      'acme/tiny': { files },
      'acme/gated': { files, gated: { granted: ['hf_granted'] } },
      'acme/tiny-GGUF': { files: { 'tiny-Q8_0.gguf': new Uint8Array(fs.readFileSync(ggufFile)), 'README.md': '# GGUF' } },
    },
  });
});
afterAll(async () => {
  process.env = saved;
  await hub.close();
  tmp.remove();
});
/** Each test: the app's environment points at the test Hub and a fresh cache, with no token. */
beforeEach(() => {
  process.env = { ...saved, HF_ENDPOINT: hub.url, HF_HUB_CACHE: path.join(tmp.dir, `cache-${++n}`), HF_HOME: path.join(tmp.dir, `home-${n}`) };
  for (const k of ['HF_TOKEN', 'HUGGING_FACE_HUB_TOKEN', 'HF_TOKEN_PATH', 'HF_HUB_OFFLINE', 'TRANSFORMERS_OFFLINE']) delete process.env[k];
  hub.requests.length = 0;
});

async function generateWith(model: string): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [], err: string[] = [];
  const code = await runGenerate(['--model', model, '--prompt', PROMPT, '-n', '8', '-t', '0'], { input: new PassThrough(), output: { write: (s: string) => out.push(s) }, error: { write: (s: string) => err.push(s) } });
  return { code, out: out.join(''), err: err.join('') };
}

const reference = (m: ApertusModel) => `${tok.decode(generate(m, tok.encodeIds(PROMPT), { temperature: 0, maxTokens: 8, stopTokenIds: [2, 68, 72] }).tokens, { skipSpecialTokens: true })}\n`;

test('apertus-generate --model owner/name: downloads with progress, then starts without the network', async () => {
  const first = await generateWith('acme/tiny');
  expect(first.code).toBe(0);
  expect(first.out).toBe(reference(ref));
  expect(first.err).toContain('downloading acme/tiny: model.safetensors (');
  expect(first.err).toMatch(/acme\/tiny: [\d.]+ kB of [\d.]+ kB \(100%\)\n/);
  // The Hub gone: the cached snapshot of refs/main, no download display.
  const url = process.env.HF_ENDPOINT!;
  process.env.HF_ENDPOINT = 'http://127.0.0.1:1';
  const second = await generateWith('acme/tiny');
  expect(second).toEqual({ code: 0, out: first.out, err: '' });
  // HF_HUB_OFFLINE=1: not one request.
  process.env.HF_ENDPOINT = url;
  process.env.HF_HUB_OFFLINE = '1';
  hub.requests.length = 0;
  expect(await generateWith('acme/tiny')).toEqual({ code: 0, out: first.out, err: '' });
  expect(hub.requests).toEqual([]);
  // The cache is the layout Python huggingface_hub reads.
  const py = await python(`
import json, huggingface_hub as h
info = h.scan_cache_dir()
print(json.dumps({'snap': h.snapshot_download('acme/tiny', allow_patterns=['*.json', '*.safetensors']), 'warnings': [str(w) for w in info.warnings], 'repos': [r.repo_id for r in info.repos]}))
`) as { snap: string; warnings: string[]; repos: string[] };
  expect(py).toEqual({ snap: path.join(process.env.HF_HUB_CACHE!, 'models--acme--tiny', 'snapshots', hub.commit('acme/tiny')), warnings: [], repos: ['acme/tiny'] });
});

test('a connection dropped mid-file resumes from the bytes received', async () => {
  hub.dropAt('model.safetensors', 20_000);
  const r = await generateWith('acme/tiny');
  expect(r.code).toBe(0);
  expect(r.out).toBe(reference(ref));
  const ranges = hub.requests.filter((q) => q.method === 'GET' && q.url.startsWith('/_cdn/')).map((q) => q.range);
  expect(ranges.length).toBe(2);
  expect(ranges[1]).toMatch(/^bytes=\d+-$/);
});

test('a gated repository without a token: exit 1 and one line naming HF_TOKEN; with a granted token it runs', async () => {
  const r = await generateWith('acme/gated');
  expect(r.code).toBe(1);
  expect(r.err).toBe(`apertus-generate: cannot load acme/gated on cpu: acme/gated: a gated model: accept its licence on ${hub.url}/acme/gated (logged in), then set HF_TOKEN to an access token of that account (${hub.url}/settings/tokens)\n`);
  process.env.HF_TOKEN = 'hf_granted';
  expect((await generateWith('acme/gated')).out).toBe(reference(ref));
});

test('GGUF everywhere: a .gguf path and owner/name:Q8_0 give the GGUF model\'s tokens; unknown ids are one line', async () => {
  const want = reference(loadGguf(ggufFile).model);
  expect(await generateWith(ggufFile)).toMatchObject({ code: 0, out: want });
  expect(await generateWith('acme/tiny-GGUF:q8_0')).toMatchObject({ code: 0, out: want });
  const unknown = await generateWith('acme/nothing');
  expect(unknown).toEqual({ code: 1, out: '', err: `apertus-generate: cannot load acme/nothing on cpu: acme/nothing: no such file or directory, and no such model on ${hub.url} (if it is private, set HF_TOKEN)\n` });
  // A run directory that does not exist yet looks like a Hub id: offline, both are said.
  process.env.HF_HUB_OFFLINE = '1';
  const notYet = await generateWith('no-runs-yet/udhr-tiny');
  expect(notYet.err).toBe(`apertus-generate: cannot load no-runs-yet/udhr-tiny on cpu: no-runs-yet/udhr-tiny: no such file or directory, and as a Hub id: HF_HUB_OFFLINE is set, and the Hugging Face cache (${process.env.HF_HUB_CACHE}) has no snapshot of main\n`);
  const noType = await generateWith('acme/tiny-GGUF:Q4_K_M');
  expect(noType.err).toBe('apertus-generate: cannot load acme/tiny-GGUF:Q4_K_M on cpu: acme/tiny-GGUF:Q4_K_M: no GGUF file of type Q4_K_M (it has tiny-Q8_0.gguf)\n');
  const missing = await generateWith(path.join(tmp.dir, 'nowhere', 'model'));
  expect(missing.err).toBe(`apertus-generate: cannot load ${path.join(tmp.dir, 'nowhere', 'model')} on cpu: ${path.join(tmp.dir, 'nowhere', 'model')}: no such file or directory, and not a Hub id (owner/name[@revision][:QUANT])\n`);
});

/** The peers' Python with this process's Hub environment (asynchronously: the test Hub answers from this process). */
function python(code: string): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const p = spawn(peerPython(), ['-c', code], { env: { PATH: process.env.PATH ?? '', HOME: tmp.dir, HF_ENDPOINT: process.env.HF_ENDPOINT!, HF_HUB_CACHE: process.env.HF_HUB_CACHE!, HF_HUB_OFFLINE: '1', HF_HUB_DISABLE_XET: '1', HF_HUB_DISABLE_TELEMETRY: '1' } });
    let out = '', err = '';
    p.stdout.on('data', (d: Buffer) => (out += d));
    p.stderr.on('data', (d: Buffer) => (err += d));
    p.on('close', (status) => (status === 0 ? resolve(JSON.parse(out.trim().split('\n').at(-1)!)) : reject(new Error(`python exited with ${status}: ${err}`))));
  });
}

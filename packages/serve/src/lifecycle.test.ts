// Loading (health 503, async loader vs the reference loader), graceful shutdown, and the CLI.

import fs from 'node:fs';
import path from 'node:path';
import { AdapterError, CheckpointError, ConfigError, KVCache, LoraAdapter, loadCheckpoint, mergeAdapter, parseLoraConfig, saveAdapter, step } from '@apertus/model';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import WebSocket from 'ws';
import { runServeCli } from './cli';
import { CliError } from '@apertus/cli';
import { ListenError, ModelLoadError } from './errors';
import { loadServedModel, type ServedModel } from './load';
import { createServer } from './server';
import { json, parsePrometheus, readSse, tempDir, testTokenizer, writeRandomCheckpoint } from './testing';

const tmp = tempDir();
let dir: string;
let served: ServedModel;

beforeAll(async () => {
  dir = writeRandomCheckpoint(tmp.dir, 'tiny-ckpt');
  served = await loadServedModel(dir);
});

afterAll(() => tmp.remove());

describe('loading', () => {
  test('the async loader gives the same network as loadCheckpoint from @apertus/model', () => {
    const ref = loadCheckpoint(dir).model;
    expect(served.name).toBe('tiny-ckpt');
    expect(served.generationConfig?.eos_token_id).toEqual([2, 68, 72]);
    expect(served.model.config).toEqual(ref.config);
    for (const [name, t] of ref.params) {
      const mine = served.model.params.get(name)!;
      expect([name, mine.dtype, mine.shape]).toEqual([name, t.dtype, t.shape]);
      expect(Buffer.from(mine.storage.buffer, mine.storage.byteOffset, mine.storage.byteLength).equals(Buffer.from(t.storage.buffer, t.storage.byteOffset, t.storage.byteLength))).toBe(true);
    }
    const ids = testTokenizer().encodeIds('Hello world');
    const a = step(served.model, [{ cache: new KVCache(served.model.config, 16), tokens: ids }]);
    const b = step(ref, [{ cache: new KVCache(ref.config, 16), tokens: ids }]);
    expect(a).toEqual(b);
  });

  test('bad checkpoint directories are typed errors naming the file', async () => {
    const noTok = path.join(tmp.dir, 'no-tokenizer');
    fs.cpSync(dir, noTok, { recursive: true });
    fs.rmSync(path.join(noTok, 'tokenizer.json'));
    await expect(loadServedModel(noTok)).rejects.toBeInstanceOf(ModelLoadError);
    const wrong = path.join(tmp.dir, 'wrong-shape');
    fs.cpSync(dir, wrong, { recursive: true });
    const cfg = JSON.parse(fs.readFileSync(path.join(wrong, 'config.json'), 'utf8'));
    fs.writeFileSync(path.join(wrong, 'config.json'), JSON.stringify({ ...cfg, intermediate_size: 48 }));
    const err = await loadServedModel(wrong).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CheckpointError);
    expect((err as CheckpointError).tensor).toBe('model.layers.0.mlp.up_proj.weight');
  });

  /** A copy of the test checkpoint with one file rewritten. */
  function variant(name: string, file: string, edit: (json: Record<string, unknown>) => unknown): string {
    const d = path.join(tmp.dir, name);
    fs.cpSync(dir, d, { recursive: true });
    const f = path.join(d, file);
    const out = edit(JSON.parse(fs.readFileSync(f, 'utf8')) as Record<string, unknown>);
    fs.writeFileSync(f, typeof out === 'string' ? out : JSON.stringify(out));
    return d;
  }

  test.each([
    ['not JSON', () => '{"eos_token_id": [2,', '(json)'],
    ['not an object', () => [2, 68], '(root)'],
    ['an eos id beyond the vocabulary', (j: Record<string, unknown>) => ({ ...j, eos_token_id: [2, 68, 5000] }), 'eos_token_id[2]'],
    ['an eos id that is not an integer', (j: Record<string, unknown>) => ({ ...j, eos_token_id: '2' }), 'eos_token_id'],
    ['an empty eos list', (j: Record<string, unknown>) => ({ ...j, eos_token_id: [] }), 'eos_token_id'],
    ['a negative pad id', (j: Record<string, unknown>) => ({ ...j, pad_token_id: -1 }), 'pad_token_id'],
    ['a negative temperature', (j: Record<string, unknown>) => ({ ...j, temperature: -0.5 }), 'temperature'],
    ['top_p 0', (j: Record<string, unknown>) => ({ ...j, top_p: 0 }), 'top_p'],
    ['a fractional top_k', (j: Record<string, unknown>) => ({ ...j, top_k: 2.5 }), 'top_k'],
    ['do_sample as a string', (j: Record<string, unknown>) => ({ ...j, do_sample: 'yes' }), 'do_sample'],
  ])('generation_config.json with %s is a ConfigError naming the file and field', async (_what, edit, field) => {
    const d = variant(`gen-${field.replace(/\W+/g, '-')}-${String(_what).length}`, 'generation_config.json', edit);
    const e = await loadServedModel(d).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ConfigError);
    expect([(e as ConfigError).field, (e as ConfigError).file]).toEqual([field, path.join(d, 'generation_config.json')]);
  });

  test('a valid generation_config.json loads with its fields', async () => {
    const d = variant('gen-ok', 'generation_config.json', (j) => ({ ...j, temperature: 0.8, top_p: 0.9, top_k: 0, do_sample: true, transformers_version: '4.56.0' }));
    expect((await loadServedModel(d)).generationConfig).toMatchObject({ eos_token_id: [2, 68, 72], temperature: 0.8, top_p: 0.9 });
  });

  test('a tokenizer with ids beyond vocab_size is a ModelLoadError naming tokenizer.json and the field', async () => {
    const V = served.model.config.vocab_size;
    const small = variant('vocab-small', 'config.json', (j) => ({ ...j, vocab_size: V - 10 }));
    // Shrinking config.json also breaks the weight shapes; the tokenizer is checked first.
    let e = await loadServedModel(small).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ModelLoadError);
    expect([(e as ModelLoadError).path, (e as ModelLoadError).field]).toEqual([path.join(small, 'tokenizer.json'), 'model.vocab']);
    expect((e as Error).message).toMatch(new RegExp(`has id ${V - 1}, beyond vocab_size ${V - 10}`));
    const added = variant('vocab-added', 'tokenizer.json', (j) => ({ ...j, added_tokens: [...(j.added_tokens as unknown[]), { id: V + 5, content: '<|extra|>', single_word: false, lstrip: false, rstrip: false, normalized: false, special: true }] }));
    e = await loadServedModel(added).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ModelLoadError);
    expect([(e as ModelLoadError).field, (e as Error).message]).toEqual(['added_tokens', expect.stringContaining(`"<|extra|>" has id ${V + 5}`)]);
    // A server given such a checkpoint says why on every route instead of blaming requests.
    const server = createServer({ model: loadServedModel(added) });
    const url = await server.listen(0);
    await server.ready.catch(() => {});
    const r = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'x', messages: [{ role: 'user', content: 'Hi' }] }) });
    expect(r.status).toBe(503);
    expect((await json(r)).error).toMatchObject({ code: 'model_load_failed', message: expect.stringContaining('tokenizer.json: added_tokens:') });
    await server.close();
  });

  test('--adapter: a PEFT LoRA adapter is merged at load; one saved beside the weights too; a bad one is an AdapterError', async () => {
    const base = loadCheckpoint(dir, { precision: 'f32' }).model;
    const adapter = LoraAdapter.init(base.config, parseLoraConfig({ r: 2, lora_alpha: 4, target_modules: 'all-linear' }), 5);
    for (const { B } of adapter.modules.values()) B.data.fill(0.05);
    const adapterDir = path.join(tmp.dir, 'adapter');
    saveAdapter(adapter, adapterDir, dir);
    const want = mergeAdapter(base, adapter);
    const ids = testTokenizer().encodeIds('Hello world');
    const logits = (m: ServedModel['model']) => step(m, [{ cache: new KVCache(m.config, 16), tokens: ids }]);
    const merged = await loadServedModel(dir, { precision: 'f32', adapter: adapterDir });
    expect(logits(merged.model)).toEqual(logits(want));
    expect(logits(merged.model)).not.toEqual(logits(base));
    const beside = path.join(tmp.dir, 'with-adapter');
    fs.cpSync(dir, beside, { recursive: true });
    fs.cpSync(adapterDir, beside, { recursive: true });
    expect(logits((await loadServedModel(beside, { precision: 'f32' })).model)).toEqual(logits(want));
    await expect(loadServedModel(dir, { adapter: path.join(tmp.dir, 'nowhere') })).rejects.toBeInstanceOf(AdapterError);
  });

  test('/health reports the progress of a load: bytes of the weights read, of all', async () => {
    const reports: { loadedBytes: number; totalBytes: number; tensor: string }[] = [];
    const loaded = await loadServedModel(dir, { onLoadProgress: (p) => reports.push(p) });
    expect(reports.length).toBe(loaded.model.params.size);
    const total = reports[0]!.totalBytes;
    expect(total).toBe([...loaded.model.params.values()].reduce((n, t) => n + t.storage.byteLength * (t.dtype === 'f32' && t.shape.length < 2 ? 0.5 : 1), 0));
    expect(reports.at(-1)!.loadedBytes).toBe(total);
    expect(reports.every((r, i) => i === 0 || r.loadedBytes > reports[i - 1]!.loadedBytes)).toBe(true);
    let finish!: () => void;
    const server = createServer({ model: (onProgress) => new Promise<ServedModel>((r) => { onProgress({ loadedBytes: 3 << 20, totalBytes: 12 << 20, tensor: 'model.layers.0.mlp.up_proj.weight' }); finish = () => r(loaded); }) });
    const url = await server.listen(0);
    const h = await fetch(`${url}/health`);
    expect(h.status).toBe(503);
    expect(await json(h)).toEqual({ error: { message: 'Loading model (25 % of 12 MiB)', type: 'unavailable_error', param: null, code: 'model_loading' }, status: 'loading', progress: 0.25, loaded_bytes: 3 << 20, total_bytes: 12 << 20 });
    expect(parsePrometheus(await (await fetch(`${url}/metrics`)).text()).get('apertus_model_load_progress')).toBe(0.25);
    finish();
    await server.ready;
    expect((await fetch(`${url}/health`)).status).toBe(200);
    await server.close();
  });

  test('/health is 503 while the model loads, then 200; a failed load stays 503 with the reason', async () => {
    let resolve!: (m: ServedModel) => void;
    const server = createServer({ model: new Promise<ServedModel>((r) => (resolve = r)) });
    const url = await server.listen(0);
    const h = await fetch(`${url}/health`);
    expect(h.status).toBe(503);
    expect(await json(h)).toEqual({ error: { message: 'Loading model', type: 'unavailable_error', param: null, code: 'model_loading' }, status: 'loading', progress: 0, loaded_bytes: 0, total_bytes: null });
    expect((await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).status).toBe(503);
    expect(parsePrometheus(await (await fetch(`${url}/metrics`)).text()).get('apertus_model_loaded')).toBe(0);
    resolve(served);
    await server.ready;
    expect((await fetch(`${url}/health`)).status).toBe(200);
    expect(await json(fetch(`${url}/health`))).toEqual({ status: 'ok', device: 'cpu', adapter: null });
    await server.close();

    const failing = createServer({ model: Promise.reject(new Error('disk on fire')) });
    const furl = await failing.listen(0);
    await expect(failing.ready).rejects.toThrow('disk on fire');
    const f = await fetch(`${furl}/health`);
    expect(f.status).toBe(503);
    expect((await json(f)).error).toMatchObject({ code: 'model_load_failed', message: expect.stringContaining('disk on fire') });
    await failing.close();
  });
});

function startStream(url: string, maxTokens: number): Promise<Response> {
  return fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'tiny-ckpt', messages: [{ role: 'user', content: 'Hi' }], max_tokens: maxTokens, stream: true }),
  });
}

describe('graceful shutdown', () => {
  test("mode 'finish': in-flight streams complete, new requests are refused, WebSockets get 1001", async () => {
    const server = createServer({ model: served });
    const url = await server.listen(0);
    const ws = new WebSocket(`${url.replace('http', 'ws')}/v1/ws`);
    await new Promise((r) => ws.once('open', r));
    const wsClosed = new Promise<number>((r) => ws.once('close', (code) => r(code)));
    const res = await startStream(url, 60);
    const closing = server.close({ mode: 'finish' });
    const late = await fetch(`${url}/health`).then((r) => r.status, () => 'refused');
    expect([503, 'refused']).toContain(late);
    const events = await readSse(res);
    expect(events[events.length - 1]).toBe('[DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e));
    expect(chunks.some((c) => c.error)).toBe(false);
    // It ran to its end (the token limit, or the model's end-of-sequence token), not cut off.
    expect(['length', 'stop']).toContain(chunks[chunks.length - 1].choices[0].finish_reason);
    await closing;
    expect(await wsClosed).toBe(1001);
    expect(server.httpServer.listening).toBe(false);
  });

  test("mode 'cancel': streams get a mid-stream server_shutdown error, pending JSON requests a 503", async () => {
    const server = createServer({ model: served, maxBatch: 1 });
    const url = await server.listen(0);
    const res = await startStream(url, 300);
    const queued = fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'tiny-ckpt', prompt: 'Hi', max_tokens: 5 }) });
    while (server.scheduler!.queued < 1) await new Promise((r) => setTimeout(r, 2));
    const ws = new WebSocket(`${url.replace('http', 'ws')}/v1/ws`);
    await new Promise((r) => ws.once('open', r));
    const wsMessages: { type: string; error?: { code: string } }[] = [];
    ws.on('message', (d) => wsMessages.push(JSON.parse(d.toString())));
    ws.send(JSON.stringify({ type: 'generate', id: 1, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 100 }));
    while (server.scheduler!.queued < 2) await new Promise((r) => setTimeout(r, 2));
    const wsClosed = new Promise<number>((r) => ws.once('close', (code) => r(code)));
    await server.close({ mode: 'cancel' });
    const events = await readSse(res);
    expect(events[events.length - 1]).toBe('[DONE]');
    expect(JSON.parse(events[events.length - 2]!).error).toMatchObject({ type: 'unavailable_error', code: 'server_shutdown' });
    const q = await queued;
    expect(q.status).toBe(503);
    expect((await json(q)).error.code).toBe('server_shutdown');
    expect(await wsClosed).toBe(1001);
    expect(wsMessages.filter((m) => m.type === 'error').map((m) => m.error!.code)).toEqual(['server_shutdown']);
  });
});

describe('apertus-serve CLI', () => {
  test('starts a server from a checkpoint directory with the given limits', async () => {
    const out: string[] = [];
    const server = await runServeCli(['--model', dir, '--port', '0', '--max-batch', '2', '--max-queue', '3', '--ctx', '256', '--api-key', 'k1', '--name', 'my-model', '--quiet'], { out: (s) => out.push(s), err: (s) => out.push(s) });
    expect(server).not.toBeNull();
    await server!.ready;
    expect(server!.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(server!.scheduler!.maxBatch).toBe(2);
    expect(server!.scheduler!.maxQueue).toBe(3);
    expect(server!.scheduler!.contextLength).toBe(256);
    const models = await json(fetch(`${server!.url}/v1/models`, { headers: { authorization: 'Bearer k1' } }));
    expect(models.data[0]).toMatchObject({ id: 'my-model', max_model_len: 256 });
    expect((await fetch(`${server!.url}/v1/models`)).status).toBe(401);
    await server!.close();
    expect(out.join('')).toContain(`listening on ${server!.url} (loading ${dir} on cpu)`);
  });

  test('a training run directory, or its model/, serves under the run name, also in the page title', async () => {
    const run = path.join(tmp.dir, 'udhr-run');
    fs.cpSync(dir, path.join(run, 'model'), { recursive: true });
    for (const location of [run, path.join(run, 'model')]) {
      const server = await runServeCli(['--model', location, '--port', '0', '--quiet'], { out: () => {}, err: () => {} });
      await server!.ready;
      const models = await json(fetch(`${server!.url}/v1/models`));
      expect(models.data[0]).toMatchObject({ id: 'udhr-run' });
      expect(await (await fetch(`${server!.url}/`)).text()).toContain('<title>udhr-run · Apertus chat</title>');
      await server!.close();
    }
  });

  test('a port in use or out of range is one typed error, not a stack', async () => {
    const quiet = { out: () => {}, err: () => {} };
    const first = await runServeCli(['--model', dir, '--port', '0', '--quiet'], quiet);
    const port = new URL(first!.url).port;
    const e = await runServeCli(['--model', dir, '--port', port, '--quiet'], quiet).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ListenError);
    expect((e as ListenError).code).toBe('EADDRINUSE');
    expect((e as Error).message).toBe(`cannot listen on 127.0.0.1:${port}: the port is in use (another server is running there; pick another --port)`);
    await first!.close();
    await expect(runServeCli(['--model', dir, '--port', '99999'], quiet)).rejects.toMatchObject({ option: '--port', message: "--port: must be an integer in [0, 65535], got '99999'" });
  });

  test('bad arguments are CliErrors naming the option; --help prints usage', async () => {
    const quiet = { out: () => {}, err: () => {} };
    await expect(runServeCli(['--port', '1'], quiet)).rejects.toBeInstanceOf(CliError);
    await expect(runServeCli(['--model', dir, '--port', 'abc'], quiet)).rejects.toMatchObject({ option: '--port' });
    await expect(runServeCli(['--model', dir, '--max-batch', '0'], quiet)).rejects.toMatchObject({ option: '--max-batch' });
    for (const cap of ['0', '-5', '1.5']) await expect(runServeCli(['--model', dir, '--prefix-cache', cap], quiet)).rejects.toMatchObject({ option: '--prefix-cache' });
    await expect(runServeCli(['--model', dir, '--device', 'tpu'], quiet)).rejects.toMatchObject({ option: '--device' });
    await expect(runServeCli(['--model', dir, '--precision', 'fp8'], quiet)).rejects.toMatchObject({ option: '--precision' });
    await expect(runServeCli(['--model', dir, '--kv-cache-type', 'q8_0'], quiet)).rejects.toMatchObject({ option: '--kv-cache-type' });
    const help: string[] = [];
    expect(await runServeCli(['--help'], { out: (s) => help.push(s), err: () => {} })).toBeNull();
    expect(help.join('')).toContain('--max-queue <n>');
  });
});

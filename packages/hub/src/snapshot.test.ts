import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { HubAccessError, HubDownloadError, HubNoWeightsError, HubNotFoundError, HubOfflineError } from './errors';
import type { DownloadProgress } from './fetch-file';
import { downloadModel, type HubOptions } from './snapshot';
import { parseHubId } from './spec';
import { startHubServer, type HubServer } from './testing';

const sha256 = (b: Uint8Array | string) => createHash('sha256').update(b).digest('hex');
const gitId = (b: Uint8Array) => createHash('sha1').update(`blob ${b.length}\0`).update(b).digest('hex');
const WEIGHTS = new Uint8Array(randomBytes(300_000));
const SHARD1 = new Uint8Array(randomBytes(70_000));
const SHARD2 = new Uint8Array(randomBytes(50_000));
const CONFIG = '{"model_type": "apertus"}';
const checkpoint = { 'config.json': CONFIG, 'model.safetensors': WEIGHTS, 'tokenizer.json': '{"model": {}}', 'README.md': '# tiny' };
const id = (s: string) => parseHubId(s)!;

/** The URL of a loopback port nothing listens on. */
async function closedPort(): Promise<string> {
  const s = http.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as AddressInfo;
  await new Promise((r) => s.close(r));
  return `http://127.0.0.1:${port}`;
}

let hub: HubServer;
let root: string;
let n = 0;
/** A fresh cache directory per test, with HF_ENDPOINT at the test Hub and no token. */
const fresh = (extra: Record<string, string> = {}): HubOptions & { env: Record<string, string> } => ({ env: { HF_ENDPOINT: hub.url, HF_HUB_CACHE: path.join(root, `cache-${++n}`), HF_HOME: path.join(root, `home-${n}`), ...extra }, retryDelayMs: 10 });

beforeAll(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'hub-snapshot-'));
  hub = await startHubServer({
    pageSize: 2,
    repos: {
      'acme/tiny': { files: checkpoint, revisions: { v1: { ...checkpoint, 'config.json': '{"v": 1}' } } },
      'acme/sharded': {
        files: {
          'config.json': CONFIG, 'model-00001-of-00002.safetensors': SHARD1, 'model-00002-of-00002.safetensors': SHARD2, 'model-99999.safetensors': 'not named by the index',
          'model.safetensors.index.json': JSON.stringify({ metadata: {}, weight_map: { a: 'model-00001-of-00002.safetensors', b: 'model-00002-of-00002.safetensors', c: 'model-00001-of-00002.safetensors' } }),
        },
      },
      'acme/tiny-GGUF': { files: { 'tiny-Q8_0.gguf': 'q8', 'tiny-Q4_K_M.gguf': 'q4km', 'tiny-F16.gguf': 'f16', 'mmproj-tiny-Q4_K_M.gguf': 'projector', 'sub/tiny-IQ4_XS.gguf': 'iq4' } },
      'acme/gated': { files: checkpoint, gated: { granted: ['hf_granted'] } },
      'acme/secret': { files: checkpoint, private: { tokens: ['hf_granted'] } },
      'acme/docs': { files: { 'README.md': '# no weights', 'pytorch_model.bin': 'torch' } },
    },
    tokens: ['hf_granted', 'hf_other'],
  });
});
afterAll(async () => {
  await hub.close();
  fs.rmSync(root, { recursive: true, force: true });
});
afterEach(() => void (hub.requests.length = 0));

describe('downloadModel: the Hugging Face cache layout', () => {
  test('refs/main, snapshots/<commit>/<file> → ../../blobs/<etag> (SHA-256 for LFS files, git blob id otherwise), trees/<commit>.json', async () => {
    const o = fresh();
    const events: DownloadProgress[] = [];
    const snap = await downloadModel(id('acme/tiny'), { ...o, onProgress: (p) => events.push(p) });
    const commit = hub.commit('acme/tiny');
    const repoDir = path.join(o.env.HF_HUB_CACHE, 'models--acme--tiny');
    expect(snap).toMatchObject({ repo: 'acme/tiny', revision: 'main', commit, dir: path.join(repoDir, 'snapshots', commit), path: path.join(repoDir, 'snapshots', commit), fromCache: false });
    expect(snap.model).toEqual({ format: 'safetensors', files: ['config.json', 'model.safetensors', 'tokenizer.json'], index: null });
    expect(fs.readFileSync(path.join(repoDir, 'refs', 'main'), 'utf8')).toBe(commit);
    const link = path.join(snap.dir, 'model.safetensors');
    expect(fs.readlinkSync(link)).toBe(`../../blobs/${sha256(WEIGHTS)}`);
    expect(fs.readlinkSync(path.join(snap.dir, 'config.json'))).toBe(`../../blobs/${gitId(Buffer.from(CONFIG))}`);
    expect(new Uint8Array(fs.readFileSync(link))).toEqual(WEIGHTS);
    expect(fs.existsSync(path.join(snap.dir, 'README.md'))).toBe(false);
    expect(fs.readdirSync(path.join(repoDir, 'blobs')).sort()).toEqual([sha256(WEIGHTS), gitId(Buffer.from(CONFIG)), gitId(Buffer.from(checkpoint['tokenizer.json']))].sort());
    const tree = JSON.parse(fs.readFileSync(path.join(repoDir, 'trees', `${commit}.json`), 'utf8')) as { format_version: number; files: Record<string, unknown> };
    expect(tree.format_version).toBe(1);
    expect(tree.files['model.safetensors']).toEqual({ size: WEIGHTS.length, blob_id: expect.stringMatching(/^[0-9a-f]{40}$/), lfs_sha256: sha256(WEIGHTS), lfs_size: WEIGHTS.length });
    // Progress: monotonic, ending at the total of the three files.
    const total = WEIGHTS.length + CONFIG.length + checkpoint['tokenizer.json'].length;
    expect(events.at(-1)).toMatchObject({ repo: 'acme/tiny', bytes: total, total });
    expect(events.every((e, i) => i === 0 || e.bytes >= events[i - 1]!.bytes)).toBe(true);
    expect(new Set(events.map((e) => e.file))).toEqual(new Set(['config.json', 'model.safetensors', 'tokenizer.json']));
  });

  test('a second run asks only for the commit of main; offline (HF_HUB_OFFLINE=1) or with the Hub gone it asks nothing', async () => {
    const o = fresh();
    const first = await downloadModel(id('acme/tiny'), o);
    hub.requests.length = 0;
    const again = await downloadModel(id('acme/tiny'), o);
    expect(again.dir).toBe(first.dir);
    expect(hub.requests.map((r) => r.url.split('?')[0])).toEqual(['/api/models/acme/tiny/revision/main']);
    hub.requests.length = 0;
    const offline = await downloadModel(id('acme/tiny'), { ...o, env: { ...o.env, HF_HUB_OFFLINE: '1' } });
    expect(offline).toMatchObject({ dir: first.dir, fromCache: true });
    const byCommit = await downloadModel(id(`acme/tiny@${first.commit}`), o);
    expect(byCommit).toMatchObject({ dir: first.dir, fromCache: true });
    expect(hub.requests).toEqual([]);
    // An unreachable Hub: the cached snapshot of refs/main.
    const gone = await downloadModel(id('acme/tiny'), { ...o, env: { ...o.env, HF_ENDPOINT: await closedPort() } });
    expect(gone).toMatchObject({ dir: first.dir, fromCache: true });
    // A cache without trees/ (older huggingface_hub): the snapshot's files are the listing.
    fs.rmSync(path.join(o.env.HF_HUB_CACHE, 'models--acme--tiny', 'trees'), { recursive: true });
    const bare = await downloadModel(id('acme/tiny'), { ...o, env: { ...o.env, HF_HUB_OFFLINE: '1' } });
    expect(bare).toMatchObject({ dir: first.dir, fromCache: true, model: first.model });
  });

  test('offline or unreachable without a cached snapshot: one line naming the cache', async () => {
    const o = fresh({ HF_HUB_OFFLINE: 'true' });
    const e = await downloadModel(id('acme/tiny'), o).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(HubOfflineError);
    expect((e as Error).message).toBe(`acme/tiny: HF_HUB_OFFLINE is set, and the Hugging Face cache (${o.env.HF_HUB_CACHE}) has no snapshot of main`);
    const closed = await closedPort();
    const u = await downloadModel(id('acme/tiny'), fresh({ HF_ENDPOINT: closed })).catch((x: unknown) => x);
    expect(u).toBeInstanceOf(HubOfflineError);
    expect((u as Error).message).toBe(`acme/tiny: cannot reach ${closed} (ECONNREFUSED), and the Hugging Face cache (${path.join(root, `cache-${n}`)}) has no snapshot of main`);
    expect(hub.requests).toEqual([]);
  });

  test('a revision (tag), its own commit and ref; the listing is read in pages', async () => {
    const o = fresh();
    const snap = await downloadModel(id('acme/tiny@v1'), o);
    expect(snap.commit).toBe(hub.commit('acme/tiny', 'v1'));
    expect(fs.readFileSync(path.join(snap.dir, 'config.json'), 'utf8')).toBe('{"v": 1}');
    expect(fs.readFileSync(path.join(o.env.HF_HUB_CACHE, 'models--acme--tiny', 'refs', 'v1'), 'utf8')).toBe(snap.commit);
    expect(hub.requests.filter((r) => r.url.includes('/tree/')).map((r) => new URL(r.url, hub.url).searchParams.get('cursor'))).toEqual([null, '2']); // 4 files, 2 a page
  });

  test('main moved: the new commit is a new snapshot; unchanged blobs are linked, not downloaded', async () => {
    const o = fresh();
    await downloadModel(id('acme/tiny'), o);
    const old = hub.commit('acme/tiny');
    const moved = hub.push('acme/tiny', { ...checkpoint, 'config.json': '{"moved": true}' });
    hub.requests.length = 0;
    const snap = await downloadModel(id('acme/tiny'), o);
    expect(snap.commit).toBe(moved);
    expect(new Uint8Array(fs.readFileSync(path.join(snap.dir, 'model.safetensors')))).toEqual(WEIGHTS);
    expect(hub.requests.filter((r) => r.url.includes('/resolve/')).map((r) => r.url)).toEqual([`/acme/tiny/resolve/${moved}/config.json`]);
    hub.push('acme/tiny', checkpoint); // back to the original files (a third commit)
    expect(old).not.toBe(moved);
  });

  test('a sharded checkpoint: the index, then the shards it names (not other .safetensors files)', async () => {
    const snap = await downloadModel(id('acme/sharded'), fresh());
    expect(snap.model).toEqual({ format: 'safetensors', files: ['config.json', 'model.safetensors.index.json', 'model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors'], index: 'model.safetensors.index.json' });
    expect(new Uint8Array(fs.readFileSync(path.join(snap.dir, 'model-00002-of-00002.safetensors')))).toEqual(SHARD2);
    expect(fs.existsSync(path.join(snap.dir, 'model-99999.safetensors'))).toBe(false);
  });

  test('a GGUF repository: :TYPE picks the file as llama.cpp does, no type picks Q4_K_M; only that file is downloaded', async () => {
    const o = fresh();
    const q8 = await downloadModel(id('acme/tiny-GGUF:q8_0'), o);
    expect(q8.model).toEqual({ format: 'gguf', file: 'tiny-Q8_0.gguf' });
    expect(q8.path).toBe(path.join(q8.dir, 'tiny-Q8_0.gguf'));
    expect(fs.readdirSync(q8.dir)).toEqual(['tiny-Q8_0.gguf']);
    expect((await downloadModel(id('acme/tiny-GGUF'), o)).model).toEqual({ format: 'gguf', file: 'tiny-Q4_K_M.gguf' });
    expect((await downloadModel(id('acme/tiny-GGUF:IQ4_XS'), o)).path).toBe(path.join(q8.dir, 'sub', 'tiny-IQ4_XS.gguf'));
    const e = await downloadModel(id('acme/tiny-GGUF:Q5_K_M'), o).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(HubNoWeightsError);
    expect((e as Error).message).toBe('acme/tiny-GGUF:Q5_K_M: no GGUF file of type Q5_K_M (it has sub/tiny-IQ4_XS.gguf, tiny-F16.gguf, tiny-Q4_K_M.gguf, tiny-Q8_0.gguf)');
  });
});

describe('downloadModel: resumable and checked', () => {
  test('a connection dropped mid-file is resumed with a Range request from the bytes received', async () => {
    hub.dropAt('model.safetensors', 123_457, 2);
    const snap = await downloadModel(id('acme/tiny'), fresh());
    expect(new Uint8Array(fs.readFileSync(path.join(snap.dir, 'model.safetensors')))).toEqual(WEIGHTS);
    // Resumed from the bytes that arrived before each drop (a socket cut loses what was in flight).
    const ranges = hub.requests.filter((r) => r.method === 'GET' && r.url.startsWith('/_cdn/')).map((r) => r.range);
    expect(ranges[0]).toBeNull();
    const starts = ranges.slice(1).map((r) => Number(/^bytes=(\d+)-$/.exec(r ?? '')?.[1]));
    expect(starts.length).toBeGreaterThanOrEqual(1);
    expect(starts.every((s, i) => s > 0 && s <= 123_457 && (i === 0 || s > starts[i - 1]!))).toBe(true);
  });

  test('a run stopped mid-file leaves blobs/<etag>.incomplete; the next run asks only for the rest', async () => {
    const o = fresh();
    const stop = new AbortController();
    const first = await downloadModel(id('acme/tiny'), { ...o, signal: stop.signal, onProgress: (p) => p.file === 'model.safetensors' && p.fileBytes > 100_000 && stop.abort() }).catch((e: unknown) => e);
    expect((first as Error).name).toBe('AbortError');
    const partial = path.join(o.env.HF_HUB_CACHE, 'models--acme--tiny', 'blobs', `${sha256(WEIGHTS)}.incomplete`);
    const kept = fs.statSync(partial).size;
    expect(kept).toBeGreaterThan(100_000);
    expect(new Uint8Array(fs.readFileSync(partial))).toEqual(WEIGHTS.subarray(0, kept));
    hub.requests.length = 0;
    const snap = await downloadModel(id('acme/tiny'), o);
    expect(new Uint8Array(fs.readFileSync(path.join(snap.dir, 'model.safetensors')))).toEqual(WEIGHTS);
    expect(hub.requests.filter((r) => r.url.startsWith('/_cdn/')).map((r) => r.range)).toEqual([`bytes=${kept}-`]);
    expect(fs.existsSync(partial)).toBe(false);
  });

  test('content that does not hash to the listing is discarded and reported; nothing becomes a blob', async () => {
    const o = fresh();
    const corrupt: typeof fetch = async (input, init) => {
      const res = await fetch(input, init);
      if (!String(input).includes('/resolve/') || !String(input).endsWith('model.safetensors')) return res;
      const bytes = new Uint8Array(await res.arrayBuffer());
      bytes[7]! ^= 1;
      return new Response(bytes, { status: res.status, headers: res.headers });
    };
    const e = await downloadModel(id('acme/tiny'), { ...o, fetch: corrupt }).catch((x: unknown) => x);
    expect(e, String(e)).toBeInstanceOf(HubDownloadError);
    expect((e as Error).message).toMatch(new RegExp(`^acme/tiny: model\\.safetensors: sha256 [0-9a-f]{64} differs from the Hub's ${sha256(WEIGHTS)} \\(the download was discarded\\)$`));
    const blobs = fs.readdirSync(path.join(o.env.HF_HUB_CACHE, 'models--acme--tiny', 'blobs'));
    expect(blobs.some((b) => b.startsWith(sha256(WEIGHTS)))).toBe(false);
    expect(fs.existsSync(path.join(o.env.HF_HUB_CACHE, 'models--acme--tiny', 'snapshots', hub.commit('acme/tiny'), 'model.safetensors'))).toBe(false);
  });
});

describe('downloadModel: access and bad ids', () => {
  test('a gated repository without a token: one line naming HF_TOKEN and the licence page', async () => {
    const e = await downloadModel(id('acme/gated'), fresh()).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(HubAccessError);
    expect(e).toMatchObject({ reason: 'gated', status: 401 });
    expect((e as Error).message).toBe(`acme/gated: a gated model: accept its licence on ${hub.url}/acme/gated (logged in), then set HF_TOKEN to an access token of that account (${hub.url}/settings/tokens)`);
    const other = await downloadModel(id('acme/gated'), fresh({ HF_TOKEN: 'hf_other' })).catch((x: unknown) => x);
    expect(other).toMatchObject({ reason: 'gated', status: 403, message: `acme/gated: a gated model, and the account of HF_TOKEN has no access yet: accept its licence on ${hub.url}/acme/gated (logged in as that account)` });
  });

  test('HF_TOKEN, or the token file huggingface_hub writes ($HF_HOME/token, HF_TOKEN_PATH), opens it', async () => {
    const o = fresh({ HF_TOKEN: 'hf_granted' });
    expect((await downloadModel(id('acme/gated'), o)).model.format).toBe('safetensors');
    expect(hub.requests.filter((r) => r.url.includes('/resolve/')).every((r) => r.authorization === 'Bearer hf_granted')).toBe(true);
    // The CDN's signed URL gets no token (fetch drops Authorization on a cross-origin redirect; here the path is signed).
    const home = fresh();
    fs.mkdirSync(home.env.HF_HOME, { recursive: true });
    fs.writeFileSync(path.join(home.env.HF_HOME, 'token'), 'hf_granted\n');
    expect((await downloadModel(id('acme/gated'), home)).model.format).toBe('safetensors');
    const tokenPath = path.join(root, 'elsewhere-token');
    fs.writeFileSync(tokenPath, 'hf_granted');
    expect((await downloadModel(id('acme/secret'), fresh({ HF_TOKEN_PATH: tokenPath }))).model.format).toBe('safetensors');
  });

  test('unknown repository, revision, a private one without a token, an unknown token, no weights: typed one-line errors', async () => {
    const cases: [string, Record<string, string>, unknown, string][] = [
      ['acme/nothing', {}, HubNotFoundError, `acme/nothing: no such model on ${hub.url} (if it is private, set HF_TOKEN)`],
      ['acme/nothing', { HF_TOKEN: 'hf_other' }, HubNotFoundError, `acme/nothing: no such model on ${hub.url}`],
      ['acme/secret', {}, HubNotFoundError, `acme/secret: no such model on ${hub.url} (if it is private, set HF_TOKEN)`],
      ['acme/tiny@v9', {}, HubNotFoundError, `acme/tiny@v9: no such revision (branch, tag or commit) on ${hub.url}`],
      ['acme/tiny', { HF_TOKEN: 'hf_unknown' }, HubAccessError, `acme/tiny: ${hub.url} does not accept HF_TOKEN (invalid or expired: make a new one at ${hub.url}/settings/tokens)`],
      ['acme/docs', {}, HubNoWeightsError, 'acme/docs: no weights to load: expected config.json with model.safetensors (or model.safetensors.index.json), or a .gguf file; it has pytorch_model.bin, a format this loader does not read'],
    ];
    for (const [spec, env, type, message] of cases) {
      const e = await downloadModel(id(spec), fresh(env)).catch((x: unknown) => x);
      expect(e, spec).toBeInstanceOf(type);
      expect((e as Error).message, spec).toBe(message);
    }
  });
});

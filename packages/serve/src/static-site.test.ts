// The studio mount: files of the directory under /studio with the cross-origin isolation headers,
// index.html for /studio/, a redirect from /studio, 404 for missing files and paths that leave
// the directory.

import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { runServeCli } from './cli';
import { CliError } from '@apertus/cli';
import { loadServedModel } from './load';
import { createServer, type ApertusServer } from './server';
import { tempDir, writeRandomCheckpoint } from './testing';

const tmp = tempDir();
let server: ApertusServer;
let url: string;

beforeAll(async () => {
  const site = path.join(tmp.dir, 'site');
  fs.mkdirSync(site);
  fs.writeFileSync(path.join(site, 'index.html'), '<!doctype html><title>studio</title>');
  fs.writeFileSync(path.join(site, 'studio.js'), 'export {};');
  fs.writeFileSync(path.join(tmp.dir, 'secret.txt'), 'outside');
  server = createServer({ model: loadServedModel(writeRandomCheckpoint(tmp.dir, 'tiny')), studioDir: site });
  url = await server.listen(0);
});

afterAll(async () => {
  await server?.close();
  tmp.remove();
});

test('/studio/ serves the app cross-origin isolated; /studio redirects; missing and escaping paths are 404', async () => {
  const page = await fetch(`${url}/studio/`);
  expect(page.status).toBe(200);
  expect(page.headers.get('cross-origin-opener-policy')).toBe('same-origin');
  expect(page.headers.get('cross-origin-embedder-policy')).toBe('require-corp');
  expect(page.headers.get('content-type')).toMatch(/^text\/html/);
  // The chat page's protections: no framing, no inline or foreign scripts and styles.
  const csp = page.headers.get('content-security-policy')!;
  for (const directive of ["frame-ancestors 'none'", "default-src 'self'", "style-src 'self'", "object-src 'none'", "base-uri 'none'"]) expect(csp).toContain(directive);
  expect(csp).not.toContain('unsafe-inline');
  expect(page.headers.get('x-content-type-options')).toBe('nosniff');
  expect(await page.text()).toContain('<title>studio</title>');
  const js = await fetch(`${url}/studio/studio.js`);
  expect(js.headers.get('content-type')).toMatch(/^text\/javascript/);
  expect(await js.text()).toBe('export {};');
  const bare = await fetch(`${url}/studio`, { redirect: 'manual' });
  expect(bare.status).toBe(308);
  expect(bare.headers.get('location')).toBe('/studio/');
  expect((await fetch(`${url}/studio/nothing.js`)).status).toBe(404);
  expect((await fetch(`${url}/studio/..%2Fsecret.txt`)).status).toBe(404);
  expect((await fetch(`${url}/studio/studio.js`, { method: 'POST', body: 'x' })).status).toBe(405);
});

test('apertus-serve --studio DIR: served under /studio; a directory without index.html is a CliError naming --studio', async () => {
  const dir = writeRandomCheckpoint(tmp.dir, 'cli-model');
  const quiet = { out: () => {}, err: () => {} };
  const bad = await runServeCli(['--model', dir, '--port', '0', '--studio', tmp.dir, '--quiet'], quiet).catch((e: unknown) => e);
  expect(bad).toBeInstanceOf(CliError);
  expect(bad).toMatchObject({ option: '--studio' });
  const server = await runServeCli(['--model', dir, '--port', '0', '--studio', path.join(tmp.dir, 'site'), '--quiet'], quiet);
  await server!.ready;
  try {
    const page = await fetch(`${server!.url}/studio/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('cross-origin-embedder-policy')).toBe('require-corp');
  } finally {
    await server!.close();
  }
});

test('with --studio the served model is published beside the page, for the studio to load (behind the API key when there is one)', async () => {
  const site = path.join(tmp.dir, 'site');
  const dir = writeRandomCheckpoint(tmp.dir, 'published');
  const open = createServer({ model: loadServedModel(dir), studioDir: site });
  const keyed = createServer({ model: loadServedModel(dir), studioDir: site, apiKey: 'sk-x' });
  const [a, b] = [await open.listen(0), await keyed.listen(0)];
  await Promise.all([open.ready, keyed.ready]);
  const index = await fetch(`${a}/studio/served.json`);
  expect(index.headers.get('cross-origin-embedder-policy')).toBe('require-corp');
  expect(await index.json()).toEqual({ name: 'published', url: 'served/' });
  for (const f of ['config.json', 'model.safetensors', 'tokenizer.json']) {
    const r = await fetch(`${a}/studio/served/${f}`);
    expect([f, r.status]).toEqual([f, 200]);
    expect(Buffer.from(await r.arrayBuffer()).equals(fs.readFileSync(path.join(dir, f)))).toBe(true);
  }
  for (const f of ['secret.txt', '..%2Fsecret.txt', 'adapter_config.json']) expect((await fetch(`${a}/studio/served/${f}`)).status).toBe(404);
  expect((await fetch(`${b}/studio/served.json`)).status).toBe(401);
  expect((await fetch(`${b}/studio/served.json`, { headers: { authorization: 'Bearer sk-x' } })).status).toBe(200);
  await open.close();
  await keyed.close();
});

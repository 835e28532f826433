// The studio in headless Chromium (Debian's chromium, playwright-core), served by apertus-serve
// under /studio. Asked for WebAssembly (`?device=wasm`), it reports its device, opens a model
// directory through the file picker, answers a chat turn with streamed tokens equal to Node's
// greedy answer, trains five steps with the same losses as Node (within 1e-4), plots them and
// offers the checkpoint for download; then opens the same model as a Q8_0 GGUF file and chats with
// it as Node's GGUF loader does. By default it computes on WebGPU (the SwiftShader adapter) in its
// model worker and answers with Node's tokens. Screenshots after the chat turns and after
// training, and a report (chat-only bundle sizes, first-token times) go to test-output/.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { build } from 'esbuild';
import { loadGguf, writeModelGguf } from '@apertus/gguf';
import { loadCheckpoint, saveCheckpoint, ApertusModel, presetConfig } from '@apertus/model';
import { startHubServer } from '@apertus/hub/testing';
import { createServer, loadServedModel, type ApertusServer } from '@apertus/serve';
import { trainOnText } from '@apertus/recipes';
import { isStoredWeight, SWIFTSHADER_ICD } from '@apertus/tensor';
import { buildApertusTokenizerConfig, buildApertusTokenizerJson, loadTokenizerFromDirectory } from '@apertus/tokenizer';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { buildStudio } from '../build.mjs';
import { chatTurn } from './chat';
import type { StudioModel } from './model-source';

const out = path.join(import.meta.dirname, '..', 'test-output');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'apertus-studio-'));
const modelDir = path.join(tmp, 'tiny-model');
const ggufPath = path.join(tmp, 'tiny-model.Q8_0.gguf');
const site = path.join(tmp, 'site');
const PROMPT = 'Grüezi! Wer bist du?';
const TEXT = 'All human beings are born free and equal in dignity and rights. Alle Menschen sind frei und gleich an Würde und Rechten geboren. Tous les êtres humains naissent libres et égaux en dignité et en droits. Tutti gli esseri umani nascono liberi ed eguali in dignità e diritti.';
// Chromium's Dawn finds SwiftShader's Vulkan driver through the loader: name it when no driver is
// named (a machine without it fails the WebGPU test: no adapter, never a skip).
if (process.env.VK_ICD_FILENAMES === undefined && process.env.VK_DRIVER_FILES === undefined) process.env.VK_ICD_FILENAMES = SWIFTSHADER_ICD;

let browser: Browser;
let server: ApertusServer;
let url: string;

/** Wait until the page's status says `done` (or reports an error, which then fails the test with its text). */
async function settled(page: import('playwright-core').Page, done: string, timeout = 90_000): Promise<void> {
  await page.waitForFunction((d) => {
    const s = document.getElementById('status')!;
    return s.dataset['state'] === 'error' || s.textContent === d;
  }, done, { timeout });
  expect(await page.textContent('#status')).toBe(done);
}

function nodeModel(): StudioModel {
  const tokenizer = loadTokenizerFromDirectory(modelDir);
  return { name: 'tiny', model: loadCheckpoint(modelDir, { precision: 'f32' }).model, tokenizer, tokenizerFiles: {} };
}

beforeAll(async () => {
  fs.mkdirSync(out, { recursive: true });
  const json = buildApertusTokenizerJson({ merges: [] });
  // The tiny preset with the byte-level tokenizer's vocabulary (1256), as the studio's own new model.
  const tokenizerConfig = buildApertusTokenizerConfig({ instruct: true });
  const model = ApertusModel.init(presetConfig('tiny', { vocab_size: 1256 }), 7);
  saveCheckpoint(model, modelDir, { dtype: 'f32', files: { 'tokenizer.json': JSON.stringify(json), 'tokenizer_config.json': JSON.stringify(tokenizerConfig) } });
  writeModelGguf(model, ggufPath, { type: 'Q8_0', tokenizer: { json, config: tokenizerConfig }, name: 'tiny' });
  await buildStudio(site);
  server = createServer({ model: new Promise(() => {}), studioDir: site, webPage: false });
  url = await server.listen(0);
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless', '--no-sandbox', '--enable-unsafe-webgpu', '--enable-features=Vulkan', '--use-angle=swiftshader', '--enable-unsafe-swiftshader'] });
});

afterAll(async () => {
  await browser?.close();
  await server?.close({ mode: 'cancel' });
  fs.rmSync(tmp, { recursive: true, force: true });
});

test('served by apertus-serve --studio, the page opens the model the server serves', async () => {
  const serving = createServer({ model: loadServedModel(modelDir), studioDir: site, webPage: false });
  const at = await serving.listen(0);
  await serving.ready;
  const page = await browser.newPage();
  await page.goto(`${at}/studio/?device=wasm`);
  await page.waitForSelector('body[data-ready="1"]');
  await settled(page, 'model ready');
  expect(await page.textContent('#model-name')).toBe('tiny-model (4 layers, hidden 128, vocab 1256)');
  expect(await page.isDisabled('#train')).toBe(false);
  await page.close();
  await serving.close({ mode: 'cancel' });
});

test('chat and training in the tab, as in Node; screenshots and figures in test-output/', async () => {
  const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${url}/studio/?device=wasm`);
  await page.waitForSelector('body[data-ready="1"]');
  expect(await page.evaluate(() => crossOriginIsolated)).toBe(true);
  const device = await page.textContent('#device');
  expect(device).toMatch(/^WebAssembly SIMD · [2-9]\d* threads \(Web Workers\)$/);
  // SwiftShader offers a WebGPU adapter; asked for WebAssembly, the page says so in a notice.
  expect(await page.getAttribute('#device', 'data-webgpu')).toMatch(/swiftshader/);
  expect(await page.textContent('#notices')).toMatch(/WebGPU adapter found .* WebAssembly was asked for .* computing on WebAssembly/);

  await page.setInputFiles('#model-dir', modelDir);
  await settled(page, 'model ready');
  expect(await page.textContent('#model-name')).toContain('4 layers, hidden 128, vocab 1256');

  // Chat: the streamed answer is Node's greedy answer for the same conversation.
  const expected = await chatTurn(nodeModel(), [{ role: 'user', content: PROMPT }], 48, () => {});
  await page.fill('#prompt', PROMPT);
  await page.click('#send');
  await settled(page, 'answered');
  expect(await page.textContent('#answer-1')).toBe(`apertus: ${expected.text}`);
  expect(JSON.parse((await page.getAttribute('#chat-stats', 'data-ids'))!)).toEqual(expected.ids);
  expect(expected.tokens).toBeGreaterThan(0);
  const firstTokenMs = Number(await page.getAttribute('#chat-stats', 'data-first-token-ms'));
  await page.screenshot({ path: path.join(out, 'studio-chat.png') });

  // Training: five steps on the same text give Node's losses.
  const nodeLosses = await trainOnText(nodeModel(), TEXT, { steps: 5, batchSize: 4, seqLength: 64, lr: 2e-3 }, () => {});
  await page.fill('#train-text', TEXT);
  await page.fill('#train-steps', '5');
  await page.click('#train');
  await settled(page, 'trained 5 steps');
  const losses = JSON.parse((await page.getAttribute('#loss-values', 'data-losses'))!) as number[];
  expect(losses).toHaveLength(5);
  for (let i = 0; i < 5; i++) expect(Math.abs(losses[i]! - nodeLosses[i]!), `step ${i + 1}`).toBeLessThan(1e-4);
  expect(losses[4]!).toBeLessThan(losses[0]!);
  expect(await page.textContent('#loss-values')).toContain(`loss ${losses[4]!.toFixed(4)}`);
  expect(await page.locator('#loss-plot svg polyline').count()).toBeGreaterThan(0);
  const links = await page.locator('#downloads a').evaluateAll((as) => as.map((a) => (a as HTMLAnchorElement).download));
  expect(links.sort()).toEqual(['config.json', 'generation_config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json']);
  // Each link gives its file's real size (a config.json of a few hundred bytes is not "0 KiB").
  const sizes = await page.locator('#downloads a').evaluateAll((as) => as.map((a) => a.textContent!));
  for (const s of sizes) expect(s).toMatch(/ \((\d+ B|\d+\.\d KiB|\d+\.\d MiB)\)$/);
  expect(sizes.find((s) => s.startsWith('config.json'))).toMatch(/ \(\d+ B\)$/);
  await page.screenshot({ path: path.join(out, 'studio-trained.png'), fullPage: true });

  // A GGUF file picked in the page: chat with it as Node does with @apertus/gguf's loader.
  await page.setInputFiles('#model-gguf', ggufPath);
  await settled(page, 'model ready');
  expect(await page.textContent('#model-name')).toContain('tiny-model.Q8_0.gguf (4 layers, hidden 128, vocab 1256)');
  // The previous model's figures are gone, and a GGUF model (quantized matrices) cannot be trained.
  for (const id of ['#loss-plot', '#loss-values', '#downloads', '#chat-log']) expect([id, await page.textContent(id)]).toEqual([id, '']);
  expect(await page.isDisabled('#train')).toBe(true);
  const gguf = loadGguf(ggufPath);
  expect([...gguf.model.params.values()].filter(isStoredWeight).length).toBeGreaterThan(0);
  const expectedGguf = await chatTurn({ name: 'gguf', model: gguf.model, tokenizer: gguf.tokenizer!, tokenizerFiles: {} }, [{ role: 'user', content: PROMPT }], 48, () => {});
  await page.fill('#prompt', PROMPT);
  await page.click('#send');
  await settled(page, 'answered');
  expect(expectedGguf.tokens).toBeGreaterThan(0);
  expect(await page.textContent('#answer-1')).toBe(`apertus: ${expectedGguf.text}`);
  const ggufFirstTokenMs = Number(await page.getAttribute('#chat-stats', 'data-first-token-ms'));
  await page.screenshot({ path: path.join(out, 'studio-gguf-chat.png') });
  expect(errors).toEqual([]);

  // The chat-only paths (model directory + chat; GGUF + chat), minified, without the training code.
  const chatBundle = async (contents: string) => {
    const r = await build({ stdin: { contents, resolveDir: import.meta.dirname, loader: 'ts' }, bundle: true, platform: 'browser', format: 'esm', minify: true, write: false, logLevel: 'silent' });
    expect(new TextDecoder().decode(r.outputFiles[0]!.contents)).not.toContain('AdEMAMix');
    return r.outputFiles[0]!.contents.byteLength;
  };
  const chatBytes = await chatBundle("export * from './chat';\nexport * from './model-source';\n");
  const ggufChatBytes = await chatBundle("export * from './chat';\nexport * from './gguf-source';\n");
  const studioBytes = fs.statSync(path.join(site, 'studio.js')).size + fs.statSync(path.join(site, 'worker.js')).size;
  fs.writeFileSync(path.join(out, 'studio-report.json'), JSON.stringify({ device, chatOnlyBundleBytes: chatBytes, ggufChatBundleBytes: ggufChatBytes, studioBundleBytes: studioBytes, firstTokenMs, ggufFirstTokenMs, chatTokens: expected.tokens, ggufChatTokens: expectedGguf.tokens, losses, nodeLosses }, null, 2) + '\n');
});

/**
 * SwiftShader runs the WebGPU kernels on the CPU and compiles a pipeline per kernel shape: about
 * 2.4 s a generated token on a loaded 2-core machine, so the WebGPU chat is four tokens long.
 */
const WEBGPU_TOKENS = 4;

test('a Hub id (?model=owner/name from the loopback Hub): downloaded into the Cache API with progress, answers as Node; a reload reads the cache', async () => {
  const files = Object.fromEntries(fs.readdirSync(modelDir).map((f) => [f, new Uint8Array(fs.readFileSync(path.join(modelDir, f)))]));
  const hub = await startHubServer({ repos: { 'acme/tiny': { files } } });
  try {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    const statuses: string[] = [];
    await page.exposeFunction('reportStatus', (s: string) => statuses.push(s));
    await page.addInitScript(() => {
      new MutationObserver(() => (window as unknown as { reportStatus(s: string): void }).reportStatus(document.getElementById('status')?.textContent ?? '')).observe(document, { subtree: true, childList: true, characterData: true });
    });
    const at = `${url}/studio/?device=wasm&model=acme/tiny&hub=${encodeURIComponent(hub.url)}&max_tokens=12`;
    await page.goto(at);
    await page.waitForSelector('body[data-ready="1"]', { timeout: 120_000 });
    await settled(page, 'model ready');
    expect(await page.textContent('#model-name')).toContain('acme/tiny (4 layers, hidden 128, vocab 1256)');
    expect(statuses.some((t) => /^downloading model\.safetensors: [\d.]+ of [\d.]+ MB$/.test(t))).toBe(true);
    const expected = await chatTurn(nodeModel(), [{ role: 'user', content: PROMPT }], 12, () => {});
    await page.fill('#prompt', PROMPT);
    await page.click('#send');
    await settled(page, 'answered');
    expect(await page.textContent('#answer-1')).toBe(`apertus: ${expected.text}`);
    // Reloaded: one request (the commit of main), the files come from the Cache API.
    hub.requests.length = 0;
    await page.goto(at);
    await page.waitForSelector('body[data-ready="1"]', { timeout: 120_000 });
    await settled(page, 'model ready');
    expect(hub.requests.filter((r) => r.method === 'GET').map((r) => r.url.split('?')[0])).toEqual(['/api/models/acme/tiny/revision/main']);
    expect(errors).toEqual([]);
    await page.close();
  } finally {
    await hub.close();
  }
});

test('on WebGPU (the SwiftShader adapter) in the model worker: the streamed answer is Node\'s greedy answer; training runs', async () => {
  const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${url}/studio/?max_tokens=${WEBGPU_TOKENS}`);
  await page.waitForSelector('body[data-ready="1"]', { timeout: 120_000 });
  // The device names the adapter; no fallback, so no notice.
  expect(await page.textContent('#device')).toMatch(/^WebGPU · .*swiftshader/i);
  expect(await page.locator('#notices li').count()).toBe(0);
  await page.setInputFiles('#model-dir', modelDir);
  await settled(page, 'model ready');
  const expected = await chatTurn(nodeModel(), [{ role: 'user', content: PROMPT }], WEBGPU_TOKENS, () => {});
  expect(expected.tokens).toBe(WEBGPU_TOKENS);
  await page.fill('#prompt', PROMPT);
  await page.click('#send');
  await settled(page, 'answered', 240_000);
  expect(await page.textContent('#answer-1')).toBe(`apertus: ${expected.text}`);
  expect(JSON.parse((await page.getAttribute('#chat-stats', 'data-ids'))!)).toEqual(expected.ids);
  await page.screenshot({ path: path.join(out, 'studio-webgpu-chat.png') });

  // Two training steps on WebGPU: the first loss (before any update) is Node's; the second comes
  // after AdEMAMix's first update, which moves each weight by about lr · sign(gradient), so a
  // gradient element within rounding of zero may move the other way than in Node (seen: 2.5e-4
  // apart): it must have trained (a lower loss), not equal Node to 1e-4.
  const nodeLosses = await trainOnText(nodeModel(), TEXT, { steps: 1, batchSize: 4, seqLength: 64, lr: 2e-3 }, () => {});
  await page.fill('#train-text', TEXT);
  await page.fill('#train-steps', '2');
  await page.click('#train');
  await settled(page, 'trained 2 steps', 300_000);
  const losses = JSON.parse((await page.getAttribute('#loss-values', 'data-losses'))!) as number[];
  expect(losses).toHaveLength(2);
  expect(Math.abs(losses[0]! - nodeLosses[0]!)).toBeLessThan(1e-4);
  expect(losses[1]!).toBeLessThan(losses[0]!);
  expect(await page.locator('#downloads a').count()).toBe(5);
  await page.screenshot({ path: path.join(out, 'studio-webgpu-trained.png'), fullPage: true });
  expect(errors).toEqual([]);
  await page.close();
}, 580_000);

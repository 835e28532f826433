// In-page parity (Debian's Chromium, headless, driven by playwright-core with the system
// executable): the page bundles the same workload as Node runs here and must give the same greedy
// tokens (token for token, 64 of them) and the same training losses (within 1e-4) — on the cpu
// backend's WebAssembly GEMM with Web Workers in a cross-origin isolated page, on one thread in a
// page without isolation (no SharedArrayBuffer: the fallback), and on WebGPU (Chromium's
// SwiftShader adapter): the workload in a Web Worker, the device's own worker (the GPUDevice) in a
// second one. The WebGPU page's losses are compared with Node's on webgpu (the same kernels);
// cpu against webgpu over 20 steps is
// `packages/recipes/src/pretrain/device-parity.test.ts`. Step 1 (the same parameters) and the
// greedy tokens are still compared with Node's cpu backend. The WebGPU worker also generates from
// two GGUF files of a tiny model widened to 256 (Q4_K and Q8_0: the quantized products on the
// device) and must give Node's cpu tokens.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { writeModelGguf } from '@apertus/gguf';
import { ApertusModel, initParameters } from '@apertus/model';
import { SWIFTSHADER_ICD, useDevice } from '@apertus/tensor';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { bundleForBrowser } from './resolve';
import type { WorkerRequest, WorkerResult } from './worker';
import { serveStatic } from './static-server';
import { ggufGreedyTokens, greedyTokens, TINY_256, tinyCheckpoint, trainingLosses } from './workload';

/** Chromium flags: headless, plus a SwiftShader WebGPU adapter (`--enable-unsafe-webgpu …`). */
export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--enable-unsafe-webgpu', '--enable-features=Vulkan', '--use-angle=swiftshader', '--enable-unsafe-swiftshader', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

// Chromium's Dawn finds SwiftShader's Vulkan driver through the loader, as Node's does; name it
// when no driver is named (a machine without it fails the WebGPU test: no adapter, never a skip).
if (process.env.VK_ICD_FILENAMES === undefined && process.env.VK_DRIVER_FILES === undefined) process.env.VK_ICD_FILENAMES = SWIFTSHADER_ICD;

const TOKENS = 64;
const STEPS = 5;
const SEED = 3;
/** Greedy tokens from each GGUF file (SwiftShader: about 2 s a token). */
const GGUF_TOKENS = 8;
const GGUF_TYPES = ['Q4_K', 'Q8_0'] as const;
/**
 * SwiftShader runs the WebGPU kernels on the CPU (Chromium's SwiftShader, with Dawn's workgroup
 * memory zero-initialisation on, which Node turns off); Node's own 5 webgpu steps come on top, so
 * the WebGPU test gets 15 minutes.
 */
const WEBGPU_TIMEOUT_MS = 900_000;

let browser: Browser;
let tmp: string;
let files: Map<string, string | Uint8Array>;
let nodeTokens: number[];
let nodeLosses: number[];
let nodeGgufTokens: number[][];

beforeAll(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'apertus-browser-'));
  const outfile = path.join(tmp, 'page.js');
  const workerfile = path.join(tmp, 'worker.js');
  for (const [entry, out] of [['page.ts', outfile], ['worker.ts', workerfile]] as const) {
    const { nodeImports } = await bundleForBrowser(path.join(import.meta.dirname, entry), { outfile: out });
    expect(nodeImports, entry).toEqual([]);
  }
  const ckpt = tinyCheckpoint(SEED);
  files = new Map<string, string | Uint8Array>([
    ['/index.html', '<!doctype html><meta charset="utf-8"><title>apertus parity</title><script type="module" src="/page.js"></script>'],
    ['/page.js', fs.readFileSync(outfile, 'utf8')],
    ['/worker.js', fs.readFileSync(workerfile, 'utf8')],
    ['/config.json', ckpt.config],
    ['/model.safetensors', ckpt.weights],
  ]);
  const wide = new ApertusModel(TINY_256, initParameters(TINY_256, SEED));
  nodeGgufTokens = GGUF_TYPES.map((type) => {
    const file = path.join(tmp, `tiny.${type}.gguf`);
    writeModelGguf(wide, file, { type });
    const bytes = new Uint8Array(fs.readFileSync(file));
    files.set(`/tiny.${type}.gguf`, bytes);
    return ggufGreedyTokens(bytes, GGUF_TOKENS);
  });
  nodeTokens = await greedyTokens(JSON.parse(ckpt.config), ckpt.weights, TOKENS);
  nodeLosses = trainingLosses(STEPS, SEED);
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
});

afterAll(async () => {
  await browser?.close();
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

/** Open the test page (served with or without cross-origin isolation) and run `work` in it. */
async function withPage<R>(isolated: boolean, work: (page: import('playwright-core').Page) => Promise<R>): Promise<R> {
  const server = await serveStatic(files, isolated);
  const page = await browser.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  try {
    await page.goto(server.url);
    await page.waitForFunction(() => typeof window.runWorkload === 'function');
    const r = await work(page);
    expect(errors).toEqual([]);
    return r;
  } finally {
    await page.close();
    await server.close();
  }
}

async function runInPage(isolated: boolean, steps: number, threads?: number) {
  return withPage(isolated, (page) => page.evaluate((o) => window.runWorkload(o), { tokens: TOKENS, steps, seed: SEED, ...(threads !== undefined ? { threads } : {}) }));
}

async function runInWorker(o: WorkerRequest): Promise<WorkerResult> {
  return withPage(true, (page) => page.evaluate((r) => window.runInWorker(r), o));
}

function expectNodeLosses(losses: number[], want = nodeLosses): void {
  expect(losses).toHaveLength(STEPS);
  for (let i = 0; i < STEPS; i++) expect(Math.abs(losses[i]! - want[i]!), `step ${i + 1}`).toBeLessThan(1e-4);
}

describe('in headless Chromium, on WebAssembly', () => {
  test('cross-origin isolated: Web Workers share the GEMM; 64 greedy tokens and 5 training losses equal Node\'s', async () => {
    const r = await runInPage(true, STEPS, 2);
    expect(r.isolated).toBe(true);
    expect(r.threads).toBe(2);
    expect(r.workers).toBeGreaterThan(0);
    expect(nodeTokens).toHaveLength(TOKENS);
    // Not a degenerate sequence (a random model's greedy output still varies).
    expect(new Set(nodeTokens).size).toBeGreaterThan(4);
    expect(r.tokens).toEqual(nodeTokens);
    expectNodeLosses(r.losses);
    // The losses move: the steps trained something.
    expect(nodeLosses[STEPS - 1]!).toBeLessThan(nodeLosses[0]!);
  });

  test('without isolation (no SharedArrayBuffer): one thread, the same tokens', async () => {
    const r = await runInPage(false, 0);
    expect(r.isolated).toBe(false);
    expect(r.threads).toBe(1);
    expect(r.workers).toBe(0);
    expect(r.tokens).toEqual(nodeTokens);
  });
});

describe('in headless Chromium, on WebGPU', () => {
  test('in a Web Worker, with the device in a second one on the SwiftShader adapter: 64 greedy tokens and 5 training losses equal Node\'s', async () => {
    const r = await runInWorker({ device: 'webgpu', tokens: TOKENS, steps: STEPS, seed: SEED, gguf: GGUF_TYPES.map((t) => `/tiny.${t}.gguf`), ggufTokens: GGUF_TOKENS });
    // The adapter is the browser's (a missing adapter fails enableWebgpu, and so this test).
    expect(r.device).toMatch(/^webgpu \(.*swiftshader/i);
    expect(r.isolated).toBe(true);
    expect(r.tokens).toEqual(nodeTokens);
    // GGUF: Node's cpu tokens, from the quantized products on the device.
    for (const t of nodeGgufTokens) expect(new Set(t).size).toBeGreaterThan(2);
    expect(r.gguf).toEqual(nodeGgufTokens);
    // The work ran on the device: kernels dispatched, and reads only of what the host needs (at
    // most a few per token or step, never one per kernel).
    expect(r.counters.dispatches).toBeGreaterThan(r.counters.readbacks * 10);
    expect(Math.abs(r.losses[0]! - nodeLosses[0]!)).toBeLessThan(1e-4);
    await useDevice('webgpu');
    try {
      expectNodeLosses(r.losses, trainingLosses(STEPS, SEED));
    } finally {
      await useDevice('cpu');
    }
  }, WEBGPU_TIMEOUT_MS);
});

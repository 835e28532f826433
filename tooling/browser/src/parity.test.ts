// In-page parity (Debian's Chromium, headless, driven by playwright-core with the system
// executable): the page bundles the same workload as Node runs here and must give the same greedy
// tokens (token for token, 64 of them) and the same training losses (within 1e-4) — on the cpu
// backend's WebAssembly GEMM with Web Workers in a cross-origin isolated page, and on one thread
// in a page without isolation (no SharedArrayBuffer: the fallback).

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { bundleForBrowser } from './resolve';
import { serveStatic } from './static-server';
import { greedyTokens, tinyCheckpoint, trainingLosses } from './workload';

/** Chromium flags: headless, plus a SwiftShader WebGPU adapter (`--enable-unsafe-webgpu …`). */
export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--enable-unsafe-webgpu', '--enable-features=Vulkan', '--use-angle=swiftshader', '--enable-unsafe-swiftshader', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

const TOKENS = 64;
const STEPS = 5;
const SEED = 3;

let browser: Browser;
let tmp: string;
let files: Map<string, string | Uint8Array>;
let nodeTokens: number[];
let nodeLosses: number[];

beforeAll(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'apertus-browser-'));
  const outfile = path.join(tmp, 'page.js');
  const { nodeImports } = await bundleForBrowser(path.join(import.meta.dirname, 'page.ts'), { outfile });
  expect(nodeImports).toEqual([]);
  const ckpt = tinyCheckpoint(SEED);
  files = new Map<string, string | Uint8Array>([
    ['/index.html', '<!doctype html><meta charset="utf-8"><title>apertus parity</title><script type="module" src="/page.js"></script>'],
    ['/page.js', fs.readFileSync(outfile, 'utf8')],
    ['/config.json', ckpt.config],
    ['/model.safetensors', ckpt.weights],
  ]);
  nodeTokens = await greedyTokens(JSON.parse(ckpt.config), ckpt.weights, TOKENS);
  nodeLosses = trainingLosses(STEPS, SEED);
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
});

afterAll(async () => {
  await browser?.close();
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

async function runInPage(isolated: boolean, steps: number, threads?: number) {
  const server = await serveStatic(files, isolated);
  const page = await browser.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  try {
    await page.goto(server.url);
    await page.waitForFunction(() => typeof window.runWorkload === 'function');
    const r = await page.evaluate((o) => window.runWorkload(o), { tokens: TOKENS, steps, seed: SEED, ...(threads !== undefined ? { threads } : {}) });
    expect(errors).toEqual([]);
    return r;
  } finally {
    await page.close();
    await server.close();
  }
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
    expect(r.losses).toHaveLength(STEPS);
    for (let i = 0; i < STEPS; i++) expect(Math.abs(r.losses[i]! - nodeLosses[i]!), `step ${i + 1}`).toBeLessThan(1e-4);
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

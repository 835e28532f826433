// The built-in chat page in headless Chromium (Debian's `chromium` package, driven by playwright-core):
// it loads, streams an answer equal to the API's, keeps the conversation, shows reasoning apart,
// and runs under its Content-Security-Policy without violations.

import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { loadServedModel, type ServedModel } from './load';
import { createServer, type ApertusServer } from './server';
import { json, scriptIds, tempDir, testTokenizer, writeRandomCheckpoint, writeScriptedCheckpoint } from './testing';

const tmp = tempDir();
let browser: Browser;
let server: ApertusServer;
let thinking: ApertusServer;

beforeAll(async () => {
  const served: ServedModel = await loadServedModel(writeRandomCheckpoint(tmp.dir, 'tiny'));
  server = createServer({ model: served, apiKey: 'page-key' });
  await server.listen(0);
  const tok = testTokenizer();
  thinking = createServer({ model: loadServedModel(writeScriptedCheckpoint(tmp.dir, 'thinker', [{ from: 67, then: [...scriptIds(tok, '<|inner_prefix|>Let me check<|inner_suffix|>Hello world!'), 68] }])) });
  await thinking.listen(0);
  await thinking.ready;
  browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
  await thinking?.close();
  tmp.remove();
});

describe('chat page', () => {
  test('streams answers equal to the API response and keeps the conversation', async () => {
    const page = await browser.newPage();
    const problems: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(m.text());
    });
    page.on('pageerror', (e) => problems.push(e.message));
    const sent: { stream: boolean; messages: unknown[] }[] = [];
    const types: string[] = [];
    page.on('request', (r) => {
      if (r.url().endsWith('/v1/chat/completions')) sent.push(JSON.parse(r.postData()!));
    });
    page.on('response', (r) => {
      if (r.url().endsWith('/v1/chat/completions')) types.push(r.headers()['content-type']!);
    });
    const res = await page.goto(server.url);
    expect(res!.status()).toBe(200);
    expect(res!.headers()['content-security-policy']).toMatch(/script-src 'nonce-/);
    // The API key is needed: without it the page says so.
    await page.waitForSelector('#status[data-state="error"]');
    expect(await page.textContent('#status')).toContain('API key');
    expect(problems).toEqual(['Failed to load resource: the server responded with a status of 401 (Unauthorized)']);
    problems.length = 0;
    await page.fill('#api-key', 'page-key');
    await page.dispatchEvent('#api-key', 'change');
    await page.waitForSelector('#status[data-state="idle"]');
    expect(await page.textContent('#model')).toBe('tiny');
    await page.fill('#temperature', '0');
    await page.fill('#max-tokens', '12');

    await page.fill('#input', 'Hello there!');
    await page.press('#input', 'Enter');
    await page.waitForSelector('.msg.assistant[data-done="true"]');
    const shown = await page.textContent('.msg.assistant .content');
    const api = await json(fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: 'Bearer page-key', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'tiny', messages: [{ role: 'user', content: 'Hello there!' }], temperature: 0, max_tokens: 12 }),
    }));
    expect(shown).toBe(api.choices[0].message.content);
    expect(await page.getAttribute('.msg.assistant', 'data-finish')).toBe('length');
    expect(await page.textContent('#usage')).toBe(`${api.usage.prompt_tokens} + 12 tokens`);

    // Second turn: the page sends the whole history.
    await page.fill('#input', 'And then?');
    await page.click('#send');
    await page.waitForSelector('.msg.assistant:nth-of-type(4)[data-done="true"]');
    const second = await page.textContent('.msg.assistant:nth-of-type(4) .content');
    const api2 = await json(fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: 'Bearer page-key', 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'tiny', temperature: 0, max_tokens: 12,
        messages: [{ role: 'user', content: 'Hello there!' }, { role: 'assistant', content: shown }, { role: 'user', content: 'And then?' }],
      }),
    }));
    expect(second).toBe(api2.choices[0].message.content);
    expect(await page.$$eval('.msg.user', (els) => els.map((e) => e.textContent))).toEqual(['Hello there!', 'And then?']);
    expect(sent.map((b) => [b.stream, b.messages.length])).toEqual([[true, 1], [true, 3]]);
    expect(types.every((t) => t.startsWith('text/event-stream'))).toBe(true);
    expect(problems).toEqual([]);
    await page.close();
  });

  test('shows the reasoning separately when thinking is on', async () => {
    const page = await browser.newPage();
    await page.goto(thinking.url);
    await page.waitForSelector('#status[data-state="idle"]');
    await page.check('#thinking');
    await page.fill('#input', 'Hi');
    await page.press('#input', 'Enter');
    await page.waitForSelector('.msg.assistant[data-done="true"]');
    expect(await page.textContent('.msg.assistant .content')).toBe('Hello world!');
    expect(await page.textContent('.msg.assistant .reasoning pre')).toBe('Let me check');
    expect(await page.isHidden('.msg.assistant .reasoning')).toBe(false);
    expect(await page.getAttribute('.msg.assistant', 'data-finish')).toBe('stop');
    await page.close();
  });
});

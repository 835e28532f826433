// apertus-generate and apertus-chat, run in-process on tiny checkpoints written at test start,
// checked against generate() from @apertus/model and the Apertus chat template.

import fs from 'node:fs';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { generate, loadCheckpoint, type ApertusModel } from '@apertus/model';
import { CliError } from '@apertus/cli';
import { gemmThreads, setGemmThreads } from '@apertus/tensor';
import { applyApertusChatTemplate, type Tokenizer } from '@apertus/tokenizer';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { scriptIds, tempDir, testTokenizer, writeRandomCheckpoint, writeScriptedCheckpoint } from '@apertus/serve/testing';
import { runChat } from './chat';
import { runGenerate } from './generate';

const tmp = tempDir('apertus-infer-');
let randomDir: string;
let thinkerDir: string;
let ref: ApertusModel;
let tok: Tokenizer;

beforeAll(() => {
  tok = testTokenizer();
  randomDir = writeRandomCheckpoint(tmp.dir, 'tiny');
  thinkerDir = writeScriptedCheckpoint(tmp.dir, 'thinker', [{ from: 67, then: [...scriptIds(tok, '<|inner_prefix|>Let me check<|inner_suffix|>Hello world!'), 68] }]);
  ref = loadCheckpoint(randomDir).model;
});

afterAll(() => tmp.remove());

function greedy(ids: number[], maxTokens: number): string {
  return tok.decode(generate(ref, ids, { temperature: 0, maxTokens, stopTokenIds: [2, 68, 72] }).tokens, { skipSpecialTokens: true });
}

/** Capture what a CLI writes, one entry per write call. */
function capture(input = new PassThrough()) {
  const writes: string[] = [];
  const errors: string[] = [];
  return { io: { input, output: { write: (s: string) => writes.push(s) }, error: { write: (s: string) => errors.push(s) } }, writes, errors, input };
}

describe('apertus-generate', () => {
  test('raw prompt, greedy: prints the reference continuation', async () => {
    const c = capture();
    expect(await runGenerate(['--model', randomDir, '--prompt', 'Once upon a time', '-n', '10', '--temperature', '0'], c.io)).toBe(0);
    expect(c.writes.join('')).toBe(`${greedy(tok.encodeIds('Once upon a time'), 10)}\n`);
    // Streamed: one write per piece of text, not one at the end.
    expect(c.writes.length).toBeGreaterThan(3);
    expect(c.errors).toEqual([]);
  });

  test('--file, --file - (stdin) and --echo', async () => {
    const file = path.join(tmp.dir, 'prompt.txt');
    fs.writeFileSync(file, 'The capital of Switzerland is');
    const want = greedy(tok.encodeIds('The capital of Switzerland is'), 6);
    const a = capture();
    await runGenerate(['-m', randomDir, '-f', file, '-n', '6', '--temperature', '0'], a.io);
    expect(a.writes.join('')).toBe(`${want}\n`);
    const b = capture();
    b.input.end('The capital of Switzerland is');
    await runGenerate(['-m', randomDir, '-f', '-', '-n', '6', '--temperature', '0', '--echo'], b.io);
    expect(b.writes.join('')).toBe(`The capital of Switzerland is${want}\n`);
  });

  test('--chat --json: answer, reasoning, finish reason and usage', async () => {
    const c = capture();
    await runGenerate(['-m', thinkerDir, '-p', 'Hi', '--chat', '--think', '--json'], c.io);
    const r = JSON.parse(c.writes.join(''));
    const prompt = applyApertusChatTemplate(tok, [{ role: 'user', content: 'Hi' }], { enableThinking: true, addGenerationPrompt: true }).ids;
    const completion = scriptIds(tok, '<|inner_prefix|>Let me check<|inner_suffix|>Hello world!').length + 1;
    expect(r).toEqual({
      text: 'Hello world!', reasoning: 'Let me check', tool_calls: [], finish_reason: 'stop',
      usage: { prompt_tokens: prompt.length, completion_tokens: completion },
      timings: { cache_n: 0, prompt_n: prompt.length, prompt_ms: expect.any(Number), prompt_per_second: expect.any(Number), predicted_n: completion, predicted_ms: expect.any(Number), predicted_per_second: expect.any(Number) },
    });
    expect(r.timings.prompt_per_second).toBeCloseTo((prompt.length * 1000) / r.timings.prompt_ms, 6);
  });

  test('--threads (-t) sets the matrix-product threads; -t is never the temperature', async () => {
    const before = gemmThreads();
    const c = capture();
    expect(await runGenerate(['-m', randomDir, '-p', 'Once upon a time', '-n', '3', '-t', '1', '--temperature', '0'], c.io)).toBe(0);
    expect(gemmThreads()).toBe(1);
    expect(c.writes.join('')).toBe(`${greedy(tok.encodeIds('Once upon a time'), 3)}\n`);
    await expect(runGenerate(['-m', randomDir, '-p', 'x', '-t', '0.5'], capture().io)).rejects.toMatchObject({ option: '--threads' });
    setGemmThreads(before);
  });

  test('--model accepts a run directory (its model/, else its latest checkpoint), as the training apps do', async () => {
    const run = path.join(tmp.dir, 'run');
    const want = `${greedy(tok.encodeIds('Once upon a time'), 5)}\n`;
    // A run still in progress: checkpoints/latest names the checkpoint to use.
    fs.mkdirSync(path.join(run, 'checkpoints'), { recursive: true });
    fs.cpSync(randomDir, path.join(run, 'checkpoints', 'step-00000010'), { recursive: true });
    fs.writeFileSync(path.join(run, 'checkpoints', 'latest'), 'step-00000010\n');
    const a = capture();
    expect(await runGenerate(['-m', run, '-p', 'Once upon a time', '-n', '5', '--temperature', '0'], a.io)).toBe(0);
    expect(a.writes.join('')).toBe(want);
    // A finished run: model/ wins.
    fs.cpSync(randomDir, path.join(run, 'model'), { recursive: true });
    fs.rmSync(path.join(run, 'checkpoints'), { recursive: true });
    const b = capture();
    expect(await runGenerate(['-m', run, '-p', 'Once upon a time', '-n', '5', '--temperature', '0'], b.io)).toBe(0);
    expect(b.writes.join('')).toBe(want);
    const c = capture();
    c.input.end('/exit\n');
    expect(await runChat(['-m', run], c.io)).toBe(0);
    expect(c.writes.join('')).toContain('Apertus chat · run ·');
  });

  test('bad arguments are CliErrors; an unloadable model is exit code 1', async () => {
    await expect(runGenerate(['-m', randomDir], capture().io)).rejects.toBeInstanceOf(CliError);
    await expect(runGenerate(['-m', randomDir, '-p', 'x', '-f', 'y'], capture().io)).rejects.toMatchObject({ option: '--prompt' });
    await expect(runGenerate(['-m', randomDir, '-p', 'x', '--temperature', 'hot'], capture().io)).rejects.toMatchObject({ option: '--temperature' });
    await expect(runGenerate(['-m', randomDir, '-f', path.join(tmp.dir, 'nope.txt')], capture().io)).rejects.toMatchObject({ option: '--file' });
    const c = capture();
    expect(await runGenerate(['-m', path.join(tmp.dir, 'missing'), '-p', 'x'], c.io)).toBe(1);
    expect(c.errors.join('')).toContain('cannot load');
  });
});

describe('apertus-chat --prefix-cache', () => {
  test('apertus-chat --prefix-cache takes a positive number of MiB', async () => {
    for (const cap of ['0', '-1', '2.5', 'x']) await expect(runChat(['-m', randomDir, '--prefix-cache', cap], capture().io)).rejects.toMatchObject({ option: '--prefix-cache' });
    // Without the cache the same conversation prints the same replies.
    const chat = async (flags: string[]) => {
      const c = capture();
      c.input.end('Hi\nHi again\n');
      expect(await runChat(['-m', randomDir, '--temperature', '0', '-n', '4', ...flags], c.io)).toBe(0);
      return c.writes.join('');
    };
    expect(await chat(['--no-prefix-cache'])).toBe(await chat(['--prefix-cache', '16']));
  });
});

describe('apertus-chat timings', () => {
  test('/stats prints the last reply\'s timings; --stats prints them after every reply', async () => {
    const c = capture();
    c.input.end('/stats\nHi\n/stats\n');
    expect(await runChat(['-m', randomDir, '--temperature', '0', '-n', '4'], c.io)).toBe(0);
    const out = c.writes.join('');
    expect(out).toContain('(no reply yet)');
    expect(out).toMatch(/prompt \d+ tokens in \d+ ms \([\d.–]+ tokens\/s\), reply 4 tokens in \d+ ms \([\d.–]+ tokens\/s\)\n/);
    const s = capture();
    s.input.end('Hi\nHi again\n');
    expect(await runChat(['-m', randomDir, '--temperature', '0', '-n', '4', '--stats'], s.io)).toBe(0);
    const lines = s.writes.join('').split('\n').filter((l) => l.startsWith('[prompt '));
    expect(lines).toHaveLength(2);
    // The second turn starts from the first one's KV.
    expect(lines[1]).toMatch(/\(\+\d+ cached\)/);
  });
});

describe('apertus-chat', () => {
  test('piped lines: streamed replies with reasoning, commands, history, exit', async () => {
    const c = capture();
    const done = runChat(['-m', thinkerDir], c.io);
    c.input.write('Hi\n');
    c.input.write('/think on\n');
    c.input.write('Hello again\n');
    c.input.write('/history\n');
    c.input.write('/bogus\n');
    c.input.write('/reset\n');
    c.input.write('/history\n');
    c.input.write('/exit\n');
    c.input.end('after exit\n');
    expect(await done).toBe(0);
    const text = c.writes.join('');
    const reply = '[thinking]\nLet me check\n[/thinking]\nHello world!\n';
    expect(text).toContain('Apertus chat · thinker');
    expect(text.split(reply)).toHaveLength(3);
    expect(text).toContain('(thinking on)\n');
    expect(text).toContain('user: Hi\nassistant: Hello world!\nuser: Hello again\nassistant: Hello world!\n');
    expect(text).toContain('unknown command /bogus');
    expect(text.slice(text.indexOf('(conversation cleared)'))).not.toContain('user: Hi');
    expect(text).not.toContain('after exit');
    // The reply streamed token by token: 'Hello world!' came in several writes.
    const start = c.writes.indexOf('[thinking]\n');
    expect(c.writes.slice(start, c.writes.indexOf('\n', start + 3) + 1).length).toBeGreaterThan(4);
  });

  test('terminal: readline editing and history; Ctrl-C at the prompt warns, a second one quits', async () => {
    // A stream pair standing in for a TTY: keystrokes in, everything readline draws out.
    const input = new PassThrough();
    const output = new PassThrough();
    let screen = '';
    output.on('data', (d: Buffer) => (screen += d.toString('utf8')));
    const until = async (pred: () => boolean) => {
      for (let i = 0; i < 2000 && !pred(); i++) await new Promise((r) => setTimeout(r, 5));
      expect(pred()).toBe(true);
    };
    const done = runChat(['-m', thinkerDir], { input, output, terminal: true });
    await until(() => screen.includes('> '));
    // Line editing: type 'Hx', erase the x (backspace), finish 'Hi'; then ↑ recalls 'Hi' from history.
    input.write('Hx\x7fi\r');
    await until(() => screen.split('Hello world!').length === 2);
    input.write('\x1b[A\r');
    await until(() => screen.split('Hello world!').length === 3);
    input.write('/history\r');
    await until(() => screen.includes('user: Hi\r\n') || screen.includes('user: Hi\n'));
    expect(screen.replace(/\r/g, '')).toContain('user: Hi\nassistant: Hello world!\nuser: Hi\nassistant: Hello world!\n');
    // One Ctrl-C at the prompt only warns; a line in between resets the count.
    input.write('\x03');
    await until(() => screen.includes('Ctrl-C again to quit'));
    input.write('/think off\r');
    await until(() => screen.includes('(thinking off)'));
    input.write('\x03');
    input.write('\x03');
    expect(await done).toBe(0);
  });

  test('terminal: Ctrl-C during a reply stops it; the next Ctrl-C quits', async () => {
    const input = new PassThrough();
    const output = new PassThrough();
    let screen = '';
    output.on('data', (d: Buffer) => (screen += d.toString('utf8')));
    const done = runChat(['-m', randomDir, '-n', '400', '--temperature', '0'], { input, output, terminal: true });
    for (let i = 0; i < 2000 && !screen.includes('> '); i++) await new Promise((r) => setTimeout(r, 5));
    const before = screen.length;
    input.write('Tell me a long story\r');
    // Wait for the reply to start streaming, then interrupt it.
    for (let i = 0; i < 2000 && screen.length < before + 60; i++) await new Promise((r) => setTimeout(r, 5));
    input.write('\x03');
    for (let i = 0; i < 2000 && !screen.includes('[stopped'); i++) await new Promise((r) => setTimeout(r, 5));
    const reply = screen.slice(before, screen.indexOf('[stopped'));
    expect(reply.length).toBeGreaterThan(0);
    // Stopped well before the 400 tokens the greedy reply would have run to.
    expect(reply.length).toBeLessThan(greedy(applyApertusChatTemplate(tok, [{ role: 'user', content: 'Tell me a long story' }], { addGenerationPrompt: true }).ids, 400).length);
    input.write('\x03');
    expect(await done).toBe(0);
  });
});

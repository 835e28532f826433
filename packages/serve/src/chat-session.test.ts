// ChatSession against generate() from @apertus/model and the Apertus chat template: the history,
// the rendered prompts, streamed text, and the prefix cache reusing the KV of the previous turn.

import { generate, loadCheckpoint, type ApertusModel } from '@apertus/model';
import { applyApertusChatTemplate, type Tokenizer } from '@apertus/tokenizer';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ChatSession, type ChatReply } from './chat-session';
import { loadServedModel } from './load';
import { ServerMetrics } from './metrics';
import { Scheduler } from './scheduler';
import { tempDir, testTokenizer, writeRandomCheckpoint } from './testing';

const tmp = tempDir('apertus-chat-session-');
let randomDir: string;
let ref: ApertusModel;
let tok: Tokenizer;

beforeAll(() => {
  tok = testTokenizer();
  randomDir = writeRandomCheckpoint(tmp.dir, 'tiny');
  ref = loadCheckpoint(randomDir).model;
});

afterAll(() => tmp.remove());

function greedy(ids: number[], maxTokens: number): string {
  return tok.decode(generate(ref, ids, { temperature: 0, maxTokens, stopTokenIds: [2, 68, 72] }).tokens, { skipSpecialTokens: true });
}

describe('ChatSession', () => {
  test('keeps the history and renders it with the chat template; replies equal the reference', async () => {
    const session = new ChatSession(new Scheduler(await loadServedModel(randomDir), { maxBatch: 1 }), { temperature: 0, maxTokens: 8, system: 'Be brief.' });
    const first = await session.send('Hello!');
    const p1 = applyApertusChatTemplate(tok, [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hello!' }], { addGenerationPrompt: true }).ids;
    expect(session.lastPromptIds).toEqual(p1);
    expect(first.content).toBe(greedy(p1, 8));
    expect(first.finishReason).toBe('length');
    session.settings.thinking = true;
    const streamed: string[] = [];
    const second = await session.send('And Bern?', (_ch, t) => streamed.push(t));
    const p2 = applyApertusChatTemplate(tok, [
      { role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hello!' }, { role: 'assistant', content: first.content }, { role: 'user', content: 'And Bern?' },
    ], { addGenerationPrompt: true, enableThinking: true }).ids;
    expect(session.lastPromptIds).toEqual(p2);
    expect(second.content).toBe(greedy(p2, 8));
    expect(streamed.join('')).toBe(second.content);
    expect(session.messages).toHaveLength(4);
    session.reset();
    expect(session.conversation()).toEqual([{ role: 'system', content: 'Be brief.' }]);
  });
});

describe('ChatSession with a prefix cache', () => {
  test('turn 2 starts from the KV of turn 1 (prompt and reply) and replies as without the cache', async () => {
    const metrics = new ServerMetrics();
    const served = await loadServedModel(randomDir);
    const session = new ChatSession(new Scheduler(served, { maxBatch: 1, prefixCacheBytes: 1 << 24, metrics }), { temperature: 0, maxTokens: 8 });
    const plain = new ChatSession(new Scheduler(served, { maxBatch: 1 }), { temperature: 0, maxTokens: 8 });
    // The same replies (timings aside).
    const same = (r: ChatReply) => ({ ...r, timings: null, usage: { ...r.usage, cachedTokens: 0 } });
    const first = await session.send('Hello!');
    expect(same(first)).toEqual(same(await plain.send('Hello!')));
    const p1 = session.lastPromptIds;
    const second = await session.send('And Bern?');
    expect(same(second)).toEqual(same(await plain.send('And Bern?')));
    expect(second.usage.cachedTokens).toBe(metrics.prefixCacheReusedTokens.get());
    expect(second.timings).toMatchObject({ cache_n: second.usage.cachedTokens, prompt_n: second.usage.promptTokens - second.usage.cachedTokens, predicted_n: 8 });
    // Reused: what turn 2's prompt shares with turn 1's prompt and reply, as far as the KV of
    // turn 1 went (all but its last sampled token).
    const reply = generate(ref, p1, { temperature: 0, maxTokens: 8, stopTokenIds: [2, 68, 72] }).tokens;
    const held = [...p1, ...reply].slice(0, p1.length + reply.length - 1), p2 = session.lastPromptIds;
    let shared = 0;
    while (shared < held.length && held[shared] === p2[shared]) shared++;
    expect(shared).toBeGreaterThanOrEqual(p1.length);
    // Whole 16-token blocks of it.
    expect(metrics.prefixCacheReusedTokens.get()).toBe(Math.floor(shared / 16) * 16);
    expect(metrics.prefixCacheLookups.get({ result: 'hit' })).toBe(1);
  });
});

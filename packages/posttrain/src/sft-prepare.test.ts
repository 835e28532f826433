// The data of an SFT run: a JSONL file's truncations and drops counted and reported, the held-out
// German → Romansh direction always the validation set's source, the bundled task written out as
// JSONL, and bad files refused naming the file (and line).

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Tokenizer } from '@apertus/tokenizer';
import { beforeAll, describe, expect, it } from 'vitest';
import { PosttrainError } from './errors';
import { tinyTokenizer } from './fixtures.test-helper';
import { prepareSftData, type SftDataConfig } from './sft-prepare';

let tok: Tokenizer;
beforeAll(async () => {
  tok = await tinyTokenizer();
});

const base: SftDataConfig = { data: 'udhr', validation: null, languages: ['deu_1996', 'roh_rumgr', 'ita', 'eng'], maxExamples: 12, maxChars: 150, maxLength: 2048, date: '2025-09-01', seed: 0 };

describe('prepareSftData', () => {
  it('counts truncated conversations and drops those left without assistant tokens', async () => {
    const out = fs.mkdtempSync(path.join(os.tmpdir(), 'apertus-sft-data-'));
    const file = path.join(out, 'chat.jsonl');
    const long = 'lorem ipsum '.repeat(200);
    fs.writeFileSync(
      file,
      [
        { messages: [{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'hello' }] },
        { messages: [{ role: 'user', content: 'hi' }, { role: 'assistant', content: long }] },
        { messages: [{ role: 'user', content: long }, { role: 'assistant', content: 'ok' }] },
      ]
        .map((r) => JSON.stringify(r))
        .join('\n'),
    );
    const config = { ...base, data: file, maxLength: 160 };
    const logs: string[] = [];
    const data = await prepareSftData(config, tok, (m) => logs.push(m));
    expect(data.stats).toMatchObject({ rows: 3, kept: 2, truncated: 1, droppedNoSupervision: 1 });
    expect(data.examples.every((e) => e.ids.length <= 160)).toBe(true);
    expect(logs.join('\n')).toMatch(/warning: 1 truncated to maxLength 160; warning: 1 dropped/);
    expect(data.conversationsJsonl).toBeNull();
    expect(data.heldOut.length).toBeGreaterThan(0);
    expect(data.heldOut.every((e) => e.sourceCode === 'deu_1996' && e.targetCode === 'roh_rumgr')).toBe(true);
    fs.appendFileSync(file, '\n{"messages": [{"role": "user", "content": "x"}, {"role": "robot", "content": "y"}]}\n');
    await expect(prepareSftData(config, tok, () => {})).rejects.toThrow(/chat\.jsonl:4: messages\[1\]\.role/);
    await expect(prepareSftData({ ...config, data: path.join(out, 'missing.jsonl') }, tok, () => {})).rejects.toThrow(/missing\.jsonl: data file not found/);
    fs.writeFileSync(file, '\n');
    await expect(prepareSftData(config, tok, () => {})).rejects.toThrow(PosttrainError);
    fs.rmSync(out, { recursive: true, force: true });
  });

  it('the bundled task: its conversations as JSONL, one per training row, the same fingerprint for the same settings', async () => {
    const logs: string[] = [];
    const data = await prepareSftData(base, tok, (m) => logs.push(m));
    expect(logs[0]).toMatch(/^data: UDHR translation task, \d+ conversations over 4 languages/);
    const lines = data.conversationsJsonl!.trim().split('\n').map((l) => JSON.parse(l) as { messages: { role: string }[] });
    expect(lines.length).toBe(data.stats.rows);
    expect(lines.every((l) => l.messages.map((m) => m.role).join() === 'user,assistant')).toBe(true);
    expect(data.validation).toHaveLength(data.heldOut.length); // the held-out direction with its references
    expect((await prepareSftData(base, tok, () => {})).fingerprint).toBe(data.fingerprint);
    expect((await prepareSftData({ ...base, seed: 1 }, tok, () => {})).fingerprint).not.toBe(data.fingerprint);
  });
});

// SFT rows: validation with file/line errors, rendering with the Apertus template (variant B) and
// the assistant mask, checked against ids built independently from the template's segments.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import type { Tokenizer } from '@apertus/tokenizer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PosttrainError } from './errors';
import { tinyTokenizer } from './fixtures.test-helper';
import { parseSftRecord, parseSftRow, readSftJsonl, tokenizeSftConversation, tokenizeSftDataset, tokenizeSftRecord } from './sft-data';
import { buildUdhrTranslationTask } from './udhr-translation';

const DATE = '2025-09-21';
const SYSTEM_DEFAULT = `<|system_start|>You are Apertus, a helpful assistant created by the SwissAI initiative.\nKnowledge cutoff: 2024-04\nCurrent date: ${DATE}<|system_end|>`;
const DEV_OFF = '<|developer_start|>Deliberation: disabled\nTool Capabilities: disabled<|developer_end|>';

let tok: Tokenizer;
let tmp: string;
beforeAll(async () => {
  tok = await tinyTokenizer();
  tmp = mkdtempSync(path.join(tmpdir(), 'sft-'));
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const enc = (s: string): number[] => tok.encodeIds(s, { addSpecialTokens: false });

/** Runs of supervised tokens, decoded. */
function supervisedSpans(ids: readonly number[], mask: readonly number[]): string[] {
  const spans: string[] = [];
  let cur: number[] = [];
  ids.forEach((id, i) => {
    if (mask[i]) cur.push(id);
    else if (cur.length > 0) {
      spans.push(tok.decode(cur));
      cur = [];
    }
  });
  if (cur.length > 0) spans.push(tok.decode(cur));
  return spans;
}

describe('tokenizeSftConversation', () => {
  it('supervises the assistant reply and its <|assistant_end|>, nothing else (spec §5.5 layout)', () => {
    const conv = parseSftRecord({ messages: [{ role: 'user', content: 'Hi!' }, { role: 'assistant', content: 'Hello! How can I help you?' }] });
    const ex = tokenizeSftConversation(tok, conv, { date: DATE });
    // independent construction: the template's segments, tokenized separately (special tokens cut BPE)
    const prompt = enc(`<s>${SYSTEM_DEFAULT}${DEV_OFF}<|user_start|>Hi!<|user_end|><|assistant_start|>`);
    const reply = [...enc('Hello! How can I help you?'), 68];
    expect(ex.ids).toEqual([...prompt, ...reply]);
    expect(ex.assistantMask).toEqual([...prompt.map(() => 0), ...reply.map(() => 1)]);
    expect(ex.ids[0]).toBe(1);
    expect(ex.ids.filter((i) => i === 1)).toHaveLength(1);
    expect(ex.truncated).toBe(false);
  });

  it('handles system, tools, reasoning, tool calls and outputs, and several assistant turns', () => {
    const conv = parseSftRecord({
      messages: [
        { role: 'system', content: 'You are helpful.' },
        { role: 'user', content: 'Weather in Bern?' },
        {
          role: 'assistant',
          content: null,
          reasoning_content: 'Need the tool.',
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Bern"}' } }],
        },
        { role: 'tool', tool_call_id: 'c1', content: '{"temp": 20}' },
        { role: 'assistant', content: 'It is 20°C.' },
        { role: 'user', content: 'Thanks' },
        { role: 'assistant', content: 'You are welcome.' },
      ],
      tools: [{ type: 'function', function: { name: 'get_weather', description: 'Get the weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }],
    });
    expect(conv.enableThinking).toBe(true);
    const ex = tokenizeSftConversation(tok, conv, { date: DATE });
    expect(tok.decode(ex.ids)).toBe(
      '<s><|system_start|>You are helpful.<|system_end|>' +
        '<|developer_start|>Deliberation: enabled\nTool Capabilities:\n// Get the weather\ntype get_weather = (_: {\ncity: string\n}) => any;<|developer_end|>' +
        '<|user_start|>Weather in Bern?<|user_end|>' +
        '<|assistant_start|><|inner_prefix|>Need the tool.<|tools_prefix|>[{"get_weather": {"city": "Bern"}}]<|tools_suffix|>[{"temp": 20}]<|inner_suffix|>It is 20°C.<|assistant_end|>' +
        '<|user_start|>Thanks<|user_end|><|assistant_start|>You are welcome.<|assistant_end|>',
    );
    expect(supervisedSpans(ex.ids, ex.assistantMask)).toEqual([
      '<|inner_prefix|>Need the tool.<|tools_prefix|>[{"get_weather": {"city": "Bern"}}]<|tools_suffix|>',
      '<|inner_suffix|>It is 20°C.<|assistant_end|>',
      'You are welcome.<|assistant_end|>',
    ]);
  });

  it('accepts structured blocks and leaves a turn that waits for tool outputs open', () => {
    const conv = parseSftRecord({
      messages: [
        { role: 'user', content: { parts: [{ type: 'text', text: 'Add 2 and 3' }] } },
        { role: 'assistant', content: { blocks: [{ type: 'thoughts', text: 'Use add.' }, { type: 'tool_calls', calls: [{ name: 'add', arguments: { a: 2, b: 3 } }] }] } },
      ],
    });
    const ex = tokenizeSftConversation(tok, conv, { date: DATE });
    expect(supervisedSpans(ex.ids, ex.assistantMask)).toEqual(['<|inner_prefix|>Use add.<|tools_prefix|>[{"add": {"a": 2, "b": 3}}]<|tools_suffix|>']);
    expect(ex.ids.at(-1)).toBe(72);
  });

  it('truncates on the right to maxLength', () => {
    const conv = parseSftRecord({ messages: [{ role: 'user', content: 'Hi!' }, { role: 'assistant', content: 'Alle Menschen sind frei und gleich.' }] });
    const full = tokenizeSftConversation(tok, conv, { date: DATE });
    const cut = tokenizeSftConversation(tok, conv, { date: DATE, maxLength: full.ids.length - 3 });
    expect(cut.truncated).toBe(true);
    expect(cut.ids).toEqual(full.ids.slice(0, -3));
    expect(cut.assistantMask).toEqual(full.assistantMask.slice(0, -3));
    expect(() => tokenizeSftConversation(tok, conv, { maxLength: 1 })).toThrow(/maxLength/);
  });
});

describe('tokenizeSftDataset and readSftJsonl', () => {
  it('reads JSONL, skips blank lines and counts truncated and dropped rows', async () => {
    const file = path.join(tmp, 'ok.jsonl');
    const row = (u: string, a: string): string => JSON.stringify({ messages: [{ role: 'user', content: u }, { role: 'assistant', content: a }] });
    writeFileSync(file, [row('Hi!', 'Hello.'), '', row('x'.repeat(400), 'never seen'), row('Hi!', 'Alle Menschen sind frei und gleich an Würde und Rechten geboren.')].join('\n') + '\n');
    const short = tokenizeSftConversation(tok, parseSftRecord(JSON.parse(row('Hi!', 'Hello.'))), { date: DATE });
    const maxLength = short.ids.length + 5;
    const { examples, stats } = await tokenizeSftDataset(tok, readSftJsonl(file), { date: DATE, maxLength, file });
    // row 1 fits; row 3's prompt alone exceeds maxLength (dropped); row 4 is cut inside the reply
    expect(stats).toMatchObject({ rows: 3, kept: 2, truncated: 1, droppedNoSupervision: 1 });
    expect(examples[0]!.ids).toEqual(short.ids);
    expect(examples[1]!.ids).toHaveLength(maxLength);
    const supervised = [...examples[0]!.assistantMask, ...examples[1]!.assistantMask].reduce((a, b) => a + b, 0);
    expect(stats.supervisedTokens).toBe(supervised);
    expect(stats.tokens).toBe(short.ids.length + maxLength);
  });

  it('names file and line of invalid JSON and invalid rows', async () => {
    const bad = path.join(tmp, 'bad.jsonl');
    writeFileSync(bad, `${JSON.stringify({ messages: [{ role: 'user', content: 'a' }, { role: 'assistant', content: 'b' }] })}\n\n{"messages": [\n`);
    const err = await tokenizeSftDataset(tok, readSftJsonl(bad)).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'InvalidJson', file: bad, line: 3 });
    const badRole = path.join(tmp, 'role.jsonl');
    writeFileSync(badRole, `{"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]}\n{"messages": [{"role": "user", "content": "a"}, {"role": "developer", "content": "b"}]}\n`);
    const err2 = await tokenizeSftDataset(tok, readSftJsonl(badRole)).catch((e: unknown) => e);
    expect(err2).toBeInstanceOf(PosttrainError);
    expect(err2).toMatchObject({ code: 'InvalidConversation', file: badRole, line: 2, field: 'messages[1].role' });
    expect((err2 as Error).message).toMatch(/^.*role\.jsonl:2: messages\[1\]\.role: /);
    await expect(tokenizeSftDataset(tok, readSftJsonl(path.join(tmp, 'missing.jsonl')))).rejects.toMatchObject({ code: 'Io' });
  });

  it('wraps template errors with the row location', () => {
    // tool outputs both as a block and as a tool message: the template refuses
    const conv = parseSftRecord({
      messages: [
        { role: 'user', content: 'q' },
        { role: 'assistant', content: { blocks: [{ type: 'tool_calls', calls: [{ name: 'f', arguments: '{}' }] }] } },
        { role: 'tool', content: '1' },
        { role: 'assistant', content: { blocks: [{ type: 'tool_outputs', outputs: [{ output: '2' }] }] } },
      ],
    });
    expect(() => tokenizeSftConversation(tok, conv, { date: DATE }, { file: 'f.jsonl', line: 9 })).toThrow(
      expect.objectContaining({ code: 'InvalidConversation', file: 'f.jsonl', line: 9, field: 'messages[3].content.blocks[0]' }),
    );
  });
});

describe('UDHR translation conversations as SFT rows', () => {
  it('supervise exactly the reference translation and <|assistant_end|>', async () => {
    const task = await buildUdhrTranslationTask({ languages: ['deu_1996', 'roh_rumgr', 'ita', 'fra'], maxExamples: 20, maxChars: 200 });
    const { examples, stats } = await tokenizeSftDataset(tok, task.train, { date: DATE, maxLength: 1024 });
    expect(stats).toMatchObject({ rows: 20, kept: 20, truncated: 0 });
    task.train.forEach((t, i) => {
      expect(supervisedSpans(examples[i]!.ids, examples[i]!.assistantMask)).toEqual([`${t.reference}<|assistant_end|>`]);
    });
  });
});

describe('parseSftRecord', () => {
  const cases: [unknown, string][] = [
    [[], '(row)'],
    [{ messages: [] }, 'messages'],
    [{ messages: [{ role: 'user', content: 'a' }] }, 'messages'],
    [{ messages: [{ role: 'user', content: 'a' }, { role: 'system', content: 's' }, { role: 'assistant', content: 'b' }] }, 'messages[1].role'],
    [{ messages: [{ role: 'user', content: 3 }, { role: 'assistant', content: 'b' }] }, 'messages[0].content'],
    [{ messages: [{ role: 'user', content: { parts: [{ type: 'image', url: 'x' }] } }, { role: 'assistant', content: 'b' }] }, 'messages[0].content.parts[0].type'],
    [{ messages: [{ role: 'user', content: 'a' }, { role: 'assistant', content: null }] }, 'messages[1].content'],
    [{ messages: [{ role: 'user', content: 'a' }, { role: 'assistant', content: { blocks: [{ type: 'poem', text: 'x' }] } }] }, 'messages[1].content.blocks[0].type'],
    [{ messages: [{ role: 'user', content: 'a' }, { role: 'assistant', content: '', tool_calls: [{ function: { name: 1, arguments: '{}' } }] }] }, 'messages[1].tool_calls[0].function.name'],
    [{ messages: [{ role: 'user', content: 'a' }, { role: 'tool', content: 'x' }, { role: 'assistant', content: 'b' }] }, 'messages[1].role'],
    [{ messages: [{ role: 'user', content: 'a' }, { role: 'assistant', content: 'b' }], tools: [{ name: 'f' }] }, 'tools[0].description'],
    [{ messages: [{ role: 'user', content: 'a' }, { role: 'assistant', content: 'b' }], enable_thinking: 'yes' }, 'enable_thinking'],
  ];
  it.each(cases)('rejects %j at the right field', (row, field) => {
    expect(() => parseSftRecord(row, { file: 'x.jsonl', line: 4 })).toThrow(expect.objectContaining({ code: 'InvalidConversation', field, line: 4 }));
  });

  it('fuzz: arbitrary JSON either parses and renders, or fails with a PosttrainError', () => {
    const message = fc.oneof(
      fc.record({ role: fc.constantFrom('system', 'user', 'assistant', 'tool', 'developer'), content: fc.oneof(fc.string(), fc.constant(null), fc.jsonValue()) }),
      fc.jsonValue(),
    );
    fc.assert(
      fc.property(fc.oneof(fc.jsonValue(), fc.record({ messages: fc.array(message, { maxLength: 6 }) })), (row) => {
        try {
          const conv = parseSftRecord(row);
          const ex = tokenizeSftConversation(tok, conv, { date: DATE });
          expect(ex.ids.length).toBe(ex.assistantMask.length);
        } catch (e) {
          expect(e).toBeInstanceOf(PosttrainError);
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('the other TRL formats: prompt/completion and text', () => {
  it('a plain prompt/completion row is <s> prompt completion </s>, supervised on the completion and </s>', () => {
    const row = parseSftRow({ prompt: 'Translate from German to Romansh: Hallo', completion: ' Allegra' });
    const ex = tokenizeSftRecord(tok, row);
    const p = enc('Translate from German to Romansh: Hallo'), c = enc(' Allegra');
    expect(ex.ids).toEqual([1, ...p, ...c, 2]);
    expect(ex.assistantMask).toEqual([0, ...p.map(() => 0), ...c.map(() => 1), 1]);
  });

  it('a text row is <s> text </s>, every token supervised', () => {
    const ex = tokenizeSftRecord(tok, parseSftRow({ text: 'Hello! How can I help you?' }));
    expect(ex.ids).toEqual([1, ...enc('Hello! How can I help you?'), 2]);
    expect(ex.assistantMask).toEqual([0, ...ex.ids.slice(1).map(() => 1)]);
  });

  it('a conversational prompt/completion row is the conversation with only the completion supervised', () => {
    const prompt = [{ role: 'user', content: 'Hi!' }, { role: 'assistant', content: 'Hello.' }, { role: 'user', content: 'Again?' }];
    const completion = [{ role: 'assistant', content: 'Hello! How can I help you?' }];
    const ex = tokenizeSftRecord(tok, parseSftRow({ prompt, completion }), { date: DATE });
    const whole = tokenizeSftConversation(tok, parseSftRecord({ messages: [...prompt, ...completion] }), { date: DATE });
    expect(ex.ids).toEqual(whole.ids);
    expect(supervisedSpans(whole.ids, whole.assistantMask)).toEqual(['Hello.<|assistant_end|>', 'Hello! How can I help you?<|assistant_end|>']);
    expect(supervisedSpans(ex.ids, ex.assistantMask)).toEqual(['Hello! How can I help you?<|assistant_end|>']);
  });

  it('all formats in one JSONL file; errors name file, line and the field as the row spells it', async () => {
    const file = path.join(tmp, 'mixed.jsonl');
    writeFileSync(file, [
      { messages: [{ role: 'user', content: 'a' }, { role: 'assistant', content: 'b' }] },
      { prompt: 'p', completion: 'c' },
      { text: 't' },
      { prompt: [{ role: 'user', content: 'a' }], completion: [{ role: 'assistant', content: 'b' }] },
    ].map((r) => JSON.stringify(r)).join('\n') + '\n');
    const { stats } = await tokenizeSftDataset(tok, readSftJsonl(file), { date: DATE });
    expect(stats).toMatchObject({ rows: 4, kept: 4 });
    const bad: [unknown, string, RegExp][] = [
      [{ text: 't', prompt: 'p', completion: 'c' }, '(row)', /one format, got "prompt" and "text"/],
      [{ input: 'x' }, '(row)', /expected "messages", "prompt" and "completion", or "text"/],
      [{ prompt: 'p' }, 'completion', /needs a "completion"/],
      [{ prompt: 'p', completion: 3 }, 'completion', /expected a string/],
      [{ text: '' }, 'text', /nothing to learn/],
      [{ prompt: [{ role: 'user', content: 'a' }], completion: [{ role: 'assistant', content: 7 }] }, 'completion[0].content', /expected a string, null or/],
      [{ prompt: [{ role: 'user', content: 'a' }, { role: 'assistant', content: 'b' }], completion: [{ role: 'user', content: 'c' }] }, 'completion', /no assistant message/],
    ];
    for (const [row, field, message] of bad) {
      const f = path.join(tmp, 'bad-format.jsonl');
      writeFileSync(f, `{"text": "ok"}\n${JSON.stringify(row)}\n`);
      const err = await tokenizeSftDataset(tok, readSftJsonl(f)).catch((e: unknown) => e);
      expect(err).toMatchObject({ code: 'InvalidConversation', file: f, line: 2, field });
      expect((err as Error).message).toMatch(message);
      expect((err as Error).message.startsWith(`${f}:2: ${field}: `)).toBe(true);
    }
  });

  it('fuzz: any JSON row either tokenizes (ids and mask aligned) or fails with a PosttrainError', () => {
    const row = fc.oneof(
      fc.record({ prompt: fc.oneof(fc.string(), fc.jsonValue()), completion: fc.oneof(fc.string(), fc.jsonValue()) }, { requiredKeys: [] }),
      fc.record({ text: fc.oneof(fc.string(), fc.jsonValue()) }),
      fc.jsonValue(),
    );
    fc.assert(fc.property(row, (r) => {
      try {
        const ex = tokenizeSftRecord(tok, parseSftRow(r), { date: DATE });
        expect(ex.ids.length).toBe(ex.assistantMask.length);
      } catch (e) {
        expect(e).toBeInstanceOf(PosttrainError);
      }
    }), { numRuns: 300 });
  });
});

// The Apertus chat template: golden renders produced with the reference Jinja template (see
// __fixtures__/chat-template-golden.json `_about`), the spec §5.5 worked example, token ids with
// exactly one BOS, and the SFT assistant mask.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildApertusTokenizerJson } from './apertus.js';
import {
  applyApertusChatTemplate,
  pyJson,
  renderApertusChat,
  type ChatMessage,
  type ChatTemplateOptions,
  type ChatTool,
} from './chat-template.js';
import { TokenizerError } from './errors.js';
import { Tokenizer } from './tokenizer.js';

interface GoldenCase {
  name: string;
  messages: ChatMessage[];
  options: { date?: string; add_generation_prompt?: boolean; enable_thinking?: boolean; tools?: ChatTool[] };
  expected?: string;
  error?: string;
}

const golden = JSON.parse(readFileSync(join(import.meta.dirname, '__fixtures__', 'chat-template-golden.json'), 'utf8')) as { cases: GoldenCase[] };

function ourOptions(o: GoldenCase['options']): ChatTemplateOptions {
  return {
    date: o.date ?? '2025-09-21',
    addGenerationPrompt: o.add_generation_prompt ?? false,
    enableThinking: o.enable_thinking ?? false,
    ...(o.tools !== undefined ? { tools: o.tools } : {}),
  };
}

/** A tokenizer with the Apertus layout and no merges: every text byte is its own token. */
const bytesOnly = Tokenizer.fromJSON(buildApertusTokenizerJson({ merges: [] }));

const WORKED: ChatMessage[] = [
  { role: 'user', content: 'Hi!' },
  { role: 'assistant', content: 'Hello! How can I help you?' },
  { role: 'user', content: 'What is 2+2?' },
];

describe('golden renders of the reference template', () => {
  it('has cases', () => expect(golden.cases.length).toBeGreaterThanOrEqual(20));
  for (const c of golden.cases) {
    it(c.name, () => {
      if (c.expected !== undefined) {
        expect(renderApertusChat(c.messages, ourOptions(c.options)).text).toBe(c.expected);
      } else {
        let err: unknown;
        try {
          renderApertusChat(c.messages, ourOptions(c.options));
        } catch (e) {
          err = e;
        }
        expect(err).toBeInstanceOf(TokenizerError);
        expect((err as TokenizerError).code).toBe('InvalidConversation');
        expect((err as TokenizerError).message).toContain(c.error);
      }
    });
  }
});

describe('spec §5.5 worked example', () => {
  const expected =
    '<s><|system_start|>You are Apertus, a helpful assistant created by the SwissAI initiative.\nKnowledge cutoff: 2024-04\nCurrent date: 2025-09-21<|system_end|>' +
    '<|developer_start|>Deliberation: disabled\nTool Capabilities: disabled<|developer_end|><|user_start|>Hi!<|user_end|><|assistant_start|>Hello! How can I help you?<|assistant_end|>' +
    '<|user_start|>What is 2+2?<|user_end|><|assistant_start|>';

  it('renders the string of the spec', () => {
    expect(renderApertusChat(WORKED, { date: '2025-09-21', addGenerationPrompt: true }).text).toBe(expected);
  });

  it('has the id skeleton 1, 61, …, 62, 63, …, 64, 65, …, 66, 67, …, 68, 65, …, 66, 67 with one BOS', () => {
    const { ids } = applyApertusChatTemplate(bytesOnly, WORKED, { date: '2025-09-21', addGenerationPrompt: true });
    expect(ids.filter((id) => id < 1000)).toEqual([1, 61, 62, 63, 64, 65, 66, 67, 68, 65, 66, 67]);
    expect(ids[0]).toBe(1);
    expect(ids.filter((id) => id === 1)).toHaveLength(1);
    expect(bytesOnly.decode(ids)).toBe(expected);
  });

  it('system message and enable_thinking variants', () => {
    const sys = renderApertusChat([{ role: 'system', content: 'You are helpful.' }, ...WORKED], { addGenerationPrompt: true }).text;
    expect(sys).toBe(expected.replace(/<\|system_start\|>.*<\|system_end\|>/s, '<|system_start|>You are helpful.<|system_end|>'));
    const thinking = renderApertusChat(WORKED, { date: '2025-09-21', addGenerationPrompt: true, enableThinking: true }).text;
    expect(thinking).toBe(expected.replace('Deliberation: disabled\n', 'Deliberation: enabled\n'));
  });

  it('formats a Date as the local YYYY-MM-DD', () => {
    const text = renderApertusChat([], { date: new Date(2024, 1, 9, 23, 59) }).text;
    expect(text).toContain('Current date: 2024-02-09<|system_end|>');
  });
});

describe('assistant mask (SFT)', () => {
  function supervisedText(t: ReturnType<typeof applyApertusChatTemplate>): string {
    return bytesOnly.decode(t.ids.filter((_, i) => t.assistantMask[i] === 1));
  }

  it('marks assistant content and <|assistant_end|> of every assistant turn, nothing else', () => {
    const t = applyApertusChatTemplate(bytesOnly, [...WORKED, { role: 'assistant', content: 'Four.' }], { date: '2025-09-21', variant: 'B' });
    expect(t.assistantMask).toHaveLength(t.ids.length);
    expect(supervisedText(t)).toBe('Hello! How can I help you?<|assistant_end|>Four.<|assistant_end|>');
    // <|assistant_start|> is prompt.
    t.ids.forEach((id, i) => {
      if (id === 67) expect(t.assistantMask[i]).toBe(0);
      if (id === 68) expect(t.assistantMask[i]).toBe(1);
    });
  });

  it('supervises tool calls and thoughts but not tool outputs', () => {
    const messages: ChatMessage[] = [
      { role: 'user', content: 'Weather in Bern?' },
      { role: 'assistant', content: '', tool_calls: [{ type: 'function', function: { name: 'get_weather', arguments: '{"city": "Bern"}' } }] },
      { role: 'tool', content: '{"temp": 20}' },
      { role: 'assistant', content: { blocks: [{ type: 'thoughts', text: 'warm' }, { type: 'response', text: 'It is 20°C.' }] } as never },
    ];
    // Mixing string and block content is rejected by the reference, so use one form per turn.
    expect(() => applyApertusChatTemplate(bytesOnly, messages)).toThrow(TokenizerError);
    const ok: ChatMessage[] = [messages[0]!, messages[1]!, messages[2]!, { role: 'assistant', content: 'It is 20°C.' }];
    const t = applyApertusChatTemplate(bytesOnly, ok, { date: '2025-09-21', variant: 'B' });
    expect(supervisedText(t)).toBe('<|tools_prefix|>[{"get_weather": {"city": "Bern"}}]<|tools_suffix|>It is 20°C.<|assistant_end|>');
    const blocks = applyApertusChatTemplate(
      bytesOnly,
      [
        { role: 'user', content: 'q' },
        { role: 'assistant', content: { blocks: [{ type: 'thoughts', text: 'hmm' }, { type: 'tool_calls', calls: [{ name: 'f', arguments: '{}' }] }, { type: 'tool_outputs', outputs: [{ output: '7' }] }, { type: 'response', text: 'Seven.' }] } },
        { role: 'user', content: 'thanks' },
      ],
      { date: '2025-09-21', enableThinking: true },
    );
    expect(supervisedText(blocks)).toBe('<|inner_prefix|>hmm<|tools_prefix|>[{"f": {}}]<|tools_suffix|><|inner_suffix|>Seven.<|assistant_end|>');
  });

  it('marks a merged token that straddles the prompt/answer boundary', () => {
    // With merges, "]It" can be one pre-token; a token touching supervised text is supervised.
    const merged = Tokenizer.fromJSON(buildApertusTokenizerJson({ merges: [[']', 'I'], [']I', 't']] }));
    const t = applyApertusChatTemplate(
      merged,
      [
        { role: 'user', content: 'a' },
        { role: 'assistant', content: 'x', tool_calls: [{ type: 'function', function: { name: 'f', arguments: '{}' } }] },
        { role: 'tool', content: 'r' },
        { role: 'assistant', content: 'It' },
      ],
      { date: '2025-09-21' },
    );
    const itId = merged.tokenToId(']It')!;
    const i = t.ids.indexOf(itId);
    expect(i).toBeGreaterThan(0);
    expect(t.assistantMask[i]).toBe(1);
    expect(t.assistantMask[i - 1]).toBe(0); // the 'r' of the tool output
  });
});

describe('template variant B and extensions', () => {
  it('variant B closes a finished final assistant turn, not one waiting for tool outputs', () => {
    const done = renderApertusChat([{ role: 'user', content: 'a' }, { role: 'assistant', content: 'b' }], { date: '2025-09-21', variant: 'B' }).text;
    expect(done.endsWith('<|assistant_start|>b<|assistant_end|>')).toBe(true);
    const cont = renderApertusChat([{ role: 'user', content: 'a' }, { role: 'assistant', content: 'b' }], { date: '2025-09-21', variant: 'B', continueAssistantMessage: true }).text;
    expect(cont.endsWith('<|assistant_start|>b')).toBe(true);
    const waiting = renderApertusChat(
      [{ role: 'user', content: 'a' }, { role: 'assistant', content: '', tool_calls: [{ type: 'function', function: { name: 'f', arguments: '{}' } }] }],
      { date: '2025-09-21', variant: 'B' },
    ).text;
    expect(waiting.endsWith('[{"f": {}}]<|tools_suffix|>')).toBe(true);
    const answered = renderApertusChat(
      [{ role: 'user', content: 'a' }, { role: 'assistant', content: '', tool_calls: [{ type: 'function', function: { name: 'f', arguments: '{}' } }] }, { role: 'tool', content: 'r' }],
      { date: '2025-09-21', variant: 'B' },
    ).text;
    expect(answered.endsWith('[r]<|assistant_end|>')).toBe(true);
    const a = renderApertusChat([{ role: 'user', content: 'a' }, { role: 'assistant', content: 'b' }], { date: '2025-09-21' }).text;
    expect(a.endsWith('<|assistant_start|>b')).toBe(true);
  });

  it('accepts OpenAI-style tool definitions, null content and object arguments', () => {
    const flat: ChatTool = { name: 'f', description: 'Do f', parameters: { type: 'object', properties: { x: { type: 'number' } }, required: ['x'] } };
    const wrapped: ChatTool = { type: 'function', function: flat as { name: string; description: string } };
    const messages: ChatMessage[] = [{ role: 'user', content: 'go' }];
    expect(renderApertusChat(messages, { tools: [wrapped], date: '2025-09-21' }).text).toBe(renderApertusChat(messages, { tools: [flat], date: '2025-09-21' }).text);
    const text = renderApertusChat([{ role: 'user', content: 'go' }, { role: 'assistant', content: null, tool_calls: [{ type: 'function', function: { name: 'f', arguments: { x: 1, y: [true, null] } } }] }], { date: '2025-09-21' }).text;
    expect(text.endsWith('<|assistant_start|><|tools_prefix|>[{"f": {"x": 1, "y": [true, null]}}]<|tools_suffix|>')).toBe(true);
  });

  it('rejects malformed conversations with the message field', () => {
    const cases: [ChatMessage[], string][] = [
      [[{ role: 'system', content: 42 as never }], 'messages[0].content'],
      [[{ role: 'user', content: 'a' }, { role: 'assistant', content: 7 as never }], 'messages[1].content'],
      [[{ role: 'user', content: 'a' }, { role: 'assistant', content: 'x', tool_calls: [{ type: 'code' as never, function: { name: 'f', arguments: '{}' } }] }], 'messages[1].tool_calls[0].type'],
      [[{ role: 'user', content: { parts: [{ type: 'text', text: 5 as never }] } }], 'messages[0].content.parts[0].text'],
    ];
    for (const [messages, field] of cases) {
      let err: unknown;
      try {
        renderApertusChat(messages, { date: '2025-09-21' });
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(TokenizerError);
      expect((err as TokenizerError).field).toBe(field);
    }
  });

  it('pyJson prints like Python json.dumps(ensure_ascii=False)', () => {
    expect(pyJson({ a: [1, 'ü', null, true], b: { c: 'x"y' } })).toBe('{"a": [1, "ü", null, true], "b": {"c": "x\\"y"}}');
    expect(pyJson('line\nbreak')).toBe('"line\\nbreak"');
    expect(pyJson([])).toBe('[]');
  });
});

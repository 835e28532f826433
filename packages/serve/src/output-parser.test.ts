import fc from 'fast-check';
import { applyApertusChatTemplate, type AssistantBlock } from '@apertus/tokenizer';
import { describe, expect, test } from 'vitest';
import { OutputParser, parseToolCalls, type ParserEvent } from './output-parser';
import { testTokenizer } from './testing';

const tok = testTokenizer();

/** The token ids the chat template writes for one assistant message (the reference encoding). */
function assistantIds(blocks: AssistantBlock[]): number[] {
  const { ids } = applyApertusChatTemplate(tok, [{ role: 'user', content: 'Hi' }, { role: 'assistant', content: { blocks } }]);
  return ids.slice(ids.lastIndexOf(67) + 1);
}

function collect(ids: number[], parser: OutputParser): { content: string; reasoning: string; calls: { name: string; arguments: string }[] } {
  const events: ParserEvent[] = [];
  for (const id of ids) events.push(...parser.push(id));
  events.push(...parser.finish());
  let content = '';
  let reasoning = '';
  const calls: { name: string; arguments: string }[] = [];
  for (const e of events) {
    if (e.type === 'text') {
      if (e.channel === 'content') content += e.text;
      else reasoning += e.text;
    } else calls.push(...e.calls.map((c) => c.function));
  }
  return { content, reasoning, calls };
}

describe('OutputParser', () => {
  test('splits reasoning, answer and tool calls of a template-rendered assistant turn', () => {
    const ids = assistantIds([
      { type: 'thoughts', text: 'The user wants the weather.' },
      { type: 'response', text: 'Let me check.' },
      { type: 'tool_calls', calls: [{ name: 'get_weather', arguments: { city: 'Bern' } }, { name: 'get_time', arguments: '{"tz": "CET"}' }] },
    ]);
    expect(ids.filter((i) => i >= 69 && i <= 72)).toEqual([69, 70, 71, 72]);
    const got = collect(ids, new OutputParser(tok, { mode: 'chat', makeToolCallId: () => 'call_x' }));
    expect(got).toEqual({
      reasoning: 'The user wants the weather.',
      content: 'Let me check.',
      calls: [{ name: 'get_weather', arguments: '{"city": "Bern"}' }, { name: 'get_time', arguments: '{"tz": "CET"}' }],
    });
  });

  test('round-trips random assistant turns through the chat template', () => {
    const text = fc.array(fc.constantFrom('Bern', ' is', ' sunny', '!', ' Grüezi', ' 20°C', '\n', ' 🏔', ' ok', ' [1]', ' {x}'), { minLength: 1, maxLength: 8 }).map((a) => a.join(''));
    const call = fc.record({
      name: fc.constantFrom('get_weather', 'add', 'search_web'),
      arguments: fc.dictionary(fc.constantFrom('city', 'a', 'query'), fc.oneof(fc.string({ maxLength: 6 }), fc.integer({ min: -5, max: 99 }), fc.boolean()), { maxKeys: 3 }),
    });
    fc.assert(
      fc.property(fc.option(text, { nil: undefined }), text, fc.array(call, { maxLength: 3 }), (thoughts, response, calls) => {
        const blocks: AssistantBlock[] = [];
        if (thoughts !== undefined) blocks.push({ type: 'thoughts', text: thoughts });
        blocks.push({ type: 'response', text: response });
        if (calls.length > 0) blocks.push({ type: 'tool_calls', calls });
        const got = collect(assistantIds(blocks), new OutputParser(tok, { mode: 'chat' }));
        expect(got.reasoning).toBe(thoughts ?? '');
        expect(got.content).toBe(response);
        expect(got.calls.map((c) => ({ name: c.name, arguments: JSON.parse(c.arguments) as unknown }))).toEqual(calls);
      }),
      { numRuns: 200 },
    );
  });

  test('text mode decodes like Tokenizer.decode (skipping special tokens) and never splits a character', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 30 }), (s) => {
        const ids = tok.encodeIds(s, { addSpecialTokens: false });
        const p = new OutputParser(tok, { mode: 'text' });
        const pieces: string[] = [];
        for (const id of ids) for (const e of p.push(id)) if (e.type === 'text') pieces.push(e.text);
        for (const e of p.finish()) if (e.type === 'text') pieces.push(e.text);
        expect(pieces.join('')).toBe(tok.decode(ids, { skipSpecialTokens: true }));
        // A replacement character in a piece can only come from a split UTF-8 sequence, unless the
        // input text itself contains U+FFFD (fast-check's grapheme strings sometimes do).
        if (!s.includes('\uFFFD')) for (const piece of pieces) expect(piece).not.toContain('\uFFFD');
      }),
      { numRuns: 300 },
    );
  });

  test('stop strings cut the content; chat tags are plain text in text mode without skipping', () => {
    const ids = assistantIds([{ type: 'response', text: 'one two three' }]);
    const stopped = new OutputParser(tok, { mode: 'chat', stop: [' two'] });
    expect(collect(ids, stopped).content).toBe('one');
    expect(stopped.stopped).toBe(true);
    const raw = assistantIds([{ type: 'thoughts', text: 'hm' }, { type: 'response', text: 'ok' }]);
    expect(collect(raw, new OutputParser(tok, { mode: 'text', skipSpecialTokens: false })).content).toBe('<|inner_prefix|>hm<|inner_suffix|>ok');
  });

  test('a malformed or unterminated tool block is returned as content', () => {
    const bad = [71, ...tok.encodeIds('not json', { addSpecialTokens: false }), 72];
    expect(collect(bad, new OutputParser(tok, { mode: 'chat' }))).toEqual({ content: 'not json', reasoning: '', calls: [] });
    const open = [71, ...tok.encodeIds('[{"f": {}', { addSpecialTokens: false })];
    expect(collect(open, new OutputParser(tok, { mode: 'chat' })).content).toBe('[{"f": {}');
    const p = new OutputParser(tok, { mode: 'chat' });
    const ok = [71, ...tok.encodeIds('[{"f": {"a": 1}}]', { addSpecialTokens: false })];
    for (const id of ok) p.push(id);
    // <|tools_suffix|> arrives as a stop token (not pushed): it still closes the block.
    const closing = p.stopToken(72);
    expect(closing).toHaveLength(1);
    expect(closing[0]!.type === 'tool_calls' && closing[0]!.calls[0]!.function).toEqual({ name: 'f', arguments: '{"a": 1}' });
  });
});

describe('parseToolCalls', () => {
  test('accepts the Apertus and the name/arguments forms, rejects the rest', () => {
    expect(parseToolCalls('[{"get_weather": {"city": "Bern"}}]')).toEqual([{ name: 'get_weather', arguments: '{"city": "Bern"}' }]);
    expect(parseToolCalls('[{"name": "f", "arguments": "{\\"x\\": 1}"}]')).toEqual([{ name: 'f', arguments: '{"x": 1}' }]);
    for (const bad of ['', '[]', '{}', '[1]', '[{"a": 1}]', '[{"a": {}, "b": {}}]', '[{"": {}}]', '[{"f": "not json"}]', '[{"f": []}]']) {
      expect(parseToolCalls(bad)).toBeNull();
    }
  });

  test('never throws, and returns valid JSON arguments for any input', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.json()), (s) => {
        const r = parseToolCalls(s);
        if (r !== null) for (const c of r) expect(() => JSON.parse(c.arguments) as unknown).not.toThrow();
      }),
      { numRuns: 2000 },
    );
  });
});

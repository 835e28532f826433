// loadPretrained on the 2026 layouts: an Apertus 1.5 text tower (1.5 tokenizer, a 1.5-style chat
// template run in @huggingface/jinja, stops 2/68/72) whose prompts render and tokenize as
// transformers renders and tokenizes them (test/hf_chat.py, live), and an Apertus Mini directory
// whose special tokens come from its files.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ApertusModel, generate, outputVocabSize, saveCheckpoint } from '@apertus/model';
import { testModelConfig } from '@apertus/model/testing';
import { peerPython } from '@apertus/peers';
import { buildApertus1p5TokenizerJson, buildApertusTokenizerConfig, buildApertusTokenizerJson, type ChatMessage, type ChatTool } from '@apertus/tokenizer';
import { afterAll, describe, expect, test } from 'vitest';
import type { ChatPromptOptions } from './chat-prompt';
import { loadPretrained } from './load';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'apertus-layouts-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

const WEATHER: ChatTool = { name: 'get_weather', description: 'Current weather of a city.', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } };

const CASES: { messages: ChatMessage[]; options: ChatPromptOptions }[] = [
  { messages: [{ role: 'user', content: 'Grüezi! Wie geht es?' }], options: {} },
  { messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hi!' }, { role: 'assistant', content: 'Hello.' }, { role: 'user', content: '2+2?' }], options: { enableThinking: true } },
  {
    messages: [
      { role: 'user', content: 'Weather in Bern?' },
      { role: 'assistant', content: { blocks: [{ type: 'thoughts', text: 'The user wants the weather; call the tool.' }] }, tool_calls: [{ type: 'function', id: 'c1', function: { name: 'get_weather', arguments: '{"city": "Bern"}' } }] },
      { role: 'tool', content: '{"temp": 20}', tool_call_id: 'c1' },
      { role: 'tool', content: '{"wind": 3}', tool_call_id: 'c1' },
    ],
    options: { tools: [WEATHER], enableThinking: true },
  },
  { messages: [{ role: 'user', content: { parts: [{ type: 'text', text: 'What is in ' }, { type: 'image_url' }, { type: 'text', text: ' and ' }, { type: 'input_audio' }, { type: 'text', text: '?' }] } as never }], options: {} },
];

describe('loadPretrained: an Apertus 1.5 text tower', () => {
  const base = buildApertusTokenizerJson({ merges: [] });
  const json = buildApertus1p5TokenizerJson(base);
  const tokens = 1256 + 135368;
  const config = testModelConfig({ vocab_size: tokens + 16, output_vocab_size: 1256, eos_token_id: 2 });
  const dir = path.join(tmp, 'Apertus-v1.5-tiny');
  const model = ApertusModel.init(config, 4);
  model.layout = { architecture: 'Apertus1p5ForConditionalGeneration', configJson: { architectures: ['Apertus1p5ForConditionalGeneration'], model_type: 'apertus1p5', tie_word_embeddings: false }, carried: null };
  saveCheckpoint(model, dir, {
    dtype: 'f32', generationConfig: { bos_token_id: 1, eos_token_id: [2, 68, 72], pad_token_id: 3 },
    files: {
      'tokenizer.json': JSON.stringify(json),
      'tokenizer_config.json': JSON.stringify({ ...buildApertusTokenizerConfig({ instruct: false }), tokenizer_class: 'PreTrainedTokenizerFast' }),
      'chat_template.jinja': fs.readFileSync(path.join(__dirname, '../test/apertus-1p5-style.jinja'), 'utf8'),
    },
  });

  test('loads with its layout, split vocabulary and stops; generates text ids only', async () => {
    const warnings: string[] = [];
    const p = await loadPretrained(dir, { onWarning: (w) => warnings.push(w) });
    expect(p.model.layout.architecture).toBe('Apertus1p5ForConditionalGeneration');
    expect(outputVocabSize(p.model.config)).toBe(1256);
    expect(p.tokenizer.vocabSize).toBe(tokens);
    expect(p.generationConfig?.eos_token_id).toEqual([2, 68, 72]);
    expect(p.chat.kind).toBe('jinja');
    expect(warnings).toHaveLength(1);
    const ids = p.chat.encode(CASES[0]!.messages);
    const g = generate(p.model, ids, { maxTokens: 12, temperature: 0 });
    expect(g.tokens.every((t) => t < 1256)).toBe(true);
  }, 60_000);

  test('prompts render and tokenize as transformers does (reasoning at 32/33, tool outputs at 73/74, image/audio parts)', async () => {
    const p = await loadPretrained(dir);
    const cases = path.join(tmp, 'cases.json'), out = path.join(tmp, 'out.json');
    fs.writeFileSync(cases, JSON.stringify(CASES.map((c) => ({
      messages: c.messages, tools: c.options.tools ?? null, add_generation_prompt: c.options.addGenerationPrompt ?? true, enable_thinking: c.options.enableThinking ?? false,
    }))));
    execFileSync(peerPython(), [path.join(__dirname, '../test/hf_chat.py'), dir, cases, out], { stdio: ['ignore', 'ignore', 'inherit'] });
    const want = JSON.parse(fs.readFileSync(out, 'utf8')) as { text: string; ids: number[] }[];
    CASES.forEach((c, i) => {
      expect(p.chat.render(c.messages, c.options), `case ${i}`).toBe(want[i]!.text);
      expect(p.chat.encode(c.messages, c.options), `case ${i}`).toEqual(want[i]!.ids);
    });
    const tools = p.chat.encode(CASES[2]!.messages, CASES[2]!.options);
    for (const id of [32, 33, 73, 74, 71, 72]) expect(tools).toContain(id);
    expect(p.chat.encode(CASES[3]!.messages)).toContain(1256 + 7);
  }, 120_000);
});

describe('loadPretrained: Apertus Mini special tokens', () => {
  test('pad from special_tokens_map.json over tokenizer_config.json, as transformers reads them', async () => {
    const dir = path.join(tmp, 'mini');
    const model = ApertusModel.init(testModelConfig({ vocab_size: 1256, tie_word_embeddings: true }), 5);
    saveCheckpoint(model, dir, { dtype: 'f32', files: {
      'tokenizer.json': JSON.stringify(buildApertusTokenizerJson({ merges: [] })),
      'tokenizer_config.json': JSON.stringify({ ...buildApertusTokenizerConfig(), pad_token: '<SPECIAL_10>' }),
      'special_tokens_map.json': JSON.stringify({ pad_token: '<unk>' }),
    } });
    const p = await loadPretrained(dir);
    expect(p.model.config.tie_word_embeddings).toBe(true);
    expect(p.tokenizer.padTokenId).toBe(0);
    expect(Object.keys(p.tokenizerFiles)).toContain('special_tokens_map.json');
  });
});

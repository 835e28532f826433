// Alignment prompt files: records parsed into the chat messages, reward text, reference and offline
// completions; a bad line is refused naming `file:line: field`.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parsePromptRecord, readPromptFile } from './align-prompts';
import { PosttrainError } from './errors';

describe('alignment prompts', () => {
  it('parses prompt records and names the line and field of bad ones', () => {
    expect(parsePromptRecord({ prompt: 'Hi', reference: 'Hello', completions: ['Hey'] }, 'p.jsonl', 1)).toEqual({
      messages: [{ role: 'user', content: 'Hi' }],
      text: 'Hi',
      reference: 'Hello',
      offline: ['Hey'],
    });
    expect(() => parsePromptRecord({ messages: [{ role: 'user', content: 'a' }, { role: 'assistant', content: 'b' }] }, 'p.jsonl', 3)).toThrow('p.jsonl:3: messages: the last message must be a user message');
    expect(() => parsePromptRecord({ messages: [{ role: 'robot', content: 'a' }] }, 'p.jsonl', 4)).toThrow('p.jsonl:4: messages[0].role: expected system, user or assistant, got "robot"');
    expect(() => parsePromptRecord({ prompt: 'a', completions: [1] }, 'p.jsonl', 5)).toThrow('p.jsonl:5: completions: expected an array of strings');
    expect(() => parsePromptRecord({ text: 'a' }, 'p.jsonl', 6)).toThrow('p.jsonl:6: prompt: expected "prompt" (a string) or "messages" (an array)');
  });

  it('reads a JSONL file, skipping blank lines; a broken line or an empty file is an error naming it', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'apertus-prompts-'));
    const file = path.join(dir, 'p.jsonl');
    fs.writeFileSync(file, '{"prompt": "Hallo"}\n\n{"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Ciao"}], "reference": "Allegra"}\n');
    const prompts = readPromptFile(file);
    expect(prompts.map((p) => [p.text, p.reference, p.messages.length])).toEqual([['Hallo', undefined, 1], ['Ciao', 'Allegra', 2]]);
    fs.writeFileSync(file, '{"prompt": "Hallo"}\n{"prompt": \n');
    expect(() => readPromptFile(file)).toThrow(new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}:2: invalid JSON`));
    fs.writeFileSync(file, '\n');
    expect(() => readPromptFile(file)).toThrow(PosttrainError);
    expect(() => readPromptFile(path.join(dir, 'none.jsonl'))).toThrow(/none\.jsonl: cannot read the prompt file \(ENOENT\)/);
    fs.rmSync(dir, { recursive: true, force: true });
  });
});

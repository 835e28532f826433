// The prompts x of the alignment stage, each with an optional reference answer (for verifiable
// rewards) and optional offline completions (the dataset's own answers, candidates besides the
// reference policy's samples, §3.5):
//   udhr        translation prompts of the bundled UDHR task; reference = the article in the target
//               language, also the offline completion (German → Romansh held out)
//   <file>.jsonl one prompt per line: {"prompt": "…"} or {"messages": [{"role": "user", "content": "…"}, …]},
//               with optional "reference": "…" and "completions": ["…", …]

import fs from 'node:fs';
import type { ChatMessage } from '@apertus/tokenizer';
import { PosttrainError } from './errors';
import type { AlignPrompt } from './preference-data';
import { postTrainingTask, type TranslationExample } from './udhr-translation';

/** Where the prompts come from and how many (an alignment run's configuration has them all). */
export interface AlignPromptsConfig {
  /** `udhr` (translation prompts of the bundled task) or a `.jsonl` prompt file. */
  readonly prompts: string;
  /** UDHR declarations of the bundled task. */
  readonly languages: readonly string[];
  /** Prompts used (the first ones of the task, or of the file). */
  readonly numPrompts: number;
  /** Longest UDHR article in characters. */
  readonly maxChars: number;
  /** Seed of the task's draw. */
  readonly seed: number;
  /** Keep the dataset's own completions (the reference translation) as candidates. */
  readonly includeOffline: boolean;
}

const ROLES = new Set(['system', 'user', 'assistant']);

/**
 * Parse one JSONL prompt record (see file header).
 * @throws PosttrainError `InvalidConversation` naming `file:line` and the field
 */
export function parsePromptRecord(value: unknown, file: string, line: number): AlignPrompt {
  const fail = (field: string, msg: string): never => {
    throw new PosttrainError('InvalidConversation', msg, { file, line, field });
  };
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return fail('(line)', 'expected a JSON object');
  const v = value as Record<string, unknown>;
  let messages: ChatMessage[];
  if (typeof v.prompt === 'string') messages = [{ role: 'user', content: v.prompt }];
  else if (Array.isArray(v.messages)) {
    messages = v.messages.map((m, i) => {
      if (typeof m !== 'object' || m === null) return fail(`messages[${i}]`, 'expected an object');
      const { role, content } = m as { role?: unknown; content?: unknown };
      if (typeof role !== 'string' || !ROLES.has(role)) return fail(`messages[${i}].role`, `expected system, user or assistant, got ${JSON.stringify(role)}`);
      if (typeof content !== 'string') return fail(`messages[${i}].content`, `expected a string, got ${content === null ? 'null' : typeof content}`);
      return { role, content } as ChatMessage;
    });
    if (messages.length === 0 || messages[messages.length - 1]!.role !== 'user') fail('messages', 'the last message must be a user message');
  } else return fail('prompt', 'expected "prompt" (a string) or "messages" (an array)');
  if (v.reference !== undefined && typeof v.reference !== 'string') fail('reference', 'expected a string');
  let offline: string[] = [];
  if (v.completions !== undefined) {
    if (!Array.isArray(v.completions) || v.completions.some((c) => typeof c !== 'string')) fail('completions', 'expected an array of strings');
    offline = v.completions as string[];
  }
  const text = (messages[messages.length - 1] as { content: string }).content;
  return { messages, text, ...(typeof v.reference === 'string' ? { reference: v.reference } : {}), offline };
}

/**
 * Read a JSONL prompt file (blank lines skipped).
 * @throws PosttrainError naming the file (and line) when it cannot be read, a line is not JSON or no prompt is in it
 */
export function readPromptFile(file: string): AlignPrompt[] {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    throw new PosttrainError('Io', `cannot read the prompt file (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`, { file, cause: e });
  }
  const out: AlignPrompt[] = [];
  text.split('\n').forEach((l, i) => {
    if (l.trim() === '') return;
    let json: unknown;
    try {
      json = JSON.parse(l);
    } catch (e) {
      throw new PosttrainError('InvalidJson', `invalid JSON (${(e as Error).message})`, { file, line: i + 1 });
    }
    out.push(parsePromptRecord(json, file, i + 1));
  });
  if (out.length === 0) throw new PosttrainError('InvalidConversation', 'no prompt in the file', { file });
  return out;
}

/**
 * The first `numPrompts` prompts of the configured source, and the held-out German → Romansh
 * translation prompts (with references) for evaluation.
 */
export async function loadPrompts(cfg: AlignPromptsConfig): Promise<{ prompts: AlignPrompt[]; heldOut: TranslationExample[] }> {
  const udhr = cfg.prompts === 'udhr';
  const task = await postTrainingTask(udhr, { ...cfg, maxExamples: cfg.numPrompts });
  const prompts: AlignPrompt[] = udhr
    ? task.train.map((e) => ({ messages: [...e.messages.slice(0, 1)], text: e.prompt, reference: e.reference, offline: cfg.includeOffline ? [e.reference] : [] }))
    : readPromptFile(cfg.prompts).slice(0, cfg.numPrompts).map((p) => (cfg.includeOffline ? p : { ...p, offline: [] }));
  return { prompts, heldOut: task.eval };
}

// Data for supervised fine-tuning (training-recipe.md §5).
//
// Input: JSONL, one row per line, in one of TRL's dataset formats:
//   {"messages": [...], "tools"?: [...], "enable_thinking"?: boolean}   conversational
//   {"prompt": [...messages], "completion": [...messages]}             conversational prompt-completion
//   {"prompt": "...", "completion": "..."}                             prompt-completion (plain text)
//   {"text": "..."}                                                    language modelling (plain text)
// with OpenAI-style messages as the Apertus chat template accepts them (tokenizer's ChatMessage):
// system (first only), user, assistant (string content, `tool_calls`, or structured
// `{blocks: [thoughts | tool_calls | tool_outputs | response]}`), and tool messages inside an
// assistant turn. An assistant message may also carry `reasoning_content` (a string, as several
// OpenAI-compatible servers emit it); it becomes a `thoughts` block, and the whole conversation is
// then written in the structured form the template needs for deliberation.
//
// Each row is validated (typed error naming file, line and field), rendered with the template's
// variant B (every assistant turn, the last included, is closed by `<|assistant_end|>` unless it
// waits for tool outputs) and tokenized to ids plus the assistant mask: the loss covers the content
// of every assistant turn (text, thoughts, tool calls and their control tokens) and its
// `<|assistant_end|>`; system, developer, user, `<|assistant_start|>` and tool outputs are prompt
// (`prompt_loss_weight = 0`); in a conversational prompt-completion row only the completion's
// assistant turns are supervised. Plain-text rows are documents `<s> … </s>` (the pretraining
// layout, no chat template): prompt-completion supervises the completion and its `</s>`, text every
// token. Rows longer than `maxLength` are truncated on the right and counted.

import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import {
  APERTUS_BOS_ID,
  APERTUS_EOS_ID,
  applyApertusChatTemplate,
  TokenizerError,
  type AssistantBlock,
  type ChatMessage,
  type ChatTool,
  type Tokenizer,
} from '@apertus/tokenizer';
import { checkOption, PosttrainError } from './errors';

/** One SFT row: a conversation and the template options it is rendered with. */
export interface SftConversation {
  /** The messages, validated. */
  readonly messages: ChatMessage[];
  /** Tools offered to the model (rendered in the developer block). */
  readonly tools?: ChatTool[];
  /** `Deliberation: enabled`. Default: true iff the conversation has thoughts. */
  readonly enableThinking?: boolean;
  /** Leading messages that are prompt only (a conversational prompt-completion row): their assistant turns are not supervised. */
  readonly promptMessages?: number;
}

/** A plain-text prompt-completion row: `<s>` prompt completion `</s>`, the loss on the completion and `</s>`. */
export interface SftPromptCompletion {
  /** Context, not supervised. */
  readonly prompt: string;
  /** The text to learn. */
  readonly completion: string;
}

/** A plain-text row (language modelling): `<s>` text `</s>`, every token supervised. */
export interface SftText {
  /** The document. */
  readonly text: string;
}

/** One SFT row in any supported format. */
export type SftRecord = SftConversation | SftPromptCompletion | SftText;

/** Where a row comes from, for error messages. */
export interface SftSource {
  /** File path or label. */
  readonly file?: string;
  /** 1-based line number. */
  readonly line?: number;
}

/** A tokenized SFT row. */
export interface SftExample {
  /** Token ids, starting with the template's `<s>`. */
  readonly ids: number[];
  /** 1 on supervised tokens (assistant content and `<|assistant_end|>`), aligned with `ids`. */
  readonly assistantMask: number[];
  /** True if the row was cut to `maxLength`. */
  readonly truncated: boolean;
}

/** Options of {@link tokenizeSftConversation} and {@link tokenizeSftDataset}. */
export interface SftTokenizeOptions {
  /** Longest row in tokens; longer rows keep their first `maxLength` tokens. Default 4096 (the Apertus SFT runs). */
  readonly maxLength?: number;
  /**
   * Date in the default system prompt (`YYYY-MM-DD` or a Date). Default: today, as the reference
   * template; fix it for reproducible datasets.
   */
  readonly date?: string | Date;
}

/** Counters of {@link tokenizeSftDataset}. */
export interface SftDatasetStats {
  /** Rows read. */
  rows: number;
  /** Rows kept (returned as examples). */
  kept: number;
  /** Kept rows that were cut to `maxLength`. */
  truncated: number;
  /** Rows dropped because no supervised token survived truncation. */
  droppedNoSupervision: number;
  /** Tokens in the kept rows. */
  tokens: number;
  /** Supervised tokens in the kept rows (the SFT loss normaliser over the whole dataset). */
  supervisedTokens: number;
}

type Json = Record<string, unknown>;

function isObject(v: unknown): v is Json {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function typeName(v: unknown): string {
  return v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v;
}

/** Validates one row; every failure names its JSON path. */
class RowValidator {
  constructor(private readonly where: SftSource) {}

  fail(field: string, detail: string): PosttrainError {
    return new PosttrainError('InvalidConversation', detail, { ...this.where, field });
  }

  string(v: unknown, field: string): string {
    if (typeof v !== 'string') throw this.fail(field, `expected a string, got ${typeName(v)}`);
    return v;
  }

  array(v: unknown, field: string): unknown[] {
    if (!Array.isArray(v)) throw this.fail(field, `expected an array, got ${typeName(v)}`);
    return v;
  }

  object(v: unknown, field: string): Json {
    if (!isObject(v)) throw this.fail(field, `expected an object, got ${typeName(v)}`);
    return v;
  }

  args(v: unknown, field: string): string | Record<string, unknown> {
    if (typeof v === 'string') return v;
    if (isObject(v)) return v;
    throw this.fail(field, `expected a JSON string or an object, got ${typeName(v)}`);
  }

  block(v: unknown, field: string): AssistantBlock {
    const b = this.object(v, field);
    switch (b.type) {
      case 'thoughts':
      case 'response':
        return { type: b.type, text: this.string(b.text, `${field}.text`) };
      case 'tool_calls':
        return {
          type: 'tool_calls',
          calls: this.array(b.calls, `${field}.calls`).map((c, k) => {
            const call = this.object(c, `${field}.calls[${k}]`);
            return { name: this.string(call.name, `${field}.calls[${k}].name`), arguments: this.args(call.arguments, `${field}.calls[${k}].arguments`) };
          }),
        };
      case 'tool_outputs':
        return {
          type: 'tool_outputs',
          outputs: this.array(b.outputs, `${field}.outputs`).map((o, k) => ({
            output: this.string(this.object(o, `${field}.outputs[${k}]`).output, `${field}.outputs[${k}].output`),
          })),
        };
      default:
        throw this.fail(`${field}.type`, `expected thoughts, tool_calls, tool_outputs or response, got ${JSON.stringify(b.type)}`);
    }
  }

  tool(v: unknown, field: string): ChatTool {
    const t = this.object(v, field);
    const fn = t.type === 'function' && t.function !== undefined ? this.object(t.function, `${field}.function`) : t;
    const path = fn === t ? field : `${field}.function`;
    this.string(fn.name, `${path}.name`);
    this.string(fn.description, `${path}.description`);
    if (fn.parameters !== undefined && fn.parameters !== null) this.object(fn.parameters, `${path}.parameters`);
    return t as unknown as ChatTool;
  }
}

/**
 * Validate one parsed JSONL row and return it as an {@link SftConversation}. Throws
 * {@link PosttrainError} `InvalidConversation` naming `where.file`, `where.line` and the field.
 */
export function parseSftRecord(value: unknown, where: SftSource = {}): SftConversation {
  const v = new RowValidator(where);
  const row = v.object(value, '(row)');
  const raw = v.array(row.messages, 'messages');
  if (raw.length === 0) throw v.fail('messages', 'no messages');
  const messages: ChatMessage[] = [];
  const reasoning = new Map<number, string>();
  let assistants = 0;
  let structured = false;
  raw.forEach((m, i) => {
    const field = `messages[${i}]`;
    const msg = v.object(m, field);
    switch (msg.role) {
      case 'system': {
        if (i !== 0) throw v.fail(`${field}.role`, 'a system message may only come first');
        const c = msg.content;
        messages.push({ role: 'system', content: isObject(c) ? { text: v.string(c.text, `${field}.content.text`) } : v.string(c, `${field}.content`) });
        return;
      }
      case 'user': {
        const c = msg.content;
        if (isObject(c)) {
          const parts = v.array(c.parts, `${field}.content.parts`).map((p, k) => {
            const part = v.object(p, `${field}.content.parts[${k}]`);
            if (part.type !== 'text') throw v.fail(`${field}.content.parts[${k}].type`, `only "text" parts are supported, got ${JSON.stringify(part.type)}`);
            return { type: 'text' as const, text: v.string(part.text, `${field}.content.parts[${k}].text`) };
          });
          messages.push({ role: 'user', content: { parts } });
        } else messages.push({ role: 'user', content: v.string(c, `${field}.content`) });
        return;
      }
      case 'assistant': {
        assistants++;
        const c = msg.content;
        let content: string | { blocks: AssistantBlock[] } | null;
        if (c === null || c === undefined) content = null;
        else if (typeof c === 'string') content = c;
        else if (isObject(c)) {
          content = { blocks: v.array(c.blocks, `${field}.content.blocks`).map((b, k) => v.block(b, `${field}.content.blocks[${k}]`)) };
          structured = true;
        } else throw v.fail(`${field}.content`, `expected a string, null or {blocks: [...]}, got ${typeName(c)}`);
        let toolCalls: NonNullable<Extract<ChatMessage, { role: 'assistant' }>['tool_calls']> | undefined;
        if (msg.tool_calls !== undefined && msg.tool_calls !== null) {
          toolCalls = v.array(msg.tool_calls, `${field}.tool_calls`).map((t, k) => {
            const tf = `${field}.tool_calls[${k}]`;
            const call = v.object(t, tf);
            if (call.type !== undefined && call.type !== 'function') throw v.fail(`${tf}.type`, `expected "function", got ${JSON.stringify(call.type)}`);
            if (call.id !== undefined && typeof call.id !== 'string') throw v.fail(`${tf}.id`, `expected a string, got ${typeName(call.id)}`);
            const fn = v.object(call.function, `${tf}.function`);
            return {
              ...(call.id !== undefined ? { id: call.id as string } : {}),
              type: 'function' as const,
              function: { name: v.string(fn.name, `${tf}.function.name`), arguments: v.args(fn.arguments, `${tf}.function.arguments`) },
            };
          });
        }
        if (msg.reasoning_content !== undefined && msg.reasoning_content !== null) {
          reasoning.set(messages.length, v.string(msg.reasoning_content, `${field}.reasoning_content`));
          structured = true;
        }
        if (content === null && (toolCalls === undefined || toolCalls.length === 0) && !reasoning.has(messages.length)) {
          throw v.fail(`${field}.content`, 'an assistant message needs content, reasoning_content or tool_calls');
        }
        messages.push({ role: 'assistant', content, ...(toolCalls !== undefined ? { tool_calls: toolCalls } : {}) });
        return;
      }
      case 'tool': {
        const prev = messages[messages.length - 1];
        if (prev === undefined || (prev.role !== 'assistant' && prev.role !== 'tool')) {
          throw v.fail(`${field}.role`, 'a tool message must follow an assistant message (or another tool message)');
        }
        if (msg.tool_call_id !== undefined && typeof msg.tool_call_id !== 'string') throw v.fail(`${field}.tool_call_id`, `expected a string, got ${typeName(msg.tool_call_id)}`);
        messages.push({ role: 'tool', content: v.string(msg.content, `${field}.content`), ...(typeof msg.tool_call_id === 'string' ? { tool_call_id: msg.tool_call_id } : {}) });
        return;
      }
      default:
        throw v.fail(`${field}.role`, `expected system, user, assistant or tool, got ${JSON.stringify(msg.role)}`);
    }
  });
  if (assistants === 0) throw v.fail('messages', 'no assistant message: nothing to learn');

  // The template needs one assistant format per conversation: with thoughts anywhere, write every
  // assistant message as blocks (a string becomes one response block, which renders identically).
  let hasThoughts = false;
  if (structured) {
    messages.forEach((m, i) => {
      if (m.role !== 'assistant') return;
      const blocks: AssistantBlock[] = [];
      const r = reasoning.get(i);
      if (r !== undefined) blocks.push({ type: 'thoughts', text: r });
      if (typeof m.content === 'string') {
        if (m.content !== '') blocks.push({ type: 'response', text: m.content });
      } else if (m.content !== null && m.content !== undefined) blocks.push(...m.content.blocks);
      if (blocks.some((b) => b.type === 'thoughts')) hasThoughts = true;
      messages[i] = { role: 'assistant', content: blocks.length === 0 && m.tool_calls ? null : { blocks }, ...(m.tool_calls ? { tool_calls: m.tool_calls } : {}) };
    });
  }

  let tools: ChatTool[] | undefined;
  if (row.tools !== undefined && row.tools !== null) tools = v.array(row.tools, 'tools').map((t, k) => v.tool(t, `tools[${k}]`));
  if (row.enable_thinking !== undefined && typeof row.enable_thinking !== 'boolean') {
    throw v.fail('enable_thinking', `expected a boolean, got ${typeName(row.enable_thinking)}`);
  }
  const enableThinking = (row.enable_thinking as boolean | undefined) ?? hasThoughts;
  return { messages, ...(tools !== undefined ? { tools } : {}), enableThinking };
}

/**
 * Validate one parsed JSONL row in any supported format (see the file header): `messages`, a
 * `prompt`/`completion` pair (both strings, or both message lists) or `text`. Throws
 * {@link PosttrainError} `InvalidConversation` naming `where.file`, `where.line` and the field.
 */
export function parseSftRow(value: unknown, where: SftSource = {}): SftRecord {
  const v = new RowValidator(where);
  const row = v.object(value, '(row)');
  const formats = (['messages', 'prompt', 'text'] as const).filter((k) => row[k] !== undefined);
  if (formats.length !== 1) {
    throw v.fail('(row)', formats.length === 0
      ? 'expected "messages", "prompt" and "completion", or "text"'
      : `expected one format, got ${formats.map((f) => `"${f}"`).join(' and ')}`);
  }
  if (formats[0] === 'messages') return parseSftRecord(row, where);
  if (formats[0] === 'text') {
    const text = v.string(row.text, 'text');
    if (text === '') throw v.fail('text', 'empty text: nothing to learn');
    return { text };
  }
  if (row.completion === undefined) throw v.fail('completion', 'a "prompt" row needs a "completion"');
  if (typeof row.prompt === 'string') {
    const completion = v.string(row.completion, 'completion');
    if (completion === '') throw v.fail('completion', 'empty completion: nothing to learn');
    return { prompt: row.prompt, completion };
  }
  const prompt = v.array(row.prompt, 'prompt');
  const completion = v.array(row.completion, 'completion');
  const { prompt: _p, completion: _c, ...rest } = row;
  try {
    const conv = parseSftRecord({ ...rest, messages: [...prompt, ...completion] }, where);
    if (!completion.some((m) => isObject(m) && m.role === 'assistant')) throw v.fail('completion', 'no assistant message: nothing to learn');
    return { ...conv, promptMessages: prompt.length };
  } catch (e) {
    // Name the field as the row spells it: messages[i] → prompt[i] or completion[i − prompt.length].
    if (!(e instanceof PosttrainError) || e.field === undefined) throw e;
    const m = /^messages\[(\d+)\](.*)$/.exec(e.field);
    if (!m) throw e;
    const i = Number(m[1]);
    const field = i < prompt.length ? `prompt[${i}]${m[2]}` : `completion[${i - prompt.length}]${m[2]}`;
    throw new PosttrainError(e.code, e.message.slice(e.message.indexOf(`${e.field}: `) + e.field.length + 2), { ...where, field, cause: e });
  }
}

/**
 * Read a JSONL file of SFT rows (any supported format, see {@link parseSftRow}) line by line
 * (blank lines are skipped). Yields each validated row with its line number; throws
 * {@link PosttrainError} `InvalidJson` / `InvalidConversation` naming the file and line, or `Io`
 * when the file cannot be read.
 */
export async function* readSftJsonl(file: string): AsyncGenerator<SftRecord & { readonly line: number }> {
  const stream = createReadStream(file, { encoding: 'utf8' });
  const lines = createInterface({ input: stream, crlfDelay: Infinity });
  let line = 0;
  try {
    for await (const text of lines) {
      line++;
      if (text.trim() === '') continue;
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch (cause) {
        throw new PosttrainError('InvalidJson', `invalid JSON (${(cause as Error).message})`, { file, line, cause });
      }
      yield { ...parseSftRow(value, { file, line }), line };
    }
  } catch (cause) {
    if (cause instanceof PosttrainError) throw cause;
    throw new PosttrainError('Io', `cannot read (${(cause as Error).message})`, { file, cause });
  } finally {
    lines.close();
    stream.destroy();
  }
}

function renderChat(tokenizer: Tokenizer, conversation: SftConversation, messages: ChatMessage[], options: SftTokenizeOptions, where: SftSource): { ids: number[]; assistantMask: number[] } {
  try {
    return applyApertusChatTemplate(tokenizer, messages, {
      variant: 'B',
      ...(conversation.tools !== undefined ? { tools: conversation.tools } : {}),
      enableThinking: conversation.enableThinking ?? false,
      ...(options.date !== undefined ? { date: options.date } : {}),
    });
  } catch (cause) {
    if (cause instanceof TokenizerError) {
      throw new PosttrainError('InvalidConversation', cause.message, { ...where, ...(cause.field !== undefined ? { field: cause.field } : {}), cause });
    }
    throw cause;
  }
}

function truncate(ids: number[], assistantMask: number[], maxLength: number): SftExample {
  checkOption(Number.isInteger(maxLength) && maxLength >= 2, 'maxLength', `expected an integer ≥ 2, got ${maxLength}`);
  const truncated = ids.length > maxLength;
  return { ids: truncated ? ids.slice(0, maxLength) : ids, assistantMask: truncated ? assistantMask.slice(0, maxLength) : assistantMask, truncated };
}

/**
 * Render and tokenize one conversation for SFT: ids (one BOS, the template's), the assistant mask
 * (none on the first `promptMessages` messages), and right truncation to `maxLength`. Template
 * failures become {@link PosttrainError} `InvalidConversation` naming `where`.
 */
export function tokenizeSftConversation(tokenizer: Tokenizer, conversation: SftConversation, options: SftTokenizeOptions = {}, where: SftSource = {}): SftExample {
  const chat = renderChat(tokenizer, conversation, conversation.messages, options, where);
  const mask = [...chat.assistantMask];
  if (conversation.promptMessages !== undefined && conversation.promptMessages > 0) {
    // The prompt alone renders to a prefix of the whole conversation (it ends before the next turn starts).
    const prompt = renderChat(tokenizer, conversation, conversation.messages.slice(0, conversation.promptMessages), options, where).ids;
    if (prompt.some((id, i) => chat.ids[i] !== id)) throw new PosttrainError('InvalidConversation', 'the prompt does not render to a prefix of the whole conversation', { ...where, field: 'prompt' });
    mask.fill(0, 0, prompt.length);
  }
  return truncate(chat.ids, mask, options.maxLength ?? 4096);
}

/**
 * Tokenize one row of any format (see {@link parseSftRow}). Plain-text rows become `<s>` prompt
 * completion `</s>` (prompt and completion tokenized apart, so the mask boundary is exact) or
 * `<s>` text `</s>`, supervised on the completion (or the text) and `</s>`.
 */
export function tokenizeSftRecord(tokenizer: Tokenizer, record: SftRecord, options: SftTokenizeOptions = {}, where: SftSource = {}): SftExample {
  if ('messages' in record) return tokenizeSftConversation(tokenizer, record, options, where);
  const bos = tokenizer.bosTokenId ?? APERTUS_BOS_ID, eod = tokenizer.tokenToId('</s>') ?? APERTUS_EOS_ID;
  const enc = (t: string) => tokenizer.encodeIds(t, { addSpecialTokens: false });
  const prompt = 'text' in record ? [] : enc(record.prompt);
  const target = [...enc('text' in record ? record.text : record.completion), eod];
  const ids = [bos, ...prompt, ...target];
  return truncate(ids, [0, ...prompt.map(() => 0), ...target.map(() => 1)], options.maxLength ?? 4096);
}

/**
 * Tokenize a stream of rows of any format (e.g. {@link readSftJsonl}) into SFT examples with
 * counters. Rows whose supervised tokens were all cut by truncation are dropped and counted.
 */
export async function tokenizeSftDataset(
  tokenizer: Tokenizer,
  conversations: Iterable<SftRecord & { readonly line?: number }> | AsyncIterable<SftRecord & { readonly line?: number }>,
  options: SftTokenizeOptions & { readonly file?: string } = {},
): Promise<{ examples: SftExample[]; stats: SftDatasetStats }> {
  const stats: SftDatasetStats = { rows: 0, kept: 0, truncated: 0, droppedNoSupervision: 0, tokens: 0, supervisedTokens: 0 };
  const examples: SftExample[] = [];
  for await (const conv of conversations) {
    stats.rows++;
    const where: SftSource = { ...(options.file !== undefined ? { file: options.file } : {}), line: conv.line ?? stats.rows };
    const ex = tokenizeSftRecord(tokenizer, conv, options, where);
    let supervised = 0;
    for (const m of ex.assistantMask) supervised += m;
    if (supervised === 0) {
      stats.droppedNoSupervision++;
      continue;
    }
    stats.kept++;
    if (ex.truncated) stats.truncated++;
    stats.tokens += ex.ids.length;
    stats.supervisedTokens += supervised;
    examples.push(ex);
  }
  return { examples, stats };
}

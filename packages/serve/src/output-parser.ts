// Turning generated token ids into what an OpenAI client sees (apertus-model.md §5.4, model-side
// protocol). The Apertus chat tokens split an assistant turn into channels:
//
//   <|inner_prefix|> reasoning… <|inner_suffix|>          → `reasoning_content`
//   <|tools_prefix|>[{"name": {args}}, …]<|tools_suffix|>  → `tool_calls`
//   everything else                                         → `content`
//
// The parser works on token ids, so the tags are recognised exactly (never by matching their text),
// text is decoded with a streaming UTF-8-safe decoder, and stop strings are matched per channel.

import { DecodeStream, pyJson, type Tokenizer } from '@apertus/tokenizer';
import { randomBytes } from 'node:crypto';
import { StopMatcher } from './stop-strings';

/** A text channel of an assistant turn. */
export type Channel = 'content' | 'reasoning';

/** An OpenAI tool call (`choices[i].message.tool_calls[j]`). */
export interface ToolCall {
  /** Call id (`call_…`), made up by the server. */
  id: string;
  /** Always `"function"`. */
  type: 'function';
  /** The function name and its JSON-encoded arguments. */
  function: { name: string; arguments: string };
}

/** Output of {@link OutputParser.push}: new text on a channel, or a completed block of tool calls. */
export type ParserEvent =
  | { type: 'text'; channel: Channel; text: string }
  | { type: 'tool_calls'; calls: ToolCall[] };

/** Options of {@link OutputParser}. */
export interface OutputParserOptions {
  /** 'chat': recognise reasoning and tool-call tags; 'text': plain completion text. */
  mode: 'chat' | 'text';
  /** Stop strings: the output is cut before the first match and `stopped` becomes true. */
  stop?: readonly string[];
  /** Parse `<|tools_prefix|>…<|tools_suffix|>` into tool calls (chat mode). Default true. */
  parseTools?: boolean;
  /** Leave special tokens (other than the channel tags in chat mode) out of the text. Default true. */
  skipSpecialTokens?: boolean;
  /** Makes tool-call ids. Default `call_` + 24 random hex digits. */
  makeToolCallId?: () => string;
}

/**
 * Parse the text of a tool-call block (between `<|tools_prefix|>` and `<|tools_suffix|>`): a JSON
 * array of single-key objects `{"NAME": ARGS}` (the Apertus protocol); objects of the form
 * `{"name": NAME, "arguments": ARGS}` are accepted too. Arguments are returned as JSON text in the
 * template's own style (`", "` / `": "` separators), so a call sent back in the conversation renders
 * exactly as the model wrote it. Returns null when the text is not such an array.
 */
export function parseToolCalls(text: string): { name: string; arguments: string }[] | null {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return null;
  }
  if (!Array.isArray(v) || v.length === 0) return null;
  const calls: { name: string; arguments: string }[] = [];
  for (const item of v) {
    if (item === null || typeof item !== 'object' || Array.isArray(item)) return null;
    const o = item as Record<string, unknown>;
    const keys = Object.keys(o);
    let name: string;
    let args: unknown;
    if (keys.length === 2 && typeof o.name === 'string' && 'arguments' in o) {
      name = o.name;
      args = o.arguments;
    } else if (keys.length === 1) {
      name = keys[0]!;
      args = o[name];
    } else return null;
    if (name.length === 0) return null;
    if (typeof args === 'string') {
      try {
        JSON.parse(args);
      } catch {
        return null;
      }
      calls.push({ name, arguments: args });
    } else if (args !== null && typeof args === 'object' && !Array.isArray(args)) {
      calls.push({ name, arguments: pyJson(args) });
    } else return null;
  }
  return calls;
}

/**
 * Incremental parser of one generated sequence: feed each token id with {@link push}, then call
 * {@link finish} once. The concatenated text events of a channel equal the decoded channel text,
 * cut before the first stop string.
 */
export class OutputParser {
  private readonly chat: boolean;
  private readonly skipSpecial: boolean;
  private readonly stream: DecodeStream;
  private readonly matchers: Record<Channel, StopMatcher>;
  private readonly makeId: () => string;
  private readonly innerPrefix: number | undefined;
  private readonly innerSuffix: number | undefined;
  private readonly toolsPrefix: number | undefined;
  private readonly toolsSuffix: number | undefined;
  private channel: Channel | 'tools' = 'content';
  private toolText = '';
  private finished = false;
  /** True once a stop string matched (the sequence should end). */
  stopped = false;
  /** Number of tool calls emitted so far. */
  toolCalls = 0;

  /** A parser for sequences decoded with `tokenizer`. */
  constructor(tokenizer: Tokenizer, options: OutputParserOptions) {
    this.chat = options.mode === 'chat';
    this.skipSpecial = options.skipSpecialTokens ?? true;
    this.stream = tokenizer.decodeStream({ skipSpecialTokens: this.skipSpecial });
    const stop = options.stop ?? [];
    this.matchers = { content: new StopMatcher(stop), reasoning: new StopMatcher(stop) };
    this.makeId = options.makeToolCallId ?? (() => `call_${randomBytes(12).toString('hex')}`);
    if (this.chat) {
      this.innerPrefix = tokenizer.tokenToId('<|inner_prefix|>');
      this.innerSuffix = tokenizer.tokenToId('<|inner_suffix|>');
      if (options.parseTools ?? true) {
        this.toolsPrefix = tokenizer.tokenToId('<|tools_prefix|>');
        this.toolsSuffix = tokenizer.tokenToId('<|tools_suffix|>');
      }
    }
  }

  /** Feed one generated token; returns the events it completes. Throws TokenizerError for an id outside the vocabulary. */
  push(id: number): ParserEvent[] {
    if (this.stopped || this.finished) return [];
    const out: ParserEvent[] = [];
    if (id === this.innerPrefix && id !== undefined) {
      this.closeChannel(out);
      this.channel = 'reasoning';
    } else if (id === this.innerSuffix && id !== undefined) {
      this.closeChannel(out);
      this.channel = 'content';
    } else if (id === this.toolsPrefix && id !== undefined) {
      this.closeChannel(out);
      this.channel = 'tools';
      this.toolText = '';
    } else if (id === this.toolsSuffix && id !== undefined && this.channel === 'tools') {
      this.closeTools(out, true);
    } else {
      this.route(this.stream.step(id), out);
    }
    return out;
  }

  /**
   * A stop token ended generation (it is not part of the text). `<|tools_suffix|>` is a stop token
   * of Apertus-Instruct: it still closes an open tool-call block.
   */
  stopToken(id: number): ParserEvent[] {
    const out: ParserEvent[] = [];
    if (!this.stopped && !this.finished && id === this.toolsSuffix && id !== undefined && this.channel === 'tools') this.closeTools(out, true);
    return out;
  }

  /** End of the sequence: release held-back text; an unterminated tool block becomes content. */
  finish(): ParserEvent[] {
    if (this.finished) return [];
    const out: ParserEvent[] = [];
    if (!this.stopped) this.closeChannel(out);
    this.finished = true;
    return out;
  }

  private route(text: string, out: ParserEvent[]): void {
    if (text.length === 0) return;
    if (this.channel === 'tools') {
      this.toolText += text;
      return;
    }
    const m = this.matchers[this.channel];
    const safe = m.push(text);
    if (safe.length > 0) out.push({ type: 'text', channel: this.channel, text: safe });
    if (m.matched !== null) this.stopped = true;
  }

  /** Flush the decoder and the stop matcher of the current channel (an open tool block becomes content). */
  private closeChannel(out: ParserEvent[]): void {
    if (this.channel === 'tools') {
      this.closeTools(out, false);
      return;
    }
    this.route(this.stream.flush(), out);
    if (!this.stopped) {
      const rest = this.matchers[this.channel].flush();
      if (rest.length > 0) out.push({ type: 'text', channel: this.channel, text: rest });
    }
  }

  private closeTools(out: ParserEvent[], terminated: boolean): void {
    this.toolText += this.stream.flush();
    const calls = parseToolCalls(this.toolText.trim());
    this.channel = 'content';
    if (calls !== null && terminated) {
      const made = calls.map((c) => ({ id: this.makeId(), type: 'function' as const, function: c }));
      this.toolCalls += made.length;
      out.push({ type: 'tool_calls', calls: made });
    } else {
      // Not a well-formed call: hand the text over as content, tags included unless skipped.
      const open = this.skipSpecial ? '' : '<|tools_prefix|>';
      const close = this.skipSpecial || !terminated ? '' : '<|tools_suffix|>';
      this.route(open + this.toolText + close, out);
      if (!this.stopped) {
        const rest = this.matchers.content.flush();
        if (rest.length > 0) out.push({ type: 'text', channel: 'content', text: rest });
      }
    }
    this.toolText = '';
  }
}

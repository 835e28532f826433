// OpenAI response objects built from scheduler events (ecosystem.md §2.1–2.2): streamed
// `chat.completion.chunk` / `text_completion` chunks and the whole `chat.completion` /
// `text_completion` responses. SSE and WebSocket share the chunk builders.

import type { FinishReason, GenerationEvent, Usage } from './scheduler';
import type { ToolCall } from './output-parser';

/** OpenAI `usage`. */
export interface OpenAIUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

/** A streamed chat chunk (`object: "chat.completion.chunk"`). */
export interface ChatCompletionChunk {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  system_fingerprint: null;
  choices: {
    index: number;
    delta: {
      role?: 'assistant';
      content?: string;
      reasoning_content?: string;
      tool_calls?: (ToolCall & { index: number })[];
    };
    logprobs: null;
    finish_reason: OpenAIFinishReason | null;
  }[];
  usage?: OpenAIUsage | null;
}

/** A streamed completion chunk (`object: "text_completion"`). */
export interface CompletionChunk {
  id: string;
  object: 'text_completion';
  created: number;
  model: string;
  system_fingerprint: null;
  choices: { index: number; text: string; logprobs: null; finish_reason: OpenAIFinishReason | null }[];
  usage?: OpenAIUsage | null;
}

/** Finish reasons a client sees (a cancelled sequence is reported as 'stop'). */
export type OpenAIFinishReason = 'stop' | 'length' | 'tool_calls';

/** Map a scheduler finish reason to OpenAI's. */
export function openAIFinishReason(r: FinishReason): OpenAIFinishReason {
  return r === 'cancelled' ? 'stop' : r;
}

/** Scheduler usage as OpenAI `usage`. */
export function openAIUsage(u: Usage): OpenAIUsage {
  return { prompt_tokens: u.promptTokens, completion_tokens: u.completionTokens, total_tokens: u.promptTokens + u.completionTokens };
}

/** Identity of one response: id, creation time, model, and whether to attach usage to chunks. */
export interface ResponseMeta {
  id: string;
  created: number;
  model: string;
  includeUsage: boolean;
}

/**
 * Turns a chat request's events into chunks: `start()` gives the role chunks (one per choice),
 * `event()` the chunks of a text / tool-call / finish event, `usage()` the final usage chunk.
 */
export class ChatChunker {
  private readonly toolIndex = new Map<number, number>();
  constructor(private readonly meta: ResponseMeta, private readonly n: number) {}

  private chunk(choices: ChatCompletionChunk['choices']): ChatCompletionChunk {
    const c: ChatCompletionChunk = { id: this.meta.id, object: 'chat.completion.chunk', created: this.meta.created, model: this.meta.model, system_fingerprint: null, choices };
    if (this.meta.includeUsage) c.usage = null;
    return c;
  }

  /** The first chunk of every choice: `delta: {role: "assistant", content: ""}`. */
  start(): ChatCompletionChunk[] {
    return Array.from({ length: this.n }, (_, index) => this.chunk([{ index, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }]));
  }

  /** The chunk for one event (null for `done` / `error`, which the transport handles). */
  event(e: GenerationEvent): ChatCompletionChunk | null {
    switch (e.type) {
      case 'text':
        return this.chunk([{ index: e.index, delta: e.channel === 'content' ? { content: e.text } : { reasoning_content: e.text }, logprobs: null, finish_reason: null }]);
      case 'tool_calls': {
        const base = this.toolIndex.get(e.index) ?? 0;
        this.toolIndex.set(e.index, base + e.calls.length);
        return this.chunk([{ index: e.index, delta: { tool_calls: e.calls.map((c, k) => ({ index: base + k, ...c })) }, logprobs: null, finish_reason: null }]);
      }
      case 'finish':
        return this.chunk([{ index: e.index, delta: {}, logprobs: null, finish_reason: openAIFinishReason(e.reason) }]);
      default:
        return null;
    }
  }

  /** The usage chunk sent before `[DONE]` when `stream_options.include_usage` is set. */
  usage(u: Usage): ChatCompletionChunk {
    return { id: this.meta.id, object: 'chat.completion.chunk', created: this.meta.created, model: this.meta.model, system_fingerprint: null, choices: [], usage: openAIUsage(u) };
  }
}

/** Chunks of a completions request; choice index = prompt index × n + sequence index. */
export class CompletionChunker {
  constructor(private readonly meta: ResponseMeta) {}

  private chunk(index: number, text: string, finish: OpenAIFinishReason | null): CompletionChunk {
    const c: CompletionChunk = { id: this.meta.id, object: 'text_completion', created: this.meta.created, model: this.meta.model, system_fingerprint: null, choices: [{ index, text, logprobs: null, finish_reason: finish }] };
    if (this.meta.includeUsage) c.usage = null;
    return c;
  }

  /** A text chunk (also used for `echo`). */
  text(index: number, text: string): CompletionChunk {
    return this.chunk(index, text, null);
  }

  /** The chunk for one event of prompt `p` (n choices per prompt), or null. */
  event(e: GenerationEvent, base: number): CompletionChunk | null {
    if (e.type === 'text') return this.chunk(base + e.index, e.text, null);
    if (e.type === 'finish') return this.chunk(base + e.index, '', openAIFinishReason(e.reason));
    return null;
  }

  /** The usage chunk. */
  usage(u: Usage): CompletionChunk {
    return { id: this.meta.id, object: 'text_completion', created: this.meta.created, model: this.meta.model, system_fingerprint: null, choices: [], usage: openAIUsage(u) };
  }
}

/** A whole `chat.completion` response. */
export interface ChatCompletion {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  system_fingerprint: null;
  choices: {
    index: number;
    message: { role: 'assistant'; content: string | null; reasoning_content: string | null; tool_calls?: ToolCall[] };
    logprobs: null;
    finish_reason: OpenAIFinishReason;
  }[];
  usage: OpenAIUsage;
}

/** A whole `text_completion` response. */
export interface Completion {
  id: string;
  object: 'text_completion';
  created: number;
  model: string;
  system_fingerprint: null;
  choices: { index: number; text: string; logprobs: null; finish_reason: OpenAIFinishReason }[];
  usage: OpenAIUsage;
}

/** Collects a chat request's events into a `chat.completion`. */
export class ChatCollector {
  private readonly choices: { content: string; reasoning: string; tools: ToolCall[]; finish: OpenAIFinishReason }[];
  constructor(private readonly meta: ResponseMeta, n: number) {
    this.choices = Array.from({ length: n }, () => ({ content: '', reasoning: '', tools: [], finish: 'stop' as OpenAIFinishReason }));
  }

  /** Record one event. */
  event(e: GenerationEvent): void {
    if (e.type === 'text') {
      const c = this.choices[e.index]!;
      if (e.channel === 'content') c.content += e.text;
      else c.reasoning += e.text;
    } else if (e.type === 'tool_calls') this.choices[e.index]!.tools.push(...e.calls);
    else if (e.type === 'finish') this.choices[e.index]!.finish = openAIFinishReason(e.reason);
  }

  /** The response. */
  result(u: Usage): ChatCompletion {
    return {
      id: this.meta.id, object: 'chat.completion', created: this.meta.created, model: this.meta.model, system_fingerprint: null,
      choices: this.choices.map((c, index) => ({
        index,
        message: {
          role: 'assistant',
          content: c.content.length === 0 && c.tools.length > 0 ? null : c.content,
          reasoning_content: c.reasoning.length > 0 ? c.reasoning : null,
          ...(c.tools.length > 0 ? { tool_calls: c.tools } : {}),
        },
        logprobs: null,
        finish_reason: c.finish,
      })),
      usage: openAIUsage(u),
    };
  }
}

/** Collects the events of a completions request (all prompts) into a `text_completion`. */
export class CompletionCollector {
  private readonly texts: string[];
  private readonly finish: OpenAIFinishReason[];
  constructor(private readonly meta: ResponseMeta, choices: number, echo: (string | undefined)[]) {
    this.texts = Array.from({ length: choices }, (_, i) => echo[i] ?? '');
    this.finish = new Array<OpenAIFinishReason>(choices).fill('stop');
  }

  /** Record one event of the prompt whose first choice index is `base`. */
  event(e: GenerationEvent, base: number): void {
    if (e.type === 'text') this.texts[base + e.index] += e.text;
    else if (e.type === 'finish') this.finish[base + e.index] = openAIFinishReason(e.reason);
  }

  /** The response. */
  result(u: Usage): Completion {
    return {
      id: this.meta.id, object: 'text_completion', created: this.meta.created, model: this.meta.model, system_fingerprint: null,
      choices: this.texts.map((text, index) => ({ index, text, logprobs: null, finish_reason: this.finish[index]! })),
      usage: openAIUsage(u),
    };
  }
}

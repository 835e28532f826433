// OpenAI response objects built from scheduler events (ecosystem.md §2.1–2.2): streamed
// `chat.completion.chunk` / `text_completion` chunks and the whole `chat.completion` /
// `text_completion` responses. SSE and WebSocket share the chunk builders.

import type { FinishReason, GenerationEvent, Timings, TokenLogprob, Usage } from './scheduler';
import type { ToolCall } from './output-parser';

/** OpenAI `usage` (with `prompt_tokens_details.cached_tokens`: prompt tokens the prefix cache supplied). */
export interface OpenAIUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details: { cached_tokens: number };
}

/** Chat `logprobs` of a choice or chunk. */
export interface ChatLogprobs {
  content: TokenLogprob[];
  refusal: null;
}

/** Completions `logprobs` (the legacy shape): tokens, their log-probabilities, top alternatives, text offsets. */
export interface CompletionLogprobs {
  tokens: string[];
  token_logprobs: number[];
  top_logprobs: Record<string, number>[];
  text_offset: number[];
}

/** Log-probabilities per choice, handed out with the next chunk of that choice. */
class PendingLogprobs {
  private readonly pending = new Map<number, TokenLogprob[]>();
  add(index: number, lp: TokenLogprob): void {
    const list = this.pending.get(index);
    if (list) list.push(lp);
    else this.pending.set(index, [lp]);
  }
  take(index: number): TokenLogprob[] {
    const list = this.pending.get(index) ?? [];
    this.pending.delete(index);
    return list;
  }
}

/** Completions logprobs of `entries`, text offsets counted from `offset` (UTF-16 units of the choice text). */
function completionLogprobs(entries: TokenLogprob[], offset: number): CompletionLogprobs {
  const out: CompletionLogprobs = { tokens: [], token_logprobs: [], top_logprobs: [], text_offset: [] };
  for (const e of entries) {
    out.tokens.push(e.token);
    out.token_logprobs.push(e.logprob);
    out.top_logprobs.push(Object.fromEntries(e.top_logprobs.map((t) => [t.token, t.logprob])));
    out.text_offset.push(offset);
    offset += e.token.length;
  }
  return out;
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
    logprobs: ChatLogprobs | null;
    finish_reason: OpenAIFinishReason | null;
  }[];
  usage?: OpenAIUsage | null;
  /** llama-server's timings, on the last chunk. */
  timings?: Timings;
}

/** A streamed completion chunk (`object: "text_completion"`). */
export interface CompletionChunk {
  id: string;
  object: 'text_completion';
  created: number;
  model: string;
  system_fingerprint: null;
  choices: { index: number; text: string; logprobs: CompletionLogprobs | null; finish_reason: OpenAIFinishReason | null }[];
  usage?: OpenAIUsage | null;
  /** llama-server's timings, on the last chunk. */
  timings?: Timings;
}

/** Finish reasons a client sees (a cancelled sequence is reported as 'stop'). */
export type OpenAIFinishReason = 'stop' | 'length' | 'tool_calls';

/** Map a scheduler finish reason to OpenAI's. */
export function openAIFinishReason(r: FinishReason): OpenAIFinishReason {
  return r === 'cancelled' ? 'stop' : r;
}

/** Scheduler usage as OpenAI `usage`. */
export function openAIUsage(u: Usage): OpenAIUsage {
  return { prompt_tokens: u.promptTokens, completion_tokens: u.completionTokens, total_tokens: u.promptTokens + u.completionTokens, prompt_tokens_details: { cached_tokens: u.cachedTokens } };
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
  private readonly lps = new PendingLogprobs();
  /** `logprobs`: the request asked for them (each chunk carries those of the tokens since the last one). */
  constructor(private readonly meta: ResponseMeta, private readonly n: number, private readonly logprobs = false) {}

  private lp(index: number): ChatLogprobs | null {
    if (!this.logprobs) return null;
    const content = this.lps.take(index);
    return content.length > 0 ? { content, refusal: null } : null;
  }

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
      case 'logprob':
        this.lps.add(e.index, e.logprob);
        return null;
      case 'text':
        return this.chunk([{ index: e.index, delta: e.channel === 'content' ? { content: e.text } : { reasoning_content: e.text }, logprobs: this.lp(e.index), finish_reason: null }]);
      case 'tool_calls': {
        const base = this.toolIndex.get(e.index) ?? 0;
        this.toolIndex.set(e.index, base + e.calls.length);
        return this.chunk([{ index: e.index, delta: { tool_calls: e.calls.map((c, k) => ({ index: base + k, ...c })) }, logprobs: this.lp(e.index), finish_reason: null }]);
      }
      case 'finish':
        return this.chunk([{ index: e.index, delta: {}, logprobs: this.lp(e.index), finish_reason: openAIFinishReason(e.reason) }]);
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
  private readonly lps = new PendingLogprobs();
  private readonly offsets = new Map<number, number>();
  /** `logprobs`: the request asked for them. */
  constructor(private readonly meta: ResponseMeta, private readonly logprobs = false) {}

  private lp(index: number): CompletionLogprobs | null {
    if (!this.logprobs) return null;
    const entries = this.lps.take(index);
    if (entries.length === 0) return null;
    const at = this.offsets.get(index) ?? 0;
    this.offsets.set(index, at + entries.reduce((n, e) => n + e.token.length, 0));
    return completionLogprobs(entries, at);
  }

  private chunk(index: number, text: string, finish: OpenAIFinishReason | null): CompletionChunk {
    const c: CompletionChunk = { id: this.meta.id, object: 'text_completion', created: this.meta.created, model: this.meta.model, system_fingerprint: null, choices: [{ index, text, logprobs: this.lp(index), finish_reason: finish }] };
    if (this.meta.includeUsage) c.usage = null;
    return c;
  }

  /** A text chunk (also used for `echo`). */
  text(index: number, text: string): CompletionChunk {
    return this.chunk(index, text, null);
  }

  /** The chunk for one event of prompt `p` (n choices per prompt), or null. */
  event(e: GenerationEvent, base: number): CompletionChunk | null {
    if (e.type === 'logprob') this.lps.add(base + e.index, e.logprob);
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
    logprobs: ChatLogprobs | null;
    finish_reason: OpenAIFinishReason;
  }[];
  usage: OpenAIUsage;
  /** llama-server's timings. */
  timings?: Timings;
}

/** A whole `text_completion` response. */
export interface Completion {
  id: string;
  object: 'text_completion';
  created: number;
  model: string;
  system_fingerprint: null;
  choices: { index: number; text: string; logprobs: CompletionLogprobs | null; finish_reason: OpenAIFinishReason }[];
  usage: OpenAIUsage;
  /** llama-server's timings. */
  timings?: Timings;
}

/** Collects a chat request's events into a `chat.completion`. */
export class ChatCollector {
  private readonly choices: { content: string; reasoning: string; tools: ToolCall[]; finish: OpenAIFinishReason; logprobs: TokenLogprob[] }[];
  constructor(private readonly meta: ResponseMeta, n: number, private readonly logprobs = false) {
    this.choices = Array.from({ length: n }, () => ({ content: '', reasoning: '', tools: [], finish: 'stop' as OpenAIFinishReason, logprobs: [] }));
  }

  /** Record one event. */
  event(e: GenerationEvent): void {
    if (e.type === 'logprob') this.choices[e.index]!.logprobs.push(e.logprob);
    else if (e.type === 'text') {
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
        logprobs: this.logprobs ? { content: c.logprobs, refusal: null } : null,
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
  private readonly lps: TokenLogprob[][];
  constructor(private readonly meta: ResponseMeta, choices: number, echo: (string | undefined)[], private readonly logprobs = false) {
    this.texts = Array.from({ length: choices }, (_, i) => echo[i] ?? '');
    this.finish = new Array<OpenAIFinishReason>(choices).fill('stop');
    this.lps = Array.from({ length: choices }, () => []);
  }

  /** Record one event of the prompt whose first choice index is `base`. */
  event(e: GenerationEvent, base: number): void {
    if (e.type === 'logprob') this.lps[base + e.index]!.push(e.logprob);
    else if (e.type === 'text') this.texts[base + e.index] += e.text;
    else if (e.type === 'finish') this.finish[base + e.index] = openAIFinishReason(e.reason);
  }

  /** The response. */
  result(u: Usage): Completion {
    return {
      id: this.meta.id, object: 'text_completion', created: this.meta.created, model: this.meta.model, system_fingerprint: null,
      choices: this.texts.map((text, index) => ({ index, text, logprobs: this.logprobs ? completionLogprobs(this.lps[index]!, 0) : null, finish_reason: this.finish[index]! })),
      usage: openAIUsage(u),
    };
  }
}

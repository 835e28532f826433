// A chat conversation with a local model, without a transport (apertus-chat's): keeps the
// history, renders it with the checkpoint's chat template, and streams the reply through the
// continuous-batching scheduler (so stop tokens, stop strings, UTF-8-safe streaming and the
// reasoning/tool-call parsing are the server's).

import type { ChatMessage } from '@apertus/tokenizer';
import { EngineError } from './errors';
import type { ServedModel } from './load';
import type { Channel, ToolCall } from './output-parser';
import type { FinishReason, Scheduler, Timings, Usage } from './scheduler';

/** Sampling and template settings of a session (changeable between turns). */
export interface ChatSettings {
  /** System prompt; null or '' → the template's default Apertus system prompt. */
  system: string | null;
  /** `Deliberation: enabled`: the model may think before answering. */
  thinking: boolean;
  /** Sampling temperature (0 = greedy). */
  temperature: number;
  /** Nucleus sampling threshold. */
  topP: number;
  /** Top-k (0 = off). */
  topK: number;
  /** Max new tokens per reply; null → whatever fits the context. */
  maxTokens: number | null;
  /** Seed of the sampler (per reply); null → random. */
  seed: number | null;
  /** Stop strings. */
  stop: string[];
}

/** One generated reply. */
export interface ChatReply {
  /** The answer text. */
  content: string;
  /** The deliberation (`<|inner_prefix|>…<|inner_suffix|>`), '' when none. */
  reasoning: string;
  /** Tool calls the model made. */
  toolCalls: ToolCall[];
  /** Why it ended. */
  finishReason: FinishReason;
  /** Token counts. */
  usage: Usage;
  /** Prefill and generation times (llama-server's `timings`); null when the reply failed. */
  timings: Timings | null;
}

/** Settings used when none are given: the Apertus model card's temperature 0.8 and top-p 0.9. */
export const DEFAULT_CHAT_SETTINGS: ChatSettings = { system: null, thinking: false, temperature: 0.8, topP: 0.9, topK: 0, maxTokens: null, seed: null, stop: [] };

/** A conversation with history. */
export class ChatSession {
  /** The turns so far (user and assistant messages; the system prompt lives in `settings`). */
  readonly messages: ChatMessage[] = [];
  /** Current settings. */
  settings: ChatSettings;
  /** Token ids of the last prompt sent to the model. */
  lastPromptIds: number[] = [];
  private readonly scheduler: Scheduler;

  /** A session on `scheduler` (one per model). */
  constructor(scheduler: Scheduler, settings: Partial<ChatSettings> = {}) {
    this.scheduler = scheduler;
    this.settings = { ...DEFAULT_CHAT_SETTINGS, ...settings };
  }

  /** The model being talked to. */
  get served(): ServedModel {
    return this.scheduler.served;
  }

  /** Forget the history. */
  reset(): void {
    this.messages.length = 0;
  }

  /** The full conversation as sent to the template (system prompt first when set). */
  conversation(next?: string): ChatMessage[] {
    const msgs: ChatMessage[] = [];
    if (this.settings.system) msgs.push({ role: 'system', content: this.settings.system });
    msgs.push(...this.messages);
    if (next !== undefined) msgs.push({ role: 'user', content: next });
    return msgs;
  }

  /**
   * Send a user message and stream the reply: `onText` receives text as it is generated, by
   * channel ('reasoning' first when the model thinks, then 'content'). The exchange is added to
   * the history only when the reply completes (not when it fails). Rejects with EngineError (e.g.
   * `context_length_exceeded` once the history no longer fits: call `reset()`).
   */
  send(text: string, onText?: (channel: Channel, text: string) => void, signal?: AbortSignal): Promise<ChatReply> {
    const s = this.settings;
    const prompt = this.served.chat.encode(this.conversation(text), { enableThinking: s.thinking, addGenerationPrompt: true });
    this.lastPromptIds = prompt;
    const room = this.scheduler.contextLength - prompt.length;
    if (room <= 0) {
      return Promise.reject(new EngineError('context_length_exceeded', `the conversation (${prompt.length} tokens) fills the ${this.scheduler.contextLength}-token context; reset it`, 'messages'));
    }
    const reply: ChatReply = { content: '', reasoning: '', toolCalls: [], finishReason: 'stop', usage: { promptTokens: prompt.length, cachedTokens: 0, completionTokens: 0 }, timings: null };
    return new Promise<ChatReply>((resolve, reject) => {
      let handle: ReturnType<Scheduler['submit']>;
      try {
        handle = this.scheduler.submit({
          prompt,
          maxTokens: Math.min(s.maxTokens ?? room, room),
          sampling: { temperature: s.temperature, topP: s.topP, topK: s.topK, ...(s.seed !== null ? { seed: s.seed } : {}) },
          stop: s.stop,
          mode: 'chat',
        }, (e) => {
          switch (e.type) {
            case 'text':
              if (e.channel === 'content') reply.content += e.text;
              else reply.reasoning += e.text;
              onText?.(e.channel, e.text);
              break;
            case 'tool_calls':
              reply.toolCalls.push(...e.calls);
              break;
            case 'finish':
              reply.finishReason = e.reason;
              break;
            case 'done':
              reply.usage = e.usage;
              reply.timings = e.timings;
              this.messages.push({ role: 'user', content: text });
              this.messages.push(reply.toolCalls.length > 0
                ? { role: 'assistant', content: reply.content, tool_calls: reply.toolCalls.map((c) => ({ type: 'function' as const, id: c.id, function: c.function })) }
                : { role: 'assistant', content: reply.content });
              resolve(reply);
              break;
            case 'error':
              reject(e.error);
              break;
          }
        });
      } catch (e) {
        reject(e);
        return;
      }
      signal?.addEventListener('abort', () => handle.cancel(), { once: true });
    });
  }
}

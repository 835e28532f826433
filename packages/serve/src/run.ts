// The HTTP/WebSocket side of a generation: running a validated request on the scheduler and delivering it to a transport: streamed
// (SSE or WebSocket: chunk, then done / error) or collected into one response. A completions
// request with several prompts runs them as separate scheduler requests and reports one result.

import { toApiError, type ApiError } from './api-error';
import type { EngineError } from './errors';
import type { PreparedChat, PreparedCompletion } from './requests';
import {
  ChatChunker, ChatCollector, CompletionChunker, CompletionCollector,
  type ChatCompletion, type ChatCompletionChunk, type Completion, type CompletionChunk, type ResponseMeta,
} from './responses';
import type { FinishReason, GenerationEvent, GenerationHandle, Scheduler, Timings, Usage } from './scheduler';

/** The timings of several requests run side by side as one (a completions request with several prompts). */
export function combineTimings(all: readonly Timings[]): Timings {
  const sum = (k: keyof Timings) => all.reduce((s, t) => s + t[k], 0);
  const max = (k: keyof Timings) => all.reduce((m, t) => Math.max(m, t[k]), 0);
  const promptN = sum('prompt_n'), promptMs = max('prompt_ms'), predictedN = sum('predicted_n'), predictedMs = max('predicted_ms');
  return {
    cache_n: sum('cache_n'), prompt_n: promptN, prompt_ms: promptMs, prompt_per_second: promptMs > 0 ? (promptN * 1000) / promptMs : 0,
    predicted_n: predictedN, predicted_ms: predictedMs, predicted_per_second: predictedMs > 0 ? ((predictedN - all.length) * 1000) / predictedMs : 0,
  };
}

/** Where a streamed request goes. */
export interface StreamSink<C> {
  /** One chunk (the usage chunk included, when asked for). */
  chunk(c: C): void;
  /** Normal end; finish reasons by choice index ('cancelled' included, unlike the chunks). */
  done(usage: Usage, finishReasons: FinishReason[], timings: Timings): void;
  /** Mid-stream failure (after zero or more chunks). */
  error(error: ApiError, usage: Usage): void;
}

/** A running request. */
export interface Running {
  /** Stop it (see GenerationHandle.cancel). */
  cancel(error?: EngineError): void;
}

/** Submit a set of scheduler requests as one client request; events come back with their prompt's base choice index. */
function submitAll(
  scheduler: Scheduler,
  requests: PreparedCompletion['requests'],
  n: number,
  onEvent: (e: GenerationEvent, base: number) => void,
  onDone: (usage: Usage, timings: Timings) => void,
  onError: (error: ApiError, usage: Usage) => void,
): Running {
  const handles: GenerationHandle[] = [];
  const total: Usage = { promptTokens: 0, cachedTokens: 0, completionTokens: 0 };
  const timings: Timings[] = [];
  let left = requests.length;
  let failed = false;
  const cancelAll = (error?: EngineError) => {
    for (const h of handles) h.cancel(error);
  };
  try {
    requests.forEach((r, p) => {
      handles.push(scheduler.submit(r, (e) => {
        if (failed) return;
        if (e.type === 'done' || e.type === 'error') {
          total.promptTokens += e.usage.promptTokens;
          total.cachedTokens += e.usage.cachedTokens;
          total.completionTokens += e.usage.completionTokens;
          if (e.type === 'error') {
            failed = true;
            for (const h of handles) if (!h.finished) h.cancel();
            onError(toApiError(e.error), total);
          } else {
            timings.push(e.timings);
            if (--left === 0) onDone(total, timings.length === 1 ? timings[0]! : combineTimings(timings));
          }
        } else onEvent(e, p * n);
      }));
    });
  } catch (e) {
    failed = true;
    cancelAll();
    throw toApiError(e);
  }
  return { cancel: (error) => cancelAll(error) };
}

/** Stream a chat request; throws ApiError (400/429) when the scheduler refuses it, before any chunk. */
export function streamChat(scheduler: Scheduler, prep: PreparedChat, meta: ResponseMeta, sink: StreamSink<ChatCompletionChunk>, beforeFirst?: () => void): Running {
  const chunker = new ChatChunker(meta, prep.request.n ?? 1, prep.request.logprobs !== undefined);
  const n = prep.request.n ?? 1;
  const finish = new Array<FinishReason>(n).fill('stop');
  // The last choice's finish chunk waits for the request's end, to carry its timings (as llama-server's does).
  let finished = 0;
  let last: ChatCompletionChunk | null = null;
  let started = false;
  const start = () => {
    if (started) return;
    started = true;
    beforeFirst?.();
    for (const c of chunker.start()) sink.chunk(c);
  };
  const running = submitAll(
    scheduler, [prep.request], n,
    (e) => {
      start();
      if (e.type === 'finish') finish[e.index] = e.reason;
      const c = chunker.event(e);
      if (c && e.type === 'finish' && ++finished === n) last = c;
      else if (c) sink.chunk(c);
    },
    (usage, timings) => {
      start();
      if (last) sink.chunk({ ...last, timings });
      if (meta.includeUsage) sink.chunk({ ...chunker.usage(usage), timings });
      sink.done(usage, finish, timings);
    },
    (error, usage) => {
      start();
      sink.error(error, usage);
    },
  );
  // Role chunks go out at once, so a client sees the stream open before the first token.
  start();
  return running;
}

/** Stream a completions request (all prompts); throws ApiError before any chunk when refused. */
export function streamCompletion(scheduler: Scheduler, prep: PreparedCompletion, meta: ResponseMeta, sink: StreamSink<CompletionChunk>, beforeFirst?: () => void): Running {
  const chunker = new CompletionChunker(meta, prep.requests[0]?.logprobs !== undefined);
  const finish = new Array<FinishReason>(prep.requests.length * prep.n).fill('stop');
  let finished = 0;
  let last: CompletionChunk | null = null;
  let started = false;
  const start = () => {
    if (started) return;
    started = true;
    beforeFirst?.();
    if (prep.echo) prep.echo.forEach((text, p) => {
      for (let i = 0; i < prep.n; i++) sink.chunk(chunker.text(p * prep.n + i, text));
    });
  };
  const running = submitAll(
    scheduler, prep.requests, prep.n,
    (e, base) => {
      start();
      if (e.type === 'finish') finish[base + e.index] = e.reason;
      const c = chunker.event(e, base);
      if (c && e.type === 'finish' && ++finished === finish.length) last = c;
      else if (c) sink.chunk(c);
    },
    (usage, timings) => {
      start();
      if (last) sink.chunk({ ...last, timings });
      if (meta.includeUsage) sink.chunk({ ...chunker.usage(usage), timings });
      sink.done(usage, finish, timings);
    },
    (error, usage) => {
      start();
      sink.error(error, usage);
    },
  );
  start();
  return running;
}

/** Run a chat request to the end; `result` resolves with the response or rejects with an ApiError. */
export function collectChat(scheduler: Scheduler, prep: PreparedChat, meta: ResponseMeta): Running & { result: Promise<ChatCompletion> } {
  const collector = new ChatCollector(meta, prep.request.n ?? 1, prep.request.logprobs !== undefined);
  let resolve!: (c: ChatCompletion) => void;
  let reject!: (e: ApiError) => void;
  const result = new Promise<ChatCompletion>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  const running = submitAll(scheduler, [prep.request], prep.request.n ?? 1, (e) => collector.event(e), (u, t) => resolve({ ...collector.result(u), timings: t }), (e) => reject(e));
  return { cancel: running.cancel, result };
}

/** Run a completions request to the end. */
export function collectCompletion(scheduler: Scheduler, prep: PreparedCompletion, meta: ResponseMeta): Running & { result: Promise<Completion> } {
  const echo: (string | undefined)[] = [];
  if (prep.echo) prep.echo.forEach((t, p) => {
    for (let i = 0; i < prep.n; i++) echo[p * prep.n + i] = t;
  });
  const collector = new CompletionCollector(meta, prep.requests.length * prep.n, echo, prep.requests[0]?.logprobs !== undefined);
  let resolve!: (c: Completion) => void;
  let reject!: (e: ApiError) => void;
  const result = new Promise<Completion>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  const running = submitAll(scheduler, prep.requests, prep.n, (e, base) => collector.event(e, base), (u, t) => resolve({ ...collector.result(u), timings: t }), (e) => reject(e));
  return { cancel: running.cancel, result };
}

// Continuous batching. One loop owns the model; while any request is in flight it repeats:
//
//   1. admit queued requests (FIFO) while the running batch has room for their n sequences;
//   2. build one batch: a decode token for every running sequence, plus prefill chunks of newly
//      admitted prompts (at most `prefillChunk` prompt tokens per step, so decoding never stalls
//      behind a long prompt);
//   3. `step(model, batch)` — one batched forward pass, sequences at different lengths;
//   4. per sequence: sample with its own Sampler, check stop tokens / stop strings / length, and
//      emit the new text through its OutputParser (UTF-8-safe streaming decode);
//   5. yield to the event loop (`setImmediate`) so sockets keep flowing, then go again.
//
// KV caches are paged: every sequence's keys and values live in fixed-size blocks of one pool,
// allocated as tokens arrive, so memory follows the tokens actually generated. `n > 1` prefills
// the prompt once and the other n − 1 sequences share its blocks (copy-on-write). With a prefix
// cache, a prompt starts from the longest cached prefix of it (a chat history, a system prompt)
// and only the rest is prefilled; prompts and finished sequences are stored in it, sharing their
// blocks. Cancelling a request removes its sequences from the batch at once.

import os from 'node:os';
import { GenerationError, KVBlockPool, KVCache, outputVocabSize, PrefixCache, Sampler, step, validateSampling, type SamplingParams } from '@apertus/model';
import type { KvDType } from '@apertus/tensor';
import { EngineError } from './errors';
import type { ServedModel } from './load';
import type { ServerMetrics } from './metrics';
import { OutputParser, type Channel, type ParserEvent, type ToolCall } from './output-parser';
import { TokenConstraint, tokenBytes, type ConstraintSpec } from './token-constraint';

/** Why a sequence ended: OpenAI's reasons, plus 'cancelled' (client gone / cancel message). */
export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'cancelled';

/** One generation request: a tokenized prompt and how to continue it. */
export interface GenerationRequest {
  /** Prompt token ids (for chat: the rendered template, one BOS). */
  prompt: readonly number[];
  /** Number of continuations sharing the prompt. Default 1. */
  n?: number;
  /** Sampling parameters; with a seed, continuation i uses seed + i. */
  sampling?: SamplingParams;
  /** Maximum new tokens per continuation (stop tokens included); prompt + maxTokens must fit the context. */
  maxTokens: number;
  /** Stop strings (the text is cut before the first match). */
  stop?: readonly string[];
  /** Stop token ids; default the scheduler's (generation_config eos ids and the tokenizer's eos). */
  stopTokenIds?: readonly number[];
  /** 'chat' parses reasoning and tool-call tags; 'text' is plain completion text. Default 'text'. */
  mode?: 'chat' | 'text';
  /** Chat mode: turn `<|tools_prefix|>` blocks into tool calls. Default true. */
  parseTools?: boolean;
  /** Leave special tokens out of the text. Default true. */
  skipSpecialTokens?: boolean;
  /** Constrain the output: forced tokens and a JSON value of a schema (see token-constraint.ts). */
  constraint?: ConstraintSpec;
  /** Report each sampled token's log-probability and this many top alternatives (0–20); off when undefined. */
  logprobs?: number;
  /** Added to the logits of these token ids before sampling (OpenAI `logit_bias`; −100 bans, +100 forces). */
  logitBias?: ReadonlyMap<number, number>;
}

/** A sampled token's log-probability under the model (log-softmax of its logits), OpenAI's chat shape. */
export interface TokenLogprob {
  /** The token's text (lone pieces of a UTF-8 character decode as U+FFFD; see `bytes`). */
  token: string;
  /** Natural log of its probability. */
  logprob: number;
  /** The bytes it stands for. */
  bytes: number[];
  /** The most likely tokens at this position, most likely first. */
  top_logprobs: { token: string; logprob: number; bytes: number[] }[];
}

/** Token counts of a finished request (OpenAI `usage`). */
export interface Usage {
  /** Prompt tokens (counted once even when n > 1). */
  promptTokens: number;
  /** Of those, tokens whose KV came from the prefix cache (not prefilled). */
  cachedTokens: number;
  /** Generated tokens of all continuations, stop tokens included. */
  completionTokens: number;
}

/**
 * Where a request's time went, as llama-server reports it (`timings`): the prompt tokens prefilled
 * (cached ones not counted) and the milliseconds from admission to the first sampled token, the
 * tokens generated and the milliseconds from the first token to the last.
 */
export interface Timings {
  /** Prompt tokens taken from the prefix cache. */
  cache_n: number;
  /** Prompt tokens prefilled. */
  prompt_n: number;
  /** Milliseconds of prefill (admission to the first token). */
  prompt_ms: number;
  /** prompt_n per second of prompt_ms. */
  prompt_per_second: number;
  /** Tokens generated (all continuations). */
  predicted_n: number;
  /** Milliseconds from the first token to the last. */
  predicted_ms: number;
  /** Tokens per second after the first (predicted_n − 1 over predicted_ms, as llama-server counts). */
  predicted_per_second: number;
}

/** What a request's listener receives, in order; `done` or `error` comes last, exactly once. */
export type GenerationEvent =
  | { type: 'text'; index: number; channel: Channel; text: string }
  | { type: 'logprob'; index: number; logprob: TokenLogprob }
  | { type: 'tool_calls'; index: number; calls: ToolCall[] }
  | { type: 'finish'; index: number; reason: FinishReason; completionTokens: number }
  | { type: 'done'; usage: Usage; timings: Timings }
  | { type: 'error'; error: EngineError; usage: Usage };

/** A submitted request. */
export interface GenerationHandle {
  /** Scheduler-wide request number. */
  readonly id: number;
  /** True once `done` or `error` was emitted. */
  readonly finished: boolean;
  /**
   * Stop the request now: its sequences leave the batch before the next step. Without `error` the
   * listener gets `finish` (reason 'cancelled') for every open sequence, then `done`; with one, it
   * gets `error` (a mid-stream error for streaming clients).
   */
  cancel(error?: EngineError): void;
}

/** Options of {@link Scheduler}. */
export interface SchedulerOptions {
  /** Sequences decoded together (the batch). Default 8. */
  maxBatch?: number;
  /** Requests waiting for a batch slot before new ones are answered 429. Default 64. */
  maxQueue?: number;
  /** Prompt tokens prefilled per step (shared by all prefilling requests). Default 512. */
  prefillChunk?: number;
  /** Context limit (prompt + output); default and maximum: the model's max_position_embeddings. */
  contextLength?: number;
  /** Stop token ids; default generation_config `eos_token_id` (else config.json's) plus the tokenizer's eos. */
  stopTokenIds?: readonly number[];
  /** Where to record counters and latencies. */
  metrics?: ServerMetrics;
  /**
   * Memory cap of the prefix cache in bytes (> 0), or 'auto' ({@link autoPrefixCacheBytes}: the
   * weights' size, at most an eighth of the machine's memory); without it no KV is reused across requests.
   */
  prefixCacheBytes?: number | 'auto';
  /** Tokens per KV block. Default 16. */
  kvBlockSize?: number;
  /** Element type of the KV cache: 'f32' (default) or 'f16' (half the memory, llama.cpp's default; cpu device). */
  kvCacheType?: KvDType;
}

interface Seq {
  index: number;
  group: Group;
  cache: KVCache;
  /** Tokens sampled so far (the cache holds the prompt and all but the last). */
  tokens: number[];
  sampler: Sampler;
  parser: OutputParser;
  constraint: TokenConstraint | null;
  generated: number;
  pending: number;
  lastTokenAt: number;
  done: boolean;
}

interface Group {
  handle: Handle;
  req: GenerationRequest;
  n: number;
  limit: number;
  stopIds: ReadonlySet<number>;
  onEvent: (e: GenerationEvent) => void;
  seqs: Seq[];
  cache: KVCache | null;
  prefilled: number;
  open: number;
  submittedAt: number;
  admittedAt: number;
  firstTokenAt: number;
  lastTokenAt: number;
  reused: number;
  completionTokens: number;
}

class Handle implements GenerationHandle {
  finished = false;
  group!: Group;
  constructor(readonly id: number, private readonly scheduler: Scheduler) {}
  cancel(error?: EngineError): void {
    if (!this.finished) this.scheduler.cancelGroup(this.group, error);
  }
}

const FIELD_NAMES: Record<string, string> = {
  temperature: 'temperature', topK: 'top_k', topP: 'top_p', minP: 'min_p', repetitionPenalty: 'repetition_penalty',
  presencePenalty: 'presence_penalty', frequencyPenalty: 'frequency_penalty', seed: 'seed',
};

function now(): number {
  return performance.now() / 1000;
}

/**
 * The continuous-batching engine: accepts tokenized requests from any number of callers and runs
 * them through shared batched model steps (see the file header). Single-threaded: the model runs
 * on the calling thread, between I/O callbacks.
 */
export class Scheduler {
  /** The model being served. */
  readonly served: ServedModel;
  /** Context limit (prompt + output tokens). */
  readonly contextLength: number;
  /** Default stop token ids. */
  readonly stopTokenIds: ReadonlySet<number>;
  /** Maximum sequences per step. */
  readonly maxBatch: number;
  /** Maximum waiting requests. */
  readonly maxQueue: number;
  /** The KV blocks of every sequence. */
  readonly pool: KVBlockPool;
  /** KV of earlier prompts and replies, reused by later requests (null when off). */
  readonly prefixCache: PrefixCache | null;
  /**
   * Ids that may be sampled: those the tokenizer has (a config.json `vocab_size` padded beyond the
   * tokenizer leaves rows of the LM head no text stands for).
   */
  readonly sampleableVocab: number;
  private readonly prefillChunk: number;
  private readonly metrics: ServerMetrics | undefined;
  private readonly waiting: Group[] = [];
  private readonly prefilling: Group[] = [];
  private readonly decoding: Seq[] = [];
  private nextId = 1;
  private scheduled = false;
  private idleWaiters: (() => void)[] = [];
  /** The logits of every step, reused (each step's rows are consumed before the next step). */
  private logits = new Float32Array(0);

  /** A scheduler for one served model. Throws GenerationError (naming the option) for invalid limits. */
  constructor(served: ServedModel, options: SchedulerOptions = {}) {
    this.served = served;
    const maxPos = served.model.config.max_position_embeddings;
    const posInt = (v: number | undefined, d: number, field: string) => {
      const x = v ?? d;
      if (!Number.isInteger(x) || x < 1) throw new GenerationError(field, `must be a positive integer, got ${x}`);
      return x;
    };
    this.contextLength = posInt(options.contextLength, maxPos, 'contextLength');
    if (this.contextLength > maxPos) throw new GenerationError('contextLength', `${this.contextLength} exceeds the model's max_position_embeddings ${maxPos}`);
    this.maxBatch = posInt(options.maxBatch, 8, 'maxBatch');
    this.maxQueue = options.maxQueue ?? 64;
    if (!Number.isInteger(this.maxQueue) || this.maxQueue < 0) throw new GenerationError('maxQueue', `must be a non-negative integer, got ${this.maxQueue}`);
    this.prefillChunk = posInt(options.prefillChunk, 512, 'prefillChunk');
    this.metrics = options.metrics;
    this.pool = new KVBlockPool(served.model.config, { blockSize: posInt(options.kvBlockSize, 16, 'kvBlockSize'), dtype: options.kvCacheType ?? 'f32' });
    const cap = options.prefixCacheBytes === 'auto' ? autoPrefixCacheBytes(served, this.pool.blockBytes) : options.prefixCacheBytes;
    this.prefixCache = cap === undefined ? null : new PrefixCache(this.pool, { maxBytes: posInt(cap, 0, 'prefixCacheBytes') });
    this.sampleableVocab = Math.min(outputVocabSize(served.model.config), served.tokenizer.vocabSize);
    this.stopTokenIds = new Set(options.stopTokenIds ?? defaultStopIds(served));
  }

  /** Requests waiting for a slot. */
  get queued(): number {
    return this.waiting.length;
  }

  /** Sequences in the batch (prefilling or decoding). */
  get running(): number {
    let n = this.decoding.length;
    for (const g of this.prefilling) n += g.n;
    return n;
  }

  /** Bytes held by KV caches of running sequences (blocks shared by several counted in each). */
  get kvCacheBytes(): number {
    let b = 0;
    for (const s of this.decoding) b += s.cache.bytes;
    for (const g of this.prefilling) b += g.cache?.bytes ?? 0;
    return b;
  }

  /**
   * Queue a request; `onEvent` receives its events (see {@link GenerationEvent}). Throws
   * EngineError: `invalid_request` (empty prompt, ids outside the vocabulary, bad sampling values,
   * n above the batch size, an output format that cannot fit), `context_length_exceeded`,
   * `queue_full`.
   */
  submit(req: GenerationRequest, onEvent: (e: GenerationEvent) => void): GenerationHandle {
    const V = this.served.model.config.vocab_size;
    const n = req.n ?? 1;
    if (!Number.isInteger(n) || n < 1) throw new EngineError('invalid_request', `n must be a positive integer, got ${n}`, 'n');
    if (n > this.maxBatch) throw new EngineError('invalid_request', `n = ${n} exceeds the server's batch size ${this.maxBatch}`, 'n');
    if (req.prompt.length === 0) throw new EngineError('invalid_request', 'the prompt has no tokens', 'prompt');
    for (let i = 0; i < req.prompt.length; i++) {
      const id = req.prompt[i]!;
      if (!Number.isInteger(id)) throw new EngineError('invalid_request', `token ${i} of the prompt is ${id}, not an integer token id`, 'prompt');
      if (id < 0 || id >= V) throw new EngineError('invalid_request', `token id ${id} is outside the vocabulary of ${V}`, 'prompt');
    }
    for (const [id, b] of req.logitBias ?? []) {
      if (!Number.isInteger(id) || id < 0 || id >= V) throw new EngineError('invalid_request', `logit_bias names token id ${id}, outside the vocabulary of ${V}`, 'logit_bias');
      if (!Number.isFinite(b) || b < -100 || b > 100) throw new EngineError('invalid_request', `logit_bias of token ${id} is ${b}, not in [-100, 100]`, 'logit_bias');
    }
    if (!Number.isInteger(req.maxTokens) || req.maxTokens < 1) throw new EngineError('invalid_request', `max_tokens must be a positive integer, got ${req.maxTokens}`, 'max_tokens');
    if (req.prompt.length + req.maxTokens > this.contextLength) {
      throw new EngineError(
        'context_length_exceeded',
        `This model's maximum context length is ${this.contextLength} tokens. However, you requested ${req.prompt.length + req.maxTokens} tokens (${req.prompt.length} in the prompt, ${req.maxTokens} for the completion).`,
        req.prompt.length >= this.contextLength ? 'prompt' : 'max_tokens',
      );
    }
    if (req.logprobs !== undefined && (!Number.isInteger(req.logprobs) || req.logprobs < 0 || req.logprobs > 20)) {
      throw new EngineError('invalid_request', `top log-probabilities must be an integer in [0, 20], got ${req.logprobs}`, 'top_logprobs');
    }
    if (req.constraint) {
      const room = Math.min(req.maxTokens, this.contextLength - req.prompt.length);
      const need = new TokenConstraint(this.served.tokenizer, outputVocabSize(this.served.model.config), req.constraint, [...(req.stopTokenIds ?? this.stopTokenIds)]).needed();
      if (need > room) throw new EngineError('invalid_request', `the requested output format needs at least ${need} tokens, but only ${room} may be generated`, 'max_tokens');
    }
    try {
      validateSampling(req.sampling ?? {});
    } catch (e) {
      if (e instanceof GenerationError) throw new EngineError('invalid_request', `${FIELD_NAMES[e.field] ?? e.field} ${e.message.slice(e.field.length + 2)}`, FIELD_NAMES[e.field] ?? e.field);
      throw e;
    }
    const fitsNow = this.waiting.length === 0 && this.running + n <= this.maxBatch;
    if (!fitsNow && this.waiting.length >= this.maxQueue) {
      this.metrics?.rejected.inc();
      throw new EngineError('queue_full', `the server is busy: ${this.waiting.length} requests are already waiting (limit ${this.maxQueue})`);
    }
    const handle = new Handle(this.nextId++, this);
    const group: Group = {
      handle, req, n,
      limit: Math.min(req.prompt.length + req.maxTokens, this.contextLength),
      stopIds: req.stopTokenIds ? new Set(req.stopTokenIds) : this.stopTokenIds,
      onEvent, seqs: [], cache: null, prefilled: 0, open: n,
      submittedAt: now(), admittedAt: 0, firstTokenAt: 0, lastTokenAt: 0, reused: 0, completionTokens: 0,
    };
    handle.group = group;
    this.waiting.push(group);
    this.admit();
    this.updateGauges();
    this.schedule();
    return handle;
  }

  /** Resolves when no request is waiting or running. */
  idle(): Promise<void> {
    if (this.waiting.length === 0 && this.prefilling.length === 0 && this.decoding.length === 0) return Promise.resolve();
    return new Promise((r) => this.idleWaiters.push(r));
  }

  /** Cancel every request (`error` given: each gets it as an `error` event). */
  cancelAll(error?: EngineError): void {
    const groups = new Set<Group>([...this.waiting, ...this.prefilling, ...this.decoding.map((s) => s.group)]);
    for (const g of groups) this.cancelGroup(g, error);
  }

  /** @internal Used by GenerationHandle.cancel. */
  cancelGroup(g: Group, error?: EngineError): void {
    if (g.handle.finished) return;
    this.removeGroup(g);
    if (error) this.fail(g, error);
    else {
      for (const s of openSeqs(g)) this.finishSeq(s, 'cancelled', false);
      if (g.seqs.length === 0) {
        // Cancelled before its prefill finished: report every choice as cancelled.
        for (let i = 0; i < g.n; i++) {
          this.metrics?.finished.inc({ finish_reason: 'cancelled' });
          this.emit(g, { type: 'finish', index: i, reason: 'cancelled', completionTokens: 0 });
        }
        g.open = 0;
        this.complete(g);
      }
    }
    this.updateGauges();
    this.schedule();
  }

  /** Take a request's sequences out of the batch and give their KV blocks back. */
  private removeGroup(g: Group): void {
    g.cache?.release();
    g.cache = null;
    for (const s of g.seqs) s.cache.release();
    let i = this.waiting.indexOf(g);
    if (i >= 0) this.waiting.splice(i, 1);
    i = this.prefilling.indexOf(g);
    if (i >= 0) this.prefilling.splice(i, 1);
    for (let k = this.decoding.length - 1; k >= 0; k--) if (this.decoding[k]!.group === g) this.decoding.splice(k, 1);
  }

  private schedule(): void {
    if (this.scheduled) return;
    if (this.waiting.length === 0 && this.prefilling.length === 0 && this.decoding.length === 0) {
      const w = this.idleWaiters;
      this.idleWaiters = [];
      for (const r of w) r();
      return;
    }
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.tick();
      this.updateGauges();
      this.schedule();
    });
  }

  private updateGauges(): void {
    const m = this.metrics;
    if (!m) return;
    m.queueDepth.set(this.waiting.length);
    m.running.set(this.running);
    m.kvCacheBytes.set(this.kvCacheBytes);
    m.kvBlocks.set(this.pool.blocksInUse);
    m.prefixCacheBytes.set(this.prefixCache?.bytes ?? 0);
  }

  private admit(): void {
    while (this.waiting.length > 0 && this.running + this.waiting[0]!.n <= this.maxBatch) {
      const g = this.waiting.shift()!;
      g.admittedAt = now();
      this.metrics?.queueTime.observe(g.admittedAt - g.submittedAt);
      if (this.prefixCache) {
        const { cache, reused } = this.prefixCache.lookup(g.req.prompt, g.limit);
        g.cache = cache;
        g.prefilled = reused;
        g.reused = reused;
        this.metrics?.prefixCacheLookups.inc({ result: reused > 0 ? 'hit' : 'miss' });
        this.metrics?.prefixCacheReusedTokens.inc({}, reused);
      } else g.cache = new KVCache(this.served.model.config, g.limit, this.pool);
      this.prefilling.push(g);
    }
  }

  /** One batched step (see the file header). */
  private tick(): void {
    // Defensive: a sequence whose request ended never stays in the batch.
    for (let k = this.decoding.length - 1; k >= 0; k--) {
      const s = this.decoding[k]!;
      if (s.done || s.group.handle.finished) {
        s.cache.release();
        this.decoding.splice(k, 1);
      }
    }
    this.admit();
    const batch: { cache: KVCache; tokens: readonly number[] }[] = [];
    const owners: (Seq | { group: Group; count: number })[] = [];
    for (const s of this.decoding) {
      batch.push({ cache: s.cache, tokens: [s.pending] });
      owners.push(s);
    }
    let budget = this.prefillChunk;
    for (const g of this.prefilling) {
      if (budget <= 0) break;
      const count = Math.min(budget, g.req.prompt.length - g.prefilled);
      batch.push({ cache: g.cache!, tokens: g.req.prompt.slice(g.prefilled, g.prefilled + count) });
      owners.push({ group: g, count });
      budget -= count;
    }
    if (batch.length === 0) return;
    let logits: Float32Array;
    try {
      const need = batch.length * outputVocabSize(this.served.model.config);
      if (this.logits.length < need) this.logits = new Float32Array(need);
      logits = step(this.served.model, batch, this.logits);
    } catch (e) {
      const groups = new Set(owners.map((o) => o.group));
      for (const g of groups) {
        this.removeGroup(g);
        this.fail(g, new EngineError('model_error', `model step failed: ${(e as Error).message}`, null, { cause: e }));
      }
      return;
    }
    this.metrics?.steps.inc();
    const V = outputVocabSize(this.served.model.config);
    const t = now();
    owners.forEach((o, i) => {
      const row = logits.subarray(i * V, (i + 1) * V);
      if ('count' in o) {
        const g = o.group;
        if (g.handle.finished) return;
        g.prefilled += o.count;
        this.metrics?.promptTokens.inc({}, o.count);
        if (g.prefilled === g.req.prompt.length) this.startDecoding(g, row, t);
      } else if (!o.done && !o.group.handle.finished) {
        this.sampleNext(o, row, t);
      }
    });
  }

  /**
   * Prefill done: keep the prompt's KV in the prefix cache, make the n sequences (sharing the
   * prefilled blocks) and sample their first tokens.
   */
  private startDecoding(g: Group, row: Float32Array, t: number): void {
    this.prefilling.splice(this.prefilling.indexOf(g), 1);
    const req = g.req;
    this.prefixCache?.store(req.prompt, g.cache!);
    const seed = req.sampling?.seed;
    for (let i = 0; i < g.n; i++) {
      const cache = i === 0 ? g.cache! : g.cache!.fork();
      const sampling = { ...req.sampling, ...(seed !== undefined ? { seed: seed + i } : {}) };
      const parser = new OutputParser(this.served.tokenizer, {
        mode: req.mode ?? 'text',
        stop: req.stop ?? [],
        parseTools: req.parseTools ?? true,
        skipSpecialTokens: req.skipSpecialTokens ?? true,
      });
      const constraint = req.constraint ? new TokenConstraint(this.served.tokenizer, outputVocabSize(this.served.model.config), req.constraint, [...g.stopIds]) : null;
      const s: Seq = { index: i, group: g, cache, tokens: [], sampler: new Sampler(sampling, req.prompt), parser, constraint, generated: 0, pending: -1, lastTokenAt: t, done: false };
      g.seqs.push(s);
    }
    g.cache = null;
    for (const s of g.seqs) {
      if (g.handle.finished) break;
      this.decoding.push(s);
      this.sampleNext(s, row, t);
    }
  }

  /** Sample and accept the next token of `s`; a sequence whose output format has no continuation fails its request. */
  private sampleNext(s: Seq, row: Float32Array, t: number): void {
    let id: number;
    try {
      id = this.pick(s, row);
    } catch (e) {
      this.cancelGroup(s.group, e instanceof EngineError ? e : new EngineError('model_error', (e as Error).message, null, { cause: e }));
      return;
    }
    this.accept(s, id, t);
  }

  /**
   * Sample the next token of `s` from its logits row: masked to the constraint's allowed ids when
   * it has one; its log-probability (from the unmasked row) is reported when asked for.
   */
  private pick(s: Seq, row: Float32Array): number {
    const g = s.group;
    const bias = g.req.logitBias;
    // Only ids the tokenizer has are candidates (a padded vocab_size leaves rows no text stands for).
    const logits = row.subarray(0, this.sampleableVocab);
    let id: number;
    if (s.constraint) {
      const left = Math.min(g.req.maxTokens, g.limit - g.req.prompt.length) - s.generated;
      const allowed = s.constraint.allowed(left).filter((a) => a < logits.length);
      if (allowed.length === 0) throw new EngineError('model_error', 'the output format has no continuation the tokenizer can write');
      const masked = new Float32Array(logits.length).fill(-Infinity);
      for (const a of allowed) masked[a] = logits[a]! + (bias?.get(a) ?? 0);
      id = s.sampler.sample(masked);
      // Rounding at the very end of a draw may land on a masked id: take the best allowed one.
      if (masked[id] === -Infinity) id = allowed.reduce((best, a) => (masked[a]! > masked[best]! ? a : best), allowed[0]!);
      s.constraint.accept(id);
    } else if (bias && bias.size > 0) {
      const biased = logits.slice();
      for (const [t, b] of bias) if (t < biased.length) biased[t]! += b;
      id = s.sampler.sample(biased);
    } else id = s.sampler.sample(logits);
    if (g.req.logprobs !== undefined && !g.stopIds.has(id)) this.emit(g, { type: 'logprob', index: s.index, logprob: logprobOf(this.served.tokenizer, row, id, g.req.logprobs) });
    return id;
  }

  /** A token was sampled for `s`: count it, emit its text, and decide whether the sequence goes on. */
  private accept(s: Seq, token: number, t: number): void {
    const g = s.group;
    s.generated++;
    s.tokens.push(token);
    g.completionTokens++;
    this.metrics?.generationTokens.inc();
    if (g.firstTokenAt === 0) {
      g.firstTokenAt = t;
      this.metrics?.timeToFirstToken.observe(t - g.submittedAt);
    } else if (s.generated > 1) {
      this.metrics?.interTokenLatency.observe(t - s.lastTokenAt);
    }
    s.lastTokenAt = t;
    g.lastTokenAt = t;
    if (g.stopIds.has(token)) {
      this.emitParser(s, s.parser.stopToken(token));
      this.finishSeq(s, s.parser.toolCalls > 0 ? 'tool_calls' : 'stop', true);
      return;
    }
    let events: ParserEvent[];
    try {
      events = s.parser.push(token);
    } catch (e) {
      this.cancelGroup(g, new EngineError('decode_error', `cannot decode generated token ${token}: ${(e as Error).message}`, null, { cause: e }));
      return;
    }
    this.emitParser(s, events);
    if (g.handle.finished) return;
    if (s.parser.stopped) this.finishSeq(s, s.parser.toolCalls > 0 ? 'tool_calls' : 'stop', true);
    else if (s.generated >= g.req.maxTokens || g.req.prompt.length + s.generated >= g.limit) this.finishSeq(s, 'length', true);
    else s.pending = token;
  }

  private emitParser(s: Seq, events: ParserEvent[]): void {
    for (const e of events) {
      if (s.group.handle.finished) return;
      if (e.type === 'text') this.emit(s.group, { type: 'text', index: s.index, channel: e.channel, text: e.text });
      else this.emit(s.group, { type: 'tool_calls', index: s.index, calls: e.calls });
    }
  }

  private finishSeq(s: Seq, reason: FinishReason, flush: boolean): void {
    if (s.done) return;
    s.done = true;
    const g = s.group;
    const k = this.decoding.indexOf(s);
    if (k >= 0) this.decoding.splice(k, 1);
    // A reply that ended normally is kept for the next turn of its conversation.
    if (flush) this.prefixCache?.store([...g.req.prompt, ...s.tokens], s.cache);
    s.cache.release();
    if (flush) {
      try {
        this.emitParser(s, s.parser.finish());
      } catch (e) {
        this.cancelGroup(g, new EngineError('decode_error', (e as Error).message, null, { cause: e }));
        return;
      }
    }
    this.metrics?.finished.inc({ finish_reason: reason });
    this.emit(g, { type: 'finish', index: s.index, reason, completionTokens: s.generated });
    g.open--;
    if (g.open === 0) this.complete(g);
  }

  private complete(g: Group): void {
    if (g.handle.finished) return;
    g.handle.finished = true;
    this.metrics?.requestLatency.observe(now() - g.submittedAt);
    try {
      g.onEvent({ type: 'done', usage: usage(g), timings: timings(g) });
    } catch {
      // A failing listener must not stop the loop.
    }
  }

  private fail(g: Group, error: EngineError): void {
    if (g.handle.finished) return;
    for (const s of openSeqs(g)) {
      s.done = true;
      this.metrics?.finished.inc({ finish_reason: 'error' });
    }
    g.handle.finished = true;
    try {
      g.onEvent({ type: 'error', error, usage: usage(g) });
    } catch {
      // ignore
    }
  }

  private emit(g: Group, e: GenerationEvent): void {
    if (g.handle.finished) return;
    try {
      g.onEvent(e);
    } catch (err) {
      this.cancelGroup(g, new EngineError('model_error', `the request's listener failed: ${(err as Error).message}`, null, { cause: err }));
    }
  }
}

function openSeqs(g: Group): Seq[] {
  return g.seqs.filter((s) => !s.done);
}

function usage(g: Group): Usage {
  return { promptTokens: g.req.prompt.length, cachedTokens: g.reused, completionTokens: g.completionTokens };
}

function timings(g: Group): Timings {
  const promptMs = g.firstTokenAt > 0 ? (g.firstTokenAt - g.admittedAt) * 1000 : 0;
  const predictedMs = g.firstTokenAt > 0 ? (g.lastTokenAt - g.firstTokenAt) * 1000 : 0;
  const promptN = g.req.prompt.length - g.reused;
  const perSecond = (n: number, ms: number) => (ms > 0 ? (n * 1000) / ms : 0);
  return {
    cache_n: g.reused, prompt_n: promptN, prompt_ms: promptMs, prompt_per_second: perSecond(promptN, promptMs),
    predicted_n: g.completionTokens, predicted_ms: predictedMs, predicted_per_second: perSecond(g.completionTokens - 1, predictedMs),
  };
}

/**
 * Default cap of the prefix cache: the size of the weights (a cache as large as the model it
 * serves), at most an eighth of the machine's memory, and at least 64 KV blocks' worth.
 */
export function autoPrefixCacheBytes(served: ServedModel, blockBytes = 0): number {
  let weights = 0;
  for (const t of served.model.params.values()) weights += t.storage.byteLength;
  return Math.floor(Math.max(64 * blockBytes, Math.min(weights, os.totalmem() / 8)));
}

/** Log-softmax of `row` at `id` and the `top` most likely ids (float64, ties by lower id). */
function logprobOf(tokenizer: ServedModel['tokenizer'], row: Float32Array, id: number, top: number): TokenLogprob {
  let m = -Infinity;
  for (let i = 0; i < row.length; i++) if (row[i]! > m) m = row[i]!;
  let z = 0;
  for (let i = 0; i < row.length; i++) z += Math.exp(row[i]! - m);
  const lse = m + Math.log(z);
  const best: number[] = [];
  if (top > 0) {
    for (let i = 0; i < row.length; i++) {
      if (best.length === top && row[i]! <= row[best[top - 1]!]!) continue;
      let k = best.length === top ? top - 1 : best.length;
      while (k > 0 && row[best[k - 1]!]! < row[i]!) k--;
      best.splice(k, 0, i);
      if (best.length > top) best.pop();
    }
  }
  const entry = (t: number) => ({ token: tokenizer.decode([t]), logprob: row[t]! - lse, bytes: [...tokenBytes(tokenizer, t)] });
  return { ...entry(id), top_logprobs: best.map(entry) };
}

/** Stop ids of a served model: generation_config eos ids (else config.json's) and the tokenizer's eos. */
export function defaultStopIds(served: ServedModel): number[] {
  const e = served.generationConfig?.eos_token_id ?? served.model.config.eos_token_id;
  const ids = new Set(Array.isArray(e) ? e : [e]);
  if (served.tokenizer.eosTokenId !== null) ids.add(served.tokenizer.eosTokenId);
  return [...ids].sort((a, b) => a - b);
}

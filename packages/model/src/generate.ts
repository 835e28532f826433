import { outputVocabSize } from './config';
import { GenerationError } from './errors';
import { currentDevice, sampleTokens, type KvDType } from '@apertus/tensor';
import { step, stepLogits, type StepInput } from './infer';
import { KVCache } from './kv-cache';
import { KVBlockPool } from './kv-blocks';
import type { ApertusModel } from './model';
import { Sampler, type SamplingParams } from './sampling';

/** Why generation stopped (OpenAI's names). */
export type FinishReason = 'stop' | 'length';

/** Options of `generate` and friends. */
export interface GenerateOptions extends SamplingParams {
  /** Maximum new tokens. Default 256. */
  maxTokens?: number;
  /** Element type of the KV cache: 'f32' (default) or 'f16' (half the memory and the bytes a long-context step reads; cpu device). */
  kvCacheType?: KvDType;
  /** Token ids that end generation (not included in the output). Default: the config's eos ids. */
  stopTokenIds?: readonly number[];
  /** Strings that end generation; needs `decode`. The output text is cut before the match. */
  stop?: readonly string[];
  /** Detokenizer used to look for stop strings. */
  decode?: (ids: readonly number[]) => string;
  /** Called with each new token; return false to stop early. */
  onToken?: (token: number) => boolean | void;
  /** Abort generation (e.g. the client went away). */
  signal?: AbortSignal;
  /** Tokens of prefill per step (long prompts are fed in chunks). Default 512. */
  prefillChunk?: number;
}

/** Result of one generated sequence. */
export interface Generation {
  /** New token ids (stop tokens and stop strings excluded). */
  tokens: number[];
  /** 'stop' (a stop token/string) or 'length' (maxTokens or the context limit). */
  finishReason: FinishReason;
  /** Matched stop string, when that is why generation stopped. */
  stopString?: string;
}

/** Yield to the event loop: `setImmediate` in Node, a zero-delay timer where there is none (a browser). */
function nextTurn(): Promise<void> {
  return new Promise((r) => (typeof setImmediate === 'function' ? setImmediate(r) : setTimeout(r, 0)));
}

function eosIds(model: ApertusModel, o: GenerateOptions): Set<number> {
  const e = model.config.eos_token_id;
  return new Set(o.stopTokenIds ?? (Array.isArray(e) ? e : [e]));
}

/** State of one sequence inside a batched generation. */
interface Seq {
  prompt: readonly number[];
  cache: KVCache;
  sampler: Sampler;
  out: number[];
  done: Generation | null;
  opts: GenerateOptions;
  eos: Set<number>;
}

function checkStop(s: Seq, token: number): Generation | null {
  const max = s.opts.maxTokens ?? 256;
  if (s.eos.has(token)) return { tokens: s.out, finishReason: 'stop' };
  s.out.push(token);
  if (s.opts.onToken?.(token) === false) return { tokens: s.out, finishReason: 'stop' };
  if (s.opts.stop?.length) {
    if (!s.opts.decode) throw new GenerationError('stop', 'stop strings need a decode function');
    const text = s.opts.decode(s.out);
    for (const str of s.opts.stop) {
      if (str && text.includes(str)) return { tokens: s.out, finishReason: 'stop', stopString: str };
    }
  }
  // The whole sequence (prompt + output) must fit the context: HF's max_length semantics.
  if (s.out.length >= max || s.prompt.length + s.out.length >= s.cache.capacity) return { tokens: s.out, finishReason: 'length' };
  return null;
}

function newSeq(model: ApertusModel, prompt: readonly number[], opts: GenerateOptions): Seq {
  if (prompt.length === 0) throw new GenerationError('prompt', 'the prompt has no tokens');
  const maxTokens = opts.maxTokens ?? 256;
  if (!Number.isInteger(maxTokens) || maxTokens < 1) throw new GenerationError('maxTokens', `must be a positive integer, got ${maxTokens}`);
  const limit = model.config.max_position_embeddings;
  if (prompt.length >= limit) throw new GenerationError('prompt', `${prompt.length} prompt tokens leave no room in the ${limit}-token context`);
  const capacity = Math.min(limit, prompt.length + maxTokens);
  return { prompt, cache: new KVCache(model.config, capacity, new KVBlockPool(model.config, { dtype: opts.kvCacheType ?? 'f32' })), sampler: new Sampler(opts, prompt), out: [], done: null, opts, eos: eosIds(model, opts) };
}

const GREEDY = { temperature: 0, topK: 0, topP: 1, minP: 0, u: 0 };

/**
 * Run a step and choose the next token of each sequence with a sampler (null: a prefill chunk
 * that does not end its prompt, whose logits nobody needs). On a device, when no sampler needs
 * penalties, the tokens are chosen there and only their ids come back (not the [n, V] logits);
 * otherwise the logits come to `out` and each sampler chooses on the host.
 */
function nextTokens(model: ApertusModel, batch: readonly StepInput[], samplers: readonly (Sampler | null)[], out: Float32Array): (number | null)[] {
  if (currentDevice().device !== 'cpu' && samplers.every((s) => !s || s.onDevice)) {
    const logits = stepLogits(model, batch);
    try {
      if (samplers.every((s) => !s)) return samplers.map(() => null);
      const ids = sampleTokens(logits, samplers.map((s) => s?.next() ?? GREEDY));
      return samplers.map((s, i) => s && s.accept(ids[i]!));
    } finally {
      logits.dispose();
    }
  }
  const V = outputVocabSize(model.config), logits = step(model, batch, out);
  return samplers.map((s, i) => s && s.sample(logits.subarray(i * V, (i + 1) * V)));
}

/**
 * Generate continuations of several prompts of different lengths together: each sequence has its
 * own KV cache and sampler; prefill chunks and decode steps of all unfinished sequences share one
 * batched `step`. Returns one Generation per prompt, in order.
 */
export function generateBatch(model: ApertusModel, prompts: readonly (readonly number[])[], opts: GenerateOptions = {}): Generation[] {
  const seqs = prompts.map((p) => newSeq(model, p, opts));
  const chunk = opts.prefillChunk ?? 512;
  // Prefill: feed prompts in chunks; the last chunk's logits give each sequence's first token.
  const pending = new Map<Seq, number>(seqs.map((s) => [s, 0]));
  let next = new Map<Seq, number>();
  // One logits array for every step (each step's rows are sampled before the next step).
  const out = new Float32Array(seqs.length * outputVocabSize(model.config));
  while (pending.size > 0) {
    const batch = [...pending].map(([s, off]) => ({ s, tokens: s.prompt.slice(off, off + chunk) }));
    // Sequences whose prompt ends in this chunk choose their first token.
    const ids = nextTokens(model, batch.map(({ s, tokens }) => ({ cache: s.cache, tokens })),
      batch.map(({ s, tokens }) => (pending.get(s)! + tokens.length >= s.prompt.length ? s.sampler : null)), out);
    batch.forEach(({ s, tokens }, i) => {
      const off = pending.get(s)! + tokens.length;
      if (off < s.prompt.length) pending.set(s, off);
      else { pending.delete(s); next.set(s, ids[i]!); }
    });
  }
  // Decode.
  for (;;) {
    const live: Seq[] = [];
    for (const [s, tok] of next) {
      if (opts.signal?.aborted) s.done = { tokens: s.out, finishReason: 'stop' };
      else s.done = checkStop(s, tok);
      if (!s.done) live.push(s);
    }
    if (live.length === 0) break;
    const ids = nextTokens(model, live.map((s) => ({ cache: s.cache, tokens: [next.get(s)!] })), live.map((s) => s.sampler), out);
    next = new Map(live.map((s, i) => [s, ids[i]!]));
  }
  return seqs.map((s) => s.done!);
}

/** Generate a continuation of one prompt (token ids). */
export function generate(model: ApertusModel, prompt: readonly number[], opts: GenerateOptions = {}): Generation {
  return generateBatch(model, [prompt], opts)[0]!;
}

/**
 * Stream tokens as they are produced; each `await` yields to the event loop between tokens, so a
 * server stays responsive. The return value of the iterator is the final Generation.
 */
export async function* generateStream(model: ApertusModel, prompt: readonly number[], opts: GenerateOptions = {}): AsyncGenerator<number, Generation> {
  const s = newSeq(model, prompt, opts);
  const chunk = opts.prefillChunk ?? 512;
  const out = new Float32Array(outputVocabSize(model.config));
  let tok = -1;
  for (let off = 0; off < prompt.length; off += chunk) {
    const tokens = prompt.slice(off, off + chunk);
    tok = nextTokens(model, [{ cache: s.cache, tokens }], [off + chunk < prompt.length ? null : s.sampler], out)[0] ?? -1;
    await nextTurn();
  }
  for (;;) {
    if (opts.signal?.aborted) return { tokens: s.out, finishReason: 'stop' };
    const before = s.out.length;
    const done = checkStop(s, tok);
    if (s.out.length > before) yield tok;
    if (done) return done;
    tok = nextTokens(model, [{ cache: s.cache, tokens: [tok] }], [s.sampler], out)[0]!;
    await nextTurn();
  }
}

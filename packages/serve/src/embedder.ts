// Embeddings as llama-server computes them for a decoder: the final hidden states of the input's
// tokens (after the last RMSNorm: what the LM head reads) pooled into one vector, then scaled to
// unit Euclidean length (llama-server's default `embd_normalize: 2`). Pooling 'mean' averages
// every token's state (BOS included, as llama.cpp's mean pooling does); 'last' takes the last
// token's, which in a causal model is the only one that has read the whole input.
//
// Inputs run through the model between the scheduler's steps, at most `chunk` tokens per turn of
// the event loop, so an embedding request never stalls the streams being decoded.

import { hiddenStates, KVCache, type ApertusModel } from '@apertus/model';
import { EngineError } from './errors';

/** How the token states become one vector. */
export type Pooling = 'mean' | 'last';

interface Job {
  inputs: readonly (readonly number[])[];
  pooling: Pooling;
  results: Float32Array[];
  /** Input being computed, and how many of its tokens went through. */
  at: number;
  done: number;
  cache: KVCache | null;
  sum: Float64Array;
  resolve: (v: Float32Array[]) => void;
  reject: (e: Error) => void;
}

/** Scale `v` to unit Euclidean length (a zero vector stays zero). */
export function normalizeL2(v: Float64Array): Float32Array {
  let s = 0;
  for (const x of v) s += x * x;
  const n = Math.sqrt(s);
  return Float32Array.from(v, (x) => (n > 0 ? x / n : 0));
}

/** Computes pooled embeddings on one model, one job at a time (see the file header). */
export class Embedder {
  private readonly queue: Job[] = [];
  private scheduled = false;
  private idleWaiters: (() => void)[] = [];
  private readonly chunk: number;

  /** `chunk`: most tokens computed per turn of the event loop. */
  constructor(private readonly model: ApertusModel, options: { chunk: number }) {
    this.chunk = options.chunk;
  }

  /** Unit vectors of `inputs` (token ids, each at most max_position_embeddings long), in order. Rejects with EngineError `model_error` or the cancelling error. */
  embed(inputs: readonly (readonly number[])[], pooling: Pooling): Promise<Float32Array[]> {
    return new Promise((resolve, reject) => {
      this.queue.push({ inputs, pooling, results: [], at: 0, done: 0, cache: null, sum: new Float64Array(this.model.config.hidden_size), resolve, reject });
      this.schedule();
    });
  }

  /** Resolves when no job is left. */
  idle(): Promise<void> {
    return this.queue.length === 0 ? Promise.resolve() : new Promise((r) => this.idleWaiters.push(r));
  }

  /** Reject every job with `error`. */
  cancelAll(error: Error): void {
    for (const j of this.queue.splice(0)) {
      j.cache?.release();
      j.reject(error);
    }
    this.schedule();
  }

  private schedule(): void {
    if (this.scheduled) return;
    if (this.queue.length === 0) {
      for (const r of this.idleWaiters.splice(0)) r();
      return;
    }
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      const job = this.queue[0];
      if (job) {
        try {
          if (this.advance(job)) this.queue.shift();
        } catch (e) {
          this.queue.shift();
          job.cache?.release();
          job.reject(new EngineError('model_error', `embedding failed: ${(e as Error).message}`, null, { cause: e }));
        }
      }
      this.schedule();
    });
  }

  /** One chunk of `job`; true when the job is finished (and resolved). */
  private advance(job: Job): boolean {
    const H = this.model.config.hidden_size;
    const input = job.inputs[job.at]!;
    job.cache ??= new KVCache(this.model.config, input.length);
    const tokens = input.slice(job.done, job.done + this.chunk);
    const states = hiddenStates(this.model, { cache: job.cache, tokens });
    job.done += tokens.length;
    if (job.pooling === 'mean') {
      for (let t = 0; t < tokens.length; t++) for (let i = 0; i < H; i++) job.sum[i]! += states[t * H + i]!;
    } else if (job.done === input.length) job.sum.set(states.subarray((tokens.length - 1) * H));
    if (job.done < input.length) return false;
    if (job.pooling === 'mean') for (let i = 0; i < H; i++) job.sum[i]! /= input.length;
    job.results.push(normalizeL2(job.sum));
    job.cache.release();
    job.cache = null;
    job.sum = new Float64Array(H);
    job.done = 0;
    if (++job.at < job.inputs.length) return false;
    job.resolve(job.results);
    return true;
  }
}

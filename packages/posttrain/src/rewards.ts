// Pluggable rewards R(x, y) for the alignment stage: any function of (prompt, completion,
// reference?) returning a number. Three sources are provided — a JavaScript function, an HTTP
// endpoint and a scorer built on an Apertus checkpoint — plus the bundled verifiable default,
// chrF of the completion against the reference translation. `loadReward` builds one from a
// config string (`chrf`, `http(s)://…`, `model:<dir>`, `js:<module file>`).

import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ApertusModel } from '@apertus/model';
import { crossEntropy, noGrad, Tensor } from '@apertus/tensor';
import { applyApertusChatTemplate, type Tokenizer } from '@apertus/tokenizer';
import { checkOption, PosttrainError } from './errors';
import { sentenceChrf, type ChrfOptions } from './metrics/chrf';

/** A reward: higher is better. Only the order of rewards matters to QRPO's quantile rewards. */
export type RewardFunction = (prompt: string, completion: string, reference?: string) => number | Promise<number>;

function checked(value: unknown, source: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new PosttrainError('RewardFailed', `${source} returned ${typeof value === 'number' ? value : typeof value}, not a finite number`, { field: 'reward' });
  }
  return value;
}

/**
 * Wrap a JavaScript function as a reward: its result (sync or async) must be a finite number,
 * and anything it throws becomes a {@link PosttrainError} `RewardFailed` with the cause attached.
 */
export function jsReward(fn: RewardFunction): RewardFunction {
  return async (prompt, completion, reference) => {
    let value: number;
    try {
      value = await fn(prompt, completion, reference);
    } catch (cause) {
      if (cause instanceof PosttrainError) throw cause;
      throw new PosttrainError('RewardFailed', `reward function threw: ${(cause as Error)?.message ?? String(cause)}`, { cause });
    }
    return checked(value, 'reward function');
  };
}

/**
 * The bundled verifiable reward: sentence chrF of the completion against the reference
 * translation, scaled to [0, 1] (sacreBLEU chrF2 / 100 by default). Needs a reference.
 */
export function chrfReward(options: ChrfOptions = {}): RewardFunction {
  return (_prompt, completion, reference) => {
    if (reference === undefined) throw new PosttrainError('RewardFailed', 'the chrF reward needs a reference translation', { field: 'reference' });
    return sentenceChrf(completion, reference, options).score / 100;
  };
}

/** Options of {@link httpReward}. */
export interface HttpRewardOptions {
  /** Abort a request after this many milliseconds. Default 30000. */
  readonly timeoutMs?: number;
  /** Extra request headers (e.g. authorization). */
  readonly headers?: Readonly<Record<string, string>>;
}

/**
 * A reward served over HTTP: `POST url` with JSON `{prompt, completion, reference}` (reference
 * `null` when absent); the answer must be JSON `{"reward": <finite number>}`. Network failures,
 * timeouts, non-2xx statuses and malformed answers raise {@link PosttrainError} `RewardFailed`
 * naming the URL.
 */
export function httpReward(url: string, options: HttpRewardOptions = {}): RewardFunction {
  const timeoutMs = options.timeoutMs ?? 30_000;
  checkOption(Number.isFinite(timeoutMs) && timeoutMs > 0, 'timeoutMs', `expected a positive number, got ${timeoutMs}`);
  return async (prompt, completion, reference) => {
    let res: Response;
    try {
      res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...options.headers },
        body: JSON.stringify({ prompt, completion, reference: reference ?? null }),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (cause) {
      const timedOut = (cause as Error)?.name === 'TimeoutError';
      throw new PosttrainError('RewardFailed', timedOut ? `no answer within ${timeoutMs} ms` : `request failed: ${(cause as Error)?.message ?? String(cause)}`, { file: url, cause });
    }
    const text = await res.text();
    if (!res.ok) throw new PosttrainError('RewardFailed', `HTTP ${res.status}: ${text.slice(0, 200)}`, { file: url });
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch (cause) {
      throw new PosttrainError('RewardFailed', `answer is not JSON: ${text.slice(0, 200)}`, { file: url, cause });
    }
    const reward = body !== null && typeof body === 'object' ? (body as { reward?: unknown }).reward : undefined;
    if (typeof reward !== 'number' || !Number.isFinite(reward)) {
      throw new PosttrainError('RewardFailed', `expected {"reward": <finite number>}, got ${text.slice(0, 200)}`, { file: url, field: 'reward' });
    }
    return reward;
  };
}

/** Options of {@link modelReward}. */
export interface ModelRewardOptions {
  /** Date of the default system prompt. Default: today (fix it for reproducible scores). */
  readonly date?: string | Date;
}

/**
 * A reward from an Apertus checkpoint (e.g. `loadCheckpoint(dir).model`): the mean log-probability
 * per token of the completion as the assistant's answer to the prompt,
 *   R = (1/|y|)·Σ_t log p(y_t | chat(x), y_<t),
 * over the completion tokens and the closing `<|assistant_end|>` (the SFT loss mask), rendered
 * with the Apertus chat template. The reference is not used. It is a likelihood-based quality
 * proxy: a model fine-tuned on good answers scores answers like them higher. Runs without autograd.
 */
export function modelReward(model: ApertusModel, tokenizer: Tokenizer, options: ModelRewardOptions = {}): RewardFunction {
  return (prompt, completion) => {
    const chat = applyApertusChatTemplate(
      tokenizer,
      [
        { role: 'user', content: prompt },
        { role: 'assistant', content: completion },
      ],
      { variant: 'B', ...(options.date !== undefined ? { date: options.date } : {}) },
    );
    const n = chat.ids.length - 1;
    if (chat.ids.length > model.config.max_position_embeddings) {
      throw new PosttrainError('RewardFailed', `${chat.ids.length} tokens exceed the model's ${model.config.max_position_embeddings}-token context`, { field: 'completion' });
    }
    return noGrad(() => {
      const logits = model.forward(Tensor.ints(chat.ids.slice(0, n), [1, n]));
      const nll = crossEntropy(logits, Tensor.ints(chat.ids.slice(1), [1, n]), { reduction: 'none' }).data as Float32Array;
      let sum = 0;
      let count = 0;
      for (let t = 0; t < n; t++) {
        if (chat.assistantMask[t + 1]) {
          sum -= nll[t]!;
          count++;
        }
      }
      return sum / count;
    });
  };
}

/**
 * Score several completions of one prompt with at most `concurrency` calls in flight (default 4).
 * Results are in input order; every value is checked to be a finite number.
 */
export async function scoreCompletions(
  reward: RewardFunction,
  prompt: string,
  completions: readonly string[],
  reference?: string,
  options: { readonly concurrency?: number } = {},
): Promise<number[]> {
  const concurrency = options.concurrency ?? 4;
  checkOption(Number.isInteger(concurrency) && concurrency >= 1, 'concurrency', `expected a positive integer, got ${concurrency}`);
  const out = new Array<number>(completions.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < completions.length) {
      const i = next++;
      out[i] = checked(await reward(prompt, completions[i]!, reference), 'reward');
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, completions.length) }, worker));
  return out;
}

/** A reward with a description for logs. */
export interface LoadedReward {
  /** The reward function (checked: finite numbers only). */
  readonly fn: RewardFunction;
  /** What it is, e.g. `chrF against the reference translation (verifiable)`. */
  readonly description: string;
}

/** A reward model as the caller's loader hands it over. */
export interface LoadedRewardModel {
  /** Where it was loaded from (for the description). */
  readonly dir: string;
  readonly model: ApertusModel;
  readonly tokenizer: Tokenizer;
}

/** How {@link loadReward} reaches a `model:<dir>` reward model, and the date of its chat template. */
export interface LoadRewardOptions {
  /** Date in the system prompt of the `model:` reward's chat template. */
  readonly date?: string;
  /** Resolve and load the checkpoint named by `model:<location>` (the caller's model loader). */
  readonly loadModel?: (location: string) => LoadedRewardModel | Promise<LoadedRewardModel>;
}

/**
 * Build the reward named by `spec`:
 *   `chrf`             sentence chrF of the completion against the reference, in [0, 1] (verifiable)
 *   `http(s)://…`      POST {prompt, completion, reference} → {"reward": number} ({@link httpReward})
 *   `model:<dir>`      mean assistant-token log-probability under a checkpoint ({@link modelReward})
 *   `js:<module file>` the module's default export (or its `reward` export)
 * @throws PosttrainError naming the module or spec that cannot be used
 */
export async function loadReward(spec: string, options: LoadRewardOptions = {}): Promise<LoadedReward> {
  if (spec === 'chrf') return { fn: chrfReward(), description: 'chrF against the reference translation (verifiable)' };
  if (/^https?:\/\//.test(spec)) return { fn: httpReward(spec), description: `HTTP endpoint ${spec}` };
  if (spec.startsWith('model:') && options.loadModel) {
    const { dir, model, tokenizer } = await options.loadModel(spec.slice('model:'.length));
    return { fn: modelReward(model, tokenizer, options.date !== undefined ? { date: options.date } : {}), description: `reward model ${dir} (mean assistant-token log-probability)` };
  }
  if (spec.startsWith('js:')) {
    const file = path.resolve(spec.slice('js:'.length));
    if (!fs.existsSync(file)) throw new PosttrainError('RewardFailed', 'reward module not found', { file });
    let mod: Record<string, unknown>;
    try {
      mod = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
    } catch (cause) {
      throw new PosttrainError('RewardFailed', `cannot import the reward module (${(cause as Error).message})`, { file, cause });
    }
    const fn = typeof mod.default === 'function' ? mod.default : mod.reward;
    if (typeof fn !== 'function') throw new PosttrainError('RewardFailed', 'the reward module must export a function (default export or `reward`)', { file });
    return { fn: jsReward(fn as RewardFunction), description: `JavaScript function ${file}` };
  }
  throw new PosttrainError('InvalidOption', 'unknown reward (expected chrf, an http(s):// URL, model:<dir> or js:<module file>)', { field: spec });
}

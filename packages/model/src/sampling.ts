import { Rng } from '@apertus/tensor';
import { GenerationError } from './errors';

/** How the next token is chosen from the logits (OpenAI / HF names in camelCase). */
export interface SamplingParams {
  /** 0 → greedy (argmax). Default 1. */
  temperature?: number;
  /** Keep the k most likely tokens (0 = off). */
  topK?: number;
  /** Nucleus: smallest set with cumulative probability ≥ p (1 = off). */
  topP?: number;
  /** Drop tokens whose probability is below minP × the top probability (0 = off). */
  minP?: number;
  /** HF repetition penalty over prompt and generated tokens: logit/p if positive, logit·p if negative (1 = off). */
  repetitionPenalty?: number;
  /** OpenAI presence penalty: −p for every token generated at least once. */
  presencePenalty?: number;
  /** OpenAI frequency penalty: −p × count of the token among generated tokens. */
  frequencyPenalty?: number;
  /** Seed of the sampler's random stream (same seed → same tokens). */
  seed?: number;
}

/** Validate sampling parameters, throwing GenerationError naming the field. */
export function validateSampling(p: SamplingParams): Required<Omit<SamplingParams, 'seed'>> & { seed: number | undefined } {
  const check = (field: string, v: number | undefined, ok: (x: number) => boolean, what: string) => {
    if (v !== undefined && (typeof v !== 'number' || !Number.isFinite(v) || !ok(v))) throw new GenerationError(field, `must be ${what}, got ${v}`);
  };
  check('temperature', p.temperature, (x) => x >= 0, '≥ 0');
  check('topK', p.topK, (x) => Number.isInteger(x) && x >= 0, 'a non-negative integer');
  check('topP', p.topP, (x) => x > 0 && x <= 1, 'in (0, 1]');
  check('minP', p.minP, (x) => x >= 0 && x <= 1, 'in [0, 1]');
  check('repetitionPenalty', p.repetitionPenalty, (x) => x > 0, '> 0');
  check('presencePenalty', p.presencePenalty, (x) => x >= -2 && x <= 2, 'in [−2, 2]');
  check('frequencyPenalty', p.frequencyPenalty, (x) => x >= -2 && x <= 2, 'in [−2, 2]');
  check('seed', p.seed, Number.isInteger, 'an integer');
  return {
    temperature: p.temperature ?? 1, topK: p.topK ?? 0, topP: p.topP ?? 1, minP: p.minP ?? 0,
    repetitionPenalty: p.repetitionPenalty ?? 1, presencePenalty: p.presencePenalty ?? 0, frequencyPenalty: p.frequencyPenalty ?? 0,
    seed: p.seed,
  };
}

/**
 * Picks tokens for one sequence. Processing order follows Hugging Face: repetition penalty,
 * presence/frequency penalties, temperature, top-k, top-p, min-p, then a draw from the rest.
 */
export class Sampler {
  private readonly p: ReturnType<typeof validateSampling>;
  private readonly rng: Rng;
  /** Tokens seen (prompt and output) for the repetition penalty. */
  private readonly seen = new Set<number>();
  /** Output token counts for presence/frequency penalties. */
  private readonly counts = new Map<number, number>();

  /** `prompt` feeds the repetition penalty. */
  constructor(params: SamplingParams = {}, prompt: ArrayLike<number> = []) {
    this.p = validateSampling(params);
    this.rng = new Rng(this.p.seed ?? Math.floor(Math.random() * 2 ** 52));
    for (let i = 0; i < prompt.length; i++) this.seen.add(prompt[i]!);
  }

  /** Choose the next token from `logits` (not modified) and remember it. */
  sample(logits: Float32Array): number {
    const p = this.p;
    const x = Float64Array.from(logits);
    if (p.repetitionPenalty !== 1) for (const t of this.seen) x[t] = x[t]! > 0 ? x[t]! / p.repetitionPenalty : x[t]! * p.repetitionPenalty;
    if (p.presencePenalty !== 0 || p.frequencyPenalty !== 0) for (const [t, n] of this.counts) x[t]! -= p.presencePenalty + p.frequencyPenalty * n;
    const id = p.temperature === 0 ? argmax(x) : this.draw(x);
    this.seen.add(id);
    this.counts.set(id, (this.counts.get(id) ?? 0) + 1);
    return id;
  }

  private draw(x: Float64Array): number {
    const p = this.p;
    for (let i = 0; i < x.length; i++) x[i]! /= p.temperature;
    // Candidates sorted by logit, descending (only as many as top-k needs when it is set).
    let idx = Array.from(x.keys());
    idx.sort((a, b) => x[b]! - x[a]! || a - b);
    if (p.topK > 0) idx = idx.slice(0, p.topK);
    const m = x[idx[0]!]!;
    let probs = idx.map((i) => Math.exp(x[i]! - m));
    let z = probs.reduce((s, v) => s + v, 0);
    probs = probs.map((v) => v / z);
    if (p.topP < 1) {
      let cum = 0, keep = 0;
      while (keep < probs.length && cum < p.topP) cum += probs[keep++]!;
      idx = idx.slice(0, Math.max(1, keep)); probs = probs.slice(0, Math.max(1, keep));
    }
    if (p.minP > 0) {
      const thr = p.minP * probs[0]!;
      const keep = Math.max(1, probs.findIndex((v) => v < thr) < 0 ? probs.length : probs.findIndex((v) => v < thr));
      idx = idx.slice(0, keep); probs = probs.slice(0, keep);
    }
    z = probs.reduce((s, v) => s + v, 0);
    let u = this.rng.uniform() * z;
    for (let k = 0; k < probs.length; k++) { u -= probs[k]!; if (u < 0) return idx[k]!; }
    return idx[idx.length - 1]!;
  }
}

function argmax(x: Float64Array): number {
  let best = 0;
  for (let i = 1; i < x.length; i++) if (x[i]! > x[best]!) best = i;
  return best;
}

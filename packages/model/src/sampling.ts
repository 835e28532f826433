import { drawToken, Rng, type SampleParams } from '@apertus/tensor';
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

  /**
   * Whether the token can be chosen where the logits are (`sampleTokens` on a device): no
   * penalties, which need the sequence's history on the host.
   */
  get onDevice(): boolean {
    const p = this.p;
    return p.repetitionPenalty === 1 && p.presencePenalty === 0 && p.frequencyPenalty === 0;
  }

  /** The parameters of the next choice; a draw takes its uniform number from the stream here (greedy takes none). */
  next(): SampleParams {
    const p = this.p;
    return { temperature: p.temperature, topK: p.topK, topP: p.topP, minP: p.minP, u: p.temperature === 0 ? 0 : this.rng.uniform() };
  }

  /** Remember a chosen token (for the penalties). */
  accept(id: number): number {
    this.seen.add(id);
    this.counts.set(id, (this.counts.get(id) ?? 0) + 1);
    return id;
  }

  /** Choose the next token from `logits` (not modified) and remember it. */
  sample(logits: Float32Array): number {
    const p = this.p;
    const x = Float64Array.from(logits);
    if (p.repetitionPenalty !== 1) for (const t of this.seen) x[t] = x[t]! > 0 ? x[t]! / p.repetitionPenalty : x[t]! * p.repetitionPenalty;
    if (p.presencePenalty !== 0 || p.frequencyPenalty !== 0) for (const [t, n] of this.counts) x[t]! -= p.presencePenalty + p.frequencyPenalty * n;
    const q = this.next();
    return this.accept(drawToken(x, q, q.u));
  }
}

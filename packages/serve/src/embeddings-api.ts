// `POST /v1/embeddings` in OpenAI's shape: `input` (a string, strings, token ids or arrays of
// them), `encoding_format` ('float', or 'base64': the float32 little-endian bytes, which the
// `openai` client asks for by default and decodes), `dimensions` only as the model's own width.
// Strings are tokenized as completions prompts are (with BOS); see embedder.ts for the pooling.

import { ApiError } from './api-error';
import type { RequestLimits } from './requests';

/** A validated embeddings request. */
export interface PreparedEmbeddings {
  /** Token ids of each input, in order. */
  inputs: number[][];
  /** How vectors are written. */
  encoding: 'float' | 'base64';
}

/** One vector of the response. */
export interface EmbeddingData {
  object: 'embedding';
  index: number;
  embedding: number[] | string;
}

/** The `/v1/embeddings` response. */
export interface EmbeddingsResponse {
  object: 'list';
  data: EmbeddingData[];
  model: string;
  usage: { prompt_tokens: number; total_tokens: number };
}

/** Most inputs per request (OpenAI's limit). */
export const MAX_EMBEDDING_INPUTS = 2048;

const bad = (param: string, message: string, code: string | null = null) => new ApiError(400, message, 'invalid_request_error', param, code);

/** Validate a `/v1/embeddings` body and tokenize its inputs. */
export function prepareEmbeddings(body: unknown, limits: RequestLimits): PreparedEmbeddings {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw bad('(body)', 'the request body must be a JSON object');
  const b = body as Record<string, unknown>;
  const tok = limits.served.tokenizer;
  const V = Math.min(tok.vocabSize, limits.served.model.config.vocab_size);
  const raw = b.input;
  const isIds = (v: unknown): v is number[] => Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === 'number');
  let inputs: number[][];
  if (typeof raw === 'string') inputs = [text(raw, 'input')];
  else if (isIds(raw)) inputs = [ids(raw, 'input')];
  else if (Array.isArray(raw) && raw.length > 0 && raw.every((x) => typeof x === 'string')) inputs = (raw as string[]).map((s, i) => text(s, `input[${i}]`));
  else if (Array.isArray(raw) && raw.length > 0 && raw.every(isIds)) inputs = (raw as number[][]).map((x, i) => ids(x, `input[${i}]`));
  else if (raw === undefined || raw === null) throw bad('input', "'input' is required");
  else throw bad('input', "'input' must be a non-empty string, an array of strings, an array of token ids or an array of such arrays");
  if (inputs.length > MAX_EMBEDDING_INPUTS) throw bad('input', `'input' holds ${inputs.length} inputs, at most ${MAX_EMBEDDING_INPUTS} are allowed`);
  inputs.forEach((x, i) => {
    if (x.length > limits.contextLength) {
      throw bad(inputs.length === 1 ? 'input' : `input[${i}]`, `This model's maximum context length is ${limits.contextLength} tokens. However, input ${i} has ${x.length} tokens.`, 'context_length_exceeded');
    }
  });
  const format = b.encoding_format ?? 'float';
  if (format !== 'float' && format !== 'base64') throw bad('encoding_format', `'encoding_format' must be "float" or "base64", got ${JSON.stringify(format)}`);
  const H = limits.served.model.config.hidden_size;
  if (b.dimensions !== undefined && b.dimensions !== null && b.dimensions !== H) {
    throw bad('dimensions', `'dimensions' must be this model's hidden size ${H} (embeddings are not truncated), got ${JSON.stringify(b.dimensions)}`, 'unsupported_parameter');
  }
  return { inputs, encoding: format };

  function text(s: string, param: string): number[] {
    if (s.length === 0) throw bad(param, `'${param}' must not be empty`);
    return tok.encodeIds(s);
  }
  function ids(x: number[], param: string): number[] {
    x.forEach((id, k) => {
      if (!Number.isInteger(id)) throw bad(param, `'${param}[${k}]' is ${id}, not an integer token id`);
      if (id < 0 || id >= V) throw bad(param, `'${param}[${k}]': token id ${id} is outside the vocabulary of ${V}`);
    });
    return x;
  }
}

/** The response for `vectors` (one per input). */
export function embeddingsResponse(vectors: readonly Float32Array[], prep: PreparedEmbeddings, model: string): EmbeddingsResponse {
  const tokens = prep.inputs.reduce((n, x) => n + x.length, 0);
  return {
    object: 'list',
    data: vectors.map((v, index) => ({
      object: 'embedding', index,
      embedding: prep.encoding === 'base64' ? Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64') : Array.from(v),
    })),
    model,
    usage: { prompt_tokens: tokens, total_tokens: tokens },
  };
}

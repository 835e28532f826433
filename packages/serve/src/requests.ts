// Validation of OpenAI request bodies (ecosystem.md §2.1–2.2) and their translation into
// scheduler requests. Every problem becomes an ApiError whose `param` names the field, e.g.
// `messages[1].content[0].type` or `temperature`.

import type { SamplingParams } from '@apertus/model';
import type { ChatMessage, ChatTool, ChatToolCall, JsonSchema } from '@apertus/tokenizer';
import type { ChatPromptOptions } from '@apertus/pretrained';
import { ApiError } from './api-error';
import { PromptError } from './errors';
import { ANY_OBJECT, arrayOf, compileSchema, oneKeyObject, SchemaError, type SchemaNode } from './json-grammar';
import type { ConstraintSpec } from './token-constraint';
import type { ServedModel } from './load';
import type { GenerationRequest } from './scheduler';

/** What validation needs to know about the server. */
export interface RequestLimits {
  /** The served model (name, tokenizer, generation defaults). */
  served: ServedModel;
  /** Context limit, prompt + output. */
  contextLength: number;
  /** Largest max_tokens a request may ask for; also the default. */
  maxTokens: number;
  /** Largest `n`. */
  maxN: number;
}

/** A validated `/v1/chat/completions` request. */
export interface PreparedChat {
  /** What the scheduler runs (mode 'chat'). */
  request: GenerationRequest;
  /** Stream SSE chunks. */
  stream: boolean;
  /** Add a usage chunk before `[DONE]`. */
  includeUsage: boolean;
  /** The `model` the client sent. */
  model: string;
}

/** A validated `/v1/completions` request: one scheduler request per prompt. */
export interface PreparedCompletion {
  /** One request per prompt (choice index = prompt index × n + i). */
  requests: GenerationRequest[];
  /** Prompt texts to prepend to the output (`echo`), or null. */
  echo: string[] | null;
  /** Stream SSE chunks. */
  stream: boolean;
  /** Add a usage chunk before `[DONE]`. */
  includeUsage: boolean;
  /** The `model` the client sent. */
  model: string;
  /** Continuations per prompt. */
  n: number;
}

type Obj = Record<string, unknown>;

function bad(param: string, message: string, code: string | null = null): ApiError {
  return new ApiError(400, message, 'invalid_request_error', param, code);
}

function typeName(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v;
}

function isObj(v: unknown): v is Obj {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** Read optional fields of a body with type checks. */
class Fields {
  constructor(private readonly o: Obj, private readonly prefix = '') {}

  private p(name: string): string {
    return this.prefix + name;
  }

  has(name: string): boolean {
    return this.o[name] !== undefined && this.o[name] !== null;
  }

  raw(name: string): unknown {
    return this.o[name];
  }

  string(name: string, required = false): string | undefined {
    const v = this.o[name];
    if (v === undefined || v === null) {
      if (required) throw bad(this.p(name), `'${this.p(name)}' is required`);
      return undefined;
    }
    if (typeof v !== 'string') throw bad(this.p(name), `'${this.p(name)}' must be a string, got ${typeName(v)}`);
    return v;
  }

  bool(name: string): boolean | undefined {
    const v = this.o[name];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'boolean') throw bad(this.p(name), `'${this.p(name)}' must be a boolean, got ${typeName(v)}`);
    return v;
  }

  number(name: string, min: number, max: number, opts: { integer?: boolean; minOpen?: boolean } = {}): number | undefined {
    const v = this.o[name];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'number' || !Number.isFinite(v)) throw bad(this.p(name), `'${this.p(name)}' must be a number, got ${typeName(v)}`);
    if (opts.integer && !Number.isInteger(v)) throw bad(this.p(name), `'${this.p(name)}' must be an integer, got ${v}`);
    if (v < min || v > max || (opts.minOpen && v === min)) {
      throw bad(this.p(name), `'${this.p(name)}' must be ${opts.minOpen ? `> ${min}` : `≥ ${min}`} and ≤ ${max}, got ${v}`);
    }
    return v;
  }
}

function requireObject(body: unknown): Obj {
  if (!isObj(body)) throw bad('(body)', `the request body must be a JSON object, got ${typeName(body)}`);
  return body;
}

function checkModel(f: Fields, served: ServedModel): string {
  const model = f.string('model', true)!;
  if (model !== served.name) throw new ApiError(404, `The model '${model}' does not exist. This server serves '${served.name}'.`, 'not_found_error', 'model', 'model_not_found');
  return model;
}

function unsupported(f: Fields, name: string, ok: (v: unknown) => boolean, what: string): void {
  if (f.has(name) && !ok(f.raw(name))) throw bad(name, `'${name}' ${what} is not supported by this server`, 'unsupported_parameter');
}

interface Common {
  sampling: SamplingParams;
  n: number;
  stop: string[];
  maxTokens: number | undefined;
  stream: boolean;
  includeUsage: boolean;
  skipSpecialTokens: boolean;
}

/** Sampling, n, stop, max_tokens, stream and stream_options: shared by both endpoints. */
function common(f: Fields, limits: RequestLimits, maxTokensNames: string[]): Common {
  const gc = limits.served.generationConfig ?? {};
  const temperature = f.number('temperature', 0, 2) ?? gc.temperature ?? 1;
  const topP = f.number('top_p', 0, 1, { minOpen: true }) ?? gc.top_p ?? 1;
  const topKRaw = f.number('top_k', -1, Number.MAX_SAFE_INTEGER, { integer: true }) ?? gc.top_k ?? 0;
  const minP = f.number('min_p', 0, 1) ?? 0;
  const repetitionPenalty = f.number('repetition_penalty', 0, 10, { minOpen: true }) ?? 1;
  const presencePenalty = f.number('presence_penalty', -2, 2) ?? 0;
  const frequencyPenalty = f.number('frequency_penalty', -2, 2) ?? 0;
  const seed = f.number('seed', Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER, { integer: true });
  const n = f.number('n', 1, limits.maxN, { integer: true }) ?? 1;
  let stop: string[] = [];
  const s = f.raw('stop');
  if (typeof s === 'string') stop = [s];
  else if (Array.isArray(s)) {
    if (s.length > 16) throw bad('stop', `'stop' may hold at most 16 strings, got ${s.length}`);
    s.forEach((x, i) => {
      if (typeof x !== 'string') throw bad(`stop[${i}]`, `'stop[${i}]' must be a string, got ${typeName(x)}`);
    });
    stop = s as string[];
  } else if (s !== undefined && s !== null) throw bad('stop', `'stop' must be a string or an array of strings, got ${typeName(s)}`);
  if (stop.some((x) => x.length === 0)) throw bad('stop', "'stop' strings must not be empty");
  let maxTokens: number | undefined;
  for (const name of maxTokensNames) {
    const v = f.number(name, 1, Number.MAX_SAFE_INTEGER, { integer: true });
    if (v !== undefined && maxTokens === undefined) {
      if (v > limits.maxTokens) throw bad(name, `'${name}' is ${v}, above this server's limit of ${limits.maxTokens}`);
      maxTokens = v;
    }
  }
  const stream = f.bool('stream') ?? false;
  let includeUsage = false;
  const so = f.raw('stream_options');
  if (so !== undefined && so !== null) {
    if (!stream) throw bad('stream_options', "'stream_options' is only allowed when 'stream' is true");
    if (!isObj(so)) throw bad('stream_options', `'stream_options' must be an object, got ${typeName(so)}`);
    includeUsage = new Fields(so, 'stream_options.').bool('include_usage') ?? false;
  }
  unsupported(f, 'logit_bias', (v) => isObj(v) && Object.keys(v).length === 0, '(token biases)');
  unsupported(f, 'best_of', (v) => v === n, '(other than n)');
  const skipSpecialTokens = f.bool('skip_special_tokens') ?? true;
  return {
    sampling: { temperature, topP, topK: topKRaw < 0 ? 0 : topKRaw, minP, repetitionPenalty, presencePenalty, frequencyPenalty, ...(seed !== undefined ? { seed } : {}) },
    n, stop, maxTokens, stream, includeUsage, skipSpecialTokens,
  };
}

/** max_tokens for a prompt: the request's, else whatever fits (at most the server's limit). */
function resolveMaxTokens(asked: number | undefined, promptLength: number, limits: RequestLimits, param: string): number {
  if (promptLength >= limits.contextLength) {
    throw new ApiError(400, `This model's maximum context length is ${limits.contextLength} tokens. However, your ${param} has ${promptLength} tokens, leaving no room for the completion.`, 'invalid_request_error', param, 'context_length_exceeded');
  }
  return asked ?? Math.min(limits.maxTokens, limits.contextLength - promptLength);
}

function textOfParts(v: unknown, param: string): string {
  if (typeof v === 'string') return v;
  if (!Array.isArray(v)) throw bad(param, `'${param}' must be a string or an array of text parts, got ${typeName(v)}`);
  return v
    .map((part, i) => {
      if (!isObj(part) || part.type !== 'text') throw bad(`${param}[${i}].type`, `only text content parts are supported, got ${isObj(part) ? JSON.stringify(part.type) : typeName(part)}`);
      if (typeof part.text !== 'string') throw bad(`${param}[${i}].text`, `'${param}[${i}].text' must be a string`);
      return part.text;
    })
    .join('');
}

function toChatMessages(raw: unknown): ChatMessage[] {
  if (!Array.isArray(raw)) throw bad('messages', `'messages' must be an array, got ${typeName(raw)}`);
  if (raw.length === 0) throw bad('messages', "'messages' must not be empty");
  return raw.map((m, i): ChatMessage => {
    const at = `messages[${i}]`;
    if (!isObj(m)) throw bad(at, `'${at}' must be an object, got ${typeName(m)}`);
    const role = m.role;
    switch (role) {
      case 'system':
      case 'developer':
        if (i !== 0) throw bad(`${at}.role`, `a ${role} message is only supported as the first message (the Apertus template has one system block)`);
        return { role: 'system', content: textOfParts(m.content, `${at}.content`) };
      case 'user':
        return { role: 'user', content: textOfParts(m.content, `${at}.content`) };
      case 'tool':
        return { role: 'tool', content: textOfParts(m.content, `${at}.content`), ...(typeof m.tool_call_id === 'string' ? { tool_call_id: m.tool_call_id } : {}) };
      case 'assistant': {
        const content = m.content === undefined || m.content === null ? null : textOfParts(m.content, `${at}.content`);
        let toolCalls: ChatToolCall[] | undefined;
        if (m.tool_calls !== undefined && m.tool_calls !== null) {
          if (!Array.isArray(m.tool_calls)) throw bad(`${at}.tool_calls`, `'${at}.tool_calls' must be an array`);
          toolCalls = m.tool_calls.map((c, k) => {
            const cp = `${at}.tool_calls[${k}]`;
            if (!isObj(c) || !isObj(c.function)) throw bad(`${cp}.function`, `'${cp}.function' must be an object`);
            if (c.type !== undefined && c.type !== 'function') throw bad(`${cp}.type`, `'${cp}.type' must be "function"`);
            const fn = c.function;
            if (typeof fn.name !== 'string' || fn.name.length === 0) throw bad(`${cp}.function.name`, `'${cp}.function.name' must be a non-empty string`);
            if (typeof fn.arguments !== 'string') throw bad(`${cp}.function.arguments`, `'${cp}.function.arguments' must be a JSON string`);
            return { type: 'function', ...(typeof c.id === 'string' ? { id: c.id } : {}), function: { name: fn.name, arguments: fn.arguments } };
          });
        }
        if (content === null && (toolCalls === undefined || toolCalls.length === 0)) throw bad(`${at}.content`, `'${at}.content' is required unless tool_calls is given`);
        return { role: 'assistant', content: content ?? null, ...(toolCalls ? { tool_calls: toolCalls } : {}) };
      }
      default:
        throw bad(`${at}.role`, `'${at}.role' must be one of system, developer, user, assistant, tool; got ${JSON.stringify(role)}`);
    }
  });
}

function toTools(raw: unknown): ChatTool[] {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) throw bad('tools', `'tools' must be an array, got ${typeName(raw)}`);
  return raw.map((t, i) => {
    const at = `tools[${i}]`;
    if (!isObj(t) || t.type !== 'function' || !isObj(t.function)) throw bad(at, `'${at}' must be {"type": "function", "function": {...}}`);
    const fn = t.function;
    if (typeof fn.name !== 'string' || !/^[A-Za-z0-9_-]{1,64}$/.test(fn.name)) throw bad(`${at}.function.name`, `'${at}.function.name' must be 1–64 letters, digits, '_' or '-'`);
    if (fn.description !== undefined && typeof fn.description !== 'string') throw bad(`${at}.function.description`, 'must be a string');
    if (fn.parameters !== undefined && !isObj(fn.parameters)) throw bad(`${at}.function.parameters`, 'must be a JSON schema object');
    return {
      type: 'function' as const,
      function: { name: fn.name, description: (fn.description as string | undefined) ?? '', ...(fn.parameters ? { parameters: fn.parameters as JsonSchema } : {}) },
    };
  });
}

function thinking(f: Fields): boolean {
  const direct = f.bool('enable_thinking');
  if (direct !== undefined) return direct;
  const kw = f.raw('chat_template_kwargs');
  if (kw !== undefined && kw !== null) {
    if (!isObj(kw)) throw bad('chat_template_kwargs', `'chat_template_kwargs' must be an object`);
    const v = new Fields(kw, 'chat_template_kwargs.').bool('enable_thinking');
    if (v !== undefined) return v;
  }
  const effort = f.string('reasoning_effort');
  if (effort !== undefined) {
    if (!['none', 'minimal', 'low', 'medium', 'high'].includes(effort)) throw bad('reasoning_effort', `'reasoning_effort' must be none, minimal, low, medium or high`);
    return effort !== 'none' && effort !== 'minimal';
  }
  return false;
}

/** The prompt ids of a conversation (message text stays plain text); PromptError becomes a 400 naming the field. */
function encodeChat(served: ServedModel, messages: ChatMessage[], options: ChatPromptOptions): number[] {
  try {
    return served.chat.encode(messages, options);
  } catch (e) {
    if (e instanceof PromptError) throw bad(e.field, e.message);
    throw e;
  }
}

/** `response_format`: text (null), `json_object` (any object) or `json_schema` (the schema's subset, see json-grammar.ts). */
function responseFormat(f: Fields): ConstraintSpec | null {
  const rf = f.raw('response_format');
  if (rf === undefined || rf === null) return null;
  if (!isObj(rf)) throw bad('response_format', `'response_format' must be an object, got ${typeName(rf)}`);
  switch (rf.type) {
    case 'text':
      return null;
    case 'json_object':
      return { prefix: [], schema: ANY_OBJECT, suffix: [] };
    case 'json_schema': {
      const js = rf.json_schema;
      if (!isObj(js)) throw bad('response_format.json_schema', "'response_format.json_schema' must be an object with a 'schema'");
      if (js.schema === undefined) return { prefix: [], schema: ANY_OBJECT, suffix: [] };
      return { prefix: [], schema: compile(js.schema, 'response_format.json_schema.schema'), suffix: [] };
    }
    default:
      throw bad('response_format.type', `'response_format.type' must be "text", "json_object" or "json_schema", got ${JSON.stringify(rf.type)}`);
  }
}

function compile(schema: unknown, param: string): SchemaNode {
  try {
    return compileSchema(schema, param);
  } catch (e) {
    if (e instanceof SchemaError) throw bad(e.path, e.message, 'unsupported_parameter');
    throw e;
  }
}

/**
 * `tool_choice`: "auto"/"none" (null: free output), "required" (one or more calls of the tools)
 * or `{"type": "function", "function": {"name"}}` (one call of that tool), as a forced
 * `<|tools_prefix|>[{"name": arguments}, …]<|tools_suffix|>` with arguments following each tool's
 * `parameters` schema.
 */
function toolConstraint(choice: unknown, tools: ChatTool[], served: ServedModel): ConstraintSpec | null {
  if (choice === undefined || choice === null || choice === 'auto' || choice === 'none') return null;
  let names: string[];
  if (choice === 'required') names = tools.map((t) => toolName(t));
  else if (isObj(choice) && choice.type === 'function' && isObj(choice.function) && typeof choice.function.name === 'string') {
    const name = choice.function.name;
    if (!tools.some((t) => toolName(t) === name)) throw bad('tool_choice.function.name', `'tool_choice' names '${name}', which is not in 'tools'`);
    names = [name];
  } else throw bad('tool_choice', `'tool_choice' must be "auto", "none", "required" or {"type": "function", "function": {"name": …}}, got ${JSON.stringify(choice)}`);
  if (names.length === 0) throw bad('tool_choice', "'tool_choice' \"required\" needs at least one tool in 'tools'");
  const tok = served.tokenizer;
  const open = tok.tokenToId('<|tools_prefix|>');
  const close = tok.tokenToId('<|tools_suffix|>');
  if (open === undefined || close === undefined) throw bad('tool_choice', "this model's tokenizer has no <|tools_prefix|> / <|tools_suffix|> tokens, so tool calls cannot be forced", 'unsupported_parameter');
  const props = new Map<string, SchemaNode>();
  tools.forEach((t, i) => {
    const name = toolName(t);
    if (!names.includes(name)) return;
    const params = 'function' in t ? t.function.parameters : t.parameters;
    props.set(name, params === undefined ? ANY_OBJECT : compile(params, `tools[${i}].function.parameters`));
  });
  return { prefix: [open], schema: arrayOf(oneKeyObject(props), 1, names.length === 1 && choice !== 'required' ? 1 : Infinity), suffix: [close] };
}

function toolName(t: ChatTool): string {
  return 'function' in t ? t.function.name : t.name;
}

/** Validate a `/v1/chat/completions` body and render its prompt with the Apertus chat template. */
export function prepareChat(body: unknown, limits: RequestLimits): PreparedChat {
  const f = new Fields(requireObject(body));
  const model = checkModel(f, limits.served);
  const messages = toChatMessages(f.raw('messages'));
  const c = common(f, limits, ['max_completion_tokens', 'max_tokens']);
  const logprobs = f.bool('logprobs') ?? false;
  const top = f.number('top_logprobs', 0, 20, { integer: true });
  if (top !== undefined && !logprobs) throw bad('top_logprobs', "'top_logprobs' needs 'logprobs': true");
  const tools = toTools(f.raw('tools'));
  const toolChoice = f.raw('tool_choice');
  const useTools = toolChoice !== 'none';
  const format = responseFormat(f);
  const forcedCall = toolConstraint(toolChoice, tools, limits.served);
  if (format && forcedCall) throw bad('tool_choice', "a 'tool_choice' that forces a call cannot be combined with a JSON 'response_format'");
  const constraint = format ?? forcedCall;
  const enableThinking = thinking(f);
  const prompt = encodeChat(limits.served, messages, { tools: useTools ? tools : [], enableThinking, addGenerationPrompt: true });
  const maxTokens = resolveMaxTokens(c.maxTokens, prompt.length, limits, 'messages');
  return {
    request: {
      prompt, n: c.n, sampling: c.sampling, maxTokens, stop: c.stop, mode: 'chat', parseTools: useTools, skipSpecialTokens: c.skipSpecialTokens,
      ...(constraint ? { constraint } : {}),
      ...(logprobs ? { logprobs: top ?? 0 } : {}),
    },
    stream: c.stream,
    includeUsage: c.includeUsage,
    model,
  };
}

/** Validate a `/v1/completions` body and tokenize its prompt(s) (strings get the BOS token). */
export function prepareCompletion(body: unknown, limits: RequestLimits): PreparedCompletion {
  const f = new Fields(requireObject(body));
  const model = checkModel(f, limits.served);
  const c = common(f, limits, ['max_tokens']);
  unsupported(f, 'suffix', (v) => v === '', '(insertion)');
  const logprobs = f.number('logprobs', 0, 20, { integer: true });
  const echo = f.bool('echo') ?? false;
  if (echo && logprobs !== undefined) throw bad('logprobs', "'logprobs' together with 'echo' (prompt log-probabilities) is not supported by this server", 'unsupported_parameter');
  const raw = f.raw('prompt');
  const tok = limits.served.tokenizer;
  let prompts: number[][];
  let texts: string[];
  const isIds = (v: unknown): v is number[] => Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === 'number');
  if (typeof raw === 'string') {
    prompts = [tok.encodeIds(raw)];
    texts = [raw];
  } else if (isIds(raw)) {
    prompts = [raw];
    texts = [];
  } else if (Array.isArray(raw) && raw.length > 0 && raw.every((x) => typeof x === 'string')) {
    prompts = (raw as string[]).map((t) => tok.encodeIds(t));
    texts = raw as string[];
  } else if (Array.isArray(raw) && raw.length > 0 && raw.every(isIds)) {
    prompts = raw as number[][];
    texts = [];
  } else if (raw === undefined || raw === null) {
    throw bad('prompt', "'prompt' is required");
  } else {
    throw bad('prompt', "'prompt' must be a string, an array of strings, an array of token ids or an array of such arrays (all non-empty)");
  }
  const V = limits.served.model.config.vocab_size;
  prompts.forEach((p, i) => {
    if (p.length === 0) throw bad('prompt', `prompt ${i} has no tokens`);
    for (const id of p) if (!Number.isInteger(id) || id < 0 || id >= V) throw bad('prompt', `token id ${id} in prompt ${i} is outside the vocabulary of ${V}`);
  });
  if (echo && texts.length === 0) texts = prompts.map((p) => tok.decode(p, { skipSpecialTokens: c.skipSpecialTokens }));
  if (prompts.length * c.n > limits.maxN) throw bad('n', `${prompts.length} prompts × n = ${c.n} exceeds this server's limit of ${limits.maxN} choices per request`);
  const requests = prompts.map((prompt): GenerationRequest => ({
    prompt, n: c.n, sampling: c.sampling, maxTokens: resolveMaxTokens(c.maxTokens, prompt.length, limits, 'prompt'),
    stop: c.stop, mode: 'text', skipSpecialTokens: c.skipSpecialTokens, ...(logprobs !== undefined ? { logprobs } : {}),
  }));
  return { requests, echo: echo ? texts : null, stream: c.stream, includeUsage: c.includeUsage, model, n: c.n };
}

/** Validate a `/tokenize` body: `{prompt}` or `{content}` (text) or `{messages}` (chat); `add_special_tokens` default true for text. */
export function prepareTokenize(body: unknown, served: ServedModel): number[] {
  const f = new Fields(requireObject(body));
  if (f.has('model')) checkModel(f, served);
  if (f.has('messages')) {
    const messages = toChatMessages(f.raw('messages'));
    const tools = toTools(f.raw('tools'));
    return encodeChat(served, messages, { tools, enableThinking: thinking(f), addGenerationPrompt: f.bool('add_generation_prompt') ?? true });
  }
  const text = f.has('prompt') ? f.string('prompt') : f.string('content');
  if (text === undefined) throw bad('prompt', "'prompt' (or 'content' or 'messages') is required");
  return served.tokenizer.encodeIds(text, { addSpecialTokens: f.bool('add_special_tokens') ?? true });
}

/** Validate a `/detokenize` body `{tokens: number[]}` and decode it. */
export function prepareDetokenize(body: unknown, served: ServedModel): string {
  const f = new Fields(requireObject(body));
  if (f.has('model')) checkModel(f, served);
  const tokens = f.raw('tokens');
  if (!Array.isArray(tokens)) throw bad('tokens', `'tokens' must be an array of token ids, got ${typeName(tokens)}`);
  const V = served.tokenizer.vocabSize;
  tokens.forEach((t, i) => {
    if (typeof t !== 'number' || !Number.isInteger(t) || t < 0 || t >= V || served.tokenizer.idToToken(t) === undefined) {
      throw bad(`tokens[${i}]`, `token id ${JSON.stringify(t)} is not in the vocabulary`);
    }
  });
  return served.tokenizer.decode(tokens as number[], { skipSpecialTokens: f.bool('skip_special_tokens') ?? false });
}

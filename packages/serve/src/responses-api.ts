// `POST /v1/responses`: OpenAI's Responses API over the same chat engine. A request's
// `instructions` and `input` (a string, or items: messages with text parts, `function_call` and
// `function_call_output`) become chat messages; `tools` (function tools), `tool_choice`,
// `text.format` (text, json_object, json_schema), `reasoning.effort`, `max_output_tokens`,
// `temperature`, `top_p` map onto the chat request's fields and are validated by `prepareChat`.
// The reply is a `response` object whose `output` holds a `reasoning` item (text the model wrote
// while thinking), a `message` with one `output_text` part, and one `function_call` item per tool
// call; streamed, it is the API's event sequence (response.created, response.in_progress,
// response.output_item.added, response.content_part.added, response.output_text.delta, …,
// response.completed or response.incomplete), each a named SSE event with a `sequence_number`.
// Nothing is stored: `previous_response_id` is refused (send the whole conversation).

import { randomBytes } from 'node:crypto';
import { ApiError, toApiError } from './api-error';
import { prepareChat, textOfParts, type PreparedChat, type RequestLimits } from './requests';
import type { ToolCall } from './output-parser';
import type { FinishReason, Scheduler, Timings, Usage } from './scheduler';
import type { Running } from './run';

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);
const bad = (param: string, message: string, code: string | null = null) => new ApiError(400, message, 'invalid_request_error', param, code);
const itemId = (prefix: string) => `${prefix}_${randomBytes(12).toString('hex')}`;

/** A validated `/v1/responses` request: the chat request it runs as, and what the response echoes. */
export interface PreparedResponse {
  /** The chat request. */
  chat: PreparedChat;
  /** Stream events. */
  stream: boolean;
  /** Fields the response object repeats from the request. */
  echo: {
    instructions: string | null;
    max_output_tokens: number | null;
    temperature: number;
    top_p: number;
    tool_choice: unknown;
    tools: unknown[];
    text: { format: unknown };
    reasoning: { effort: string | null; summary: null };
    parallel_tool_calls: boolean;
    metadata: Record<string, string>;
  };
}

/** Identity of one response. */
export interface ResponseIdentity {
  id: string;
  created: number;
  model: string;
}

/** The chat messages of `input` (after `instructions`, as the system message). */
function toMessages(input: unknown, instructions: string | undefined): unknown[] {
  const messages: Obj[] = [];
  const system: string[] = instructions !== undefined ? [instructions] : [];
  if (typeof input === 'string') {
    messages.push({ role: 'user', content: input });
  } else if (Array.isArray(input) && input.length > 0) {
    input.forEach((item, i) => {
      const at = `input[${i}]`;
      if (!isObj(item)) throw bad(at, `'${at}' must be an object`);
      const type = item.type ?? 'message';
      if (type === 'message') {
        const role = item.role;
        const text = textOfParts(item.content, `${at}.content`);
        if (role === 'system' || role === 'developer') {
          if (messages.length > 0) throw bad(`${at}.role`, `a ${role} message is only supported before the conversation (the Apertus template has one system block)`);
          system.push(text);
        } else if (role === 'user' || role === 'assistant') messages.push({ role, content: text });
        else throw bad(`${at}.role`, `'${at}.role' must be user, assistant, system or developer, got ${JSON.stringify(role)}`);
      } else if (type === 'function_call') {
        if (typeof item.name !== 'string' || typeof item.arguments !== 'string' || typeof item.call_id !== 'string') throw bad(at, `'${at}' (a function_call) needs string 'call_id', 'name' and 'arguments'`);
        const call = { type: 'function', id: item.call_id, function: { name: item.name, arguments: item.arguments } };
        const last = messages[messages.length - 1];
        if (last && last.role === 'assistant') last.tool_calls = [...((last.tool_calls as unknown[] | undefined) ?? []), call];
        else messages.push({ role: 'assistant', content: null, tool_calls: [call] });
      } else if (type === 'function_call_output') {
        if (typeof item.call_id !== 'string') throw bad(`${at}.call_id`, `'${at}.call_id' must be a string`);
        messages.push({ role: 'tool', tool_call_id: item.call_id, content: typeof item.output === 'string' ? item.output : textOfParts(item.output, `${at}.output`) });
      } else if (type === 'reasoning') {
        // Earlier reasoning is not shown to the model again (as the chat template drops it).
      } else if (type === 'item_reference') {
        throw bad(`${at}.type`, 'this server keeps no items: send the items themselves', 'unsupported_parameter');
      } else throw bad(`${at}.type`, `input items of type ${JSON.stringify(type)} are not supported (message, function_call, function_call_output, reasoning)`, 'unsupported_parameter');
    });
  } else throw bad('input', "'input' must be a non-empty string or a non-empty array of input items");
  if (messages.length === 0) throw bad('input', "'input' holds no user, assistant or tool message");
  return system.length > 0 ? [{ role: 'system', content: system.join('\n\n') }, ...messages] : messages;
}

const RENAMED: readonly [RegExp, string][] = [
  [/^max_tokens/, 'max_output_tokens'], [/^response_format\.json_schema/, 'text.format'], [/^response_format/, 'text.format'],
  [/^reasoning_effort/, 'reasoning.effort'], [/^messages/, 'input'], [/^(tools\[\d+\])\.function/, '$1'],
];

/** A chat request's field name in this API's spelling (`max_tokens` → `max_output_tokens`…). */
function responsesParam(param: string | null): string | null {
  if (param === null) return null;
  for (const [from, to] of RENAMED) if (from.test(param)) return param.replace(from, to);
  return param;
}

/** Validate a `/v1/responses` body and build the chat request it runs as. */
export function prepareResponse(body: unknown, limits: RequestLimits): PreparedResponse {
  if (!isObj(body)) throw bad('(body)', 'the request body must be a JSON object');
  const b = body;
  if (b.previous_response_id !== undefined && b.previous_response_id !== null) throw bad('previous_response_id', 'this server keeps no responses: send the whole conversation in input', 'unsupported_parameter');
  if (b.background === true) throw bad('background', 'background responses are not supported', 'unsupported_parameter');
  if (b.conversation !== undefined && b.conversation !== null) throw bad('conversation', 'this server keeps no conversations: send the whole conversation in input', 'unsupported_parameter');
  if (b.truncation !== undefined && b.truncation !== null && b.truncation !== 'disabled') throw bad('truncation', "only 'disabled' truncation is supported (a conversation that does not fit is a context_length_exceeded error)", 'unsupported_parameter');
  if (b.instructions !== undefined && b.instructions !== null && typeof b.instructions !== 'string') throw bad('instructions', "'instructions' must be a string");
  const instructions = (b.instructions ?? undefined) as string | undefined;
  const chat: Obj = { messages: toMessages(b.input, instructions), stream: b.stream ?? false };
  if (b.max_output_tokens !== undefined && b.max_output_tokens !== null) chat.max_tokens = b.max_output_tokens;
  for (const k of ['temperature', 'top_p', 'model', 'logit_bias'] as const) if (b[k] !== undefined) chat[k] = b[k];
  let tools: unknown[] = [];
  if (b.tools !== undefined && b.tools !== null) {
    if (!Array.isArray(b.tools)) throw bad('tools', "'tools' must be an array");
    tools = b.tools;
    chat.tools = b.tools.map((t, i) => {
      if (!isObj(t) || t.type !== 'function') throw bad(`tools[${i}].type`, `only function tools are supported, got ${JSON.stringify(isObj(t) ? t.type : t)}`, 'unsupported_parameter');
      return { type: 'function', function: { name: t.name, ...(t.description !== undefined && t.description !== null ? { description: t.description } : {}), ...(t.parameters !== undefined && t.parameters !== null ? { parameters: t.parameters } : {}) } };
    });
  }
  const choice = b.tool_choice ?? 'auto';
  if (isObj(choice)) {
    if (choice.type !== 'function' || typeof choice.name !== 'string') throw bad('tool_choice', "'tool_choice' must be auto, none, required or {\"type\": \"function\", \"name\": …}");
    chat.tool_choice = { type: 'function', function: { name: choice.name } };
  } else chat.tool_choice = choice;
  const text = b.text;
  let format: unknown = { type: 'text' };
  if (text !== undefined && text !== null) {
    if (!isObj(text)) throw bad('text', "'text' must be an object");
    if (text.format !== undefined && text.format !== null) {
      format = text.format;
      if (!isObj(format)) throw bad('text.format', "'text.format' must be an object");
      if (format.type === 'json_schema') chat.response_format = { type: 'json_schema', json_schema: { name: format.name, schema: format.schema } };
      else if (format.type === 'json_object') chat.response_format = { type: 'json_object' };
      else if (format.type !== 'text') throw bad('text.format.type', `'text.format.type' must be text, json_object or json_schema, got ${JSON.stringify(format.type)}`);
    }
  }
  let effort: string | null = null;
  if (isObj(b.reasoning) && b.reasoning.effort !== undefined && b.reasoning.effort !== null) {
    effort = String(b.reasoning.effort);
    chat.reasoning_effort = b.reasoning.effort;
  }
  let prepared: PreparedChat;
  try {
    prepared = prepareChat(chat, limits);
  } catch (e) {
    const err = toApiError(e);
    throw new ApiError(err.status, err.message, err.type, responsesParam(err.param), err.code, { cause: e });
  }
  const gc = limits.served.generationConfig ?? {};
  return {
    chat: prepared,
    stream: prepared.stream,
    echo: {
      instructions: instructions ?? null,
      max_output_tokens: (b.max_output_tokens as number | undefined) ?? null,
      temperature: (b.temperature as number | undefined) ?? gc.temperature ?? 1,
      top_p: (b.top_p as number | undefined) ?? gc.top_p ?? 1,
      tool_choice: choice,
      tools,
      text: { format },
      reasoning: { effort, summary: null },
      parallel_tool_calls: b.parallel_tool_calls !== false,
      metadata: isObj(b.metadata) ? (b.metadata as Record<string, string>) : {},
    },
  };
}

/** The `usage` of a response. */
function responseUsage(u: Usage, reasoningTokens: number): Obj {
  return {
    input_tokens: u.promptTokens, input_tokens_details: { cached_tokens: u.cachedTokens },
    output_tokens: u.completionTokens, output_tokens_details: { reasoning_tokens: reasoningTokens },
    total_tokens: u.promptTokens + u.completionTokens,
  };
}

/** Builds the response object and its event stream from the scheduler's events. */
class ResponseBuilder {
  readonly output: Obj[] = [];
  private reasoning: Obj | null = null;
  private message: Obj | null = null;
  private seq = 0;
  private reasoningTokens = 0;
  finish: FinishReason = 'stop';

  constructor(private readonly prep: PreparedResponse, private readonly who: ResponseIdentity, private readonly emit: (e: Obj) => void) {}

  private send(type: string, fields: Obj): void {
    this.emit({ type, sequence_number: this.seq++, ...fields });
  }

  /** The response object with `status`. */
  response(status: string, usage: Usage | null, error: Obj | null = null): Obj {
    const e = this.prep.echo;
    return {
      id: this.who.id, object: 'response', created_at: this.who.created, status, error,
      incomplete_details: status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
      instructions: e.instructions, max_output_tokens: e.max_output_tokens, model: this.who.model,
      output: status === 'in_progress' ? [] : this.output, parallel_tool_calls: e.parallel_tool_calls, previous_response_id: null,
      reasoning: e.reasoning, store: false, temperature: e.temperature, text: e.text, tool_choice: e.tool_choice, tools: e.tools,
      top_p: e.top_p, truncation: 'disabled', usage: usage ? responseUsage(usage, this.reasoningTokens) : null, user: null, metadata: e.metadata,
    };
  }

  start(): void {
    this.send('response.created', { response: this.response('in_progress', null) });
    this.send('response.in_progress', { response: this.response('in_progress', null) });
  }

  /** End an open item: its text's `…done` event, then its content part's and its own. */
  private closeItem(item: Obj, textDone: string, extra: Obj): void {
    const index = this.output.indexOf(item);
    const part = (item.content as Obj[])[0]!;
    this.send(textDone, { item_id: item.id, output_index: index, content_index: 0, text: part.text, ...extra });
    this.send('response.content_part.done', { item_id: item.id, output_index: index, content_index: 0, part });
    item.status = 'completed';
    this.send('response.output_item.done', { output_index: index, item });
  }

  private closeReasoning(): void {
    if (this.reasoning) this.closeItem(this.reasoning, 'response.reasoning_text.done', {});
    this.reasoning = null;
  }

  private closeMessage(): void {
    if (this.message) this.closeItem(this.message, 'response.output_text.done', { logprobs: [] });
    this.message = null;
  }

  reasoningText(text: string): void {
    this.reasoningTokens++;
    if (!this.reasoning) {
      this.closeMessage();
      this.reasoning = { type: 'reasoning', id: itemId('rs'), summary: [], content: [], status: 'in_progress' };
      this.output.push(this.reasoning);
      const index = this.output.length - 1;
      this.send('response.output_item.added', { output_index: index, item: { ...this.reasoning, content: [] } });
      (this.reasoning.content as Obj[]).push({ type: 'reasoning_text', text: '' });
      this.send('response.content_part.added', { item_id: this.reasoning.id, output_index: index, content_index: 0, part: { type: 'reasoning_text', text: '' } });
    }
    const part = (this.reasoning.content as Obj[])[0]!;
    part.text = `${part.text as string}${text}`;
    this.send('response.reasoning_text.delta', { item_id: this.reasoning.id, output_index: this.output.indexOf(this.reasoning), content_index: 0, delta: text });
  }

  contentText(text: string): void {
    this.closeReasoning();
    if (!this.message) {
      this.message = { type: 'message', id: itemId('msg'), status: 'in_progress', role: 'assistant', content: [] };
      this.output.push(this.message);
      const index = this.output.length - 1;
      this.send('response.output_item.added', { output_index: index, item: { ...this.message, content: [] } });
      (this.message.content as Obj[]).push({ type: 'output_text', text: '', annotations: [], logprobs: [] });
      this.send('response.content_part.added', { item_id: this.message.id, output_index: index, content_index: 0, part: { type: 'output_text', text: '', annotations: [], logprobs: [] } });
    }
    const part = (this.message.content as Obj[])[0]!;
    part.text = `${part.text as string}${text}`;
    this.send('response.output_text.delta', { item_id: this.message.id, output_index: this.output.indexOf(this.message), content_index: 0, delta: text, logprobs: [] });
  }

  toolCalls(calls: readonly ToolCall[]): void {
    this.closeReasoning();
    this.closeMessage();
    for (const c of calls) {
      const item: Obj = { type: 'function_call', id: itemId('fc'), call_id: c.id, name: c.function.name, arguments: '', status: 'in_progress' };
      this.output.push(item);
      const index = this.output.length - 1;
      this.send('response.output_item.added', { output_index: index, item: { ...item } });
      this.send('response.function_call_arguments.delta', { item_id: item.id, output_index: index, delta: c.function.arguments });
      item.arguments = c.function.arguments;
      this.send('response.function_call_arguments.done', { item_id: item.id, output_index: index, name: c.function.name, arguments: c.function.arguments });
      item.status = 'completed';
      this.send('response.output_item.done', { output_index: index, item });
    }
  }

  /** The final event's type and response. */
  end(usage: Usage): Obj {
    this.closeReasoning();
    if (!this.message && !this.output.some((o) => o.type === 'function_call')) this.contentText('');
    this.closeMessage();
    const status = this.finish === 'length' ? 'incomplete' : 'completed';
    const response = this.response(status, usage);
    this.send(`response.${status}`, { response });
    return response;
  }

  fail(error: ApiError): void {
    this.send('error', { code: error.code ?? error.type, message: error.message, param: error.param });
  }
}

/** Where a streamed response goes. */
export interface ResponseSink {
  /** One event (its `type` names the SSE event). */
  event(e: Obj & { type: string }): void;
  /** The stream is over (after `response.completed`/`incomplete`, or an `error` event); usage and timings when it completed. */
  end(usage: Usage | null, timings: Timings | null): void;
}

function run(scheduler: Scheduler, prep: PreparedResponse, builder: ResponseBuilder, done: (usage: Usage, timings: Timings) => void, failed: (e: ApiError) => void): Running {
  const handle = scheduler.submit(prep.chat.request, (e) => {
    switch (e.type) {
      case 'text':
        if (e.channel === 'reasoning') builder.reasoningText(e.text);
        else builder.contentText(e.text);
        break;
      case 'tool_calls':
        builder.toolCalls(e.calls);
        break;
      case 'finish':
        builder.finish = e.reason;
        break;
      case 'done':
        done(e.usage, e.timings);
        break;
      case 'error':
        failed(toApiError(e.error));
        break;
      default:
    }
  });
  return { cancel: (error) => handle.cancel(error) };
}

/** Stream a response as events; throws ApiError (400/429) when the scheduler refuses it, before any event. */
export function streamResponse(scheduler: Scheduler, prep: PreparedResponse, who: ResponseIdentity, sink: ResponseSink, beforeFirst?: () => void): Running {
  const pending: Obj[] = [];
  let open = false;
  const builder = new ResponseBuilder(prep, who, (e) => (open ? sink.event(e as Obj & { type: string }) : pending.push(e)));
  builder.start();
  const running = run(scheduler, prep, builder, (usage, timings) => {
    builder.end(usage);
    sink.end(usage, timings);
  }, (error) => {
    builder.fail(error);
    sink.end(null, null);
  });
  // Only once the scheduler took the request: a refusal is still a plain HTTP error.
  beforeFirst?.();
  open = true;
  for (const e of pending.splice(0)) sink.event(e as Obj & { type: string });
  return running;
}

/** Run a response to the end; `result` resolves with the response object (and what the log reports). */
export function collectResponse(scheduler: Scheduler, prep: PreparedResponse, who: ResponseIdentity): Running & { result: Promise<{ response: Obj; usage: Usage; timings: Timings }> } {
  const builder = new ResponseBuilder(prep, who, () => {});
  let resolve!: (v: { response: Obj; usage: Usage; timings: Timings }) => void;
  let reject!: (e: ApiError) => void;
  const result = new Promise<{ response: Obj; usage: Usage; timings: Timings }>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  const running = run(scheduler, prep, builder, (usage, timings) => resolve({ response: builder.end(usage), usage, timings }), reject);
  return { ...running, result };
}

// The Apertus Instruct chat template (spec apertus-model.md §5.4), rendered without a Jinja engine.
//
// Output layout (no whitespace between segments):
//   <s><|system_start|>SYSTEM<|system_end|><|developer_start|>Deliberation: enabled|disabled\n
//   Tool Capabilities: disabled | Tool Capabilities:\nTOOLS<|developer_end|>
//   then per turn <|user_start|>…<|user_end|> and <|assistant_start|>…<|assistant_end|>, where an
//   assistant turn holds text, <|inner_prefix|>thoughts<|inner_suffix|>,
//   <|tools_prefix|>[{"name": args}, …]<|tools_suffix|> and tool outputs `[out, …]`.
// Variant A (swiss-ai/apertus_format, llama.cpp) leaves a final assistant turn open; variant B
// (swiss-ai SFT code) closes it with <|assistant_end|> unless it waits for tool outputs.
//
// While rendering, the spans the model must learn to produce are recorded: for every assistant
// message, its content (text, thoughts, tool calls, with their control tokens) and the
// <|assistant_end|> that closes the turn. `<|assistant_start|>`, tool outputs and everything
// outside assistant turns are prompt.

import { TokenizerError } from './errors.js';
import type { Tokenizer } from './tokenizer.js';

/** An OpenAI-style tool call on an assistant message. */
export interface ChatToolCall {
  /** Must be `"function"` when given. */
  type?: 'function';
  /** Call id (not rendered). */
  id?: string;
  /** The function and its JSON arguments (a string is inserted verbatim; an object is serialized). */
  function: { name: string; arguments: string | Record<string, unknown> };
}

/** One block of a structured assistant message (`content: { blocks }`). */
export type AssistantBlock =
  | { type: 'thoughts'; text: string }
  | { type: 'tool_calls'; calls: { name: string; arguments: string | Record<string, unknown> }[] }
  | { type: 'tool_outputs'; outputs: { output: string }[] }
  | { type: 'response'; text: string };

/** A conversation message accepted by the Apertus template. */
export type ChatMessage =
  | { role: 'system'; content: string | { text: string } }
  | { role: 'user'; content: string | { parts: { type: 'text'; text: string }[] } }
  | { role: 'assistant'; content?: string | { blocks: AssistantBlock[] } | null; tool_calls?: ChatToolCall[] | null }
  | { role: 'tool'; content: string; tool_call_id?: string };

/** A JSON-schema-like parameter description, as used in tool definitions. */
export interface JsonSchema {
  type?: string | string[];
  description?: string;
  enum?: unknown[];
  items?: JsonSchema;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  oneOf?: JsonSchema[];
  nullable?: boolean;
  default?: unknown;
  [key: string]: unknown;
}

/** A tool definition: flat `{name, description, parameters}` or OpenAI `{type: "function", function: {...}}`. */
export type ChatTool =
  | { name: string; description: string; parameters?: JsonSchema }
  | { type: 'function'; function: { name: string; description: string; parameters?: JsonSchema } };

/** Options of {@link renderApertusChat}. */
export interface ChatTemplateOptions {
  /** Tools offered to the model (rendered as TypeScript signatures in the developer block). */
  tools?: readonly ChatTool[] | null;
  /** `Deliberation: enabled` (the model thinks in `<|inner_prefix|>…<|inner_suffix|>`). Default false. */
  enableThinking?: boolean;
  /** Append `<|assistant_start|>` so the model writes the next assistant turn. Default false. */
  addGenerationPrompt?: boolean;
  /** Date in the default system prompt: a `YYYY-MM-DD` string or a Date (local date). Default: today. */
  date?: string | Date;
  /** Template variant (see file header). Default `"A"`. */
  variant?: 'A' | 'B';
  /** Variant B only: leave a final assistant turn open (the caller continues it). */
  continueAssistantMessage?: boolean;
}

/** Result of {@link renderApertusChat}. */
export interface RenderedChat {
  /** The rendered conversation, starting with `<s>`. */
  text: string;
  /** `[start, end)` UTF-16 ranges of `text` that are supervised (assistant content and `<|assistant_end|>`). */
  supervised: [number, number][];
}

/** Result of {@link applyApertusChatTemplate}. */
export interface TokenizedChat {
  /** The rendered conversation. */
  text: string;
  /** Token ids (exactly one BOS, the one the template writes). */
  ids: number[];
  /** 1 for tokens that overlap a supervised range, 0 otherwise. */
  assistantMask: number[];
}

const DEFAULT_SYSTEM_PREFIX = 'You are Apertus, a helpful assistant created by the SwissAI initiative.\nKnowledge cutoff: 2024-04\nCurrent date: ';

function fail(detail: string, field: string): TokenizerError {
  return new TokenizerError('InvalidConversation', detail, { field });
}

/** `YYYY-MM-DD` of a Date in local time (Python `strftime('%Y-%m-%d')`). */
function formatDate(d: Date): string {
  const y = String(d.getFullYear()).padStart(4, '0');
  const m = String(d.getMonth() + 1).padStart(2, '0');
  const day = String(d.getDate()).padStart(2, '0');
  return `${y}-${m}-${day}`;
}

/** Python `str()` of a JSON value (what Jinja's `join` prints). */
function pyStr(v: unknown): string {
  if (typeof v === 'string') return v;
  if (v === true) return 'True';
  if (v === false) return 'False';
  if (v === null || v === undefined) return 'None';
  if (typeof v === 'number') return Number.isInteger(v) ? String(v) : String(v);
  return pyJson(v);
}

/**
 * Python `json.dumps(v, ensure_ascii=False)` (the template's `tojson`): `", "` and `": "`
 * separators, keys in insertion order. JS numbers cannot tell `1.0` from `1`; both print as `1`.
 */
export function pyJson(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'number') {
    if (Number.isNaN(v)) return 'NaN';
    if (!Number.isFinite(v)) return v > 0 ? 'Infinity' : '-Infinity';
    return String(v);
  }
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (Array.isArray(v)) return `[${v.map(pyJson).join(', ')}]`;
  if (typeof v === 'object') {
    return `{${Object.entries(v as Record<string, unknown>)
      .map(([k, x]) => `${JSON.stringify(k)}: ${pyJson(x)}`)
      .join(', ')}}`;
  }
  return JSON.stringify(String(v));
}

function isNonEmptyObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length > 0;
}

function truthy(v: unknown): boolean {
  if (Array.isArray(v)) return v.length > 0;
  if (v !== null && typeof v === 'object') return Object.keys(v).length > 0;
  return Boolean(v);
}

function str(v: unknown, field: string): string {
  if (typeof v !== 'string') throw fail(`expected a string, got ${v === null ? 'null' : typeof v}`, field);
  return v;
}

/** The template's `render_typescript_type` macro (with its literal whitespace). */
function renderType(spec: JsonSchema, field: string): string {
  if (spec === null || typeof spec !== 'object') return 'any';
  if (spec.type === 'array') {
    let out: string;
    if (truthy(spec.items)) {
      const items = spec.items!;
      const it = items.type;
      if (it === 'string') out = 'string[]';
      else if (it === 'number' || it === 'integer') out = 'number[]';
      else if (it === 'boolean') out = 'boolean[]';
      else {
        const inner = renderType(items, `${field}.items`);
        out = inner === 'object | object' || inner.length > 50 ? 'any[]' : `${inner}[]`;
      }
    } else {
      out = 'any[]';
    }
    return truthy(spec.nullable) ? `${out} | null` : out;
  }
  if (Array.isArray(spec.type) && spec.type.length > 0) {
    return spec.type.length > 1 ? spec.type.map(pyStr).join(' | ') : pyStr(spec.type[0]);
  }
  if (truthy(spec.oneOf)) {
    // The reference macro means to print "any" for unions with object variants, but its flag is
    // set inside a Jinja for-loop scope and never seen outside; so every union is listed.
    const variants = spec.oneOf!;
    let out = '';
    variants.forEach((v, i) => {
      out += renderType(v, `${field}.oneOf[${i}]`);
      if (truthy(v?.description)) out += `// ${str(v.description, `${field}.oneOf[${i}].description`)}`;
      if (v !== null && typeof v === 'object' && v.default !== undefined) out += `${' '.repeat(20)}// default: ${pyJson(v.default)}`;
      if (i < variants.length - 1) out += ' | \n';
    });
    return out;
  }
  switch (spec.type) {
    case 'string':
      if (truthy(spec.enum)) return `"${spec.enum!.map(pyStr).join('" | "')}"`;
      return truthy(spec.nullable) ? 'string | null' : 'string';
    case 'number':
    case 'integer':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'object': {
      if (!isNonEmptyObject(spec.properties)) return 'object';
      const required = Array.isArray(spec.required) ? spec.required : [];
      const entries = Object.entries(spec.properties);
      let out = '{\n';
      entries.forEach(([name, prop], i) => {
        out += name;
        if (!required.includes(name)) out += '?';
        out += `: \n${' '.repeat(16)}${renderType(prop, `${field}.properties.${name}`)}`;
        if (i < entries.length - 1) out += ', ';
      });
      return `${out}}`;
    }
    default:
      return 'any';
  }
}

/** The template's `render_tools` macro. */
function renderTools(tools: readonly ChatTool[]): string {
  return tools
    .map((raw, t) => {
      const tool = 'function' in raw && raw.function !== undefined ? raw.function : (raw as { name: string; description: string; parameters?: JsonSchema });
      const field = `tools[${t}]`;
      let out = `// ${str(tool.description, `${field}.description`)}\ntype ${str(tool.name, `${field}.name`)} = `;
      const params = tool.parameters;
      if (params !== undefined && params !== null && isNonEmptyObject(params.properties)) {
        const required = Array.isArray(params.required) ? params.required : [];
        const entries = Object.entries(params.properties);
        out += '(_: {\n';
        entries.forEach(([name, spec], i) => {
          const pf = `${field}.parameters.properties.${name}`;
          if (truthy(spec?.description)) out += `// ${str(spec.description, `${pf}.description`)}\n`;
          out += name;
          if (!required.includes(name)) out += '?';
          out += `: ${renderType(spec, pf)}`;
          if (spec !== null && typeof spec === 'object' && spec.default !== undefined) {
            if (truthy(spec.enum)) out += `, // default: ${str(spec.default, `${pf}.default`)}`;
            else if (truthy(spec.oneOf)) out += `// default: ${str(spec.default, `${pf}.default`)}`;
            else out += `, // default: ${pyJson(spec.default)}`;
          }
          out += i < entries.length - 1 ? ',\n' : '\n';
        });
        out += '}) => any;';
      } else {
        out += '() => any;';
      }
      return out;
    })
    .join('\n');
}

function argumentsText(args: unknown, field: string): string {
  if (typeof args === 'string') return args;
  if (args !== null && typeof args === 'object') return pyJson(args);
  throw fail('tool call arguments must be a JSON string or an object', field);
}

/**
 * Render a conversation with the Apertus chat template. Returns the text (starting with `<s>`)
 * and the supervised character ranges. Throws {@link TokenizerError} (`InvalidConversation`,
 * field `messages[i]...`) where the reference template raises.
 */
export function renderApertusChat(messages: readonly ChatMessage[], options: ChatTemplateOptions = {}): RenderedChat {
  let text = '';
  const supervised: [number, number][] = [];
  const emit = (s: string, sup = false): void => {
    if (sup && s.length > 0) {
      const last = supervised[supervised.length - 1];
      if (last !== undefined && last[1] === text.length) last[1] += s.length;
      else supervised.push([text.length, text.length + s.length]);
    }
    text += s;
  };

  emit('<s>');
  let rest = messages;
  const first = messages[0];
  if (first !== undefined && first.role === 'system') {
    const c = (first as { content?: unknown }).content;
    let sys: string;
    if (typeof c === 'string') sys = c;
    else if (c !== null && typeof c === 'object' && 'text' in c) sys = str((c as { text: unknown }).text, 'messages[0].content.text');
    else throw fail('Invalid system message', 'messages[0].content');
    emit(`<|system_start|>${sys}<|system_end|>`);
    rest = messages.slice(1);
  } else {
    const d = options.date ?? new Date();
    const date = typeof d === 'string' ? d : formatDate(d);
    emit(`<|system_start|>${DEFAULT_SYSTEM_PREFIX}${date}<|system_end|>`);
  }
  emit(`<|developer_start|>Deliberation: ${options.enableThinking === true ? 'enabled\n' : 'disabled\n'}`);
  const tools = options.tools;
  emit(tools !== undefined && tools !== null && tools.length > 0 ? `Tool Capabilities:\n${renderTools(tools)}` : 'Tool Capabilities: disabled');
  emit('<|developer_end|>');

  const variantB = options.variant === 'B';
  let inAssistant = false;
  let inTool = false;
  let inInner = false;
  let format: 'string' | 'mapping' | null = null;
  let waiting = false; // variant B: tool calls emitted, outputs not yet given
  const offset = messages.length - rest.length;

  rest.forEach((message, j) => {
    const field = `messages[${j + offset}]`;
    const m = message as { role?: unknown; content?: unknown; tool_calls?: unknown };
    switch (m.role) {
      case 'user': {
        inInner = false;
        if (inTool) {
          emit(']');
          inTool = false;
        }
        if (inAssistant) {
          emit('<|assistant_end|>', true);
          inAssistant = false;
          waiting = false;
        }
        if (!('content' in m)) return;
        emit('<|user_start|>');
        const c = m.content;
        if (typeof c === 'string') emit(c);
        else if (c !== null && typeof c === 'object' && 'parts' in c && Array.isArray((c as { parts: unknown }).parts)) {
          (c as { parts: { type?: unknown; text?: unknown }[] }).parts.forEach((part, p) => {
            if (part?.type !== 'text') throw fail(`Invalid user part: ${String(part?.type)}`, `${field}.content.parts[${p}].type`);
            emit(str(part.text, `${field}.content.parts[${p}].text`));
          });
        } else throw fail('Invalid user message', `${field}.content`);
        emit('<|user_end|>');
        return;
      }
      case 'assistant': {
        if (!inAssistant) {
          emit('<|assistant_start|>');
          inAssistant = true;
        }
        const c = m.content;
        if (!('content' in m)) throw fail('Invalid assistant message', field);
        if (typeof c === 'string' && (format === null || format === 'string')) {
          if (inTool) {
            emit(']');
            inTool = false;
            waiting = false;
          }
          format = 'string';
          emit(c, true);
        } else if (
          c !== null &&
          typeof c === 'object' &&
          Array.isArray((c as { blocks?: unknown }).blocks) &&
          (format === null || format === 'mapping')
        ) {
          format = 'mapping';
          const blocks = (c as { blocks: AssistantBlock[] }).blocks;
          blocks.forEach((block, b) => {
            const bf = `${field}.content.blocks[${b}]`;
            switch (block?.type) {
              case 'thoughts':
                if (inTool) {
                  emit(']');
                  inTool = false;
                }
                if (!inInner) {
                  inInner = true;
                  emit('<|inner_prefix|>', true);
                }
                emit(str(block.text, `${bf}.text`), true);
                break;
              case 'tool_calls': {
                if (inTool) {
                  emit(']');
                  inTool = false;
                }
                const calls = Array.isArray(block.calls) ? block.calls : [];
                if (inInner && b > 0 && calls.length === 1 && calls[0]?.name === 'display_answers') {
                  inInner = false;
                  emit('<|inner_suffix|>', true);
                }
                emit(
                  `<|tools_prefix|>[${calls
                    .map((call, k) => `{"${str(call?.name, `${bf}.calls[${k}].name`)}": ${argumentsText(call?.arguments, `${bf}.calls[${k}].arguments`)}}`)
                    .join(', ')}]<|tools_suffix|>`,
                  true,
                );
                waiting = true;
                break;
              }
              case 'tool_outputs': {
                if (inTool) throw fail('Cannot have both tool outputs as separate messages and tool outputs as blocks', bf);
                const outputs = Array.isArray(block.outputs) ? block.outputs : [];
                emit(`[${outputs.map((o, k) => str(o?.output, `${bf}.outputs[${k}].output`)).join(', ')}]`);
                waiting = false;
                break;
              }
              case 'response':
                if (inTool) {
                  emit(']');
                  inTool = false;
                }
                if (inInner) {
                  inInner = false;
                  emit('<|inner_suffix|>', true);
                }
                emit(str(block.text, `${bf}.text`), true);
                break;
              default:
                throw fail(`Invalid assistant block type: ${String((block as { type?: unknown })?.type)}`, `${bf}.type`);
            }
          });
        } else if (c === null || c === undefined) {
          // OpenAI style: content null next to tool_calls (accepted as in the llama.cpp copy).
          if (inTool) {
            emit(']');
            inTool = false;
          }
        } else {
          throw fail('Invalid assistant content', `${field}.content`);
        }
        const calls = m.tool_calls;
        if (Array.isArray(calls) && calls.length > 0) {
          const rendered = calls.map((call: ChatToolCall, k: number) => {
            if (call?.type !== undefined && call.type !== 'function') {
              throw fail(`Invalid tool call type: ${String(call.type)}`, `${field}.tool_calls[${k}].type`);
            }
            const fn = call?.function;
            return `{"${str(fn?.name, `${field}.tool_calls[${k}].function.name`)}": ${argumentsText(fn?.arguments, `${field}.tool_calls[${k}].function.arguments`)}}`;
          });
          emit(`<|tools_prefix|>[${rendered.join(', ')}]<|tools_suffix|>`, true);
          waiting = true;
        }
        return;
      }
      case 'tool': {
        if (!inAssistant) throw fail('Tool message outside of assistant', field);
        if (!inTool) {
          emit('[');
          inTool = true;
        } else {
          emit(', ');
        }
        emit(str(m.content, `${field}.content`));
        waiting = false;
        return;
      }
      default:
        throw fail('Invalid message role', `${field}.role`);
    }
  });
  if (inTool) emit(']');
  if (variantB && inAssistant && !waiting && options.continueAssistantMessage !== true) emit('<|assistant_end|>', true);
  if (options.addGenerationPrompt === true) emit('<|assistant_start|>');
  return { text, supervised };
}

/**
 * Render a conversation and tokenize it: the ids carry exactly one BOS (the template's `<s>`; the
 * post-processor is not applied) and `assistantMask` marks the supervised tokens for SFT.
 */
export function applyApertusChatTemplate(
  tokenizer: Tokenizer,
  messages: readonly ChatMessage[],
  options: ChatTemplateOptions = {},
): TokenizedChat {
  const { text, supervised } = renderApertusChat(messages, options);
  const enc = tokenizer.encode(text, { addSpecialTokens: false });
  const mask = new Array<number>(enc.ids.length).fill(0);
  let r = 0;
  for (let i = 0; i < enc.ids.length; i++) {
    const [s, e] = enc.offsets[i]!;
    while (r < supervised.length && supervised[r]![1] <= s) r++;
    const range = supervised[r];
    if (range !== undefined && range[0] < e && s < range[1]) mask[i] = 1;
  }
  return { text, ids: enc.ids, assistantMask: mask };
}

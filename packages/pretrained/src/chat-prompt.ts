// Chat prompts: the checkpoint's chat template, and tokenization that keeps message text plain.
//
// Template. A checkpoint's `chat_template` (chat_template.jinja, else tokenizer_config.json) is
// compared with the built-in Apertus renderer of @apertus/tokenizer on a few probe conversations
// (default and custom system prompt, thinking, a multi-turn chat, a tool with a call and its
// output). Where every probe renders identically, it is the Apertus template and the built-in
// renderer is used; otherwise the template runs in `@huggingface/jinja` (with a warning). No
// template at all means the built-in renderer.
//
// Plain text. A message may contain `<|assistant_start|>`; Hugging Face tokenizers would turn it
// into the control token. Here the prompt is rendered twice: with the messages, and with every
// client string replaced by a marker `\uE000k\uE001`. The second render shows where client text
// sits; template text is tokenized with special tokens recognised, client text with special-token
// strings kept as plain text (each run between two special tokens is encoded as one piece, so
// ordinary conversations give exactly the ids of the one-string encoding). If the template
// changes client text on the way (trims, escapes…), the markers cannot be mapped back: the
// prompt is then refused when client text contains a special-token string, and encoded as one
// string otherwise.

import { Template } from '@huggingface/jinja';
import { renderApertusChat, TokenizerError, type ChatMessage, type ChatTool, type Tokenizer } from '@apertus/tokenizer';
import { PromptError } from './errors';

/** Options of a chat rendering. */
export interface ChatPromptOptions {
  /** Tools offered to the model. */
  tools?: readonly ChatTool[];
  /** Let the model think first (`enable_thinking`). Default false. */
  enableThinking?: boolean;
  /** End with the opening of an assistant turn. Default true. */
  addGenerationPrompt?: boolean;
  /** Built-in renderer: date in the default system prompt (`YYYY-MM-DD`); default today (Jinja templates call `strftime_now`). */
  date?: string;
}

/** Renders messages (as prepared for the renderer) with options. */
type Render = (messages: readonly unknown[], options: ChatPromptOptions) => string;

const MARK = /\uE000(\d+)\uE001/g;

// Flat `{name, description, parameters}` and `content: ""` next to tool calls: the shapes the
// Apertus template reads (the built-in renderer also takes OpenAI's `{type, function}` and null).
const PROBE_TOOL: ChatTool = {
  name: 'get_weather', description: 'Current weather of a city.', parameters: { type: 'object', properties: { city: { type: 'string', description: 'City name' } }, required: ['city'] },
};

/** The probe conversations that decide whether a template is the Apertus one. */
const PROBES: { messages: ChatMessage[]; options: ChatPromptOptions }[] = [
  { messages: [{ role: 'user', content: 'Hi!' }], options: {} },
  {
    messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hi!' }, { role: 'assistant', content: 'Hello.' }, { role: 'user', content: '2+2?' }],
    options: { enableThinking: true },
  },
  {
    messages: [
      { role: 'user', content: 'Weather in Bern?' },
      { role: 'assistant', content: '', tool_calls: [{ type: 'function', id: 'call_1', function: { name: 'get_weather', arguments: '{"city": "Bern"}' } }] },
      { role: 'tool', content: '{"temp": 20}', tool_call_id: 'call_1' },
    ],
    options: { tools: [PROBE_TOOL], addGenerationPrompt: false },
  },
];

function today(): string {
  const d = new Date();
  return `${String(d.getFullYear()).padStart(4, '0')}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`;
}

/** Every string in a message except its structure (`role`, `type`) replaced by `f(s)`. */
function mapStrings(v: unknown, f: (s: string) => string, key = ''): unknown {
  if (typeof v === 'string') return key === 'role' || key === 'type' ? v : f(v);
  if (Array.isArray(v)) return v.map((x) => mapStrings(x, f));
  if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, mapStrings(x, f, k)]));
  return v;
}

/**
 * A chat template bound to a tokenizer: renders conversations and tokenizes them with message
 * text as plain text (see the file header).
 */
export class ChatPrompt {
  /** 'apertus': the built-in renderer; 'jinja': the checkpoint's template in @huggingface/jinja. */
  readonly kind: 'apertus' | 'jinja';
  private readonly specials: string[];

  private constructor(
    /** The tokenizer prompts are encoded with. */
    readonly tokenizer: Tokenizer,
    kind: 'apertus' | 'jinja',
    private readonly renderText: Render,
    private readonly prepare: (m: ChatMessage) => unknown = (m) => m,
  ) {
    this.kind = kind;
    this.specials = [...tokenizer.specialTokenIds].map((id) => tokenizer.idToToken(id)).filter((s): s is string => s !== undefined && s.length > 0);
  }

  /** The built-in Apertus renderer. */
  static apertus(tokenizer: Tokenizer): ChatPrompt {
    return new ChatPrompt(tokenizer, 'apertus', (messages, o) =>
      renderApertusChat(messages as ChatMessage[], { tools: o.tools ?? [], enableThinking: o.enableThinking ?? false, addGenerationPrompt: o.addGenerationPrompt ?? true, date: o.date ?? today() }).text,
    );
  }

  /**
   * The prompt for a checkpoint's template: built-in when `template` is null or renders the probe
   * conversations as the Apertus renderer does, else Jinja (`warn` is told why). Throws
   * PromptError (field `chat_template`) when the template does not parse.
   */
  static fromTemplate(tokenizer: Tokenizer, template: string | null, warn: (message: string) => void = () => {}): ChatPrompt {
    const builtIn = ChatPrompt.apertus(tokenizer);
    if (template === null) return builtIn;
    let parsed: Template;
    try {
      parsed = new Template(template);
    } catch (e) {
      throw new PromptError('chat_template', `the chat template does not parse: ${(e as Error).message}`, { cause: e });
    }
    const name = (id: number | null) => (id === null ? '' : tokenizer.idToToken(id) ?? '');
    const tokens = { bos_token: name(tokenizer.bosTokenId), eos_token: name(tokenizer.eosTokenId), pad_token: name(tokenizer.padTokenId), unk_token: name(tokenizer.unkTokenId) };
    const run = (messages: readonly unknown[], o: ChatPromptOptions): string => {
      const tools = o.tools && o.tools.length > 0 ? o.tools : undefined;
      return parsed.render({
        ...tokens, messages, tools, add_generation_prompt: o.addGenerationPrompt ?? true, enable_thinking: o.enableThinking ?? false,
      });
    };
    // The Apertus templates (2509, 1.5) insert tool-call arguments verbatim (JSON text), so they
    // are probed with string arguments; other templates get them as objects, as most Hugging Face
    // templates expect — unless the tool probe shows that this one writes objects out as
    // "[object …]" (or fails on them): then it is an Apertus-style template and keeps the strings.
    const differs = PROBES.find((p) => {
      try {
        return run(p.messages, p.options) !== builtIn.render(p.messages, p.options);
      } catch {
        return true;
      }
    });
    if (differs === undefined) return builtIn;
    warn('the checkpoint\'s chat_template differs from the built-in Apertus template; prompts are rendered with @huggingface/jinja');
    const tool = PROBES[2]!;
    const attempt = (prepare: (m: ChatMessage) => unknown): string | null => {
      try {
        return run(tool.messages.map(prepare), tool.options);
      } catch {
        return null;
      }
    };
    const asObjects = attempt(withObjectArguments), asStrings = attempt((m) => m);
    const objects = !(asStrings !== null && (asObjects === null || asObjects.includes('[object ')));
    return new ChatPrompt(tokenizer, 'jinja', (messages, o) => {
      try {
        return run(messages, o);
      } catch (e) {
        throw new PromptError('messages', `the chat template failed: ${(e as Error).message}`, { cause: e });
      }
    }, objects ? withObjectArguments : (m) => m);
  }

  /** The rendered conversation (template text and message text, special-token strings as written). */
  render(messages: readonly ChatMessage[], options: ChatPromptOptions = {}): string {
    return this.renderPrepared(messages.map(this.prepare), options);
  }

  private renderPrepared(messages: readonly unknown[], options: ChatPromptOptions): string {
    try {
      return this.renderText(messages, options);
    } catch (e) {
      if (e instanceof TokenizerError) throw new PromptError(e.field ?? 'messages', e.message, { cause: e });
      throw e;
    }
  }

  /**
   * Token ids of the conversation: special tokens only where the template writes them; in
   * message text (content, tool-call names and arguments) special-token strings stay plain text.
   * Throws PromptError naming the field at fault.
   */
  encode(messages: readonly ChatMessage[], options: ChatPromptOptions = {}): number[] {
    for (const [i, tool] of (options.tools ?? []).entries()) {
      const s = this.findSpecial(JSON.stringify(tool));
      if (s !== null) throw new PromptError(`tools[${i}]`, `tool definitions may not contain the special token ${s}`);
    }
    const prepared = messages.map(this.prepare);
    const text = this.renderPrepared(prepared, options);
    const client: string[] = [];
    const marked = prepared.map((m) => mapStrings(m, (s) => `\uE000${client.push(s) - 1}\uE001`));
    const template = this.renderPrepared(marked, options);
    const pieces: { text: string; plain: boolean }[] = [];
    let last = 0;
    for (const m of template.matchAll(MARK)) {
      pieces.push({ text: template.slice(last, m.index), plain: false }, { text: client[Number(m[1])] ?? '', plain: true });
      last = m.index! + m[0].length;
    }
    pieces.push({ text: template.slice(last), plain: false });
    if (pieces.map((p) => p.text).join('') === text && !pieces.some((p) => !p.plain && p.text.includes('\uE000'))) return this.encodePieces(pieces);
    client.forEach((s, k) => {
      const special = this.findSpecial(s);
      if (special !== null) throw new PromptError('messages', `message text contains the special token ${special}, and this chat template changes message text, so it cannot be kept as plain text (string ${k + 1} of the conversation)`);
    });
    return this.tokenizer.encodeIds(text, { addSpecialTokens: false });
  }

  private findSpecial(s: string): string | null {
    for (const t of this.specials) if (s.includes(t)) return t;
    return null;
  }

  /** Encode template pieces (special tokens recognised) and client pieces (plain), one encode per run between special tokens. */
  private encodePieces(pieces: readonly { text: string; plain: boolean }[]): number[] {
    const tok = this.tokenizer;
    const out: number[] = [];
    let run = '';
    const flush = () => {
      if (run.length > 0) out.push(...tok.encodeIds(run, { addSpecialTokens: false, splitSpecialTokens: false }));
      run = '';
    };
    for (const p of pieces) {
      if (p.plain) {
        run += p.text;
        continue;
      }
      const enc = tok.encode(p.text, { addSpecialTokens: false });
      let at = 0;
      enc.ids.forEach((id, i) => {
        if (!tok.specialTokenIds.has(id)) return;
        const [s, e] = enc.offsets[i]!;
        run += p.text.slice(at, s);
        flush();
        out.push(id);
        at = e;
      });
      run += p.text.slice(at);
    }
    flush();
    return out;
  }
}

/** A message with JSON-object tool-call arguments parsed (Hugging Face templates expect objects). */
function withObjectArguments(m: ChatMessage): ChatMessage {
  if (m.role !== 'assistant' || !m.tool_calls) return m;
  return {
    ...m,
    tool_calls: m.tool_calls.map((c) => {
      if (typeof c.function.arguments !== 'string') return c;
      try {
        const v: unknown = JSON.parse(c.function.arguments);
        return v !== null && typeof v === 'object' && !Array.isArray(v) ? { ...c, function: { ...c.function, arguments: v as Record<string, unknown> } } : c;
      } catch {
        return c;
      }
    }),
  };
}

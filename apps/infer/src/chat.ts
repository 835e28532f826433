// `apertus-chat --model DIR [--system TEXT] [--think] [--temperature 0.8] [--threads N] [--stats] …`: an
// interactive terminal chat. Lines from the input are user messages; lines starting with '/' are
// commands (/help). Replies stream as they are generated; reasoning is shown dimmed (or marked)
// before the answer. Each turn starts from the KV of the history kept by the prefix cache, so only
// the new message is prefilled.

import { createInterface } from 'node:readline';
import { integerValue } from '@apertus/cli';
import { ChatSession, EngineError, type Timings } from '@apertus/serve/engine';
import { Command } from 'commander';
import { addCommonOptions, openScheduler, parseArgs, type AppIo, type CommonOptions } from './options';

/** A reply's timings as llama.cpp prints them. */
export function formatTimings(t: Timings): string {
  const rate = (x: number) => (x > 0 ? x.toFixed(1) : '–');
  return `prompt ${t.prompt_n} tokens${t.cache_n > 0 ? ` (+${t.cache_n} cached)` : ''} in ${t.prompt_ms.toFixed(0)} ms (${rate(t.prompt_per_second)} tokens/s), reply ${t.predicted_n} tokens in ${t.predicted_ms.toFixed(0)} ms (${rate(t.predicted_per_second)} tokens/s)`;
}

const HELP = `Commands:
  /help              this list
  /reset             forget the conversation
  /system [TEXT]     set the system prompt (no text: the default Apertus prompt)
  /think on|off      let the model deliberate before answering
  /temperature T     sampling temperature (0 = greedy)
  /max-tokens N|auto maximum reply length
  /stats             the last reply's timings (tokens, milliseconds, tokens/s)
  /history           print the conversation
  /exit              quit (also /quit, or end of input)
`;

const DIM = '\x1b[2m';
const RESET = '\x1b[0m';

/**
 * Run the interactive chat until `/exit` or the end of the input. Resolves with the exit code
 * (0, or 1 when the model cannot be loaded). Throws CliError for bad arguments.
 */
export async function runChat(argv: readonly string[], io: AppIo): Promise<number> {
  const cmd = parseArgs(addCommonOptions(new Command('apertus-chat').description('Chat with an Apertus checkpoint in the terminal.'))
    .option('--prefix-cache <MiB>', 'memory cap of the KV kept between turns (each turn reuses the history\'s)', integerValue(1, 2 ** 31 - 1), 1024)
    .option('--no-prefix-cache', 'recompute the whole history every turn')
    .option('--stats', 'print each reply\'s timings (tokens, milliseconds, tokens/s) after it', false), argv, io);
  if (!cmd) return 0;
  const o = cmd.opts<CommonOptions & { prefixCache: number | false; stats: boolean }>();
  let last: Timings | null = null;
  const out = (s: string) => io.output.write(s);
  const err = (s: string) => (io.error ?? io.output).write(s);
  const opened = await openScheduler('apertus-chat', o, io, o.prefixCache);
  if (!opened) return 1;
  const { served, scheduler } = opened;
  const gc = served.generationConfig ?? {};
  const session = new ChatSession(scheduler, {
    system: o.system ?? null,
    thinking: o.think,
    temperature: o.temperature ?? gc.temperature ?? 0.8,
    topP: o.topP ?? gc.top_p ?? 0.9,
    topK: o.topK,
    maxTokens: o.maxTokens ?? null,
    seed: o.seed ?? null,
    stop: o.stop,
  });
  out(`Apertus chat · ${served.name} · context ${scheduler.contextLength} · thinking ${session.settings.thinking ? 'on' : 'off'}. Type /help for commands.\n`);

  // A terminal gets readline's line editing and history (arrow keys, Ctrl-A/E, …) and the prompt;
  // piped input is read line by line as it comes.
  const terminal = io.terminal === true && isStream(io.output);
  const rl = terminal
    ? createInterface({ input: io.input, output: io.output as NodeJS.WritableStream, terminal: true, historySize: 1000, removeHistoryDuplicates: true, prompt: '> ' })
    : createInterface({ input: io.input, terminal: false, crlfDelay: Infinity });
  let current: AbortController | null = null;
  // Ctrl-C stops the reply being generated; a second Ctrl-C in a row (or one at the prompt after
  // a reply was stopped) quits. In a terminal readline reports Ctrl-C; with piped input the signal.
  let interrupts = 0;
  const onInterrupt = () => {
    interrupts++;
    if (current) {
      current.abort();
    } else if (interrupts >= 2) {
      out('\n');
      rl.close();
    } else {
      out('\n(Ctrl-C again to quit, or /exit)\n');
      prompt();
    }
  };
  if (terminal) rl.on('SIGINT', onInterrupt);
  else if (io.terminal) process.on('SIGINT', onInterrupt);
  const prompt = () => {
    if (terminal) rl.prompt();
    else if (io.terminal) out('> ');
  };
  prompt();
  for await (const raw of rl) {
    interrupts = 0;
    const line = raw.trim();
    if (line.length === 0) {
      prompt();
      continue;
    }
    if (line.startsWith('/')) {
      const [command, ...rest] = line.split(/\s+/);
      const arg = rest.join(' ');
      let quit = false;
      switch (command) {
        case '/exit':
        case '/quit':
          quit = true;
          break;
        case '/help':
          out(HELP);
          break;
        case '/reset':
          session.reset();
          out('(conversation cleared)\n');
          break;
        case '/system':
          session.settings.system = arg.length > 0 ? line.slice(line.indexOf(' ') + 1) : null;
          out(arg.length > 0 ? '(system prompt set)\n' : '(default system prompt)\n');
          break;
        case '/think':
          if (arg !== 'on' && arg !== 'off') out('usage: /think on|off\n');
          else {
            session.settings.thinking = arg === 'on';
            out(`(thinking ${arg})\n`);
          }
          break;
        case '/temperature': {
          const t = Number(arg);
          if (arg === '' || !Number.isFinite(t) || t < 0 || t > 2) out('usage: /temperature T (0–2)\n');
          else {
            session.settings.temperature = t;
            out(`(temperature ${t})\n`);
          }
          break;
        }
        case '/max-tokens': {
          const n = Number(arg);
          if (arg === 'auto') session.settings.maxTokens = null;
          else if (!Number.isInteger(n) || n < 1) {
            out('usage: /max-tokens N|auto\n');
            break;
          } else session.settings.maxTokens = n;
          out(`(max tokens ${arg})\n`);
          break;
        }
        case '/stats':
          out(last ? `${formatTimings(last)}\n` : '(no reply yet)\n');
          break;
        case '/history':
          for (const m of session.conversation()) {
            const c = 'content' in m ? m.content : '';
            out(`${m.role}: ${typeof c === 'string' ? c : JSON.stringify(c)}\n`);
          }
          break;
        default:
          out(`unknown command ${command} (/help lists them)\n`);
      }
      if (quit) break;
      prompt();
      continue;
    }
    current = new AbortController();
    let channel: 'reasoning' | 'content' | null = null;
    try {
      const reply = await session.send(line, (ch, text) => {
        if (ch !== channel) {
          if (channel === 'reasoning') out(io.color ? `${RESET}\n` : '\n[/thinking]\n');
          if (ch === 'reasoning') out(io.color ? DIM : '[thinking]\n');
          channel = ch;
        }
        out(text);
      }, current.signal);
      if (channel === 'reasoning') out(io.color ? RESET : '\n[/thinking]');
      for (const c of reply.toolCalls) out(`\n[tool call] ${c.function.name}(${c.function.arguments})`);
      out('\n');
      last = reply.timings;
      if (o.stats && last) out(`[${formatTimings(last)}]\n`);
      if (reply.finishReason === 'length') out('[reply cut at the token limit]\n');
      if (reply.finishReason === 'cancelled') out('[stopped: Ctrl-C again to quit]\n');
    } catch (e) {
      if (channel === 'reasoning' && io.color) out(RESET);
      err(`\n[error] ${(e as Error).message}\n`);
      if (e instanceof EngineError && e.code === 'context_length_exceeded') err('(use /reset to start a new conversation)\n');
    } finally {
      current = null;
    }
    prompt();
  }
  rl.close();
  if (!terminal && io.terminal) process.off('SIGINT', onInterrupt);
  return 0;
}

/** True for a writable stream (what readline needs to draw the prompt and the edited line). */
function isStream(o: AppIo['output']): boolean {
  return typeof (o as Partial<NodeJS.WritableStream>).on === 'function';
}

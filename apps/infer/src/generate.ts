// `apertus-generate --model DIR (--prompt TEXT | --file PATH | --file -) [--chat] [-n 256] …`:
// one-shot generation. Without --chat the prompt is raw text (BOS + text, as a base model sees
// it); with --chat it is one user message in the Apertus chat template. The text streams to the
// output; --json prints one JSON object at the end instead.

import fs from 'node:fs';
import { CliError, flag } from '@apertus/cli';
import { EngineError, type FinishReason, type Timings, type ToolCall, type Usage } from '@apertus/serve/engine';
import type { ChatMessage } from '@apertus/tokenizer';
import { Command } from 'commander';
import { addCommonOptions, openScheduler, parseArgs, type AppIo, type CommonOptions } from './options';

/** What `--json` prints. */
export interface GenerateResult {
  /** Generated text (chat: the answer). */
  text: string;
  /** Chat with thinking: the deliberation. */
  reasoning: string;
  /** Chat: tool calls the model made. */
  tool_calls: ToolCall[];
  /** Why generation ended. */
  finish_reason: FinishReason;
  /** Token counts. */
  usage: { prompt_tokens: number; completion_tokens: number };
  /** Where the time went, as llama-server reports it (prompt_n, prompt_ms, prompt_per_second, predicted_n, predicted_ms, predicted_per_second). */
  timings: Timings | null;
}

async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  const parts: Buffer[] = [];
  for await (const c of stream) parts.push(typeof c === 'string' ? Buffer.from(c) : (c as Buffer));
  return Buffer.concat(parts).toString('utf8');
}

/**
 * Generate once and exit. Resolves with the exit code (0 ok, 1 load or generation failure).
 * Throws CliError for bad arguments (no prompt, unreadable file…).
 */
export async function runGenerate(argv: readonly string[], io: AppIo): Promise<number> {
  const cmd = parseArgs(
    addCommonOptions(new Command('apertus-generate').description('Generate text from a prompt with an Apertus checkpoint.'))
      .addOption(flag('prompt'))
      .option('-f, --file <path>', "read the prompt from a file ('-' = standard input)")
      .option('--chat', 'wrap the prompt as a user message in the chat template', false)
      .option('--echo', 'print the prompt before the generated text (raw mode)', false)
      .addOption(flag('json', { help: 'print one JSON object with text, finish_reason, usage and timings', defaultValue: false })),
    argv,
    io,
  );
  if (!cmd) return 0;
  const o = cmd.opts<CommonOptions & { prompt?: string; file?: string; chat: boolean; echo: boolean; json: boolean }>();
  if ((o.prompt === undefined) === (o.file === undefined)) throw new CliError('--prompt', 'give exactly one of --prompt and --file');
  let text: string;
  if (o.prompt !== undefined) text = o.prompt;
  else if (o.file === '-') text = await readAll(io.input);
  else {
    try {
      text = fs.readFileSync(o.file!, 'utf8');
    } catch (e) {
      throw new CliError('--file', `cannot read ${o.file}: ${(e as Error).message}`);
    }
  }
  const out = (s: string) => io.output.write(s);
  const err = (s: string) => (io.error ?? io.output).write(s);
  const opened = await openScheduler('apertus-generate', o, io);
  if (!opened) return 1;
  const { served, scheduler } = opened;
  const tok = served.tokenizer;
  let prompt: number[];
  if (o.chat) {
    const messages: ChatMessage[] = [];
    if (o.system) messages.push({ role: 'system', content: o.system });
    messages.push({ role: 'user', content: text });
    prompt = served.chat.encode(messages, { enableThinking: o.think, addGenerationPrompt: true });
  } else prompt = tok.encodeIds(text);
  const gc = served.generationConfig ?? {};
  const result: GenerateResult = { text: '', reasoning: '', tool_calls: [], finish_reason: 'stop', usage: { prompt_tokens: prompt.length, completion_tokens: 0 }, timings: null };
  if (!o.json && o.echo && !o.chat) out(text);
  const room = scheduler.contextLength - prompt.length;
  try {
    const usage = await new Promise<Usage>((resolve, reject) => {
      // The timings come with `done`, just before the usage resolves.
      if (room <= 0) {
        reject(new EngineError('context_length_exceeded', `the prompt has ${prompt.length} tokens; the context holds ${scheduler.contextLength}`, 'prompt'));
        return;
      }
      let channel: string | null = null;
      scheduler.submit({
        prompt,
        maxTokens: Math.min(o.maxTokens ?? 256, room),
        sampling: { temperature: o.temperature ?? gc.temperature ?? 0.8, topP: o.topP ?? gc.top_p ?? 0.9, topK: o.topK, ...(o.seed !== undefined ? { seed: o.seed } : {}) },
        stop: o.stop,
        mode: o.chat ? 'chat' : 'text',
      }, (e) => {
        if (e.type === 'text') {
          if (e.channel === 'content') result.text += e.text;
          else result.reasoning += e.text;
          if (!o.json) {
            if (e.channel !== channel && channel === 'reasoning') out('\n[/thinking]\n');
            if (e.channel !== channel && e.channel === 'reasoning') out('[thinking]\n');
            channel = e.channel;
            out(e.text);
          }
        } else if (e.type === 'tool_calls') result.tool_calls.push(...e.calls);
        else if (e.type === 'finish') result.finish_reason = e.reason;
        else if (e.type === 'done') {
          result.timings = e.timings;
          resolve(e.usage);
        }
        else if (e.type === 'error') reject(e.error);
      });
    });
    result.usage = { prompt_tokens: usage.promptTokens, completion_tokens: usage.completionTokens };
  } catch (e) {
    err(`${o.json ? '' : '\n'}apertus-generate: ${(e as Error).message}\n`);
    return 1;
  }
  if (o.json) out(`${JSON.stringify(result)}\n`);
  else {
    for (const c of result.tool_calls) out(`\n[tool call] ${c.function.name}(${c.function.arguments})`);
    out('\n');
  }
  return 0;
}

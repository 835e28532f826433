// One chat turn in the tab: the conversation through the Apertus chat template, then greedy
// generation streamed token by token (each token yields to the page, so the text appears as it is
// produced). Stops at the assistant-end or end-of-sequence token.

import { generateStream } from '@apertus/model';
import { APERTUS_ASSISTANT_END_ID, applyApertusChatTemplate, type ChatMessage } from '@apertus/tokenizer';
import type { StudioModel } from './model-source';

/** What a turn produced. */
export interface TurnResult {
  text: string;
  tokens: number;
  /** The generated token ids. */
  ids: number[];
  /** Milliseconds from the request to the first token. */
  firstTokenMs: number;
  /** Milliseconds for the whole turn. */
  totalMs: number;
}

/** Answer the last user message of `messages`; `onText` gets the answer so far after each token. */
export async function chatTurn(m: StudioModel, messages: readonly ChatMessage[], maxTokens: number, onText: (text: string, tokens: number) => void): Promise<TurnResult> {
  const t0 = performance.now();
  const prompt = applyApertusChatTemplate(m.tokenizer, messages, { addGenerationPrompt: true }).ids;
  const eos = m.model.config.eos_token_id;
  const stop = [APERTUS_ASSISTANT_END_ID, ...(Array.isArray(eos) ? eos : [eos])];
  const ids: number[] = [];
  let firstTokenMs = 0;
  let text = '';
  for await (const id of generateStream(m.model, prompt, { temperature: 0, maxTokens, stopTokenIds: stop })) {
    if (ids.length === 0) firstTokenMs = performance.now() - t0;
    ids.push(id);
    text = m.tokenizer.decode(ids, { skipSpecialTokens: true });
    onText(text, ids.length);
  }
  return { text, tokens: ids.length, ids, firstTokenMs, totalMs: performance.now() - t0 };
}

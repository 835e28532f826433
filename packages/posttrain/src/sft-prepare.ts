// The data of an SFT run (apertus-sft): conversations (the bundled UDHR translation task, or a JSONL file)
// rendered with the Apertus chat template (variant B) and tokenized with the base model's
// tokenizer into ids + assistant masks, truncated to maxLength; the validation conversations; and
// the held-out German → Romansh translation prompts with their references.

import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { APERTUS_PAD_ID, type Tokenizer } from '@apertus/tokenizer';
import { PosttrainError } from './errors';
import { readSftJsonl, tokenizeSftDataset, type SftConversation, type SftDatasetStats, type SftExample, type SftRecord } from './sft-data';
import { postTrainingTask, type TranslationExample } from './udhr-translation';

/** The settings the preparation reads (an SFT run's configuration has them all). */
export interface SftDataConfig {
  /** `udhr` (the bundled translation task) or a `.jsonl` file of `messages`, `prompt`/`completion` or `text` rows. */
  readonly data: string;
  /** Validation conversations (`.jsonl`); null = the held-out UDHR direction with its references. */
  readonly validation: string | null;
  /** UDHR declarations of the bundled task. */
  readonly languages: readonly string[];
  /** Translation examples drawn (upper bound). */
  readonly maxExamples: number;
  /** Longest UDHR article in characters. */
  readonly maxChars: number;
  /** Tokens per conversation (longer ones are truncated). */
  readonly maxLength: number;
  /** Date in the default system prompt. */
  readonly date: string;
  /** Seed of the task's draw. */
  readonly seed: number;
}

/** Tokenized data of a run. */
export interface SftData {
  /** Training rows (one conversation each). */
  readonly examples: SftExample[];
  /** Counters of the training rows (truncations, drops, supervised tokens). */
  readonly stats: SftDatasetStats;
  /** Validation rows (the held-out direction with references, or `cfg.validation`). */
  readonly validation: SftExample[];
  /** Held-out translation prompts (`[user]` messages) with references. */
  readonly heldOut: TranslationExample[];
  /** Padding id of the batches. */
  readonly padId: number;
  /** sha256 over the training rows (ids and masks): a resume must see the same data. */
  readonly fingerprint: string;
  /** The bundled task's conversations as JSONL (written to `<out>/data/train.jsonl`); null for a file. */
  readonly conversationsJsonl: string | null;
}

/** The conversations of the bundled task, written to `<out>/data/train.jsonl` for inspection and reuse. */
export function conversationsJsonl(conversations: readonly SftConversation[]): string {
  return conversations.map((c) => `${JSON.stringify({ messages: c.messages })}\n`).join('');
}

function fingerprintOf(examples: readonly SftExample[]): string {
  const h = createHash('sha256');
  for (const e of examples) {
    h.update(Int32Array.from(e.ids));
    h.update(Uint8Array.from(e.assistantMask));
  }
  return h.digest('hex');
}

async function readJsonlConversations(file: string): Promise<(SftRecord & { line: number })[]> {
  if (!fs.statSync(file, { throwIfNoEntry: false })?.isFile()) throw new PosttrainError('Io', 'data file not found (expected a .jsonl file of {"messages": [...]}, {"prompt", "completion"} or {"text"} rows, or "udhr")', { file });
  const rows: (SftRecord & { line: number })[] = [];
  for await (const row of readSftJsonl(file)) rows.push(row);
  if (rows.length === 0) throw new PosttrainError('InvalidConversation', 'no conversation in the file', { file });
  return rows;
}

/**
 * Build and tokenize the data of `cfg` with `tokenizer` (nothing is written). With `data: "udhr"`
 * the conversations are the UDHR translation task's (German → Romansh held out). Messages go to
 * `log` (counts, truncation warnings).
 * @throws PosttrainError naming the file (and `file:line: field` for a bad row) for a missing or empty file or a bad row
 */
export async function prepareSftData(cfg: SftDataConfig, tokenizer: Tokenizer, log: (m: string) => void): Promise<SftData> {
  const udhr = cfg.data === 'udhr';
  // The held-out direction is always the UDHR one, whatever the training data.
  const task = await postTrainingTask(udhr, cfg);
  const heldOut = task.eval;

  let conversations: (SftRecord & { line?: number })[];
  let chats: SftConversation[] = [];
  let file: string;
  if (udhr) {
    chats = task.train.map((e) => ({ messages: e.messages }));
    conversations = chats;
    file = 'udhr';
    log(`data: UDHR translation task, ${conversations.length} conversations over ${task.languages.length} languages (${task.languages.join(', ')}); held out: German → Romansh, ${heldOut.length} articles`);
  } else {
    file = cfg.data;
    conversations = await readJsonlConversations(file);
  }
  const opts = { maxLength: cfg.maxLength, date: cfg.date };
  const { examples, stats } = await tokenizeSftDataset(tokenizer, conversations, { ...opts, file });
  if (examples.length === 0) throw new PosttrainError('InvalidConversation', `no usable conversation: all ${stats.rows} lost their assistant tokens to truncation at maxLength ${cfg.maxLength}`, { file });
  log(
    `data: ${stats.kept} conversations, ${stats.tokens} tokens, ${stats.supervisedTokens} supervised (assistant) tokens` +
      (stats.truncated > 0 ? `; warning: ${stats.truncated} truncated to maxLength ${cfg.maxLength}` : '') +
      (stats.droppedNoSupervision > 0 ? `; warning: ${stats.droppedNoSupervision} dropped (no assistant token left after truncation)` : ''),
  );

  let validationRows: SftRecord[];
  let validationFile: string;
  if (cfg.validation !== null) {
    validationFile = cfg.validation;
    validationRows = await readJsonlConversations(cfg.validation);
  } else {
    validationFile = 'held-out German → Romansh';
    validationRows = heldOut.map((e) => ({ messages: [...e.messages, { role: 'assistant', content: e.reference }] }));
  }
  const validation = (await tokenizeSftDataset(tokenizer, validationRows, { ...opts, file: validationFile })).examples;
  return { examples, stats, validation, heldOut, padId: tokenizer.padTokenId ?? APERTUS_PAD_ID, fingerprint: fingerprintOf(examples), conversationsJsonl: udhr ? conversationsJsonl(chats) : null };
}

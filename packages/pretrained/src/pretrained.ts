// What a loader hands out, in Node and in a browser alike: the network, its tokenizer and chat
// template, its generation defaults, the name it goes by and where it came from.

import type { ApertusModel, GenerationConfig } from '@apertus/model';
import type { Tokenizer } from '@apertus/tokenizer';
import type { ChatPrompt } from './chat-prompt';

/** Where a loaded model came from. */
export interface PretrainedSource {
  /** A Hugging Face checkpoint, or a GGUF file. */
  readonly format: 'safetensors' | 'gguf';
  /** The model directory or GGUF file (a path in Node; a URL, cache key or file name in a browser). */
  readonly path: string;
  /** The Hub model, when it came from the Hub. */
  readonly hub: { readonly repo: string; readonly revision: string; readonly commit: string } | null;
}

/** A loaded model. */
export interface Pretrained {
  /** The network. */
  readonly model: ApertusModel;
  /** Its tokenizer (chat template tokens included). */
  readonly tokenizer: Tokenizer;
  /** The chat template (the checkpoint's, or the built-in Apertus renderer). */
  readonly chat: ChatPrompt;
  /** generation_config.json (a GGUF file's bos/eos/pad ids), or null. */
  readonly generationConfig: GenerationConfig | null;
  /** The name it goes by: `udhr-tiny` for runs/udhr-tiny/model, a GGUF file's name without `.gguf`, `owner/name[:QUANT]` for a Hub model. */
  readonly name: string;
  /** Where it came from. */
  readonly source: PretrainedSource;
  /** The tokenizer files of a checkpoint (tokenizer.json, tokenizer_config.json, special_tokens_map.json, chat_template.jinja), to carry into the checkpoints of a run; empty for GGUF. */
  readonly tokenizerFiles: Readonly<Record<string, string>>;
}

/** Tokenizer files carried from a checkpoint into every checkpoint trained from it (when present). */
export const TOKENIZER_FILES: readonly string[] = Object.freeze(['tokenizer.json', 'tokenizer_config.json', 'special_tokens_map.json', 'chat_template.jinja']);

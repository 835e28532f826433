// A checkpoint's chat template, wherever it keeps it: `chat_template.jinja` beside the tokenizer,
// else `chat_template` of tokenizer_config.json (a string, or Hugging Face's list of
// `{name, template}`, of which the `default` one), else `tokenizer.chat_template` of a GGUF file;
// bound to the tokenizer as a ChatPrompt (the built-in Apertus renderer where the template renders
// as it does, @huggingface/jinja otherwise: see chat-prompt.ts).

import type { Tokenizer } from '@apertus/tokenizer';
import { ChatPrompt } from './chat-prompt';
import { ModelLoadError, PromptError } from './errors';

/** The template text of `chat_template` as tokenizer_config.json holds it; null when absent. */
export function templateOfConfig(value: unknown, file: string): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) {
    const named = value.find((x: unknown) => x !== null && typeof x === 'object' && (x as { name?: unknown }).name === 'default') as { template?: unknown } | undefined;
    if (named && typeof named.template === 'string') return named.template;
    throw new ModelLoadError(file, 'a list of templates must hold one {"name": "default", "template": "..."}', { field: 'chat_template' });
  }
  throw new ModelLoadError(file, `must be a string or a list of {name, template}, got ${typeof value}`, { field: 'chat_template' });
}

/**
 * The chat prompt of a model: `jinja` (chat_template.jinja's text) when given, else the tokenizer
 * config's `chat_template`. `file` names where the template came from in warnings and errors.
 * @throws ModelLoadError (field `chat_template`) when the template is malformed or does not parse
 */
export function chatPromptOf(tokenizer: Tokenizer, jinja: string | null, file: string, warn: (message: string) => void): ChatPrompt {
  const template = jinja ?? templateOfConfig((tokenizer.config as { chat_template?: unknown }).chat_template, file);
  try {
    return ChatPrompt.fromTemplate(tokenizer, template, (m) => warn(`${file}: ${m}`));
  } catch (e) {
    if (e instanceof PromptError) throw new ModelLoadError(file, e.message, { field: e.field, cause: e });
    throw e;
  }
}

/** The tokenizer must fit the model: every token id below the model's `vocab_size`. */
export function checkTokenizerFits(tokenizer: Tokenizer, vocabSize: number, file: string): void {
  if (tokenizer.vocabSize <= vocabSize) return;
  const added = tokenizer.addedTokens.tokens.find((t) => t.id >= vocabSize);
  const field = added ? 'added_tokens' : 'model.vocab';
  const id = added ? added.id : tokenizer.vocabSize - 1;
  throw new ModelLoadError(file, `token ${JSON.stringify(tokenizer.idToToken(id))} has id ${id}, beyond vocab_size ${vocabSize} of config.json (the model has no embedding for it)`, { field });
}

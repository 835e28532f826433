// The pluggable reward R(x, y) of the alignment pipeline, from a config string:
//   chrf               sentence chrF of the completion against the reference translation, in [0, 1]
//                      (verifiable; the bundled default)
//   http(s)://…        POST {prompt, completion, reference} → {"reward": number}
//   model:<dir>        mean assistant-token log-probability under an Apertus checkpoint
//   js:<module file>   the module's default export (or its `reward` export): (prompt, completion, reference?) → number

import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { chrfReward, httpReward, jsReward, modelReward, type RewardFunction } from '@apertus/posttrain';
import { InputError, loadModel, loadModelTokenizer, resolveModelDir } from '@apertus/trainer';

/** A reward with a description for logs. */
export interface LoadedReward {
  /** The reward function (checked: finite numbers only). */
  readonly fn: RewardFunction;
  /** What it is, e.g. `chrF against the reference`. */
  readonly description: string;
}

/**
 * Build the reward named by `spec` (see file header). `date` fixes the system prompt of the
 * `model:` reward's chat template.
 * @throws InputError for a missing module/model or a module without a function export
 */
export async function loadReward(spec: string, options: { readonly date?: string } = {}): Promise<LoadedReward> {
  if (spec === 'chrf') return { fn: chrfReward(), description: 'chrF against the reference translation (verifiable)' };
  if (/^https?:\/\//.test(spec)) return { fn: httpReward(spec), description: `HTTP endpoint ${spec}` };
  if (spec.startsWith('model:')) {
    const dir = resolveModelDir(spec.slice('model:'.length), 'pass model:<dir> of a reward model');
    const model = loadModel(dir);
    const { tokenizer } = loadModelTokenizer(dir);
    return { fn: modelReward(model, tokenizer, options.date !== undefined ? { date: options.date } : {}), description: `reward model ${dir} (mean assistant-token log-probability)` };
  }
  if (spec.startsWith('js:')) {
    const file = path.resolve(spec.slice('js:'.length));
    if (!fs.existsSync(file)) throw new InputError(file, 'reward module not found');
    let mod: Record<string, unknown>;
    try {
      mod = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
    } catch (e) {
      throw new InputError(file, `cannot import the reward module (${(e as Error).message})`, { cause: e });
    }
    const fn = typeof mod.default === 'function' ? mod.default : mod.reward;
    if (typeof fn !== 'function') throw new InputError(file, 'the reward module must export a function (default export or `reward`)');
    return { fn: jsReward(fn as RewardFunction), description: `JavaScript function ${file}` };
  }
  throw new InputError(spec, 'unknown reward (expected chrf, an http(s):// URL, model:<dir> or js:<module file>)');
}

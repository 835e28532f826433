// What a run writes beside its checkpoints about the model it starts from. The model itself (a
// model directory, a run folder, a GGUF file or a Hub id) is loaded by @apertus/pretrained, whose
// tokenizer files every checkpoint carries.

import { APERTUS_STOP_IDS } from '@apertus/tokenizer';

export { TOKENIZER_FILES, readTokenizerFiles } from '@apertus/pretrained';

/**
 * `generation_config.json` of a chat model: generation stops at `<|assistant_end|>` (the Apertus
 * SFT models' EOS, id 68) as well as `</s>` and `<|tools_suffix|>`.
 */
export function chatGenerationConfig(bos: number, pad: number): string {
  const eos = [68, ...APERTUS_STOP_IDS.filter((id) => id !== 68)];
  return `${JSON.stringify({ _from_model_config: false, bos_token_id: bos, eos_token_id: eos, pad_token_id: pad }, null, 2)}\n`;
}

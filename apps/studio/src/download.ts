// The trained model as a Hugging Face checkpoint, file by file (config.json,
// generation_config.json, model.safetensors, tokenizer files): the worker makes the bytes, the
// page offers each file for download through an object URL.

import { hfCheckpointFiles } from '@apertus/model';
import type { StudioModel } from './model-source';
import type { CheckpointFile } from './protocol';

/** Every file of the checkpoint (weights as bf16, as released Apertus checkpoints). */
export function checkpointFiles(m: StudioModel): CheckpointFile[] {
  return [...hfCheckpointFiles(m.model, { dtype: 'bf16', files: m.tokenizerFiles })].map(([name, contents]) => ({ name, contents }));
}

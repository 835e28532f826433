// The trained model as a Hugging Face checkpoint, downloaded file by file (config.json,
// generation_config.json, model.safetensors, tokenizer files) through object URLs.

import { hfCheckpointFiles } from '@apertus/model';
import type { StudioModel } from './model-source';

/** A file of the checkpoint: its name, size and an object URL to download it. */
export interface DownloadLink { name: string; bytes: number; url: string }

/** Object URLs for every file of the checkpoint (weights as bf16, as released Apertus checkpoints). */
export function checkpointLinks(m: StudioModel): DownloadLink[] {
  const files = hfCheckpointFiles(m.model, { dtype: 'bf16', files: m.tokenizerFiles });
  return [...files].map(([name, contents]) => {
    const blob = new Blob([contents as BlobPart], { type: name.endsWith('.json') ? 'application/json' : 'application/octet-stream' });
    return { name, bytes: blob.size, url: URL.createObjectURL(blob) };
  });
}

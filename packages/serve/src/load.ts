// The model a server serves: what @apertus/pretrained's loader gives (a model directory, a run
// directory, a GGUF file or a Hub id; weights read asynchronously so that `/health` answers, with
// the bytes read so far, while they load), stamped with the time it was loaded.

import fs from 'node:fs';
import path from 'node:path';
import { loadPretrained, type LoadPretrainedOptions, type Pretrained } from '@apertus/pretrained';

/** A model ready to be served: the loaded model, when it was loaded, and whether its files are exactly it. */
export interface ServedModel extends Pretrained {
  /** Unix seconds when it was loaded (`created` in `/v1/models`). */
  readonly created: number;
  /**
   * The model is exactly the files at `source.path` (no LoRA adapter merged at load): what
   * `--studio` publishes for the page to load. Absent: not published.
   */
  readonly published?: boolean;
}

/** Options of {@link loadServedModel}: those of the loader (name, precision, adapter, Hub, download and load progress). */
export type LoadServedModelOptions = LoadPretrainedOptions;

/**
 * Load the model `spec` designates for serving (see `loadPretrained` of @apertus/pretrained).
 * Throws the loader's typed errors naming the file, key or Hub id at fault.
 */
export async function loadServedModel(spec: string, options: LoadServedModelOptions = {}): Promise<ServedModel> {
  const loaded = await loadPretrained(spec, options);
  const merged = options.adapter !== undefined || (loaded.source.format === 'safetensors' && fs.existsSync(path.join(loaded.source.path, 'adapter_config.json')));
  return { ...loaded, created: Math.floor(Date.now() / 1000), published: !merged };
}

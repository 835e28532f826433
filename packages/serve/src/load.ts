// The model a server serves: what @apertus/pretrained's loader gives (a model directory, a run
// directory, a GGUF file or a Hub id; weights read asynchronously so that `/health` answers while
// they load), stamped with the time it was loaded.

import { loadPretrained, type LoadPretrainedOptions, type Pretrained } from '@apertus/pretrained';

/** A model ready to be served: the loaded model, and when it was loaded. */
export interface ServedModel extends Pretrained {
  /** Unix seconds when it was loaded (`created` in `/v1/models`). */
  readonly created: number;
}

/** Options of {@link loadServedModel}: those of the loader (name, precision, adapter, Hub, progress). */
export type LoadServedModelOptions = LoadPretrainedOptions;

/**
 * Load the model `spec` designates for serving (see `loadPretrained` of @apertus/pretrained).
 * Throws the loader's typed errors naming the file, key or Hub id at fault.
 */
export async function loadServedModel(spec: string, options: LoadServedModelOptions = {}): Promise<ServedModel> {
  return { ...(await loadPretrained(spec, options)), created: Math.floor(Date.now() / 1000) };
}

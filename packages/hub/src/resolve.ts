// What a `--model` value designates, as local files: an existing path first (a model directory, a
// run directory or checkpoints folder, a .gguf file), else a Hub id (`owner/name[@revision][:QUANT]`,
// downloaded into the Hugging Face cache). Every app, the server and the quantizer resolve
// `--model` here, so that each accepts the same forms.

import fs from 'node:fs';
import path from 'node:path';
import { HubNotFoundError, HubOfflineError, ModelSpecError } from './errors';
import { checkpointName, findModelDir, noModelReason } from './model-dir';
import { downloadModel, type HubOptions, type HubSnapshot } from './snapshot';
import { hubModelName, parseHubId } from './spec';

/** What a `--model` option accepts, for the apps' `--help` (the same in every app). */
export const MODEL_SPEC_HELP = 'a model directory (config.json, *.safetensors, tokenizer.json), a run directory, a .gguf file, or a Hugging Face Hub id owner/name[@revision][:QUANT] (downloaded into the Hugging Face cache; HF_TOKEN for gated models, HF_HUB_OFFLINE=1 for the cache only)';

/** A model as local files. */
export interface ModelLocation {
  /** A Hugging Face checkpoint directory, or one GGUF file. */
  readonly format: 'safetensors' | 'gguf';
  /** The model directory or the GGUF file. */
  readonly path: string;
  /** The name it goes by: the checkpoint's (`udhr-tiny` for runs/udhr-tiny/model), the file's without `.gguf`, or the Hub id (`owner/name[:QUANT]`). */
  readonly name: string;
  /** The cached snapshot, for a Hub model. */
  readonly hub: HubSnapshot | null;
}

/** The local model at the existing path `p`. */
function localModel(spec: string, p: string): ModelLocation {
  if (fs.statSync(p).isFile()) {
    if (!/\.gguf$/i.test(p)) throw new ModelSpecError(spec, 'not a model: expected a model directory, a run directory or a .gguf file');
    return { format: 'gguf', path: p, name: path.basename(p).replace(/\.gguf$/i, ''), hub: null };
  }
  const dir = findModelDir(p);
  if (dir === null) throw new ModelSpecError(spec, noModelReason(p));
  return { format: 'safetensors', path: dir, name: checkpointName(dir), hub: null };
}

/**
 * The model `spec` designates (see the file header), downloading a Hub model's missing files.
 * @throws ModelSpecError naming the spec (no such path and not a Hub id; a path without a model),
 * and the Hub's typed errors (see {@link downloadModel})
 */
export async function resolveModel(spec: string, options: HubOptions = {}): Promise<ModelLocation> {
  if (spec.trim() === '') throw new ModelSpecError(spec, 'empty model name');
  if (fs.existsSync(spec)) return localModel(spec, spec);
  const id = parseHubId(spec);
  if (id === null) throw new ModelSpecError(spec, 'no such file or directory, and not a Hub id (owner/name[@revision][:QUANT])');
  let hub: HubSnapshot;
  try {
    hub = await downloadModel(id, options);
  } catch (e) {
    // `runs/udhr-tiny` before the run exists is also a Hub id: say that the path is missing too.
    if (id.revision === null && id.quant === null && e instanceof HubNotFoundError && e.missing === 'repository') {
      throw new HubNotFoundError(id.repo, 'repository', `no such file or directory, and ${e.message.slice(id.repo.length + 2)}`);
    }
    if (id.revision === null && id.quant === null && e instanceof HubOfflineError) {
      throw new HubOfflineError(id.repo, `no such file or directory, and as a Hub id: ${e.message.slice(id.repo.length + 2)}`, { cause: e });
    }
    throw e;
  }
  return { format: hub.model.format, path: hub.path, name: hubModelName(id), hub };
}

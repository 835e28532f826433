// Which files of a repository make the model. A Hub id without `:QUANT` means the repository's
// Hugging Face checkpoint (config.json + model.safetensors or its shard index, plus the tokenizer,
// chat template and generation config beside them); a repository without one falls back to a GGUF
// file. A GGUF file is chosen as llama.cpp's `-hf owner/name[:QUANT]` chooses it: among the model
// files (`.gguf`, the name not containing mmproj, imatrix, mtp-, eagle3-, dflash- or dspark-), the
// first in path order whose path contains the type followed by `.` or `-` (case-insensitive); with
// no type asked for, Q4_K_M, then Q8_0, then the first model file.

import { HubNoWeightsError } from './errors';

/** A file of a repository at one commit, as the Hub's tree listing gives it. */
export interface RepoFile {
  /** Path in the repository (`/`-separated). */
  readonly path: string;
  /** Size in bytes. */
  readonly size: number;
  /** Git blob id (SHA-1 of `blob <size>\0<content>`; for an LFS file, of its pointer). */
  readonly blobId: string;
  /** LFS files: the content's SHA-256 and size. */
  readonly lfs: { readonly sha256: string; readonly size: number } | null;
}

/** The files of a repository that make a model. */
export type ModelFiles =
  | {
      /** A Hugging Face checkpoint directory. */
      readonly format: 'safetensors';
      /** config.json, the weights (or their shard index) and the tokenizer, template and generation files present. */
      readonly files: readonly string[];
      /** `model.safetensors.index.json` when the weights are sharded: its shards are read from it. */
      readonly index: string | null;
    }
  | {
      /** One GGUF file. */
      readonly format: 'gguf';
      readonly file: string;
    };

/** Files of a checkpoint beside config.json and the weights, taken when present. */
export const CHECKPOINT_FILES: readonly string[] = Object.freeze(['generation_config.json', 'tokenizer.json', 'tokenizer_config.json', 'special_tokens_map.json', 'chat_template.jinja']);

/** Name of the shard index of a sharded safetensors checkpoint. */
export const SHARD_INDEX = 'model.safetensors.index.json';

const GGUF_SIDECARS = ['mmproj', 'imatrix', 'mtp-', 'eagle3-', 'dflash-', 'dspark-'];
const SPLIT = /-(\d{5})-of-(\d{5})\.gguf$/i;
const DEFAULT_QUANTS = ['Q4_K_M', 'Q8_0'];

/** True for a GGUF file that holds a model (not a projector, importance matrix or draft model). */
export function isModelGguf(path: string): boolean {
  if (!path.toLowerCase().endsWith('.gguf')) return false;
  const base = path.slice(path.lastIndexOf('/') + 1);
  return !GGUF_SIDECARS.some((s) => base.includes(s));
}

/** True for a path that stays inside the repository (no empty, `.` or `..` segment, no `\\`, not absolute): the only ones joined onto a cache folder. */
export function isSafeRepoPath(path: string): boolean {
  return path !== '' && !path.includes('\\') && path.split('/').every((seg) => seg !== '' && seg !== '.' && seg !== '..');
}

const escape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * The GGUF file of `paths` for `quant` (llama.cpp's rule, see the file header); null when none
 * matches. Split files (`-00001-of-00003.gguf`) count by their first part.
 */
export function chooseGguf(paths: readonly string[], quant: string | null): string | null {
  const models = [...paths].sort().filter((p) => isModelGguf(p) && Number(SPLIT.exec(p)?.[1] ?? 1) === 1);
  for (const q of quant !== null ? [quant] : DEFAULT_QUANTS) {
    const re = new RegExp(`${escape(q)}[.-]`, 'i');
    const hit = models.find((p) => re.test(p));
    if (hit !== undefined) return hit;
  }
  return quant === null ? (models[0] ?? null) : null;
}

/**
 * The files of the model in a repository listing (see the file header).
 * @param repo - `owner/name`, for the error message
 * @throws HubNoWeightsError naming the repository (and the GGUF files it has, when a type matched none)
 */
export function selectModelFiles(repo: string, files: readonly RepoFile[], quant: string | null): ModelFiles {
  const paths = files.map((f) => f.path).filter(isSafeRepoPath);
  const has = new Set(paths);
  const gguf = (): ModelFiles | null => {
    const file = chooseGguf(paths, quant);
    if (file === null) return null;
    const split = SPLIT.exec(file);
    if (split !== null && split[2] !== '00001') throw new HubNoWeightsError(`${repo}:${quant ?? ''}`.replace(/:$/, ''), `${file} is split into ${Number(split[2])} parts; only single-file GGUF models are read (merge them with llama-gguf-split --merge)`);
    return { format: 'gguf', file };
  };
  if (quant !== null) {
    const hit = gguf();
    if (hit !== null) return hit;
    const ggufs = paths.filter(isModelGguf);
    throw new HubNoWeightsError(`${repo}:${quant}`, ggufs.length > 0 ? `no GGUF file of type ${quant} (it has ${ggufs.join(', ')})` : 'no GGUF files (a :TYPE suffix picks a GGUF file of the repository)');
  }
  const weights = has.has('model.safetensors') ? 'model.safetensors' : has.has(SHARD_INDEX) ? SHARD_INDEX : null;
  if (has.has('config.json') && weights !== null) {
    return { format: 'safetensors', files: ['config.json', weights, ...CHECKPOINT_FILES.filter((f) => has.has(f))], index: weights === SHARD_INDEX ? SHARD_INDEX : null };
  }
  const hit = gguf();
  if (hit !== null) return hit;
  const other = paths.find((p) => /\.(bin|pt|pth|onnx|h5|msgpack)$/.test(p));
  throw new HubNoWeightsError(repo, `no weights to load: expected config.json with model.safetensors (or ${SHARD_INDEX}), or a .gguf file${other !== undefined ? `; it has ${other}, a format this loader does not read` : ''}`);
}

/** The shard files a `model.safetensors.index.json` names (its `weight_map` values), in order of first use. */
export function shardFiles(repo: string, indexJson: string): string[] {
  let map: unknown;
  try {
    map = (JSON.parse(indexJson) as { weight_map?: unknown }).weight_map;
  } catch (e) {
    throw new HubNoWeightsError(repo, `${SHARD_INDEX}: not JSON (${(e as Error).message})`);
  }
  if (map === null || typeof map !== 'object' || Array.isArray(map)) throw new HubNoWeightsError(repo, `${SHARD_INDEX}: weight_map must be an object of tensor → shard file`);
  const shards = [...new Set(Object.values(map as Record<string, unknown>))];
  const bad = shards.find((s) => typeof s !== 'string' || !/^[\w.-]+\.safetensors$/.test(s));
  if (bad !== undefined) throw new HubNoWeightsError(repo, `${SHARD_INDEX}: weight_map: ${JSON.stringify(bad)} is not a .safetensors file beside the index`);
  return shards as string[];
}

// LoRA adapters on disk in Hugging Face PEFT's layout, loadable by `PeftModel.from_pretrained`:
//   adapter_config.json        peft_type "LORA", task_type "CAUSAL_LM", r, lora_alpha, lora_dropout,
//                              target_modules, bias "none", base_model_name_or_path, …
//   adapter_model.safetensors  base_model.model.<module>.lora_A.weight [r, in]
//                              base_model.model.<module>.lora_B.weight [out, r]
//                              base_model.model.<table>.token_adapter.trainable_tokens_delta [n, H]
//                                (trainable_token_indices: the n trained rows of model.embed_tokens
//                                or lm_head, as values, not differences)
// (PEFT's in-memory names carry the adapter name, `lora_A.default.weight`; it is removed on save.)

import fs from 'node:fs';
import path from 'node:path';
import { writeDirAtomic } from '@apertus/atomic-file';
import { SafetensorsFile, writeFile, type TensorEntry } from '@apertus/safetensors';
import { bf16ArrayToF32, f16ArrayToF32, Tensor } from '@apertus/tensor';
import type { ApertusConfig } from './config';
import { AdapterError } from './errors';
import { CAUSAL_LM_LAYOUT, decoderName, storedName, type CheckpointLayout } from './layout';
import { checkTable, LORA_CONFIG_KEYS, LoraAdapter, moduleOf, parseLoraConfig, TOKEN_MODULES, type LoraConfig, type LoraPair, type TokenModule, type TrainableTokens } from './lora';
import { parameterShapes } from './params';

/** The adapter's configuration file. */
export const ADAPTER_CONFIG_FILE = 'adapter_config.json';
/** The adapter's weights file. */
export const ADAPTER_WEIGHTS_FILE = 'adapter_model.safetensors';

const TENSOR_NAME = /^base_model\.model\.(model\.layers\.\d+\.(?:self_attn|mlp)\.[a-z_]+)\.lora_([AB])\.weight$/;
const TOKENS_NAME = /^base_model\.model\.(model\.embed_tokens|lm_head)\.token_adapter\.trainable_tokens_delta$/;

/** adapter_config.json as PEFT writes it for a LoRA adapter of a causal LM (every field PEFT's `LoraConfig` serialises that applies here). */
export function adapterConfigJson(config: LoraConfig, baseModel: string | null): Record<string, unknown> {
  return {
    alpha_pattern: {},
    auto_mapping: null,
    base_model_name_or_path: baseModel,
    bias: 'none',
    fan_in_fan_out: false,
    inference_mode: true,
    init_lora_weights: true,
    layer_replication: null,
    layers_pattern: null,
    layers_to_transform: null,
    lora_alpha: config.lora_alpha,
    lora_dropout: config.lora_dropout,
    modules_to_save: null,
    peft_type: 'LORA',
    r: config.r,
    rank_pattern: {},
    revision: null,
    target_modules: [...config.target_modules],
    task_type: 'CAUSAL_LM',
    trainable_token_indices: config.trainable_token_indices,
    use_dora: false,
    use_rslora: config.use_rslora,
  };
}

/**
 * Write `adapter` to `dir` (created; replaced as a whole if it exists, never left half-written):
 * adapter_config.json and adapter_model.safetensors (float32, `__metadata__.format = "pt"`).
 * @param baseModel - recorded as `base_model_name_or_path` (the base model's directory or hub id)
 */
export function saveAdapter(adapter: LoraAdapter, dir: string, baseModel: string | null = null): void {
  writeDirAtomic(dir, (tmp) => writeAdapterFiles(adapter, tmp, baseModel));
}

const PEFT_PREFIX = 'base_model.model.';

/**
 * Write adapter_config.json and adapter_model.safetensors into the existing directory `dir`, the
 * modules named as the base checkpoint's `layout` names them (PEFT prefixes the module path).
 */
export function writeAdapterFiles(adapter: LoraAdapter, dir: string, baseModel: string | null, layout: CheckpointLayout = CAUSAL_LM_LAYOUT): void {
  fs.writeFileSync(path.join(dir, ADAPTER_CONFIG_FILE), `${JSON.stringify(adapterConfigJson(adapter.config, baseModel), null, 2)}\n`);
  const stored = (name: string) => PEFT_PREFIX + storedName(layout, name.slice(PEFT_PREFIX.length));
  const entries: [string, TensorEntry][] = adapter.parameters().map(([name, t]) => [stored(name), { dtype: 'F32', shape: [...t.shape], data: () => t.toFloat32() }]);
  writeFile(path.join(dir, ADAPTER_WEIGHTS_FILE), entries, { format: 'pt' });
}

/** A loaded adapter directory. */
export interface LoadedAdapter {
  /** The adapter (factors f32; trainable when asked). */
  adapter: LoraAdapter;
  /** `base_model_name_or_path` from adapter_config.json. */
  baseModel: string | null;
}

function readConfig(file: string): Record<string, unknown> {
  let text: string;
  try { text = fs.readFileSync(file, 'utf8'); } catch (e) { throw new AdapterError('(file)', `cannot read (${(e as Error).message})`, file); }
  let raw: unknown;
  try { raw = JSON.parse(text); } catch (e) { throw new AdapterError('(json)', `invalid JSON: ${(e as Error).message}`, file); }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new AdapterError('(root)', 'expected an object', file);
  return raw as Record<string, unknown>;
}

/** PEFT options outside plain LoRA (DoRA, biases, per-module ranks…): a set one is refused with an AdapterError. */
function rejectUnsupported(raw: Record<string, unknown>, file: string): void {
  const want = (key: string, ok: (v: unknown) => boolean, what: string) => {
    if (key in raw && !ok(raw[key])) throw new AdapterError(key, `${JSON.stringify(raw[key])} is not supported (only ${what})`, file);
  };
  const emptyObj = (v: unknown) => v === null || (typeof v === 'object' && Object.keys(v as object).length === 0);
  if (raw.peft_type !== 'LORA') throw new AdapterError('peft_type', `expected "LORA", got ${JSON.stringify(raw.peft_type)}`, file);
  want('task_type', (v) => v === null || v === 'CAUSAL_LM', '"CAUSAL_LM"');
  want('bias', (v) => v === 'none', '"none"');
  want('fan_in_fan_out', (v) => v === false, 'false');
  want('use_dora', (v) => v === false, 'false');
  want('rank_pattern', emptyObj, '{}');
  want('alpha_pattern', emptyObj, '{}');
  want('layers_to_transform', (v) => v === null, 'null');
  want('modules_to_save', (v) => v === null || (Array.isArray(v) && v.length === 0), 'null');
  want('layer_replication', (v) => v === null, 'null');
}

function toF32(st: ReturnType<SafetensorsFile['read']>, name: string, file: string): Float32Array {
  switch (st.dtype) {
    case 'F32': return st.data;
    case 'BF16': return bf16ArrayToF32(st.data);
    case 'F16': return f16ArrayToF32(st.data);
    default: throw new AdapterError(name, `dtype ${st.dtype} is not supported (F32, BF16, F16)`, file);
  }
}

/**
 * Read a PEFT LoRA adapter directory for a model of `model` architecture whose checkpoint has
 * `opts.layout` (the module names PEFT wrote; default the 2509 one). Every tensor must be a
 * `lora_A`/`lora_B` factor of an existing projection with rank r, every adapted module needs both,
 * and nothing else may be in the file; violations throw AdapterError naming the file and tensor.
 */
export function loadAdapter(dir: string, model: ApertusConfig, opts: { trainable?: boolean; layout?: CheckpointLayout } = {}): LoadedAdapter {
  const layout = opts.layout ?? CAUSAL_LM_LAYOUT;
  const canonical = (stored: string): string => {
    if (!stored.startsWith(PEFT_PREFIX)) return stored;
    const m = /^(.*?)(\.lora_[AB]\.weight|\.token_adapter\.trainable_tokens_delta)$/.exec(stored.slice(PEFT_PREFIX.length));
    const inner = m ? decoderName(layout, `${m[1]}.weight`) : null;
    return inner === null ? stored : `${PEFT_PREFIX}${inner.slice(0, -'.weight'.length)}${m![2]}`;
  };
  const cfgFile = path.join(dir, ADAPTER_CONFIG_FILE);
  const raw = readConfig(cfgFile);
  rejectUnsupported(raw, cfgFile);
  const weightsFile = path.join(dir, ADAPTER_WEIGHTS_FILE);
  if (!fs.existsSync(weightsFile)) throw new AdapterError('(file)', `missing${fs.existsSync(path.join(dir, 'adapter_model.bin')) ? ' (adapter_model.bin, the pickle format, is not read: save with safe_serialization)' : ''}`, weightsFile);
  const shapes = parameterShapes(model);
  const reader = SafetensorsFile.open(weightsFile);
  try {
    const factors = new Map<string, { A?: Tensor; B?: Tensor }>();
    const rows = new Map<string, Tensor>();
    for (const key of reader.keys()) {
      const name = canonical(key);
      const tm = TOKENS_NAME.exec(name);
      if (tm) {
        const t = new Tensor(toF32(reader.read(key), key, weightsFile), reader.info(key).shape, 'f32');
        t.name = name;
        rows.set(tm[1]!, t);
        continue;
      }
      const m = TENSOR_NAME.exec(name);
      const weight = m ? shapes.get(`${m[1]}.weight`) : undefined;
      if (!m || !weight || weight.length !== 2) throw new AdapterError(key, 'not a lora_A/lora_B factor of an Apertus projection', weightsFile);
      const t = new Tensor(toF32(reader.read(key), key, weightsFile), reader.info(key).shape, 'f32');
      t.name = name;
      const f = factors.get(m[1]!) ?? {};
      f[m[2] as 'A' | 'B'] = t;
      factors.set(m[1]!, f);
    }
    // Target modules as saved (a list, "all-linear", or a regex string — then the file decides).
    const targets = raw.target_modules;
    const found = [...new Set([...factors.keys()].map((k) => k.slice(k.lastIndexOf('.') + 1)))];
    const fields = Object.fromEntries(LORA_CONFIG_KEYS.filter((k) => raw[k] !== undefined && raw[k] !== null).map((k) => [k, raw[k]]));
    const config = parseLoraConfig({ ...fields, target_modules: Array.isArray(targets) || targets === 'all-linear' ? targets : found }, cfgFile);
    const modules = new Map<string, LoraPair>();
    for (const [weightName, shape] of shapes) {
      const mod = moduleOf(weightName), f = factors.get(mod);
      if (!f) continue;
      const { A, B } = f;
      const short = mod.slice(mod.lastIndexOf('.') + 1);
      if (!(config.target_modules as readonly string[]).includes(short)) throw new AdapterError(`base_model.model.${mod}`, `${short} is not in target_modules`, weightsFile);
      if (!A || !B) throw new AdapterError(`base_model.model.${mod}.lora_${A ? 'B' : 'A'}.weight`, 'missing tensor', weightsFile);
      const [out, inp] = shape as [number, number];
      const want: [Tensor, number[]][] = [[A, [config.r, inp]], [B, [out, config.r]]];
      for (const [t, s] of want) {
        if (t.shape.length !== 2 || t.shape[0] !== s[0] || t.shape[1] !== s[1]) throw new AdapterError(t.name!, `shape [${t.shape}] does not match r = ${config.r} and the projection (expected [${s}])`, weightsFile);
        if (opts.trainable) t.requireGrad();
      }
      modules.set(mod, { A, B });
    }
    if (modules.size === 0) throw new AdapterError('(file)', 'no LoRA factors', weightsFile);
    const tokens = new Map<string, TrainableTokens>();
    for (const [key, indices] of Object.entries(config.trainable_token_indices ?? {})) {
      const module = TOKEN_MODULES[key as TokenModule], name = `base_model.model.${module}.token_adapter.trainable_tokens_delta`, values = rows.get(module);
      if (!values) throw new AdapterError(name, `missing tensor (trainable_token_indices lists ${key})`, weightsFile);
      try {
        checkTable(`trainable_token_indices.${key}`, module, indices, model);
      } catch (e) {
        throw e instanceof AdapterError ? new AdapterError(e.field, e.detail, cfgFile) : e;
      }
      if (values.rank !== 2 || values.shape[0] !== indices.length || values.shape[1] !== model.hidden_size) {
        throw new AdapterError(name, `shape [${values.shape}] does not match ${indices.length} token ids × hidden size ${model.hidden_size}`, weightsFile);
      }
      if (opts.trainable) values.requireGrad();
      tokens.set(module, { indices, values });
      rows.delete(module);
    }
    for (const module of rows.keys()) throw new AdapterError(`base_model.model.${module}.token_adapter.trainable_tokens_delta`, 'trainable_token_indices does not list this table', weightsFile);
    const base = raw.base_model_name_or_path;
    return { adapter: new LoraAdapter(config, modules, 0, tokens), baseModel: typeof base === 'string' ? base : null };
  } finally {
    reader.close();
  }
}

/**
 * @apertus/model — the Apertus decoder (ApertusForCausalLM) on @apertus/tensor: config,
 * initialisation, training forward, Hugging Face checkpoints, KV-cache generation.
 * @packageDocumentation
 */
export { type ApertusConfig, type RopeScaling, type PresetName, PRESETS, presetConfig, parseConfig, validateConfig, toHfConfig, parameterCount, swigluMatched } from './config';
export { ModelError, ConfigError, CheckpointError, GenerationError, AdapterError } from './errors';
export { ropeInvFreq } from './rope';
export { parameterShapes, initParameters, isBuffer } from './params';
export { ApertusModel, type LayerWeights, type ForwardOptions, type LossOptions } from './model';
export { decoderLayer, plainProjection, type Attend, type Projection, type ProjName } from './layer';
export { KVCache } from './kv-cache';
export { PrefixCache, type PrefixCacheOptions } from './prefix-cache';
export { project, embedWeight, weightRows, isPacked, type PackedMatrix, type Weight } from './packed';
export { findModelDir, isModelDir } from './model-dir';
export { loadCheckpoint, loadCheckpointAsync, readCheckpointConfig, saveCheckpoint, type LoadedCheckpoint, type SaveOptions, type WeightPrecision } from './checkpoint';
export { parseGenerationConfig, type GenerationConfig } from './generation-config';
export { writeFileAtomic, fsyncDirectory, fsyncTree, tempSibling } from './atomic-file';
export { step, type StepInput } from './infer';
export { Sampler, validateSampling, type SamplingParams } from './sampling';
export { generate, generateBatch, generateStream, type GenerateOptions, type Generation, type FinishReason } from './generate';
export { LoraAdapter, LORA_TARGET_MODULES, parseLoraConfig, mergeAdapter, type LoraConfig, type LoraPair } from './lora';
export { saveAdapter, loadAdapter, adapterConfigJson, ADAPTER_CONFIG_FILE, ADAPTER_WEIGHTS_FILE, type LoadedAdapter } from './peft';

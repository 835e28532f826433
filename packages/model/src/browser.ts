/**
 * @apertus/model, browser entry (the package's `browser` export): the Apertus decoder with nothing
 * from Node — config, initialisation, training forward, generation, LoRA, and Hugging Face
 * checkpoints in memory (from `fetch` or a File, to a download).
 * @packageDocumentation
 */
export { type ApertusConfig, type RopeScaling, type PresetName, PRESETS, presetConfig, parseConfig, validateConfig, checkModelType, CONFIG_LIMITS, toHfConfig, parameterCount, swigluMatched, outputVocabSize, isApertus1p5Config, APERTUS_1P5_MODEL_TYPE } from './config';
export { type CheckpointLayout, type CheckpointArchitecture, type CarriedTensors, CAUSAL_LM_LAYOUT, LANGUAGE_MODEL_PREFIX, CARRIED_PREFIXES, storedName, decoderName, architectureOf, layoutOfConfig, layoutConfigJson } from './layout';
export { ModelError, ConfigError, CheckpointError, GenerationError, AdapterError } from './errors';
export { ropeInvFreq } from './rope';
export { parameterShapes, initParameters, isBuffer } from './params';
export { ApertusModel, type ForwardOptions, type LossOptions } from './model';
export type { DecoderWeights, LayerWeights } from './layer';
export { decoderLayer, plainProjection, type Attend, type Projection, type ProjName } from './layer';
export { KVCache } from './kv-cache';
export { KVBlockPool, type KVBlock, type KVBlockPoolOptions } from './kv-blocks';
export { PrefixCache, type PrefixCacheOptions } from './prefix-cache';
export { step, stepLogits, hiddenStates, type StepInput } from './infer';
export { Sampler, validateSampling, type SamplingParams } from './sampling';
export { generate, generateBatch, generateStream, type GenerateOptions, type Generation, type FinishReason } from './generate';
export { LoraAdapter, LORA_TARGET_MODULES, parseLoraConfig, type AdaptableModel, type LoraConfig, type LoraPair, type TrainableTokens } from './lora';
export { mergeAdapter } from './merge-adapter';
export { modelFromWeights, modelFromWeightsAsync, modelFromHfFiles, hfCheckpointFiles, configJson, generationConfigJson, weightEntries, checkpointReader, expectedTensors, firstNonFinite, type CheckpointReader, type LoadProgress, type WeightPrecision } from './hf-format';
export { parseGenerationConfig, type GenerationConfig } from './generation-config';

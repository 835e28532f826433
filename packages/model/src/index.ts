/**
 * @apertus/model — the Apertus decoder (ApertusForCausalLM) on @apertus/tensor: config,
 * initialisation, training forward, Hugging Face checkpoints, KV-cache generation.
 * @packageDocumentation
 */
// The Node entry: everything in ./browser, plus checkpoint directories on disk.
export * from './browser';
export { loadCheckpoint, loadCheckpointAsync, readCheckpointConfig, saveCheckpoint, type LoadedCheckpoint, type SaveOptions, type CheckpointConfig } from './checkpoint';
export { saveAdapter, loadAdapter, adapterConfigJson, ADAPTER_CONFIG_FILE, ADAPTER_WEIGHTS_FILE, type LoadedAdapter } from './peft';

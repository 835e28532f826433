// @apertus/model/testing — the configuration of the very small models the tests of the packages
// and apps train and compare: the `tiny` preset scaled down to 2 layers × hidden 32 (4 heads, 2 KV
// heads, head_dim 8, MLP 64), a few seconds of training on two cores.

import { presetConfig, type ApertusConfig } from './config';

/** The test model's configuration with `vocab_size` and any other field given. */
export function testModelConfig(overrides: Partial<ApertusConfig> & { readonly vocab_size: number }): ApertusConfig {
  return presetConfig('tiny', { hidden_size: 32, intermediate_size: 64, num_hidden_layers: 2, num_attention_heads: 4, num_key_value_heads: 2, head_dim: 8, ...overrides });
}

// The LoRA recipe of the README (`lora-udhr.json`, a config file of this app): valid, and as small
// as the README says.

import path from 'node:path';
import { ApertusModel, LoraAdapter, parameterCount, presetConfig } from '@apertus/model';
import { resolveSftConfig } from '@apertus/recipes';
import { readConfigLayer } from '@apertus/trainer';
import { describe, expect, it } from 'vitest';

describe('the LoRA recipe of the README (apps/sft/lora-udhr.json)', () => {
  it('is a valid config file and trains 61,056 parameters, 4.90 % of the default pretraining run\'s model (tiny preset, vocab 2048)', () => {
    const file = path.join(import.meta.dirname, '..', 'lora-udhr.json');
    const { config } = resolveSftConfig([readConfigLayer(file)]);
    expect(config.lr).toBe(0.015);
    expect(config.lora?.trainable_token_indices?.embed_tokens).toEqual([61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72]);
    const arch = presetConfig('tiny', { vocab_size: 2048 });
    const adapter = LoraAdapter.init(ApertusModel.init(arch, 1), config.lora!);
    expect(adapter.parameterCount()).toBe(61_056);
    expect(adapter.parameterCount() / parameterCount(arch)).toBeLessThan(0.05);
  });
});

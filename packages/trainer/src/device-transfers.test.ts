// What one training step on `webgpu` moves between host and GPU, counted by the device
// (`webgpuCounters`): the trainer's real step (forward, backward, clipping, AdEMAMix) on a small
// Apertus model. Once parameters and optimizer state are on the device (after the first step),
// a step uploads its batch and its scalars (listed by name, `traceWebgpu`) and reads back the
// loss and the gradient norm; xIELU (forward, backward, its α scalars) moves nothing.
// Runs on SwiftShader without a GPU; a missing driver fails the test, never skips it.
import { AdEMAMix, AdamW, LrScheduler, constantSchedule } from '@apertus/ademamix';
import { ApertusModel, presetConfig } from '@apertus/model';
import { countersSince, SWIFTSHADER_ICD, traceWebgpu, useDevice, webgpuCounters, type WebgpuCounters } from '@apertus/tensor';
import { afterAll, describe, expect, it } from 'vitest';
import { causalLmLoss, collateLm, trainStep, type LmBatch } from './index';
import { syntheticLmRows as rows } from './testing';

if (process.env.VK_ICD_FILENAMES === undefined && process.env.VK_DRIVER_FILES === undefined) process.env.VK_ICD_FILENAMES = SWIFTSHADER_ICD;

const CONFIG = presetConfig('tiny', { vocab_size: 64, hidden_size: 16, intermediate_size: 32, num_hidden_layers: 1, num_attention_heads: 2, num_key_value_heads: 1, head_dim: 8 });


afterAll(async () => {
  await useDevice('cpu');
});

type Counts = WebgpuCounters;
const since = (before: Counts): Counts => countersSince(before, webgpuCounters());

describe('one training step on webgpu', { timeout: 600_000 }, () => {
  for (const kind of ['AdEMAMix', 'AdamW'] as const) {
    it(`${kind}: a step uploads its batch and scalars, reads the loss and the norm; the optimizer step moves nothing`, async () => {
      await useDevice('webgpu');
      const model = ApertusModel.init(CONFIG, 3);
      const params = model.parameters();
      const inner = kind === 'AdEMAMix'
        ? new AdEMAMix(params, { lr: 1e-3, alpha: 5, alphaWarmup: 10, beta3Warmup: 10, weightDecay: 0.1 })
        : new AdamW(params, { lr: 1e-3, weightDecay: 0.1 });
      let update_: Counts | null = null;
      const optimizer = {
        step(lr?: number) {
          const before = webgpuCounters();
          inner.step(lr);
          update_ = since(before);
        },
        zeroGrad: () => inner.zeroGrad(),
      };
      const scheduler = new LrScheduler(constantSchedule(1e-3));
      const step = (batch: LmBatch) => trainStep({
        params, optimizer, scheduler, microBatches: [batch], clip: 1e-3,
        weightOf: (b) => b.keptTokens, loss: (b, n) => causalLmLoss(model, b, { normalizer: n }),
      });
      // The first step puts parameters and optimizer state on the device.
      step(collateLm(rows(2, 8, 1)));
      const steps: Counts[] = [];
      const update = kind === 'AdEMAMix' ? 'ademamixUpdate' : 'adamwUpdate';
      for (const seed of [2, 3]) {
        const batch = collateLm(rows(2, 8, seed));
        const { result: r, counters, uploads } = traceWebgpu(() => step(batch));
        steps.push(counters);
        expect(r.gradNorm).toBeGreaterThan(1e-3); // clipping scaled the gradients on the device
        // What goes up is the batch (2 rows × 8 tokens: N = 16 positions) and the step's scalars:
        // token ids, positions (twice: RoPE's and attention's arrays), document ids of queries and
        // keys (2N each: forward and backward), targets and row weights (cross-entropy), the
        // embedding backward's token order; the clip coefficient, and the update's scalars once
        // per parameter group (with and without weight decay). Parameters, optimizer state,
        // RoPE's table, xIELU's α: already there. The update's uniform block: AdEMAMix 13 scalars (β1,
        // 1 − β1, β2, 1 − β2, β3, 1 − β3, α, bc1, √bc2, ε, λ, lr, a flag) padded to 64 bytes, AdamW 8 (32).
        const N = 16;
        expect(uploads.map((u) => [u.what, u.bytes])).toEqual([
          ['token ids', 4 * N], ['positions', 4 * N], ['positions', 4 * N], ['document ids', 4 * 2 * N], ['targets', 4 * N], ['row weights', 4 * N],
          ['document ids', 4 * 2 * N], ['token order', 4 * N],
          ['scaleBy.inplace parameters', 16], [`${update} parameters`, kind === 'AdEMAMix' ? 64 : 32], [`${update} parameters`, kind === 'AdEMAMix' ? 64 : 32],
        ]);
        // Two reads: the loss and the gradient norm (one float each); no pipeline is built.
        expect([counters.readbacks, counters.readbackBytes, counters.pipelineBuilds]).toEqual([2, 8, 0]);
        // The optimizer step: one kernel per parameter, its scalars only, nothing read.
        expect({ dispatches: update_!.dispatches, data: update_!.uploadBytes - update_!.uniformBytes, readbacks: update_!.readbacks })
          .toEqual({ dispatches: params.length, data: 0, readbacks: 0 });
      }
      console.log(`${kind} step: ${JSON.stringify(steps[1])}`);
      // The same work every step (the buffers created are the batch's fresh host arrays, and what
      // the garbage collector has not yet returned: not a fixed count).
      const fixed = (c: Counts) => ({ ...c, buffersCreated: 0, bytesHeld: 0, peakBytesHeld: 0 });
      expect(fixed(steps[1]!)).toEqual(fixed(steps[0]!));
    });
  }
});

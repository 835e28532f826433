// What one training step on `webgpu` moves between host and GPU, counted by the backend
// (`webgpuTransfers`): the trainer's real step (forward, backward, clipping, AdEMAMix) on a small
// Apertus model. Once parameters and optimizer state are on the device (after the first step),
// a step uploads its batch and reads back the
// loss and the gradient norm; xIELU (forward, backward, its α scalars) moves nothing.
// Runs on SwiftShader without a GPU; a missing driver fails the test, never skips it.
import { AdEMAMix, AdamW, LrScheduler, constantSchedule } from '@apertus/ademamix';
import { ApertusModel, presetConfig } from '@apertus/model';
import { SWIFTSHADER_ICD, useDevice } from '@apertus/tensor';
import { webgpuTransfers } from '@apertus/tensor/gpujs';
import { afterAll, describe, expect, it } from 'vitest';
import { causalLmLoss, collateLm, trainStep, type LmBatch } from './index';
import { syntheticLmRows as rows } from './testing';

if (process.env.VK_ICD_FILENAMES === undefined && process.env.VK_DRIVER_FILES === undefined) process.env.VK_ICD_FILENAMES = SWIFTSHADER_ICD;

const CONFIG = presetConfig('tiny', { vocab_size: 64, hidden_size: 16, intermediate_size: 32, num_hidden_layers: 1, num_attention_heads: 2, num_key_value_heads: 1, head_dim: 8 });


afterAll(async () => {
  await useDevice('cpu');
});

type Counts = { calls: number; uploads: number; uploadBytes: number; readbacks: number; readbackBytes: number };

function since(before: Counts): Counts {
  const after = webgpuTransfers();
  return { calls: after.calls - before.calls, uploads: after.uploads - before.uploads, uploadBytes: after.uploadBytes - before.uploadBytes, readbacks: after.readbacks - before.readbacks, readbackBytes: after.readbackBytes - before.readbackBytes };
}

describe('one training step on webgpu', { timeout: 600_000 }, () => {
  for (const kind of ['AdEMAMix', 'AdamW'] as const) {
    it(`${kind}: the optimizer step moves nothing; the step's transfers repeat exactly`, async () => {
      await useDevice('webgpu');
      const model = ApertusModel.init(CONFIG, 3);
      const params = model.parameters();
      const inner = kind === 'AdEMAMix'
        ? new AdEMAMix(params, { lr: 1e-3, alpha: 5, alphaWarmup: 10, beta3Warmup: 10, weightDecay: 0.1 })
        : new AdamW(params, { lr: 1e-3, weightDecay: 0.1 });
      let update: Counts | null = null;
      const optimizer = {
        step(lr?: number) {
          const before = webgpuTransfers();
          inner.step(lr);
          update = since(before);
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
      for (const seed of [2, 3]) {
        const before = webgpuTransfers();
        const r = step(collateLm(rows(2, 8, seed)));
        steps.push(since(before));
        expect(r.gradNorm).toBeGreaterThan(1e-3); // clipping scaled the gradients on the device
        expect(update!.readbacks).toBe(0);
        expect(update!.uploads).toBe(0);
        expect(update!.calls).toBe(params.length * (kind === 'AdEMAMix' ? 4 : 3));
      }
      console.log(`${kind} step transfers: ${JSON.stringify(steps[1])}`);
      expect(steps[1]).toEqual(steps[0]);
      // The exact remainder, for 2 rows x 8 tokens (N = 16 positions, V = 64):
      const N = 16, V = CONFIG.vocab_size;
      const batch = [
        4 * N, // token ids (embedding)
        4 * N, // targets (cross-entropy)
        4 * N, // row weights (cross-entropy)
        4 * 2 * N, 4 * 2 * N, // document ids of queries and keys (attention forward, backward)
        4 * N, 4 * (V + 1), // the embedding backward's token order and row offsets
      ];
      // The LM-head loss reads back [lse, loss] per row (the loss is summed on the host); its
      // backward reads lse where it is (nothing goes up).
      const loss = { uploads: [] as number[], readbacks: [4 * 2 * N] };
      const gradNorm = { readbacks: [4] };
      // RoPE's cos/sin table stays on the device while the positions are the same (every step here).
      // xIELU (its softplus, forward, backward and α's gradients) runs on the device: nothing moves.
      const total = (a: number[]) => a.reduce((x, y) => x + y, 0);
      const uploads = [...batch, ...loss.uploads];
      const readbacks = [...loss.readbacks, ...gradNorm.readbacks];
      expect(steps[1]).toEqual({
        // Kernel launches: forward, backward, clipping and the update (4 kernels per parameter for AdEMAMix, 3 for AdamW).
        calls: kind === 'AdEMAMix' ? 186 : 171,
        uploads: uploads.length, uploadBytes: total(uploads),
        readbacks: readbacks.length, readbackBytes: total(readbacks),
      });
      expect([uploads.length, readbacks.length]).toEqual([7, 2]);
    });
  }
});

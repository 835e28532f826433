// Training on a text in a browser tab (the studio's pretraining and fine-tuning): the text is
// tokenized and cut into windows of T + 1 tokens; each step takes the next B windows (round robin)
// and runs the shared step logic of @apertus/trainer (AdEMAMix, clipping 1.0, token-mean loss).
// Pretraining a fresh model and fine-tuning a loaded one are the same loop. Each step yields to
// the event loop, so a page can redraw its loss plot while training runs. Nothing from Node.

import { AdEMAMix, constantSchedule, LrScheduler } from '@apertus/ademamix';
import type { ApertusModel } from '@apertus/model';
import { causalLmLoss, collateLm, TrainerOptionError, trainStep } from '@apertus/trainer';

/** Settings of a training run on a text. */
export interface TextTraining {
  /** Optimizer steps. */
  steps: number;
  /** Windows per step (B). */
  batchSize: number;
  /** Tokens per window (T). */
  seqLength: number;
  /** Constant learning rate of AdEMAMix. */
  lr: number;
}

/** What the loop needs of a model source: the model to train and a tokenizer to encode the text. */
export interface TextTrainee {
  readonly model: ApertusModel;
  readonly tokenizer: { encode(text: string): { readonly ids: readonly number[] } };
}

/**
 * The windows of T + 1 tokens that `text` gives, every T tokens.
 * @throws TrainerOptionError (`text`) when the text is too short for one window
 */
export function windowsOf(m: TextTrainee, text: string, T: number): number[][] {
  const ids = m.tokenizer.encode(text).ids;
  const out: number[][] = [];
  for (let i = 0; i + T + 1 <= ids.length; i += T) out.push(ids.slice(i, i + T + 1));
  if (out.length === 0) throw new TrainerOptionError('text', `the training text has ${ids.length} tokens; at least ${T + 1} are needed`);
  return out;
}

/**
 * Train `m.model` on `text` for `o.steps` steps (or until `shouldStop()` is true); `onStep` gets
 * each step's loss (1-based step). Returns the losses.
 */
export async function trainOnText(m: TextTrainee, text: string, o: TextTraining, onStep: (step: number, loss: number) => void, shouldStop: () => boolean = () => false): Promise<number[]> {
  const windows = windowsOf(m, text, o.seqLength);
  const optimizer = new AdEMAMix(m.model.parameters(), { lr: o.lr });
  const scheduler = new LrScheduler(constantSchedule(o.lr));
  const losses: number[] = [];
  for (let s = 1; s <= o.steps && !shouldStop(); s++) {
    const rows = Array.from({ length: o.batchSize }, (_, i) => windows[((s - 1) * o.batchSize + i) % windows.length]!);
    const batch = collateLm(rows.map((r) => ({ tokens: r.slice(0, -1), labels: r.slice(1), lossMask: r.slice(1).map(() => 1) })));
    const r = trainStep({ params: m.model.parameters(), optimizer, scheduler, microBatches: [batch], weightOf: (b) => b.keptTokens, loss: (b, n) => causalLmLoss(m.model, b, { normalizer: n }), clip: 1, step: s });
    losses.push(r.loss);
    onStep(s, r.loss);
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
  return losses;
}

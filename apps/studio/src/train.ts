// Training in the tab: the text is tokenized and cut into windows of T + 1 tokens; each step takes
// the next B windows (round robin) and runs the shared step logic of @apertus/trainer (AdEMAMix,
// clipping 1.0, token-mean loss). Pretraining a fresh tiny model and fine-tuning a loaded one are
// the same loop. Each step yields to the page so the loss plot updates while training runs.

import { AdEMAMix, constantSchedule, LrScheduler } from '@apertus/ademamix';
import { causalLmLoss, collateLm, trainStep } from '@apertus/trainer';
import type { StudioModel } from './model-source';

/** Settings of a training run in the tab. */
export interface TabTraining {
  steps: number;
  batchSize: number;
  seqLength: number;
  lr: number;
}

/** The windows of T + 1 tokens that `text` gives (an error when it is too short for one). */
export function windowsOf(m: StudioModel, text: string, T: number): number[][] {
  const ids = m.tokenizer.encode(text).ids;
  const out: number[][] = [];
  for (let i = 0; i + T + 1 <= ids.length; i += T) out.push(ids.slice(i, i + T + 1));
  if (out.length === 0) throw new Error(`the training text has ${ids.length} tokens; at least ${T + 1} are needed`);
  return out;
}

/** Train `m.model` on `text`; `onStep` gets each step's loss (1-based step). */
export async function trainOnText(m: StudioModel, text: string, o: TabTraining, onStep: (step: number, loss: number) => void, shouldStop: () => boolean = () => false): Promise<number[]> {
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

// PEFT's merge_and_unload: a LoRA adapter folded into the weights of a new model.
import type { Tensor } from '@apertus/tensor';
import { AdapterError } from './errors';
import { checkTable, moduleOf, type LoraAdapter } from './lora';
import { ApertusModel } from './model';

/**
 * A new model whose adapted projections are W + s·B·A and whose token tables carry the trained
 * rows (PEFT's `merge_and_unload`): it computes what the base model with the adapter enabled
 * computes, without the adapter. Every other tensor is shared with `model`; `model` itself is
 * unchanged.
 */
export function mergeAdapter(model: ApertusModel, adapter: LoraAdapter): ApertusModel {
  for (const [m, { indices }] of adapter.tokens) checkTable(m, m, indices, model.config);
  for (const m of [...adapter.modules.keys(), ...adapter.tokens.keys()]) if (!model.params.has(`${m}.weight`)) throw new AdapterError(m, 'the model has no such weight');
  const params = new Map<string, Tensor>();
  for (const [name, w] of model.params) {
    const merged = adapter.mergeWeight(moduleOf(name), w);
    if (merged !== w) { merged.name = name; if (w.requiresGrad) merged.requireGrad(); }
    params.set(name, merged);
  }
  const out = new ApertusModel(model.config, params);
  out.layout = model.layout;
  return out;
}

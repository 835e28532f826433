// Serialisable optimizer state. Format-agnostic: tensors are plain typed arrays with a dtype tag
// and a shape (write them with @apertus/safetensors under the same names), everything else is
// JSON-able metadata.

import type { FloatArray } from './types';

/** A JSON value (what `JSON.stringify` / `JSON.parse` round-trip exactly). */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** Dtype tag of a state tensor: `F32` ↔ Float32Array, `F64` ↔ Float64Array (safetensors names). */
export type StateDtype = 'F32' | 'F64';

/** One state buffer, e.g. `exp_avg_slow.<param name>`. `data` is a copy, owned by the state dict. */
export interface StateTensor {
  /** Element type of `data`. */
  readonly dtype: StateDtype;
  /** Same shape as the parameter it belongs to. */
  readonly shape: readonly number[];
  /** Row-major values. */
  readonly data: FloatArray;
}

/** One parameter group as stored in {@link OptimizerStateMeta}. */
export interface StateGroupMeta {
  /** Group name (`decay`, `no_decay`, or the caller's names). */
  readonly name: string;
  /** Parameter names in the group, in order. */
  readonly params: readonly string[];
  /** The group's hyperparameters (current lr included). */
  readonly hyperparameters: { readonly [key: string]: JsonValue };
}

/** JSON-able part of an optimizer state dict. */
export interface OptimizerStateMeta {
  /** Format marker. */
  readonly format: 'apertus-optimizer';
  /** Format version. */
  readonly version: 1;
  /** Which optimizer wrote it (`AdEMAMix` or `AdamW`). */
  readonly optimizer: string;
  /** Groups, their members and hyperparameters. */
  readonly groups: readonly StateGroupMeta[];
  /** Per-parameter step counts (parameters that never stepped are omitted). */
  readonly steps: { readonly [param: string]: number };
}

/**
 * A complete optimizer state: `tensors` named `<buffer>.<param name>` (e.g.
 * `exp_avg_fast.model.layers.0.self_attn.q_proj.weight`), and JSON metadata.
 */
export interface OptimizerStateDict {
  /** State buffers by name. */
  readonly tensors: { readonly [name: string]: StateTensor };
  /** Step counts, hyperparameters and group membership. */
  readonly meta: OptimizerStateMeta;
}

/** Dtype tag for a typed array. */
export function dtypeOf(a: FloatArray): StateDtype {
  return a instanceof Float32Array ? 'F32' : 'F64';
}

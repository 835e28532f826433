// Shared machinery of AdEMAMix and AdamW: parameter groups, per-parameter state, step(),
// zeroGrad(), and the state dict. Subclasses provide the hyperparameter validation and the
// per-element update kernels.

import { deviceStorage, readBack, Tensor } from '@apertus/tensor';
import { OptimizerError } from './errors';
import { splitWeightDecay, isNoWeightDecay } from './param-groups';
import { dtypeOf } from './state-dict';
import type { JsonValue, OptimizerStateDict, OptimizerStateMeta, StateTensor } from './state-dict';
import type { FloatArray, NamedParams, OptimParam } from './types';
import type { Arithmetic } from './arithmetic';

export type { Arithmetic, ArithmeticOptions } from './arithmetic';

/** Hyperparameters every optimizer group has. */
export interface BaseHyperparameters {
  /** Learning rate (≥ 0); set per step by a schedule through `step(lr)` or `setLr`. */
  lr: number;
  /** Decoupled weight decay λ (≥ 0), applied as `θ ← θ − lr·λ·θ`. */
  weightDecay: number;
}

/** An explicit parameter group: its parameters plus hyperparameters overriding the defaults. */
export type ParamGroupInput<H> = {
  /** Group name (default `group<i>`). */
  readonly name?: string;
  /** The group's named parameters. */
  readonly params: NamedParams;
} & Partial<H>;

/** Options about how named parameters are grouped. */
export interface GroupingOptions {
  /**
   * When given plain named parameters, split them into a `decay` group and a `no_decay` group
   * (weight decay 0) as Megatron does (default `true`). Ignored for explicit groups.
   */
  readonly splitWeightDecay?: boolean;
  /** Which parameters get no weight decay (default {@link isNoWeightDecay}). */
  readonly noWeightDecay?: (name: string, shape: readonly number[]) => boolean;
}

/** A parameter group of a constructed optimizer. */
export interface OptimizerGroup<H> {
  /** Group name. */
  readonly name: string;
  /** Named parameters, in order. */
  readonly params: ReadonlyArray<readonly [string, OptimParam]>;
  /** Current hyperparameters (change the lr with `setLr` / `step(lr)`). */
  readonly hyperparameters: Readonly<H>;
}

/** Optimizer state of one parameter. */
export interface ParamState {
  /** Number of updates applied to this parameter (1-based step of the last update). */
  step: number;
  /** State buffers by name (`exp_avg_fast`, `exp_avg_slow`, `exp_avg_sq`, `exp_avg`), same dtype as the parameter. */
  readonly buffers: Record<string, FloatArray>;
}

interface MutableGroup<H> {
  name: string;
  params: Array<readonly [string, OptimParam]>;
  hyperparameters: H;
}

/** The arrays one parameter is updated through, and where. */
interface UpdateArrays {
  readonly data: FloatArray;
  readonly grad: unknown;
}

/**
 * Where `p` (with a gradient) is updated: where the device in use keeps tensor storage and both
 * `p` and its gradient are tensors there, their device storage (no readback); else on the host,
 * through `data` and `grad.data`.
 */
function arraysOf(p: OptimParam): UpdateArrays {
  const data = deviceStorage(p);
  const grad = p.grad === null ? null : deviceStorage(p.grad);
  if (data !== null && grad !== null) return { data, grad };
  return { data: p.data, grad: p.grad?.data };
}

function isGroupList<H>(x: NamedParams | readonly ParamGroupInput<H>[]): x is readonly ParamGroupInput<H>[] {
  if (!Array.isArray(x) || x.length === 0) return false;
  const first: unknown = x[0];
  return typeof first === 'object' && first !== null && !Array.isArray(first) && 'params' in first;
}

function numel(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

function checkFiniteAtLeast(value: unknown, min: number, field: string, group: string): void {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min) {
    throw new OptimizerError('InvalidHyperparameter', `group "${group}": ${field} must be a finite number ≥ ${min}, got ${String(value)}`, { field });
  }
}

/**
 * Base class of the optimizers: holds the parameter groups and per-parameter state and drives
 * `step()`. Math happens in the subclasses' `updateParam`.
 */
export abstract class Optimizer<H extends BaseHyperparameters> {
  /** Name written into state dicts (`AdEMAMix`, `AdamW`). */
  readonly kind: string;
  /** How updates are computed (see {@link Arithmetic}). */
  protected arithmetic: Arithmetic = 'torch-exact';
  private readonly _groups: MutableGroup<H>[];
  private readonly state = new Map<string, ParamState>();

  /**
   * @param kind - optimizer name stored in state dicts
   * @param params - named parameters (split into decay / no-decay groups) or explicit groups
   * @param defaults - hyperparameters of every group unless overridden
   * @param grouping - how named parameters are split
   */
  protected constructor(
    kind: string,
    params: NamedParams | readonly ParamGroupInput<H>[],
    defaults: H,
    grouping: GroupingOptions = {},
  ) {
    this.kind = kind;
    const groups: MutableGroup<H>[] = [];
    if (isGroupList(params)) {
      params.forEach((g, i) => {
        const { name, params: members, ...overrides } = g;
        const defined = Object.fromEntries(Object.entries(overrides).filter(([, v]) => v !== undefined));
        const hyperparameters = { ...defaults, ...(defined as Partial<H>) } as H;
        groups.push({ name: name ?? `group${i}`, params: [...members], hyperparameters });
      });
    } else if (grouping.splitWeightDecay === false) {
      groups.push({ name: 'all', params: [...params], hyperparameters: { ...defaults } });
    } else {
      const split = splitWeightDecay(params, grouping.noWeightDecay ?? isNoWeightDecay);
      if (split.decay.length > 0) groups.push({ name: 'decay', params: split.decay, hyperparameters: { ...defaults } });
      if (split.noDecay.length > 0) groups.push({ name: 'no_decay', params: split.noDecay, hyperparameters: { ...defaults, weightDecay: 0 } });
    }
    if (groups.every((g) => g.params.length === 0)) {
      throw new OptimizerError('InvalidParams', `${kind}: no parameters to optimize`);
    }
    const names = new Set<string>();
    const buffers = new Set<FloatArray>();
    const groupNames = new Set<string>();
    for (const g of groups) {
      if (groupNames.has(g.name)) throw new OptimizerError('InvalidParams', `${kind}: duplicate group name "${g.name}"`);
      groupNames.add(g.name);
      this.validateHyperparameters(g.hyperparameters, g.name);
      for (const [name, p] of g.params) {
        if (names.has(name)) throw new OptimizerError('InvalidParams', `${kind}: parameter "${name}" is listed twice`, { param: name });
        if (buffers.has(p.data)) throw new OptimizerError('InvalidParams', `${kind}: parameter "${name}" shares its data with another parameter`, { param: name });
        if (!(p.data instanceof Float32Array || p.data instanceof Float64Array)) {
          throw new OptimizerError('InvalidParams', `${kind}: parameter "${name}" data must be a Float32Array or Float64Array`, { param: name });
        }
        if (numel(p.shape) !== p.data.length) {
          throw new OptimizerError('ShapeMismatch', `${kind}: parameter "${name}" has shape [${p.shape.join(', ')}] but ${p.data.length} values`, { param: name });
        }
        names.add(name);
        buffers.add(p.data);
      }
    }
    this._groups = groups;
  }

  /** Parameter groups with their current hyperparameters. */
  get groups(): ReadonlyArray<OptimizerGroup<H>> {
    return this._groups;
  }

  /** Names of the state buffers a parameter of a group with these hyperparameters keeps. */
  protected abstract bufferNames(h: Readonly<H>): readonly string[];

  /** Throw an `InvalidHyperparameter` error if `h` is out of range. Subclasses call `super` first. */
  protected validateHyperparameters(h: Readonly<H>, group: string): void {
    checkFiniteAtLeast(h.lr, 0, 'lr', group);
    checkFiniteAtLeast(h.weightDecay, 0, 'weightDecay', group);
  }

  /** Convert group hyperparameters to JSON for the state dict. */
  protected abstract hyperparametersToJson(h: Readonly<H>): { [key: string]: JsonValue };

  /** Parse (and validate) group hyperparameters read from a state dict. */
  protected abstract hyperparametersFromJson(json: { readonly [key: string]: JsonValue }, group: string): H;

  /**
   * Apply one update to one parameter. `state.step` has already been incremented (1-based).
   * The per-step scalars are computed in float64 and the update runs on the current device through
   * the kernel registry (on a device that keeps tensor storage, `data` and `grad` are that storage,
   * see `deviceStorage`); the math follows the precision of `data` and the optimizer's arithmetic.
   */
  protected abstract updateParam(data: FloatArray, grad: FloatArray, state: ParamState, h: Readonly<H>): void;

  /**
   * Set the learning rate of every group (or of the named group).
   * @throws OptimizerError `InvalidHyperparameter` when `lr` is negative or not finite
   */
  setLr(lr: number, group?: string): void {
    checkFiniteAtLeast(lr, 0, 'lr', group ?? '*');
    const targets = group === undefined ? this._groups : this._groups.filter((g) => g.name === group);
    if (targets.length === 0) throw new OptimizerError('InvalidParams', `${this.kind}: no group named "${group}"`, { field: 'group' });
    for (const g of targets) g.hyperparameters.lr = lr;
  }

  /**
   * Apply one optimizer step to every parameter that has a gradient.
   * @param lr - when given, the learning rate of every group for this and later steps (a schedule's value)
   * @throws OptimizerError `InvalidHyperparameter` for a bad lr, `ShapeMismatch` when a gradient's length
   *   differs from its parameter's; nothing is modified in either case
   */
  step(lr?: number): void {
    if (lr !== undefined) checkFiniteAtLeast(lr, 0, 'lr', '*');
    const updates: Array<{ name: string; h: H; p: OptimParam; arrays: UpdateArrays }> = [];
    for (const g of this._groups) {
      for (const [name, p] of g.params) {
        if (p.grad === null) continue;
        const arrays = arraysOf(p);
        const gd: unknown = arrays.grad;
        if (!(gd instanceof Float32Array || gd instanceof Float64Array)) {
          throw new OptimizerError('ShapeMismatch', `${this.kind}: gradient of "${name}" must be a Float32Array or Float64Array`, { param: name });
        }
        if (gd.length !== arrays.data.length) {
          throw new OptimizerError('ShapeMismatch', `${this.kind}: gradient of "${name}" has ${gd.length} values, parameter has ${arrays.data.length} (shape [${p.shape.join(', ')}])`, { param: name });
        }
        updates.push({ name, h: g.hyperparameters, p, arrays });
      }
    }
    if (lr !== undefined) for (const g of this._groups) g.hyperparameters.lr = lr;
    for (const { name, h, p, arrays } of updates) {
      const st = this.stateOf(name, p, h);
      st.step += 1;
      this.updateParam(arrays.data, arrays.grad as FloatArray, st, h);
    }
  }

  /**
   * Zero every existing gradient: on the host its buffer is filled with zeros; a gradient on a
   * device is dropped instead (`grad = null`, the next backward pass creates it there), so it is
   * never read back, and its storage released at once (a gradient taken before `zeroGrad` must
   * not be used after it). Parameters whose `grad` is `null` are left alone.
   */
  zeroGrad(): void {
    for (const g of this._groups) {
      for (const [, p] of g.params) {
        if (p.grad === null) continue;
        // Released at once: its device buffer goes back to the pool for the next backward, not when the garbage collector finds it.
        if (p.grad instanceof Tensor && deviceStorage(p.grad) !== null) { p.grad.dispose(); p.grad = null; }
        else (p.grad.data as FloatArray).fill(0);
      }
    }
  }

  /** The state of a parameter (undefined before its first update). Buffers are live views, read back from a device first. */
  paramState(name: string): Readonly<ParamState> | undefined {
    const st = this.state.get(name);
    if (st !== undefined) for (const b of Object.values(st.buffers)) readBack(b);
    return st;
  }

  private stateOf(name: string, p: OptimParam, h: Readonly<H>): ParamState {
    let st = this.state.get(name);
    if (st === undefined) {
      st = { step: 0, buffers: {} };
      this.state.set(name, st);
    }
    for (const b of this.bufferNames(h)) {
      if (st.buffers[b] === undefined) st.buffers[b] = p.data instanceof Float32Array ? new Float32Array(p.data.length) : new Float64Array(p.data.length);
    }
    return st;
  }

  /**
   * Snapshot of the whole optimizer state (copies). Tensors are named `<buffer>.<param name>`;
   * `meta` holds step counts, group membership and hyperparameters and is JSON-serialisable.
   */
  stateDict(): OptimizerStateDict {
    const tensors: Record<string, StateTensor> = {};
    const steps: Record<string, number> = {};
    for (const g of this._groups) {
      for (const [name, p] of g.params) {
        const st = this.state.get(name);
        if (st === undefined || st.step === 0) continue;
        steps[name] = st.step;
        for (const b of this.bufferNames(g.hyperparameters)) {
          const data = st.buffers[b];
          if (data === undefined) continue;
          readBack(data, { readOnly: true });
          tensors[`${b}.${name}`] = { dtype: dtypeOf(data), shape: [...p.shape], data: data.slice() };
        }
      }
    }
    const meta: OptimizerStateMeta = {
      format: 'apertus-optimizer',
      version: 1,
      optimizer: this.kind,
      groups: this._groups.map((g) => ({
        name: g.name,
        params: g.params.map(([n]) => n),
        hyperparameters: this.hyperparametersToJson(g.hyperparameters),
      })),
      steps,
    };
    return { tensors, meta };
  }

  /**
   * Restore a state written by {@link stateDict} (of an optimizer of the same kind over the same
   * parameter names and groups). Validates everything first; on error nothing changes.
   * @throws OptimizerError `InvalidState` naming the missing, extra or mismatched entry
   */
  loadStateDict(sd: OptimizerStateDict): void {
    const bad = (entry: string, msg: string): OptimizerError => new OptimizerError('InvalidState', `${this.kind} state: ${msg}`, { entry });
    const meta = sd?.meta as Partial<OptimizerStateMeta> | undefined;
    if (meta === undefined || meta === null || typeof meta !== 'object') throw bad('meta', 'missing meta');
    if (meta.format !== 'apertus-optimizer' || meta.version !== 1) throw bad('meta.format', `unknown format ${String(meta.format)} v${String(meta.version)}`);
    if (meta.optimizer !== this.kind) throw bad('meta.optimizer', `written by ${String(meta.optimizer)}, cannot load into ${this.kind}`);
    if (!Array.isArray(meta.groups) || meta.groups.length !== this._groups.length) {
      throw bad('meta.groups', `expected ${this._groups.length} groups, got ${Array.isArray(meta.groups) ? meta.groups.length : 'none'}`);
    }
    const steps = meta.steps;
    if (steps === undefined || steps === null || typeof steps !== 'object') throw bad('meta.steps', 'missing step counts');
    const tensors = sd.tensors;
    if (tensors === undefined || tensors === null || typeof tensors !== 'object') throw bad('tensors', 'missing tensors');

    const hypers: H[] = [];
    const newState = new Map<string, ParamState>();
    const used = new Set<string>();
    const known = new Set<string>();
    this._groups.forEach((g, gi) => {
      const mg = meta.groups![gi]!;
      if (mg.name !== g.name) throw bad(`meta.groups[${gi}].name`, `group ${gi} is "${String(mg.name)}", expected "${g.name}"`);
      const names = g.params.map(([n]) => n);
      if (!Array.isArray(mg.params) || mg.params.length !== names.length || mg.params.some((n, i) => n !== names[i])) {
        throw bad(`meta.groups[${gi}].params`, `members of group "${g.name}" differ from the optimizer's parameters`);
      }
      if (mg.hyperparameters === null || typeof mg.hyperparameters !== 'object') throw bad(`meta.groups[${gi}].hyperparameters`, 'missing hyperparameters');
      let h: H;
      try {
        h = this.hyperparametersFromJson(mg.hyperparameters, g.name);
        this.validateHyperparameters(h, g.name);
      } catch (e) {
        if (e instanceof OptimizerError) throw new OptimizerError('InvalidState', `${this.kind} state: group "${g.name}": ${e.message}`, { entry: `meta.groups[${gi}].hyperparameters`, ...(e.field !== undefined ? { field: e.field } : {}) });
        throw e;
      }
      hypers.push(h);
      for (const [name, p] of g.params) {
        known.add(name);
        const step = steps[name];
        if (step === undefined || step === 0) continue;
        if (typeof step !== 'number' || !Number.isInteger(step) || step < 0) throw bad(`meta.steps.${name}`, `step of "${name}" must be a non-negative integer, got ${String(step)}`);
        const buffers: Record<string, FloatArray> = {};
        for (const b of this.bufferNames(h)) {
          const key = `${b}.${name}`;
          const t = tensors[key];
          if (t === undefined) throw bad(key, `missing state tensor "${key}"`);
          const want = dtypeOf(p.data);
          const okData = want === 'F32' ? t.data instanceof Float32Array : t.data instanceof Float64Array;
          if (t.dtype !== want || !okData) throw bad(key, `"${key}" has dtype ${String(t.dtype)}, parameter "${name}" needs ${want}`);
          if (!Array.isArray(t.shape) || t.shape.length !== p.shape.length || t.shape.some((d, i) => d !== p.shape[i]) || t.data.length !== p.data.length) {
            throw bad(key, `"${key}" has shape [${String(t.shape)}] (${t.data.length} values), parameter "${name}" has shape [${p.shape.join(', ')}]`);
          }
          buffers[b] = t.data.slice();
          used.add(key);
        }
        newState.set(name, { step, buffers });
      }
    });
    for (const key of Object.keys(steps)) if (!known.has(key)) throw bad(`meta.steps.${key}`, `step count for unknown parameter "${key}"`);
    for (const key of Object.keys(tensors)) if (!used.has(key)) throw bad(key, `unexpected state tensor "${key}"`);

    this._groups.forEach((g, i) => {
      g.hyperparameters = hypers[i]!;
    });
    this.state.clear();
    for (const [k, v] of newState) this.state.set(k, v);
  }
}

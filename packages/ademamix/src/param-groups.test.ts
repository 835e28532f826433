import { describe, expect, it } from 'vitest';
import { AdEMAMix } from './ademamix';
import { isNoWeightDecay, splitWeightDecay } from './param-groups';
import { makeParam } from '../test/helpers';

describe('weight-decay groups (training-recipe.md §1.3)', () => {
  it('classifies the Apertus parameter names', () => {
    const cases: Array<[string, number[], boolean]> = [
      ['model.embed_tokens.weight', [131072, 4096], false],
      ['model.layers.0.self_attn.q_proj.weight', [4096, 4096], false],
      ['model.layers.0.mlp.up_proj.weight', [21504, 4096], false],
      ['lm_head.weight', [131072, 4096], false],
      ['model.layers.0.attention_layernorm.weight', [4096], true],
      ['model.layers.0.self_attn.q_norm.weight', [128], true],
      ['model.norm.weight', [4096], true],
      ['model.layers.0.mlp.act_fn.alpha_p', [1], true],
      ['model.layers.0.mlp.act_fn.alpha_n', [1], true],
      ['model.layers.0.mlp.act_fn.beta', [], true],
      ['model.layers.0.mlp.act_fn.eps', [], true],
      ['proj.bias', [8, 8], true], // a (hypothetical) 2-D bias is still excluded by name
      ['decoder.layers.0.mlp.activation_func.alpha_p', [2, 1], true], // Megatron's substring rule
      ['decoder.layers.0.mlp.activation_func.power', [2, 2], true],
      ['model.layers.0.mlp.act_fn.beta_like.weight', [4, 4], false],
    ];
    for (const [name, shape, none] of cases) expect([name, isNoWeightDecay(name, shape)]).toEqual([name, none]);
  });

  it('splits named parameters in order and the optimizer uses weight decay 0 for the no-decay group', () => {
    const params: Array<[string, ReturnType<typeof makeParam>]> = [
      ['a.weight', makeParam([1, 2, 3, 4], Float64Array, [2, 2])],
      ['a.bias', makeParam([1, 2])],
      ['norm.weight', makeParam([1, 2])],
      ['b.weight', makeParam([1, 2, 3, 4], Float64Array, [2, 2])],
    ];
    const split = splitWeightDecay(params);
    expect(split.decay.map(([n]) => n)).toEqual(['a.weight', 'b.weight']);
    expect(split.noDecay.map(([n]) => n)).toEqual(['a.bias', 'norm.weight']);
    const opt = new AdEMAMix(params, { weightDecay: 0.1, lr: 0.5 });
    expect(opt.groups.map((g) => [g.name, g.hyperparameters.weightDecay, g.hyperparameters.lr])).toEqual([
      ['decay', 0.1, 0.5],
      ['no_decay', 0, 0.5],
    ]);
    // zero gradients: decayed weights shrink by lr·λ, the others stay
    for (const [, p] of params) p.grad.data.fill(0);
    opt.step();
    expect([...params[0]![1].data]).toEqual([1, 2, 3, 4].map((v) => v + -0.5 * (0.1 * v)));
    expect([...params[1]![1].data]).toEqual([1, 2]);
  });

  it('explicit groups override the defaults; splitWeightDecay: false keeps one group', () => {
    const a = makeParam([1, 2]);
    const b = makeParam([3, 4]);
    const opt = new AdEMAMix([{ name: 'slow', params: [['a', a]], lr: 0.01 }, { params: [['b', b]], weightDecay: 0.3 }], { lr: 1, weightDecay: 0.05 });
    expect(opt.groups.map((g) => [g.name, g.hyperparameters.lr, g.hyperparameters.weightDecay])).toEqual([
      ['slow', 0.01, 0.05],
      ['group1', 1, 0.3],
    ]);
    const one = new AdEMAMix([['a', makeParam([1, 2])]], { splitWeightDecay: false, weightDecay: 0.2 });
    expect(one.groups.map((g) => [g.name, g.hyperparameters.weightDecay])).toEqual([['all', 0.2]]);
  });
});

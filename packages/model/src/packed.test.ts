import { noGrad, sgemmReference, Tensor } from '@apertus/tensor';
import { describe, expect, test } from 'vitest';
import { presetConfig } from './config';
import { ModelError } from './errors';
import { step } from './infer';
import { KVCache } from './kv-cache';
import { ApertusModel } from './model';
import { isPacked, type PackedMatrix } from './packed';
import { parameterShapes } from './params';

/** A packed matrix that stores W as float64 rows and multiplies with a double-accumulating loop. */
class RowMatrix implements PackedMatrix {
  readonly format = 'test-f64';
  readonly shape: readonly [number, number];
  calls = 0;
  constructor(private readonly w: Float64Array, shape: readonly number[]) { this.shape = [shape[0]!, shape[1]!]; }
  get bytes(): number { return this.w.byteLength; }
  matmulT(x: Float32Array, M: number, y: Float32Array): void {
    this.calls++;
    sgemmReference({ transA: false, transB: true, M, N: this.shape[0], K: this.shape[1], A: x, B: Float32Array.from(this.w), C: y });
  }
  rows(ids: Int32Array, out: Float32Array): void {
    const K = this.shape[1];
    ids.forEach((id, i) => out.set(Float32Array.from(this.w.subarray(id * K, (id + 1) * K)), i * K));
  }
}

const config = presetConfig('tiny', { vocab_size: 40, hidden_size: 32, intermediate_size: 48, num_hidden_layers: 2, num_attention_heads: 4, num_key_value_heads: 2, head_dim: 8, max_position_embeddings: 32, initializer_range: 0.3 });
const dense = ApertusModel.init(config, 11);

/** The same model with every matrix moved to `packed`. */
function packedCopy(): { model: ApertusModel; mats: RowMatrix[] } {
  const params = new Map(dense.params), packed = new Map<string, PackedMatrix>(), mats: RowMatrix[] = [];
  for (const [name, shape] of parameterShapes(config)) {
    if (shape.length !== 2) continue;
    const m = new RowMatrix(Float64Array.from(dense.params.get(name)!.toFloat32()), shape);
    mats.push(m);
    packed.set(name, m);
    params.delete(name);
  }
  return { model: new ApertusModel(config, params, packed), mats };
}

describe('packed weights', () => {
  test('cached inference with packed matrices matches the tensor model', () => {
    const { model, mats } = packedCopy();
    expect(isPacked(model.lmHead) && isPacked(model.embedTokens) && isPacked(model.layers[1]!.up_proj)).toBe(true);
    const prompt = [1, 5, 9, 13, 2, 7];
    const a = new KVCache(config, 16), b = new KVCache(config, 16);
    const ref = step(dense, [{ cache: a, tokens: prompt }]), got = step(model, [{ cache: b, tokens: prompt }]);
    for (let i = 0; i < ref.length; i++) expect(got[i]).toBeCloseTo(ref[i]!, 4);
    const ref2 = step(dense, [{ cache: a, tokens: [3] }]), got2 = step(model, [{ cache: b, tokens: [3] }]);
    for (let i = 0; i < ref2.length; i++) expect(got2[i]).toBeCloseTo(ref2[i]!, 4);
    // Every matrix but the embedding (read by rows) multiplied through its own kernel.
    expect(mats.filter((m) => m.calls > 0).length).toBe(mats.length - 1);
  });

  test('the full forward accepts packed matrices; the fused loss refuses a packed head', () => {
    const { model } = packedCopy();
    const ids = Tensor.ints([1, 4, 8, 2], [1, 4]);
    const ref = noGrad(() => dense.forward(ids)).data, got = noGrad(() => model.forward(ids)).data;
    for (let i = 0; i < ref.length; i++) expect(got[i]).toBeCloseTo(ref[i]!, 4);
    expect(() => model.loss(ids, Tensor.ints([4, 8, 2, -100], [1, 4]))).toThrow(ModelError);
  });

  test('a packed matrix of the wrong shape is named', () => {
    const params = new Map(dense.params);
    params.delete('model.layers.0.mlp.up_proj.weight');
    const packed = new Map([['model.layers.0.mlp.up_proj.weight', new RowMatrix(new Float64Array(4), [2, 2])]]);
    expect(() => new ApertusModel(config, params, packed)).toThrow(/up_proj.*shape \[2,2\]/);
  });
});

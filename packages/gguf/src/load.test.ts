// HF model → our GGUF → loadGguf: the loaded model computes what the source model computes on the
// same (stored) weights, the tokenizer survives, and bad files give typed errors.
import path from 'node:path';
import { ApertusModel, hiddenStates, KVCache, step } from '@apertus/model';
import { isStoredWeight, sgemmReference, Tensor } from '@apertus/tensor';
import { Tokenizer } from '@apertus/tokenizer';
import { afterAll, describe, expect, it } from 'vitest';
import { GgufArchitectureError, GgufMetadataError } from './errors';
import { loadGguf, openGgufFile } from './open';
import { convertCheckpoint, writeModelGguf, type QuantizeType } from './convert';
import { dequantize, quantize } from './quant/index';
import { roundActivations } from './activations.test-helper';
import { GGML_TYPES, type GgmlTypeName } from './types';
import { CONFIG, fixtureModel, fixtureTokenizer, rewrite, tempDir, writeFixtureCheckpoint } from './fixture.test-helper';

const tmp = tempDir();
afterAll(() => tmp.remove());
const source = fixtureModel();
const tok = fixtureTokenizer();
const prompt = [1, 1100, 1200, 1300, 1050, 1399, 1256, 1257];

/** x·Wᵀ as llama.cpp computes it on stored weights: the input rounded as it rounds it, a double-accumulating loop over W. */
function refProduct(type: GgmlTypeName, x: Float32Array, w: Tensor): Float32Array {
  const [N, K] = w.shape as [number, number], M = x.length / K, y = new Float32Array(M * N);
  sgemmReference({ transA: false, transB: true, M, N, K, A: roundActivations(GGML_TYPES[type], x), B: w.toFloat32(), C: y });
  return y;
}

/** The source model with every matrix replaced by the float32 values `type` stores, its products by {@link refProduct}. */
function storedModel(type: 'F32' | 'BF16' | 'Q8_0' | 'Q4_K'): ApertusModel {
  const params = new Map(source.params);
  for (const [name, t] of source.params) {
    if (t.rank !== 2 || type === 'F32') continue;
    const x = t.toFloat32();
    params.set(name, Tensor.from(dequantize(GGML_TYPES[type], quantize(type, x), x.length), t.shape));
  }
  const model = new ApertusModel(CONFIG, params);
  if (type !== 'F32') model.projection = (x, w) => Tensor.from(refProduct(type, x.toFloat32(), w), [...x.shape.slice(0, -1), w.shape[0]!]);
  return model;
}

/** Last-token logits after a prefill and two decode steps (the head by {@link refProduct} when `type` is given). */
function run(model: ApertusModel, type?: GgmlTypeName): Float32Array[] {
  const cache = new KVCache(CONFIG, 32), H = CONFIG.hidden_size;
  return [prompt, [1301], [1302]].map((tokens) => {
    if (type === undefined) return step(model, [{ cache, tokens }]);
    const h = hiddenStates(model, { cache, tokens });
    return refProduct(type, h.subarray(h.length - H), model.lmHead);
  });
}

function relErr(a: Float32Array, b: Float32Array): number {
  let num = 0, den = 0;
  for (let i = 0; i < a.length; i++) { num = Math.max(num, Math.abs(a[i]! - b[i]!)); den = Math.max(den, Math.abs(b[i]!)); }
  return num / den;
}

function write(type: QuantizeType): string {
  const file = path.join(tmp.dir, `m.${type}.gguf`);
  writeModelGguf(source, file, { type, tokenizer: { json: tok.tokenizerJson, config: tok.tokenizerConfig } });
  return file;
}

describe('loadGguf', () => {
  for (const type of ['F32', 'BF16', 'Q8_0', 'Q4_K'] as const) {
    it(`${type}: logits match the source model's on the stored weights`, () => {
      const loaded = loadGguf(write(type));
      // EOS is the tokenizer's (tokenizer_config.json: <|assistant_end|>, 68), as llama.cpp's converter takes it.
      expect(loaded.model.config).toMatchObject({ ...CONFIG, eos_token_id: 68, initializer_range: 0.02, rope_scaling: { rope_type: 'llama3', factor: 8, low_freq_factor: 1 } });
      const matrices = [...loaded.types].filter(([n]) => !n.endsWith('norm.weight'));
      expect(matrices.length).toBe(2 + 6 * CONFIG.num_hidden_layers);
      expect(matrices.every(([, t]) => t === type)).toBe(true);
      expect([loaded.model.lmHead.dtype, isStoredWeight(loaded.model.lmHead)]).toEqual([type.toLowerCase(), true]);
      const want = run(storedModel(type), type === 'F32' ? undefined : type), got = run(loaded.model);
      // F32: equal up to summation order. The others round each product's input (see
      // activations.test-helper.ts), a step function: a float32-vs-double difference of 1e-7 in a sum
      // flips a rounded activation by one step (1/127 of its block's largest) about once in 10^5
      // roundings, and this run rounds ~4·10^4. A flip in a layer's first products moves every
      // later token; one in the last layer's MLP or the head moves that token only (seen: the
      // prefill's last row, 1.2e-2 with the Q4_K fixture). So: each step's logits within two
      // activation steps (2/127 of the largest logit), and at least one of them to 1e-5 — a
      // wrongly loaded weight is off by the weight itself in every step.
      const errs = want.map((w, i) => relErr(got[i]!, w));
      if (type === 'F32') errs.forEach((e) => expect(e).toBeLessThan(1e-5));
      else { errs.forEach((e) => expect(e).toBeLessThan(2 / 127)); expect(Math.min(...errs)).toBeLessThan(1e-5); }
    });
  }

  it('the tokenizer comes back identical', () => {
    const { tokenizer } = loadGguf(path.join(tmp.dir, 'm.F32.gguf'));
    const ours = Tokenizer.fromJSON(tok.tokenizerJson, tok.tokenizerConfig);
    for (const text of ['Grüezi mitenand, wie gaht es?', 'const x = add(2, 2); <|assistant_end|> 🇨🇭']) {
      expect(tokenizer!.encode(text).ids).toEqual(ours.encode(text).ids);
    }
  });

  it('convertCheckpoint reads an HF directory (weights and tokenizer files)', () => {
    const dir = path.join(tmp.dir, 'hf');
    writeFixtureCheckpoint(dir, source);
    const out = path.join(tmp.dir, 'conv.gguf');
    convertCheckpoint(dir, out, 'F32');
    const f = openGgufFile(out);
    expect(f.metadata.get('general.name')).toBe('hf');
    expect(f.metadata.get('tokenizer.ggml.pre')).toBe('tekken');
    expect((f.metadata.get('tokenizer.ggml.tokens') as string[]).length).toBe(CONFIG.vocab_size);
    f.close();
    // F32 stores the weights exactly: equal up to summation order.
    run(loadGguf(out).model).forEach((got, i) => expect(relErr(got, run(source)[i]!)).toBeLessThan(1e-5));
  });
});

describe('loadGguf errors', () => {
  const base = () => path.join(tmp.dir, 'm.Q8_0.gguf');
  it('an architecture other than apertus is named', () => {
    const file = rewrite(base(), path.join(tmp.dir, 'llama.gguf'), { 'general.architecture': { type: 'string', value: 'llama' } });
    expect(() => loadGguf(file)).toThrow(GgufArchitectureError);
    expect(() => loadGguf(file)).toThrow(/key "general.architecture": "llama" is not supported/);
  });

  it('metadata that disagrees with the tensor shapes names the tensor', () => {
    const file = rewrite(base(), path.join(tmp.dir, 'ff.gguf'), { 'apertus.feed_forward_length': { type: 'u32', value: 1024 } });
    expect(() => loadGguf(file)).toThrow(GgufMetadataError);
    expect(() => loadGguf(file)).toThrow(/tensor "blk.0.ffn_up.weight": shape \[512,256\] disagrees with the metadata \(expected \[1024,256\]\)/);
    const layers = rewrite(base(), path.join(tmp.dir, 'l.gguf'), { 'apertus.block_count': { type: 'u32', value: 1 }, 'xielu.alpha_p': { type: 'array', elem: 'f32', value: [1] }, 'xielu.alpha_n': { type: 'array', elem: 'f32', value: [1] }, 'xielu.beta': { type: 'array', elem: 'f32', value: [0.5] }, 'xielu.eps': { type: 'array', elem: 'f32', value: [-1e-6] } });
    expect(() => loadGguf(layers)).toThrow(/tensor "blk.1.attn_norm.weight": unexpected tensor/);
  });

  it('a missing key, a missing tensor and short xIELU arrays are named', () => {
    const noKey = rewrite(base(), path.join(tmp.dir, 'nokey.gguf'), { 'apertus.embedding_length': undefined });
    expect(() => loadGguf(noKey)).toThrow(/key "apertus.embedding_length": missing/);
    const renamed = rewrite(base(), path.join(tmp.dir, 'rn.gguf'), {}, { 'blk.1.attn_v.weight': 'blk.1.attn_vv.weight' });
    expect(() => loadGguf(renamed)).toThrow(/tensor "blk.1.attn_v.weight": missing/);
    const xielu = rewrite(base(), path.join(tmp.dir, 'x.gguf'), { 'xielu.beta': { type: 'array', elem: 'f32', value: [0.5] } });
    expect(() => loadGguf(xielu)).toThrow(/key "xielu.beta": expected 2 numbers/);
  });
});

// HF model → our GGUF → loadGguf: the loaded model computes what the source model computes on the
// same (stored) weights, the tokenizer survives, and bad files give typed errors.
import path from 'node:path';
import { ApertusModel, KVCache, step, type PackedMatrix } from '@apertus/model';
import { sgemmReference } from '@apertus/tensor';
import { Tokenizer } from '@apertus/tokenizer';
import { afterAll, describe, expect, it } from 'vitest';
import { GgufArchitectureError, GgufMetadataError } from './errors';
import { loadGguf, openGgufFile } from './open';
import { convertCheckpoint, writeModelGguf, type QuantizeType } from './convert';
import { dequantize, quantize } from './quant/index';
import { roundActivations } from './quant/activations';
import { GGML_TYPES, type GgmlTypeName } from './types';
import { CONFIG, fixtureModel, fixtureTokenizer, rewrite, tempDir, writeFixtureCheckpoint } from './fixture.test-helper';

const tmp = tempDir();
afterAll(() => tmp.remove());
const source = fixtureModel();
const tok = fixtureTokenizer();
const prompt = [1, 1100, 1200, 1300, 1050, 1399, 1256, 1257];

/** Reference product: the stored weights dequantized, the input rounded as llama.cpp does, a double-accumulating loop. */
class RefMatrix implements PackedMatrix {
  readonly format = 'reference';
  readonly shape: readonly [number, number];
  constructor(private readonly w: Float32Array, shape: readonly number[], private readonly type: GgmlTypeName) { this.shape = [shape[0]!, shape[1]!]; }
  get bytes(): number { return this.w.byteLength; }
  matmulT(x: Float32Array, M: number, y: Float32Array): void {
    sgemmReference({ transA: false, transB: true, M, N: this.shape[0], K: this.shape[1], A: roundActivations(GGML_TYPES[this.type], x), B: this.w, C: y });
  }
  rows(ids: Int32Array, out: Float32Array): void {
    const K = this.shape[1];
    ids.forEach((id, i) => out.set(this.w.subarray(id * K, (id + 1) * K), i * K));
  }
}

/** The source model with every matrix replaced by what `type` stores, multiplied by {@link RefMatrix}. */
function storedModel(type: 'F32' | 'BF16' | 'Q8_0' | 'Q4_K'): ApertusModel {
  const params = new Map(source.params), packed = new Map<string, PackedMatrix>();
  for (const [name, t] of source.params) {
    if (t.rank !== 2 || type === 'F32') continue;
    const x = t.toFloat32();
    packed.set(name, new RefMatrix(dequantize(GGML_TYPES[type], quantize(type, x), x.length), t.shape, type));
    params.delete(name);
  }
  return new ApertusModel(CONFIG, params, packed);
}

/** Last-token logits after a prefill and two decode steps. */
function run(model: ApertusModel): Float32Array[] {
  const cache = new KVCache(CONFIG, 32);
  return [step(model, [{ cache, tokens: prompt }]), step(model, [{ cache, tokens: [1301] }]), step(model, [{ cache, tokens: [1302] }])];
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
      if (type === 'Q8_0' || type === 'Q4_K') expect((loaded.model.lmHead as PackedMatrix).format).toBe(type);
      const want = run(storedModel(type)), got = run(loaded.model);
      // F32: equal up to summation order. The others round each product's input (see
      // quant/activations.ts), a step function: a float32-vs-double difference of 1e-7 in a sum
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

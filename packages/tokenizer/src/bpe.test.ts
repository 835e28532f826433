// The BPE model: the two merge loops agree, ignore_merges / unknown-byte handling match the Rust
// reference on small hand-built vocabularies, both merge formats load to the same model.

import fc from 'fast-check';
import rustTokenizers from 'tokenizers';
import { beforeAll, describe, expect, it } from 'vitest';
import { BYTE_TO_CHAR } from './byte-level.js';
import { llama3Json, udhrCorpus } from './fixtures.test-helper.js';
import { Tokenizer, type TokenizerJson } from './tokenizer.js';

let llama3: Tokenizer;
beforeAll(() => {
  llama3 = Tokenizer.fromJSON(llama3Json());
});

/** A byte-level tokenizer.json around a hand-written BPE model. */
function tiny(model: Partial<TokenizerJson['model']> & Pick<TokenizerJson['model'], 'vocab' | 'merges'>): string {
  const json: TokenizerJson = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: [],
    normalizer: null,
    pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
    post_processor: null,
    decoder: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      ...model,
    },
  };
  return JSON.stringify(json);
}

async function rustIds(json: string, text: string): Promise<number[]> {
  return (await rustTokenizers.Tokenizer.fromString(json).encode(text)).getIds();
}

describe('merge loops', () => {
  it('the linear scan (short words) and the heap (long words) give the same tokens', () => {
    const encoder = new TextEncoder();
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 60 }), (text) => {
        const bytes = encoder.encode(text);
        expect(llama3.model.mergeForTest(bytes, 'linear')).toEqual(llama3.model.mergeForTest(bytes, 'heap'));
      }),
      { numRuns: 500, seed: 2 },
    );
    for (const { text } of udhrCorpus().slice(0, 60)) {
      const bytes = encoder.encode(text.slice(0, 200));
      expect(llama3.model.mergeForTest(bytes, 'linear')).toEqual(llama3.model.mergeForTest(bytes, 'heap'));
    }
  });

  it('merges the lowest-rank pair first, leftmost on ties (hand-computed)', async () => {
    // Ranks: "b c" (0) before "a b" (1): "abc" -> a + bc, not ab + c. "aaa": leftmost "a a" first -> aa + a.
    const json = tiny({ vocab: { a: 0, b: 1, c: 2, bc: 3, ab: 4, aa: 5 }, merges: ['b c', 'a b', 'a a'] });
    const t = Tokenizer.fromJSON(json);
    expect(t.encodeIds('abc')).toEqual([0, 3]);
    expect(t.encodeIds('aaa')).toEqual([5, 0]);
    expect(t.encodeIds('abab')).toEqual([4, 4]);
    for (const text of ['abc', 'aaa', 'abab', 'cab']) expect(t.encodeIds(text)).toEqual(await rustIds(json, text));
  });

  it('ignore_merges emits a pre-token that is itself in the vocab whole', async () => {
    const vocab = { a: 0, b: 1, c: 2, bc: 3, ab: 4, abc: 5 };
    const off = tiny({ vocab, merges: ['b c', 'a b'] });
    const on = tiny({ vocab, merges: ['b c', 'a b'], ignore_merges: true });
    expect(Tokenizer.fromJSON(off).encodeIds('abc')).toEqual([0, 3]);
    expect(Tokenizer.fromJSON(on).encodeIds('abc')).toEqual([5]);
    expect(await rustIds(on, 'abc')).toEqual([5]);
    expect(await rustIds(off, 'abc')).toEqual([0, 3]);
  });

  it('handles bytes missing from the vocab like the reference (dropped, unk, fused unk, byte fallback)', async () => {
    const base = { a: 0, b: 1, ab: 2, '<unk>': 3, '<0x78>': 4 };
    const variants = [
      tiny({ vocab: base, merges: ['a b'] }),
      tiny({ vocab: base, merges: ['a b'], unk_token: '<unk>' }),
      tiny({ vocab: base, merges: ['a b'], unk_token: '<unk>', fuse_unk: true }),
      tiny({ vocab: base, merges: ['a b'], unk_token: '<unk>', byte_fallback: true }),
    ];
    for (const json of variants) {
      const t = Tokenizer.fromJSON(json);
      for (const text of ['abxab', 'xyab', 'abxyz', 'éa', 'x']) expect(t.encodeIds(text), `${json.slice(-200)} ${text}`).toEqual(await rustIds(json, text));
    }
  });

  it('caches per pre-token without changing results', () => {
    const text = udhrCorpus()[3]!.text.slice(0, 3000);
    const first = llama3.encodeIds(text);
    const second = llama3.encodeIds(text);
    llama3.model.clearCache();
    expect(llama3.encodeIds(text)).toEqual(first);
    expect(second).toEqual(first);
  });
});

describe('loading', () => {
  it('string merges ("a b") and pair merges (["a", "b"]) load to the same model', () => {
    const parsed = JSON.parse(llama3Json()) as TokenizerJson;
    parsed.model.merges = (parsed.model.merges as string[]).map((m) => m.split(' ') as [string, string]);
    const pairs = Tokenizer.fromJSON(parsed);
    for (const { text } of udhrCorpus().slice(100, 140)) expect(pairs.encodeIds(text.slice(0, 500))).toEqual(llama3.encodeIds(text.slice(0, 500)));
    expect(pairs.model.mergeCount).toBe(llama3.model.mergeCount);
    expect(pairs.model.merges.slice(0, 3)).toEqual([
      ['Ġ', 'Ġ'],
      ['Ġ', 'ĠĠĠ'],
      ['ĠĠ', 'ĠĠ'],
    ]);
  });

  it('round-trips its model config', () => {
    const json = tiny({ vocab: { a: 0, b: 1, ab: 2 }, merges: [['a', 'b']], ignore_merges: true });
    const t = Tokenizer.fromJSON(json);
    const config = t.model.toConfig();
    expect(config.vocab).toEqual({ a: 0, b: 1, ab: 2 });
    expect(config.merges).toEqual([['a', 'b']]);
    expect(config.ignore_merges).toBe(true);
  });

  it('maps every single byte of the Llama 3 vocab through the GPT-2 byte table', () => {
    expect(new Set(BYTE_TO_CHAR).size).toBe(256);
    expect(BYTE_TO_CHAR[0x20]).toBe('Ġ');
    expect(BYTE_TO_CHAR[0x0a]).toBe('Ċ');
    expect(BYTE_TO_CHAR[0x41]).toBe('A');
    for (let b = 0; b < 256; b++) expect(llama3.tokenToId(BYTE_TO_CHAR[b]!)).toBeDefined();
  });
});

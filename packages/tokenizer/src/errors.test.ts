// Bad input: every failure is a TokenizerError with a code and the file / field it concerns; a
// failed call leaves the tokenizer usable. Also the other supported components checked against
// the Rust reference (GPT-2 style ByteLevel pre-tokenizer + offset-trimming post-processor).

import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import rustTokenizers from 'tokenizers';
import { describe, expect, it } from 'vitest';
import { buildApertusTokenizerJson } from './apertus.js';
import { TokenizerError, type TokenizerErrorCode } from './errors.js';
import { loadTokenizer, loadTokenizerFromDirectory } from './files.js';
import { ADVERSARIAL } from './fixtures.test-helper.js';
import { Tokenizer, type TokenizerJson } from './tokenizer.js';

function base(): TokenizerJson {
  return buildApertusTokenizerJson({ merges: [['a', 'b'], ['ab', 'c']] });
}

function expectError(fn: () => unknown, code: TokenizerErrorCode, field?: string, message?: RegExp): TokenizerError {
  let err: unknown;
  try {
    fn();
  } catch (e) {
    err = e;
  }
  expect(err).toBeInstanceOf(TokenizerError);
  const te = err as TokenizerError;
  expect(te.code).toBe(code);
  if (field !== undefined) expect(te.field).toBe(field);
  if (message !== undefined) expect(te.message).toMatch(message);
  return te;
}

function mutate(edit: (j: Record<string, unknown>) => void): string {
  const j = base() as unknown as Record<string, unknown>;
  edit(j);
  return JSON.stringify(j);
}

describe('tokenizer.json errors', () => {
  it('malformed JSON', () => {
    const e = expectError(() => Tokenizer.fromJSON('{"model": {', undefined, { file: 'tok.json' }), 'InvalidJson');
    expect(e.file).toBe('tok.json');
    expect(e.message).toMatch(/^tok\.json: malformed JSON/);
    expectError(() => Tokenizer.fromJSON('[1, 2]'), 'InvalidField');
    expectError(() => Tokenizer.fromJSON('{}'), 'InvalidField', 'model');
    expectError(() => Tokenizer.fromJSON(JSON.stringify(base()), '{bad'), 'InvalidJson');
  });

  it('truncated tokenizer.json at any point fails with a typed error (fuzz)', () => {
    const text = JSON.stringify(base());
    fc.assert(
      fc.property(fc.integer({ min: 0, max: text.length - 1 }), (cut) => {
        expect(() => Tokenizer.fromJSON(text.slice(0, cut))).toThrow(TokenizerError);
      }),
      { numRuns: 200, seed: 4 },
    );
  });

  it('random corruption of fields never throws anything but a TokenizerError (fuzz)', () => {
    const paths: ((j: Record<string, unknown>, v: unknown) => void)[] = [
      (j, v) => (j.model = v),
      (j, v) => ((j.model as Record<string, unknown>).vocab = v),
      (j, v) => ((j.model as Record<string, unknown>).merges = v),
      (j, v) => (((j.model as Record<string, unknown>).merges as unknown[])[0] = v),
      (j, v) => ((j.model as Record<string, unknown>).ignore_merges = v),
      (j, v) => ((j.model as Record<string, unknown>).unk_token = v),
      (j, v) => (j.added_tokens = v),
      (j, v) => ((j.added_tokens as unknown[])[1] = v),
      (j, v) => (j.pre_tokenizer = v),
      (j, v) => (((j.pre_tokenizer as Record<string, unknown>).pretokenizers as unknown[])[0] = v),
      (j, v) => (j.post_processor = v),
      (j, v) => ((j.post_processor as Record<string, unknown>).single = v),
      (j, v) => (j.decoder = v),
      (j, v) => (j.normalizer = v),
    ];
    fc.assert(
      fc.property(fc.integer({ min: 0, max: paths.length - 1 }), fc.jsonValue({ maxDepth: 2 }), (p, value) => {
        const json = mutate((j) => paths[p]!(j, value));
        try {
          const t = Tokenizer.fromJSON(json);
          // If it loads, it must still encode and decode.
          t.decode(t.encodeIds('abc <s> x'));
        } catch (e) {
          expect(e).toBeInstanceOf(TokenizerError);
        }
      }),
      { numRuns: 150, seed: 8 },
    );
  });

  it('unknown model type and other unsupported components name the component', () => {
    expectError(() => Tokenizer.fromJSON(mutate((j) => ((j.model as Record<string, unknown>).type = 'WordPiece'))), 'UnsupportedComponent', 'model.type', /WordPiece/);
    expectError(() => Tokenizer.fromJSON(mutate((j) => (j.normalizer = { type: 'Precompiled' } as never))), 'UnsupportedComponent', 'normalizer.type', /Precompiled/);
    expectError(() => Tokenizer.fromJSON(mutate((j) => (j.truncation = { max_length: 5 }))), 'UnsupportedComponent', 'truncation');
    expectError(() => Tokenizer.fromJSON(mutate((j) => (j.decoder = { type: 'WordPiece' }))), 'UnsupportedComponent', 'decoder.type', /WordPiece/);
    expectError(() => Tokenizer.fromJSON(mutate((j) => (j.decoder = null))), 'UnsupportedComponent', 'decoder');
    expectError(() => Tokenizer.fromJSON(mutate((j) => (j.post_processor = { type: 'BertProcessing' }))), 'UnsupportedComponent', 'post_processor.type', /BertProcessing/);
    expectError(() => Tokenizer.fromJSON(mutate((j) => (j.pre_tokenizer = { type: 'Split', pattern: { Regex: ' ' }, behavior: 'Isolated' }))), 'UnsupportedComponent', 'pre_tokenizer', /ByteLevel/);
    expectError(() => Tokenizer.fromJSON(mutate((j) => ((j.model as Record<string, unknown>).dropout = 0.1))), 'UnsupportedComponent', 'model.dropout');
    expectError(() => Tokenizer.fromJSON(mutate((j) => ((j.model as Record<string, unknown>).continuing_subword_prefix = '##'))), 'UnsupportedComponent', 'model.continuing_subword_prefix');
  });

  it('merges referencing missing tokens', () => {
    const m = (merges: unknown[]): string => mutate((j) => ((j.model as Record<string, unknown>).merges = merges));
    expectError(() => Tokenizer.fromJSON(m(['a b', 'xq z'])), 'MergeOutOfVocabulary', 'model.merges[1]', /"xq"/);
    expectError(() => Tokenizer.fromJSON(m([['a', 'b'], ['a', 'zz']])), 'MergeOutOfVocabulary', 'model.merges[1]', /"zz"/);
    expectError(() => Tokenizer.fromJSON(m(['b a'])), 'MergeOutOfVocabulary', 'model.merges[0]', /"ba" is not in the vocabulary/);
    expectError(() => Tokenizer.fromJSON(m(['a b c'])), 'InvalidField', 'model.merges[0]');
    expectError(() => Tokenizer.fromJSON(m(['ab'])), 'InvalidField', 'model.merges[0]');
    expectError(() => Tokenizer.fromJSON(m([['a']])), 'InvalidField', 'model.merges[0]');
    expectError(() => Tokenizer.fromJSON(mutate((j) => ((j.model as { vocab: Record<string, unknown> }).vocab.a = -4))), 'InvalidField', 'model.vocab', /"a"/);
    expectError(() => Tokenizer.fromJSON(mutate((j) => ((j.added_tokens as Record<string, unknown>[])[5]!.content = ''))), 'InvalidField', 'added_tokens[5].content');
  });

  it('file errors carry the file name', () => {
    const dir = mkdtempSync(join(tmpdir(), 'apertus-tok-'));
    writeFileSync(join(dir, 'tokenizer.json'), mutate((j) => ((j.model as Record<string, unknown>).merges = ['a q'])));
    const e = expectError(() => loadTokenizerFromDirectory(dir), 'MergeOutOfVocabulary');
    expect(e.file).toBe(join(dir, 'tokenizer.json'));
    expect(e.field).toBe('model.merges[0]');
    expect(e.message).toBe(`${join(dir, 'tokenizer.json')}: model.merges[0]: merged token "aq" is not in the vocabulary`);
    expectError(() => loadTokenizer(join(dir, 'missing.json')), 'Io');
    writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(base()));
    writeFileSync(join(dir, 'tokenizer_config.json'), '{"bos_token": "<s>", "eos_token": "<|assistant_end|>"}');
    const t = loadTokenizerFromDirectory(dir);
    expect([t.bosTokenId, t.eosTokenId]).toEqual([1, 68]);
  });
});

describe('decode errors', () => {
  it('ids out of range name the position, and the tokenizer keeps working', () => {
    const t = Tokenizer.fromJSON(base());
    expectError(() => t.decode([1000, 200000]), 'IdOutOfRange', 'ids[1]', /200000/);
    expectError(() => t.decode([-1]), 'IdOutOfRange', 'ids[0]');
    expectError(() => t.decode([1.5]), 'IdOutOfRange', 'ids[0]');
    expectError(() => t.decodeStream().step(1 << 30), 'IdOutOfRange', 'ids[0]');
    expect(t.decode(t.encodeIds('abc'), { skipSpecialTokens: true })).toBe('abc');
  });
});

describe('GPT-2 style components match the Rust reference', () => {
  it('ByteLevel(add_prefix_space, use_regex) pre-tokenizer with a trim_offsets ByteLevel post-processor', async () => {
    const j = buildApertusTokenizerJson({ merges: [['Ġ', 't'], ['h', 'e'], ['Ġt', 'he'], ['Ġ', 'Ġ'], ['i', 'n']] });
    j.pre_tokenizer = { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true };
    j.post_processor = { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true };
    const json = JSON.stringify(j);
    const ours = Tokenizer.fromJSON(json);
    const rust = rustTokenizers.Tokenizer.fromString(json);
    for (const raw of [...ADVERSARIAL.filter((s) => s.length < 200), ' the  thin  in', 'the\tthe \n the']) {
      const text = (raw as unknown as { toWellFormed(): string }).toWellFormed();
      const a = ours.encode(text);
      const r = await rust.encode(text);
      expect(a.ids, JSON.stringify(text)).toEqual(r.getIds());
      const cps = (i: number): number => [...text.slice(0, i)].length;
      expect(a.offsets.map(([s, e]) => [cps(s), cps(e)])).toEqual(r.getOffsets());
    }
  });
});

// The Oniguruma -> JS regex translation and the pre-tokenizers, checked piece by piece against
// the Rust implementation (`tokenizers` bindings: PreTokenizer.preTokenizeString).

import fc from 'fast-check';
import rustTokenizers from 'tokenizers';
import { describe, expect, it } from 'vitest';
import { buildApertusTokenizerJson } from './apertus.js';
import { bytesToByteLevel } from './byte-level.js';
import { TokenizerError } from './errors.js';
import { ADVERSARIAL, udhrCorpus } from './fixtures.test-helper.js';
import { APERTUS_PRETOKENIZER_PATTERN, PreTokenizer, type PreTokenizerConfig } from './pretokenizer.js';
import { compileOniguruma, onigurumaToJs } from './regex.js';

const LLAMA3_PATTERN =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

const encoder = new TextEncoder();

/** Pieces as [byte-level string, [start, end] in code points], the shape the Rust binding returns. */
function ourPieces(pre: PreTokenizer, text: string): [string, [number, number]][] {
  const wf = (text as unknown as { toWellFormed(): string }).toWellFormed();
  const out: number[] = [];
  pre.run(wf, 0, wf.length, out);
  const cp = (i: number): number => [...wf.slice(0, i)].length;
  const result: [string, [number, number]][] = [];
  for (let k = 0; k < out.length; k += 3) {
    const piece = (out[k + 2] === 1 ? ' ' : '') + wf.slice(out[k]!, out[k + 1]!);
    // A piece that is only the virtual prefix space is aligned with the character after it.
    const end = out[k + 2] === 1 && out[k] === out[k + 1] ? cp(out[k]!) + 1 : cp(out[k + 1]!);
    result.push([bytesToByteLevel(encoder.encode(piece)), [cp(out[k]!), end]]);
  }
  return result;
}

/** A Rust tokenizer whose pre-tokenizer is `config` (model: the Apertus byte vocabulary). */
function rustPreTokenizer(config: PreTokenizerConfig) {
  const json = buildApertusTokenizerJson({ merges: [] });
  json.pre_tokenizer = config;
  return rustTokenizers.Tokenizer.fromString(JSON.stringify(json)).getPreTokenizer()!;
}

const splitThenByteLevel = (pattern: string, extra: Partial<{ add_prefix_space: boolean; use_regex: boolean }> = {}): PreTokenizerConfig => ({
  type: 'Sequence',
  pretokenizers: [
    { type: 'Split', pattern: { Regex: pattern }, behavior: 'Isolated', invert: false },
    { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: false, ...extra },
  ],
});

const TEXT_PIECES = ['a', 'Z', 'é', 'É', ' ', '  ', '\n', '\r', '\r\n', '1', '23', "'s", "'S", "'ll", '.', '!?', '/', '_', '😀', '中', '\u0301', '\t', '\u00a0', '\u0085', '\ufeff', 'ǅ', 'ʰ', 'Ⅻ', '٣'];

describe('Oniguruma -> JS translation', () => {
  it('rewrites the Unicode and Oniguruma-specific constructs', () => {
    expect(onigurumaToJs('\\s+(?!\\S)')).toBe('\\p{White_Space}+(?!\\P{White_Space})');
    expect(onigurumaToJs("(?i:'s|'t)")).toBe("(?:'[sS]|'[tT])");
    expect(onigurumaToJs('\\d{,3}')).toBe('\\p{Nd}{0,3}');
    expect(onigurumaToJs('a{x')).toBe('a\\{x');
    expect(onigurumaToJs('.')).toBe('[^\\n]');
    expect(onigurumaToJs('\\x{1F600}')).toBe('😀');
    expect(onigurumaToJs('[^\\s\\p{L}]')).toBe('[^\\p{White_Space}\\p{L}]');
    expect(onigurumaToJs('(?i:[a-c])')).toBe('(?:[a-cABC])');
    expect(onigurumaToJs('\\p{Han}')).toBe('\\p{Script=Han}');
  });

  it('matches like Oniguruma on the sets where JS differs (\\s, case folding, \\d)', () => {
    const ws = compileOniguruma('^\\s$');
    expect(ws.test('\u0085')).toBe(true); // NEL is White_Space
    ws.lastIndex = 0;
    expect(ws.test('\ufeff')).toBe(false); // BOM is not (JS \s says it is)
    const ci = compileOniguruma("(?i:'s)");
    expect("'S".match(ci)).toEqual(["'S"]);
    expect("'\u017f".match(ci)).toBeNull(); // long s is not folded to s
    expect('٣'.match(compileOniguruma('\\d'))).toEqual(['٣']);
  });

  it('rejects constructs without an exact JS equivalent, naming them', () => {
    const cases: [string, RegExp][] = [
      ['a++', /possessive/],
      ['(?>a)', /atomic/],
      ['\\Ga', /\\G/],
      ['[[:alpha:]]', /POSIX/],
      ['[a[b]]', /nested/],
      ['[a-z&&[^x]]', /intersection/],
      ['(?m:a)', /inline flag/],
      ['\\1', /\\1/],
      ['(a', /unclosed/],
      ['a)', /unbalanced/],
      ['\\p{NoSuchProperty}', /unknown Unicode property/],
    ];
    for (const [pattern, message] of cases) {
      let err: unknown;
      try {
        compileOniguruma(pattern);
      } catch (e) {
        err = e;
      }
      expect(err, pattern).toBeInstanceOf(TokenizerError);
      expect((err as TokenizerError).code).toBe('UnsupportedComponent');
      expect((err as TokenizerError).message).toMatch(message);
    }
  });
});

describe('pre-tokenization matches the Rust implementation', () => {
  const configs: [string, PreTokenizerConfig][] = [
    ['Apertus (spec §5.1)', splitThenByteLevel(APERTUS_PRETOKENIZER_PATTERN)],
    ['Llama 3', splitThenByteLevel(LLAMA3_PATTERN)],
    ['ByteLevel with GPT-2 regex and prefix space', { type: 'ByteLevel', add_prefix_space: true, use_regex: true, trim_offsets: true }],
    ['Split + ByteLevel(add_prefix_space)', splitThenByteLevel(LLAMA3_PATTERN, { add_prefix_space: true })],
    ['Split Removed, inverted', { type: 'Sequence', pretokenizers: [{ type: 'Split', pattern: { Regex: '\\s+' }, behavior: 'Removed', invert: true }, { type: 'ByteLevel', add_prefix_space: false, use_regex: false, trim_offsets: true }] }],
    ['Split MergedWithPrevious', { type: 'Sequence', pretokenizers: [{ type: 'Split', pattern: { Regex: '\\p{N}' }, behavior: 'MergedWithPrevious', invert: false }, { type: 'ByteLevel', add_prefix_space: false, use_regex: false, trim_offsets: true }] }],
    ['Split MergedWithNext', { type: 'Sequence', pretokenizers: [{ type: 'Split', pattern: { String: ' ' }, behavior: 'MergedWithNext', invert: false }, { type: 'ByteLevel', add_prefix_space: false, use_regex: false, trim_offsets: true }] }],
    ['Split Contiguous', { type: 'Sequence', pretokenizers: [{ type: 'Split', pattern: { Regex: '[.!?]' }, behavior: 'Contiguous', invert: false }, { type: 'ByteLevel', add_prefix_space: false, use_regex: false, trim_offsets: true }] }],
    ['Split with empty matches', { type: 'Sequence', pretokenizers: [{ type: 'Split', pattern: { Regex: '\\s*' }, behavior: 'Isolated', invert: false }, { type: 'ByteLevel', add_prefix_space: false, use_regex: false, trim_offsets: true }] }],
  ];
  const samples = [...ADVERSARIAL.filter((s) => s.length < 300), ...udhrCorpus().slice(0, 532).filter((_, i) => i % 13 === 0).map((d) => d.text.slice(0, 300))];

  for (const [name, config] of configs) {
    it(name, () => {
      const ours = PreTokenizer.fromConfig(config);
      const rust = rustPreTokenizer(config);
      for (const text of samples) expect(ourPieces(ours, text), JSON.stringify(text)).toEqual(rust.preTokenizeString(text));
      fc.assert(
        fc.property(fc.array(fc.constantFrom(...TEXT_PIECES), { maxLength: 24 }), (parts) => {
          const text = parts.join('');
          expect(ourPieces(ours, text)).toEqual(rust.preTokenizeString(text));
        }),
        { numRuns: 150, seed: 1 },
      );
    });
  }

  it('Apertus regex semantics (spec §5.1): case transitions, single digits, glued leading char, punctuation absorbing CR/LF and /', () => {
    const pre = PreTokenizer.fromConfig(splitThenByteLevel(APERTUS_PRETOKENIZER_PATTERN));
    const pieces = (text: string): string[] => {
      const out: number[] = [];
      pre.run(text, 0, text.length, out);
      const r: string[] = [];
      for (let k = 0; k < out.length; k += 3) r.push(text.slice(out[k]!, out[k + 1]!));
      return r;
    };
    expect(pieces('CamelCase HTTPServer')).toEqual(['Camel', 'Case', ' HTTPServer']);
    expect(pieces('2024')).toEqual(['2', '0', '2', '4']);
    expect(pieces('a.x_id the .x')).toEqual(['a', '.x', '_id', ' the', ' .', 'x']);
    expect(pieces("don't")).toEqual(['don', "'t"]);
    expect(pieces('a.\r\n/b')).toEqual(['a', '.\r\n/', 'b']);
  });
});

describe('pre-tokenizer config errors', () => {
  it('names the unsupported component and the field', () => {
    const bad: [unknown, string, RegExp][] = [
      [{ type: 'Metaspace', replacement: '▁' }, 'pre_tokenizer.type', /Metaspace/],
      [{ type: 'Sequence', pretokenizers: [{ type: 'Whitespace' }] }, 'pre_tokenizer.pretokenizers[0].type', /Whitespace/],
      [{ type: 'Split', pattern: { Regex: 'a++' }, behavior: 'Isolated' }, 'pre_tokenizer.pattern.Regex', /possessive/],
      [{ type: 'Split', pattern: { Regex: 'a' }, behavior: 'Sideways' }, 'pre_tokenizer.behavior', /Sideways/],
      [{ type: 'Split', pattern: 'a', behavior: 'Isolated' }, 'pre_tokenizer.pattern', /Regex/],
      [{ type: 'ByteLevel', add_prefix_space: 'yes' }, 'pre_tokenizer.add_prefix_space', /boolean/],
    ];
    for (const [config, field, message] of bad) {
      let err: unknown;
      try {
        PreTokenizer.fromConfig(config);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(TokenizerError);
      expect((err as TokenizerError).field).toBe(field);
      expect((err as TokenizerError).message).toMatch(message);
    }
  });
});

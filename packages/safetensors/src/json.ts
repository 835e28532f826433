// A small strict JSON parser (RFC 8259) for safetensors headers and index files.
//
// Why not JSON.parse: it silently keeps the last of duplicate keys (the reference rejects
// ambiguous headers), turns `2.0`, `1e3` and `18446744073709551615` into plain numbers (the
// reference wants exact unsigned integers), and gives no depth limit. Here numbers keep their
// source text, objects are Maps that refuse duplicate keys, and nesting stops at 128 levels
// (serde_json's recursion limit). Every failure is a `SafetensorsHeaderError`.

import { SafetensorsHeaderError, type SafetensorsErrorCode } from './errors.js';

/** A JSON number kept as its source text, so integers are exact. */
export class JsonNumber {
  constructor(readonly text: string) {}
}

/** A parsed JSON value; objects keep key order. */
export type JsonValue = null | boolean | string | JsonNumber | JsonValue[] | Map<string, JsonValue>;

const MAX_DEPTH = 128;
const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
const PLAIN_RUN = /[^"\\\u0000-\u001f]*/y;
const ESCAPES: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };

/** How errors from {@link parseJson} are labelled. */
export interface JsonErrorContext {
  /** File named in errors. */
  readonly file?: string;
  /** What is being parsed, e.g. `"header"`. */
  readonly what: string;
}

/** Parse `text` strictly; throws `SafetensorsHeaderError` (`InvalidHeaderDeserialization` or `DuplicateKey`). */
export function parseJson(text: string, context: JsonErrorContext): JsonValue {
  const parser = new Parser(text, context);
  parser.skipWhitespace();
  const value = parser.value(0);
  parser.skipWhitespace();
  if (parser.pos !== text.length) parser.fail('unexpected trailing characters');
  return value;
}

class Parser {
  pos = 0;
  constructor(
    readonly s: string,
    readonly context: JsonErrorContext,
  ) {}

  fail(detail: string, code: SafetensorsErrorCode = 'InvalidHeaderDeserialization', tensor?: string): never {
    throw new SafetensorsHeaderError(code, `invalid JSON in ${this.context.what} at character ${this.pos}: ${detail}`, {
      file: this.context.file,
      tensor,
    });
  }

  skipWhitespace(): void {
    const s = this.s;
    let p = this.pos;
    for (;;) {
      const c = s.charCodeAt(p);
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) p++;
      else break;
    }
    this.pos = p;
  }

  value(depth: number): JsonValue {
    const c = this.s[this.pos];
    switch (c) {
      case '{':
        return this.object(depth + 1);
      case '[':
        return this.array(depth + 1);
      case '"':
        return this.string();
      case 't':
        return this.literal('true', true);
      case 'f':
        return this.literal('false', false);
      case 'n':
        return this.literal('null', null);
      default:
        if (c === '-' || (c !== undefined && c >= '0' && c <= '9')) return this.number();
        return this.fail(c === undefined ? 'unexpected end of input' : `unexpected character ${JSON.stringify(c)}`);
    }
  }

  literal<T>(word: string, result: T): T {
    if (!this.s.startsWith(word, this.pos)) this.fail(`expected ${word}`);
    this.pos += word.length;
    return result;
  }

  number(): JsonNumber {
    NUMBER.lastIndex = this.pos;
    const m = NUMBER.exec(this.s);
    if (m === null) return this.fail('malformed number');
    this.pos += m[0].length;
    return new JsonNumber(m[0]);
  }

  string(): string {
    const s = this.s;
    this.pos++; // opening quote
    let out = '';
    for (;;) {
      PLAIN_RUN.lastIndex = this.pos;
      const run = PLAIN_RUN.exec(s);
      if (run !== null && run[0].length > 0) {
        out += run[0];
        this.pos += run[0].length;
      }
      const c = s[this.pos];
      if (c === '"') {
        this.pos++;
        return out;
      }
      if (c === undefined) this.fail('unterminated string');
      if (c !== '\\') this.fail('unescaped control character in string');
      const e = s[this.pos + 1];
      if (e === 'u') {
        const unit = this.hex4(this.pos + 2);
        this.pos += 6;
        if (unit >= 0xd800 && unit <= 0xdbff) {
          if (s[this.pos] !== '\\' || s[this.pos + 1] !== 'u') this.fail('lone leading surrogate in \\u escape');
          const low = this.hex4(this.pos + 2);
          if (low < 0xdc00 || low > 0xdfff) this.fail('invalid trailing surrogate in \\u escape');
          this.pos += 6;
          out += String.fromCharCode(unit, low);
        } else if (unit >= 0xdc00 && unit <= 0xdfff) {
          this.fail('lone trailing surrogate in \\u escape');
        } else {
          out += String.fromCharCode(unit);
        }
      } else {
        const decoded = e === undefined ? undefined : ESCAPES[e];
        if (decoded === undefined) this.fail('invalid escape in string');
        out += decoded;
        this.pos += 2;
      }
    }
  }

  hex4(at: number): number {
    const digits = this.s.slice(at, at + 4);
    if (!/^[0-9a-fA-F]{4}$/.test(digits)) this.fail('invalid \\u escape');
    return parseInt(digits, 16);
  }

  array(depth: number): JsonValue[] {
    if (depth > MAX_DEPTH) this.fail(`nesting deeper than ${MAX_DEPTH}`);
    this.pos++; // [
    const out: JsonValue[] = [];
    this.skipWhitespace();
    if (this.s[this.pos] === ']') {
      this.pos++;
      return out;
    }
    for (;;) {
      this.skipWhitespace();
      out.push(this.value(depth));
      this.skipWhitespace();
      const c = this.s[this.pos++];
      if (c === ']') return out;
      if (c !== ',') {
        this.pos--;
        this.fail("expected ',' or ']' in array");
      }
    }
  }

  object(depth: number): Map<string, JsonValue> {
    if (depth > MAX_DEPTH) this.fail(`nesting deeper than ${MAX_DEPTH}`);
    this.pos++; // {
    const out = new Map<string, JsonValue>();
    this.skipWhitespace();
    if (this.s[this.pos] === '}') {
      this.pos++;
      return out;
    }
    for (;;) {
      this.skipWhitespace();
      if (this.s[this.pos] !== '"') this.fail('expected a string key');
      const keyAt = this.pos;
      const key = this.string();
      if (out.has(key)) {
        this.pos = keyAt;
        this.fail(`duplicate key ${JSON.stringify(key)}`, 'DuplicateKey', depth === 1 ? key : undefined);
      }
      this.skipWhitespace();
      if (this.s[this.pos] !== ':') this.fail("expected ':' after key");
      this.pos++;
      this.skipWhitespace();
      out.set(key, this.value(depth));
      this.skipWhitespace();
      const c = this.s[this.pos++];
      if (c === '}') return out;
      if (c !== ',') {
        this.pos--;
        this.fail("expected ',' or '}' in object");
      }
    }
  }
}

/** Convert a parsed value to plain JS (numbers via `Number`, objects as null-safe records). */
export function jsonToPlain(value: JsonValue): unknown {
  if (value instanceof JsonNumber) return Number(value.text);
  if (Array.isArray(value)) return value.map(jsonToPlain);
  if (value instanceof Map) return Object.fromEntries([...value].map(([k, v]) => [k, jsonToPlain(v)]));
  return value;
}

/** If `value` is a non-negative integer (no sign, fraction or exponent) at most 2^53 - 1, return it, else `undefined`. */
export function jsonSafeUint(value: JsonValue | undefined): number | undefined {
  if (!(value instanceof JsonNumber)) return undefined;
  const t = value.text;
  if (!/^(?:0|[1-9][0-9]*)$/.test(t)) return undefined;
  if (t.length > 16) return undefined; // > 9_999_999_999_999_999 > 2^53 - 1
  const n = Number(t);
  return Number.isSafeInteger(n) ? n : undefined;
}

// GPT-2 byte <-> unicode table and small UTF-8 helpers.
//
// Byte-level BPE works on bytes, but vocabularies store tokens as printable strings: each byte b
// is shown as one unicode character. The printable Latin-1 bytes ('!'..'~', '¡'..'¬', '®'..'ÿ')
// stand for themselves; the 68 others are shifted to U+0100.. in byte order (so ' ' -> 'Ġ' U+0120,
// '\n' -> 'Ċ' U+010A).

function buildByteToChar(): string[] {
  const table: string[] = new Array<string>(256);
  let shifted = 0;
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
    table[b] = String.fromCharCode(printable ? b : 256 + shifted++);
  }
  return table;
}

/** `BYTE_TO_CHAR[b]` is the one-character string that stands for byte `b` in a byte-level vocabulary. */
export const BYTE_TO_CHAR: readonly string[] = buildByteToChar();

const CHAR_TO_BYTE_TABLE: Int16Array = (() => {
  const t = new Int16Array(0x144).fill(-1);
  for (let b = 0; b < 256; b++) t[BYTE_TO_CHAR[b]!.charCodeAt(0)] = b;
  return t;
})();

/** The byte that UTF-16 code unit `c` stands for in a byte-level token, or -1 if `c` is not in the table. */
export function charToByte(c: number): number {
  return c < 0x144 ? CHAR_TO_BYTE_TABLE[c]! : -1;
}

/** Map raw bytes to their byte-level string (`[0x20, 0x61]` -> `'Ġa'`). */
export function bytesToByteLevel(bytes: ArrayLike<number>, start = 0, end = bytes.length): string {
  let s = '';
  for (let i = start; i < end; i++) s += BYTE_TO_CHAR[bytes[i]!]!;
  return s;
}

/**
 * Bytes of a byte-level token string, or `null` when the string contains a character outside the
 * byte table (such a token is decoded as its own UTF-8, as the reference decoder does).
 */
export function byteLevelToBytes(token: string): Uint8Array | null {
  const out = new Uint8Array(token.length);
  for (let i = 0; i < token.length; i++) {
    const b = charToByte(token.charCodeAt(i));
    if (b < 0) return null;
    out[i] = b;
  }
  return out;
}

/**
 * UTF-8 encode `text[start, end)` into `out` (which must hold `3 * (end - start)` bytes). Lone
 * surrogates become U+FFFD, like `TextEncoder`. When `charOf` is given, `charOf[k]` receives the
 * UTF-16 index (relative to `start`) of the character that produced byte k. Returns the byte count.
 */
export function utf8Encode(
  text: string,
  start: number,
  end: number,
  out: Uint8Array,
  charOf: Int32Array | null,
): number {
  let n = 0;
  for (let i = start; i < end; i++) {
    let c = text.charCodeAt(i);
    const at = i - start;
    if (c < 0x80) {
      if (charOf !== null) charOf[n] = at;
      out[n++] = c;
      continue;
    }
    if (c < 0x800) {
      if (charOf !== null) charOf[n] = charOf[n + 1] = at;
      out[n++] = 0xc0 | (c >> 6);
      out[n++] = 0x80 | (c & 0x3f);
      continue;
    }
    if (c >= 0xd800 && c <= 0xdfff) {
      const d = i + 1 < end ? text.charCodeAt(i + 1) : 0;
      if (c <= 0xdbff && d >= 0xdc00 && d <= 0xdfff) {
        const cp = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
        if (charOf !== null) charOf[n] = charOf[n + 1] = charOf[n + 2] = charOf[n + 3] = at;
        out[n++] = 0xf0 | (cp >> 18);
        out[n++] = 0x80 | ((cp >> 12) & 0x3f);
        out[n++] = 0x80 | ((cp >> 6) & 0x3f);
        out[n++] = 0x80 | (cp & 0x3f);
        i++;
        continue;
      }
      c = 0xfffd;
    }
    if (charOf !== null) charOf[n] = charOf[n + 1] = charOf[n + 2] = at;
    out[n++] = 0xe0 | (c >> 12);
    out[n++] = 0x80 | ((c >> 6) & 0x3f);
    out[n++] = 0x80 | (c & 0x3f);
  }
  return n;
}

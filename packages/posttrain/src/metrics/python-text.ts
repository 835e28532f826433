// Python string semantics that sacreBLEU's numbers depend on: `str.split()` / `str.rstrip()`
// split on Python's whitespace set (which differs from JavaScript's `\s`: Python adds U+001C–U+001F
// and U+0085, JavaScript adds U+FEFF), and `s[i:i+n]` counts code points, not UTF-16 units.

/** Python's `str.isspace()` characters (Unicode White_Space plus the ASCII separators U+001C–U+001F). */
const PY_WS = '\\t\\n\\v\\f\\r\\x1c-\\x20\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000';
const PY_WS_RUN = new RegExp(`[${PY_WS}]+`, 'u');
const PY_WS_TRAILING = new RegExp(`[${PY_WS}]+$`, 'u');

/** Python `s.split()`: split on runs of whitespace, no empty pieces. */
export function pySplit(s: string): string[] {
  return s.split(PY_WS_RUN).filter((w) => w !== '');
}

/** Python `s.rstrip()`. */
export function pyRstrip(s: string): string {
  return s.replace(PY_WS_TRAILING, '');
}

/** Code points of `s` (Python's characters). */
export function codePoints(s: string): string[] {
  return Array.from(s);
}

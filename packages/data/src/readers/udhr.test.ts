import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Document } from '../document';
import { EmptyCorpusError, UdhrError } from '../errors';
import { decodeHtmlEntities, parseHtml, textContent } from './html';
import { parseUdhrHtml, readUdhr, readUdhrDeclarations, udhrDirectory } from './udhr';

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const d of it) out.push(d);
  return out;
}

describe('HTML helpers', () => {
  it('decode character references by the HTML rules', () => {
    expect(decodeHtmlEntities('&#x3C;&#x3C;a>> &amp; &#38; &lt;b&gt; &quot;q&quot; &nbsp;')).toBe('<<a>> & & <b> "q" \u00a0');
    expect(decodeHtmlEntities('&#0; &#xD800; &#x110000; &#x80; &#150;')).toBe('\ufffd \ufffd \ufffd \u20ac \u2013');
    expect(decodeHtmlEntities('&unknown; &amp no-semicolon &#x1F600;')).toBe('&unknown; &amp no-semicolon 😀');
  });

  it('never throws on arbitrary markup, and keeps all text of tag-free input (fuzz)', () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom('<p>', '</p>', '<a b="1">', '</a>', '<!--', '-->', '&amp;', '&#x41;', '<', '>', 'x', ' ', '&'), { maxLength: 30 }), (parts) => {
        expect(() => parseHtml(parts.join(''))).not.toThrow();
      }),
    );
    fc.assert(
      fc.property(fc.string().filter((t) => !t.includes('<') && !t.includes('&')), (t) => {
        expect(textContent(parseHtml(t))).toBe(t.replace(/[\t\n\f\r ]+/g, ' ').trim());
      }),
    );
  });

  it('parses nested elements, attributes and stray > in text', () => {
    const root = parseHtml('<!doctype html><div a="1" b=\'&amp;\' c=x><p>one <b>two</b></p><!-- c --><br><p>3 > 2</p></div>');
    const div = root.children[0] as { tag: string; attrs: Record<string, string> };
    expect(div.tag).toBe('div');
    expect(div.attrs).toEqual({ a: '1', b: '&', c: 'x' });
    expect(textContent(root)).toBe('one two3 > 2');
  });
});

describe('UDHR reader (bundled corpus)', () => {
  it('parses the English declaration: title, preamble and 30 articles', async () => {
    const [eng] = await collect(readUdhrDeclarations({ languages: ['eng'] }));
    expect(eng).toMatchObject({ code: 'eng', name: 'English', lang: 'en', iso6393: 'eng', direction: 'ltr' });
    expect(eng!.title).toBe('Universal Declaration of Human Rights');
    expect(eng!.preamble!.heading).toBe('Preamble');
    expect(eng!.preamble!.paragraphs[0]).toMatch(/^Whereas recognition of the inherent dignity/);
    expect(eng!.articles).toHaveLength(30);
    expect(eng!.articles[0]).toEqual({
      kind: 'article',
      number: 1,
      heading: 'Article 1',
      paragraphs: [
        'All human beings are born free and equal in dignity and rights. They are endowed with reason and conscience and should act towards one another in a spirit of brotherhood.',
      ],
    });
    // article 11 has an ordered list of two paragraphs
    expect(eng!.articles[10]!.paragraphs).toHaveLength(2);
  });

  it('yields one document per article with language metadata (German, 1996 orthography)', async () => {
    const docs = await collect(readUdhr({ languages: ['de-1996'] }));
    expect(docs).toHaveLength(31);
    expect(docs[0]!.id).toBe('udhr/deu_1996/preamble');
    expect(docs[0]!.text.split('\n').slice(0, 2)).toEqual(['Die Allgemeine Erklärung der Menschenrechte', 'Präambel']);
    const a1 = docs.find((d) => d.id === 'udhr/deu_1996/article-1')!;
    expect(a1.lang).toBe('de-1996');
    expect(a1.metadata).toEqual({ udhr_code: 'deu_1996', iso6393: 'deu', language_name: 'German, Standard (1996)', section: 'article', article: 1 });
    expect(a1.text).toBe(
      'Artikel 1\nAlle Menschen sind frei und gleich an Würde und Rechten geboren. Sie sind mit Vernunft und Gewissen begabt und sollen einander im Geist der Brüderlichkeit begegnen.',
    );
  });

  it('decodes character references in real files (Hmong, &#x3C;&#x3C;...>>)', async () => {
    const [hms] = await collect(readUdhrDeclarations({ languages: ['hms'] }));
    expect(hms!.title).toBe('<<ghad bob did doub nangd renl njanl xand yanl>>');
  });

  it('covers more than 400 languages, each with at least one article', async () => {
    const codes = new Set<string>();
    let declarations = 0;
    for await (const d of readUdhrDeclarations()) {
      declarations++;
      if (d.articles.some((a) => a.paragraphs.length > 0)) codes.add(d.code);
    }
    expect(declarations).toBeGreaterThanOrEqual(500);
    expect(codes.size).toBeGreaterThanOrEqual(400);
  });

  it('declaration granularity gives one document per language', async () => {
    // "fra" matches two files by ISO 639-3 code: fra.html and 068.html (French, Welche)
    const docs: Document[] = await collect(readUdhr({ languages: ['eng', 'fra'], granularity: 'declaration' }));
    expect(docs.map((d) => d.id)).toEqual(['udhr/068', 'udhr/eng', 'udhr/fra']);
    expect(docs[1]!.text.startsWith('Universal Declaration of Human Rights\n\nPreamble\nWhereas')).toBe(true);
    expect(docs[1]!.text).toContain('\n\nArticle 30\nNothing in this Declaration');
  });

  it('rejects malformed files, a missing directory and an empty selection with typed errors', async () => {
    expect(() => parseUdhrHtml('<p>no html</p>', 'x.html')).toThrow(UdhrError);
    expect(() => parseUdhrHtml('<html><body></body></html>', 'x.html')).toThrow(/data-code/);
    await expect(collect(readUdhr({ directory: '/nonexistent/udhr' }))).rejects.toThrow(UdhrError);
    await expect(collect(readUdhr({ languages: ['no-such-language'] }))).rejects.toThrow(EmptyCorpusError);
    expect(udhrDirectory()).toMatch(/udhr[\\/]declaration$/);
  });
});

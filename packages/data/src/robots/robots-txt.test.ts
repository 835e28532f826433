import { readFileSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RobotsTxt, normalizeRobotsPath, robotsPatternMatches } from './robots-txt';

// Decisions of protego (the parser behind the Apertus robots filter), generated once by
// test/robots_reference.py: 8 robots.txt files × 41 paths × 17 crawler names.
const golden = JSON.parse(readFileSync(path.join(import.meta.dirname, '../../test/golden/robots-vectors.json'), 'utf8')) as {
  agents: string[];
  files: Record<string, string>;
  decisions: Record<string, Record<string, string>>;
};

describe('RobotsTxt', () => {
  it('reproduces every protego decision of the golden file', () => {
    let checked = 0;
    for (const [name, content] of Object.entries(golden.files)) {
      const robots = RobotsTxt.parse(content);
      for (const [p, bits] of Object.entries(golden.decisions[name]!)) {
        golden.agents.forEach((agent, i) => {
          expect(robots.isAllowed(`https://example.com${p}`, agent), `${name} ${p} ${agent}`).toBe(bits[i] === '1');
          checked++;
        });
      }
    }
    expect(checked).toBe(8 * 41 * 17);
  });

  it('selects groups by user agent: specific beats *, case-insensitive, substring of the crawler name', () => {
    const r = RobotsTxt.parse(golden.files.groups!);
    expect(r.check('https://example.com/anything', 'GPTBot')).toMatchObject({ allowed: false, group: 'gptbot', rule: { allow: false, pattern: '/' } });
    // the two GPTBot groups are merged: the later "Allow: /open" applies
    expect(r.isAllowed('https://example.com/open/x', 'gptbot')).toBe(true);
    expect(r.isAllowed('https://example.com/x', 'Mozilla/5.0 (compatible; GPTBot/1.2)')).toBe(false);
    expect(r.check('https://example.com/private/x', 'CCBot')).toMatchObject({ allowed: false, group: '*' });
    expect(r.isAllowed('https://example.com/public', 'CCBot')).toBe(true);
    // one group for two agents
    expect(r.isAllowed('https://example.com/search/q', 'Bingbot')).toBe(false);
    expect(r.isAllowed('https://example.com/search/about', 'Bingbot')).toBe(true);
    // Googlebot has its own group, so the * rules do not apply to it
    expect(r.isAllowed('https://example.com/private', 'Googlebot')).toBe(true);
    expect(r.agents).toEqual(['*', 'gptbot', 'googlebot', 'bingbot']);
  });

  it('uses the longest matching rule, and Allow on a tie (RFC 9309 §2.2.2)', () => {
    const r = RobotsTxt.parse('User-agent: *\nDisallow: /folder\nAllow: /folder/page\nDisallow: /tie\nAllow: /tie\n');
    expect(r.isAllowed('/folder/page', 'x')).toBe(true);
    expect(r.isAllowed('/folder/pag', 'x')).toBe(false);
    expect(r.isAllowed('/tie', 'x')).toBe(true);
    // equal length with wildcard: "/*.pdf" (6) vs "/docs/" (6): allow wins the tie
    const w = RobotsTxt.parse('User-agent: *\nDisallow: /*.pdf\nAllow: /docs/\n');
    expect(w.isAllowed('/docs/a.pdf', 'x')).toBe(true);
    expect(w.isAllowed('/other/a.pdf', 'x')).toBe(false);
  });

  it('handles * and $ wildcards, queries and percent-encoding', () => {
    const r = RobotsTxt.parse('User-agent: *\nDisallow: /*.php$\nDisallow: /*?session=\nDisallow: /%7ejoe\nDisallow: /caf%c3%a9\nDisallow: /$\n');
    expect(r.isAllowed('/index.php', 'x')).toBe(false);
    expect(r.isAllowed('/index.php?x=1', 'x')).toBe(true);
    expect(r.isAllowed('/index.phps', 'x')).toBe(true);
    expect(r.isAllowed('/p?session=9', 'x')).toBe(false);
    expect(r.isAllowed('/~joe/x', 'x')).toBe(false);
    expect(r.isAllowed('https://example.com/café', 'x')).toBe(false);
    expect(r.isAllowed('https://example.com/', 'x')).toBe(false);
    expect(r.isAllowed('https://example.com/a', 'x')).toBe(true);
    expect(r.isAllowed('https://example.com/#frag', 'x')).toBe(false);
    expect(normalizeRobotsPath('/%7e%2F%c3%a9 x')).toBe('/~%2F%C3%A9%20x');
  });

  it('is lenient like protego: comments, CRLF, missing colon, rules before any agent ignored, empty Disallow', () => {
    const r = RobotsTxt.parse('Disallow: /early\r\nUser-agent: A # c\r\nDisallow /x\r\nDisallow:\r\nSitemap: https://e/s.xml\r\n');
    expect(r.isAllowed('/early', 'a')).toBe(true);
    expect(r.isAllowed('/x', 'a')).toBe(false);
    expect(r.isAllowed('/y', 'a')).toBe(true);
    expect(r.sitemaps).toEqual(['https://e/s.xml']);
    expect(RobotsTxt.parse('').isAllowed('/x', 'GPTBot')).toBe(true);
    expect(RobotsTxt.parse(new TextEncoder().encode('User-agent: *\nDisallow: /b\n')).isAllowed('/b', 'x')).toBe(false);
  });

  it('always allows /robots.txt (RFC 9309 §2.2.2)', () => {
    expect(RobotsTxt.parse('User-agent: *\nDisallow: /\n').isAllowed('https://e.com/robots.txt', 'GPTBot')).toBe(true);
  });

  it('matches patterns like an independent regex translation (property)', () => {
    const alphabet = fc.constantFrom('a', 'b', '/', '.', '*');
    const pattern = fc.tuple(fc.array(alphabet, { maxLength: 8 }), fc.boolean()).map(([cs, anchored]) => `/${cs.join('')}${anchored ? '$' : ''}`);
    const pathArb = fc.array(fc.constantFrom('a', 'b', '/', '.'), { maxLength: 12 }).map((cs) => `/${cs.join('')}`);
    fc.assert(
      fc.property(pattern, pathArb, (p, s) => {
        const anchored = p.endsWith('$');
        const body = anchored ? p.slice(0, -1) : p;
        const re = new RegExp(`^${body.split('*').map((x) => x.replace(/[.]/g, '\\.')).join('.*')}${anchored ? '$' : ''}`);
        expect(robotsPatternMatches(p, s)).toBe(re.test(s));
      }),
      { numRuns: 2000 },
    );
  });

  it('matches hostile wildcard patterns without regex backtracking', () => {
    // a backtracking regex needs ~n^200 steps here; the segment scan is linear
    const r = RobotsTxt.parse(`User-agent: *\nDisallow: /${'*a'.repeat(200)}*b$\n`);
    expect(r.isAllowed(`/${'a'.repeat(100_000)}`, 'x')).toBe(true);
    expect(r.isAllowed(`/${'a'.repeat(300)}b`, 'x')).toBe(false);
  });

  it('never throws on arbitrary robots.txt content (fuzz)', () => {
    const line = fc.oneof(
      fc.string(),
      fc.tuple(fc.constantFrom('User-agent', 'Disallow', 'Allow', 'Sitemap', 'user agent', 'Crawl-delay', 'x'), fc.string()).map(([k, v]) => `${k}:${v}`),
    );
    fc.assert(
      fc.property(fc.array(line, { maxLength: 20 }), fc.string(), fc.constantFrom('GPTBot', '*', 'CCBot/2.0'), (lines, p, agent) => {
        const r = RobotsTxt.parse(lines.join('\n'));
        expect(typeof r.isAllowed(`/${p}`, agent)).toBe('boolean');
      }),
      { numRuns: 500 },
    );
  });
});

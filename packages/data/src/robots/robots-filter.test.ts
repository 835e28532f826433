import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DocumentReadError, InvalidOptionError, RobotsSourceError } from '../errors';
import { APERTUS_AI_USER_AGENTS, RobotsFilter } from './robots-filter';
import { DirectoryRobotsSource, MapRobotsSource } from './sources';

const ROBOTS = {
  // opted out for one AI crawler only, on a sub-path
  'news.example': 'User-agent: GPTBot\nDisallow: /articles/\n\nUser-agent: *\nAllow: /\n',
  // opted out for every crawler
  'closed.example': 'User-agent: *\nDisallow: /\n',
  // versioned CCBot group: only the exact "CCBot/2.0" name in the Apertus list matches it
  'cc.example': 'User-agent: CCBot/2.0\nDisallow: /\n',
  // ordinary site blocking only search bots from /search
  'open.example': 'User-agent: Googlebot\nDisallow: /search\n',
  'ports.example:8080': 'User-agent: ClaudeBot\nDisallow: /\n',
};

const doc = (id: string, url?: string) => (url === undefined ? { id, text: 't' } : { id, text: 't', url });

describe('RobotsFilter', () => {
  it('lists the Apertus AI crawlers plus *', () => {
    expect(APERTUS_AI_USER_AGENTS).toHaveLength(15);
    expect(APERTUS_AI_USER_AGENTS).toContain('CCBot/2.0');
    expect(APERTUS_AI_USER_AGENTS[APERTUS_AI_USER_AGENTS.length - 1]).toBe('*');
  });

  it('url mode removes a document when any listed agent may not fetch its URL', async () => {
    const f = new RobotsFilter({ source: new MapRobotsSource(ROBOTS) });
    const r1 = await f.apply(doc('1', 'https://news.example/articles/42'));
    expect(r1.report).toEqual({ kept: false, filter: 'robots', reason: 'robots:url', detail: 'disallowed for GPTBot' });
    expect((await f.apply(doc('2', 'https://news.example/about'))).report.kept).toBe(true);
    const r3 = await f.apply(doc('3', 'https://CLOSED.example/x'));
    expect(r3.report.kept).toBe(false);
    expect(r3.report.detail).toBe(`disallowed for ${APERTUS_AI_USER_AGENTS.join(', ')}`);
    expect((await f.apply(doc('4', 'https://cc.example/'))).report.detail).toBe('disallowed for CCBot/2.0');
    expect((await f.apply(doc('5', 'https://open.example/search?q=1'))).report.kept).toBe(true);
    expect((await f.apply(doc('6', 'http://ports.example:8080/a'))).report.detail).toBe('disallowed for ClaudeBot');
    // the same host on another port has no robots.txt in the snapshot
    expect((await f.apply(doc('7', 'http://ports.example/a'))).report.kept).toBe(true);
  });

  it('keeps documents without URL, with an unparsable URL, or without robots.txt, and counts them', async () => {
    const f = new RobotsFilter({ source: new MapRobotsSource(ROBOTS) });
    for (const d of [doc('a'), doc('b', ''), doc('c', 'not a url'), doc('d', 'https://unknown.example/x')]) {
      expect((await f.apply(d)).report).toEqual({ kept: true });
    }
    expect(f.counters).toEqual({ noUrl: 2, invalidUrl: 1, noRobotsTxt: 1, checked: 0 });
  });

  it('domain mode removes whole hosts that opt out at / and blocklisted domains with their subdomains', async () => {
    const f = new RobotsFilter({ source: new MapRobotsSource(ROBOTS), mode: 'domain', blockedDomains: ['Blocked.example'] });
    // news.example only blocks GPTBot from /articles/: the domain itself is not opted out
    expect((await f.apply(doc('1', 'https://news.example/articles/42'))).report.kept).toBe(true);
    const closed = await f.apply(doc('2', 'https://closed.example/anything/at/all'));
    expect(closed.report).toMatchObject({ kept: false, reason: 'robots:domain' });
    expect((await f.apply(doc('3', 'https://www.blocked.example/page'))).report).toMatchObject({
      kept: false,
      reason: 'robots:domain',
      detail: 'domain blocked.example is on the blocklist',
    });
    expect((await f.apply(doc('4', 'https://notblocked.example/'))).report.kept).toBe(true);
    expect((await f.apply(doc('5'))).report.kept).toBe(true);
    const listOnly = new RobotsFilter({ mode: 'domain', blockedDomains: ['blocked.example'] });
    expect((await listOnly.apply(doc('6', 'https://closed.example/'))).report.kept).toBe(true);
    expect((await listOnly.apply(doc('7', 'https://blocked.example/'))).report.kept).toBe(false);
  });

  it('reads <host>.txt files from a directory; missing files mean no robots.txt', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'apertus-robots-'));
    try {
      for (const [host, content] of Object.entries(ROBOTS)) writeFileSync(path.join(dir, `${host}.txt`), content);
      mkdirSync(path.join(dir, 'broken.example.txt'));
      const f = new RobotsFilter({ source: new DirectoryRobotsSource(dir) });
      expect((await f.apply(doc('1', 'https://news.example/articles/1'))).report.kept).toBe(false);
      expect((await f.apply(doc('2', 'http://ports.example:8080/'))).report.kept).toBe(false);
      expect((await f.apply(doc('3', 'https://missing.example/'))).report.kept).toBe(true);
      await expect(f.apply(doc('4', 'https://broken.example/'))).rejects.toThrow(RobotsSourceError);
      const missing = new RobotsFilter({ source: new DirectoryRobotsSource(path.join(dir, 'nope')) });
      await expect(missing.apply(doc('5', 'https://news.example/'))).rejects.toThrow(DocumentReadError);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('rejects invalid options', () => {
    expect(() => new RobotsFilter({})).toThrow(InvalidOptionError);
    expect(() => new RobotsFilter({ mode: 'domain' })).toThrow(InvalidOptionError);
    expect(() => new RobotsFilter({ source: new MapRobotsSource({}), mode: 'fine' as 'url' })).toThrow(/mode/);
    expect(() => new RobotsFilter({ source: new MapRobotsSource({}), userAgents: [] })).toThrow(/userAgents/);
    expect(() => new RobotsFilter({ source: new MapRobotsSource({}), cacheSize: 0 })).toThrow(/cacheSize/);
  });
});

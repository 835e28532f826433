import type { Document } from '../document';
import { InvalidOptionError } from '../errors';
import type { DocumentFilter, FilterResult } from '../filters/report';
import { KEPT } from '../filters/report';
import { RobotsTxt } from './robots-txt';
import type { RobotsSource } from './sources';

/**
 * The crawler names whose opt-out removes a document in Apertus
 * (`_DEFAULT_REMOVE_USER_AGENTS` of the swiss-ai pretrain-data robots filter),
 * including `*`: a site-wide `Disallow` for every crawler removes it too.
 */
export const APERTUS_AI_USER_AGENTS: readonly string[] = Object.freeze([
  'AI2Bot',
  'Applebot-Extended',
  'Bytespider',
  'CCBot',
  'CCBot/2.0',
  'CCBot/1.0',
  'ClaudeBot',
  'cohere-training-data-crawler',
  'Diffbot',
  'FacebookBot',
  'Meta-ExternalAgent',
  'Google-Extended',
  'GPTBot',
  'PanguBot',
  '*',
]);

/**
 * How robots.txt opt-outs are applied.
 * - `url` ("fine", used live by Apertus for DCLM-Edu, MegaMath, FineMath/InfiWebMath):
 *   a document is removed when its own URL may not be fetched by any listed agent.
 * - `domain` ("coarse", datatrove `URLFilter` with a domain blocklist): a document
 *   is removed when its host, or a parent domain, is on `blockedDomains`, or when
 *   the host's robots.txt disallows the site root `/` for any listed agent.
 */
export type RobotsMode = 'url' | 'domain';

/** Options of {@link RobotsFilter}. */
export interface RobotsFilterOptions {
  /** robots.txt contents per host. Optional in `domain` mode when `blockedDomains` is given. */
  readonly source?: RobotsSource;
  /** `url` (default) or `domain`. */
  readonly mode?: RobotsMode;
  /** Crawler names to check (default {@link APERTUS_AI_USER_AGENTS}). */
  readonly userAgents?: readonly string[];
  /** Extra blocked domains for `domain` mode (a domain also blocks its subdomains). */
  readonly blockedDomains?: Iterable<string>;
  /** Parsed robots.txt files kept in memory (LRU, default 8192 like the Apertus filter). */
  readonly cacheSize?: number;
}

/** Counters of {@link RobotsFilter} besides kept/removed. */
export interface RobotsCounters {
  /** Documents without a URL (kept). */
  noUrl: number;
  /** Documents whose URL did not parse (kept, like a check error in Apertus). */
  invalidUrl: number;
  /** Documents whose host has no robots.txt in the source (kept unless blocklisted). */
  noRobotsTxt: number;
  /** Documents checked against a robots.txt. */
  checked: number;
}

/**
 * robots.txt opt-out filter (training-recipe §7.1). Documents without a URL,
 * without a robots.txt for their host, or whose check fails, are kept.
 */
export class RobotsFilter implements DocumentFilter {
  /** Filter name in reports. */
  readonly name = 'robots';
  /** Mode in use. */
  readonly mode: RobotsMode;
  /** Crawler names checked. */
  readonly userAgents: readonly string[];
  /** Running counters. */
  readonly counters: RobotsCounters = { noUrl: 0, invalidUrl: 0, noRobotsTxt: 0, checked: 0 };
  private readonly source: RobotsSource | undefined;
  private readonly blocked: ReadonlySet<string>;
  private readonly cacheSize: number;
  private readonly cache = new Map<string, RobotsTxt | null>();

  constructor(options: RobotsFilterOptions) {
    this.mode = options.mode ?? 'url';
    if (this.mode !== 'url' && this.mode !== 'domain') {
      throw new InvalidOptionError('mode', `expected "url" or "domain", got ${JSON.stringify(this.mode)}`);
    }
    this.userAgents = options.userAgents ?? APERTUS_AI_USER_AGENTS;
    if (this.userAgents.length === 0) throw new InvalidOptionError('userAgents', 'must not be empty');
    this.source = options.source;
    this.blocked = new Set([...(options.blockedDomains ?? [])].map((d) => d.trim().toLowerCase().replace(/^\.+|\.+$/g, '')));
    if (this.source === undefined && (this.mode === 'url' || this.blocked.size === 0)) {
      throw new InvalidOptionError('source', this.mode === 'url' ? 'required in url mode' : 'give a source or blockedDomains');
    }
    this.cacheSize = options.cacheSize ?? 8192;
    if (!Number.isInteger(this.cacheSize) || this.cacheSize < 1) {
      throw new InvalidOptionError('cacheSize', `expected a positive integer, got ${String(options.cacheSize)}`);
    }
  }

  /** Parsed robots.txt of `host` (`null` when the source has none), LRU-cached. */
  async robotsFor(host: string): Promise<RobotsTxt | null> {
    const hit = this.cache.get(host);
    if (hit !== undefined) {
      this.cache.delete(host);
      this.cache.set(host, hit);
      return hit;
    }
    const content = this.source === undefined ? undefined : await this.source.get(host);
    const robots = content === undefined ? null : RobotsTxt.parse(content);
    this.cache.set(host, robots);
    if (this.cache.size > this.cacheSize) this.cache.delete(this.cache.keys().next().value!);
    return robots;
  }

  private blocklisted(hostname: string): string | undefined {
    let h = hostname;
    for (;;) {
      if (this.blocked.has(h)) return h;
      const dot = h.indexOf('.');
      if (dot < 0) return undefined;
      h = h.slice(dot + 1);
    }
  }

  /** Keep or remove `document` according to its URL's robots.txt. */
  async apply(document: Document): Promise<FilterResult> {
    const url = document.url;
    if (url === undefined || url === '') {
      this.counters.noUrl++;
      return { document, report: KEPT };
    }
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      this.counters.invalidUrl++;
      return { document, report: KEPT };
    }
    const host = parsed.host.toLowerCase();
    if (this.mode === 'domain') {
      const listed = this.blocklisted(parsed.hostname.toLowerCase());
      if (listed !== undefined) {
        return this.removed(document, 'robots:domain', `domain ${listed} is on the blocklist`);
      }
    }
    const robots = this.source === undefined ? null : await this.robotsFor(host);
    if (robots === null) {
      this.counters.noRobotsTxt++;
      return { document, report: KEPT };
    }
    this.counters.checked++;
    const target = this.mode === 'url' ? url : '/';
    const disallowing: string[] = [];
    for (const agent of this.userAgents) {
      try {
        if (!robots.isAllowed(target, agent)) disallowing.push(agent);
      } catch {
        // a check error keeps the document, as in Apertus
      }
    }
    if (disallowing.length === 0) return { document, report: KEPT };
    return this.mode === 'url'
      ? this.removed(document, 'robots:url', `disallowed for ${disallowing.join(', ')}`)
      : this.removed(document, 'robots:domain', `${host} disallows / for ${disallowing.join(', ')}`);
  }

  private removed(document: Document, reason: string, detail: string): FilterResult {
    return { document, report: { kept: false, filter: this.name, reason, detail } };
  }
}

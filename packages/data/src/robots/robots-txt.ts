/**
 * robots.txt parser and matcher (RFC 9309), with the user-agent selection of
 * protego, the Python parser the Apertus robots filter used.
 *
 * - Lines: `field: value`, `#` starts a comment, field names are case-insensitive.
 *   Lines without a colon are accepted when they start with a known field name
 *   followed by a space (`Disallow /x`), like protego.
 * - Groups: consecutive `user-agent` lines open a group; a `user-agent` line after
 *   any other line starts a new group. Groups naming the same agent are merged.
 *   Rules before the first `user-agent` line are ignored; empty values are ignored.
 * - Agent selection (protego): the crawler name is lower-cased; a group applies
 *   when its (lower-cased, `*`-stripped) agent string is a substring of the crawler
 *   name, with score = its length; `*` applies to everyone with score 1; the
 *   highest score wins (first group on ties). No group → everything allowed.
 * - Rule selection (RFC 9309 §2.2.2): among rules whose pattern matches the
 *   percent-normalised path (+ `?query`), the longest pattern wins; an allow rule
 *   wins a tie. `*` matches any run of characters, a trailing `$` anchors the end.
 *   `/robots.txt` is always allowed.
 */

/** One allow/disallow rule of a group, with its normalised pattern. */
export interface RobotsRule {
  /** `true` for `Allow`, `false` for `Disallow`. */
  readonly allow: boolean;
  /** Percent-normalised pattern, `*` and a trailing `$` kept as wildcards. */
  readonly pattern: string;
}

/** Outcome of one robots.txt check, with the rule that decided it. */
export interface RobotsDecision {
  /** Whether the crawler may fetch the path. */
  readonly allowed: boolean;
  /** The group's agent string that applied (`undefined` when no group applied). */
  readonly group?: string;
  /** The deciding rule (`undefined` when no rule matched). */
  readonly rule?: RobotsRule;
}

const DISALLOW = new Set(['disallow', 'dissallow', 'dissalow', 'disalow', 'diasllow', 'disallaw']);
const ALLOW = new Set(['allow']);
const USER_AGENT = new Set(['user-agent', 'useragent', 'user agent']);
const SITEMAP = new Set(['sitemap', 'sitemaps', 'site-map']);
const KNOWN_FIELDS = [
  ...DISALLOW,
  ...ALLOW,
  ...USER_AGENT,
  ...SITEMAP,
  'crawl-delay',
  'crawl delay',
  'request-rate',
  'request rate',
  'host',
];

const HEX = '0123456789ABCDEF';
const UNRESERVED = /[A-Za-z0-9\-._~]/;
const UTF8 = new globalThis.TextEncoder();

function percentEncode(char: string): string {
  let out = '';
  for (const byte of UTF8.encode(char)) out += `%${HEX[byte >> 4]}${HEX[byte & 15]}`;
  return out;
}

/**
 * Percent-normalise a path or pattern (RFC 9309 §2.2.2 / RFC 3986 §6.2.2):
 * `%xx` of an unreserved character is decoded, other escapes get upper-case hex,
 * and characters outside printable ASCII (plus space, `"`, `<`, `>`, `\`, `^`,
 * `` ` ``, `{`, `|`, `}`) are UTF-8 percent-encoded.
 */
export function normalizeRobotsPath(path: string): string {
  let out = '';
  for (let i = 0; i < path.length; i++) {
    const c = path[i]!;
    if (c === '%' && i + 2 < path.length && /^[0-9A-Fa-f]{2}$/.test(path.slice(i + 1, i + 3))) {
      const byte = parseInt(path.slice(i + 1, i + 3), 16);
      const ch = String.fromCharCode(byte);
      out += UNRESERVED.test(ch) ? ch : `%${path.slice(i + 1, i + 3).toUpperCase()}`;
      i += 2;
      continue;
    }
    const code = path.codePointAt(i)!;
    if (code > 0xffff) {
      out += percentEncode(String.fromCodePoint(code));
      i++;
      continue;
    }
    if (code <= 0x20 || code >= 0x7f || '"<>\\^`{|}'.includes(c)) {
      // lone surrogates cannot be UTF-8 encoded: encode U+FFFD like a lenient decoder would
      out += percentEncode(code >= 0xd800 && code <= 0xdfff ? '\ufffd' : c);
      continue;
    }
    out += c;
  }
  return out;
}

/**
 * Whether `pattern` (with `*` wildcards and an optional trailing `$`) matches a
 * prefix of `path` (the whole `path` when anchored). Linear scan, no regex, so
 * hostile patterns cannot trigger catastrophic backtracking.
 */
export function robotsPatternMatches(pattern: string, path: string): boolean {
  const anchored = pattern.endsWith('$');
  const body = anchored ? pattern.slice(0, -1) : pattern;
  const parts = body.split('*');
  const first = parts[0]!;
  if (!path.startsWith(first)) return false;
  if (parts.length === 1) return anchored ? path.length === first.length : true;
  const last = parts[parts.length - 1]!;
  let pos = first.length;
  // middle segments: leftmost match is optimal for prefix matching
  for (let i = 1; i < parts.length - 1; i++) {
    const seg = parts[i]!;
    const at = path.indexOf(seg, pos);
    if (at < 0) return false;
    pos = at + seg.length;
  }
  if (!anchored) return path.indexOf(last, pos) >= 0;
  return path.length - last.length >= pos && path.endsWith(last);
}

class Group {
  readonly rules: RobotsRule[] = [];
  constructor(readonly agent: string) {}
}

/** Path (+ query) of a URL or a bare path, percent-normalised for matching. */
function pathOf(urlOrPath: string): string {
  if (urlOrPath.startsWith('/')) {
    const hash = urlOrPath.indexOf('#');
    return normalizeRobotsPath(hash >= 0 ? urlOrPath.slice(0, hash) : urlOrPath);
  }
  const url = new URL(urlOrPath);
  return normalizeRobotsPath((url.pathname || '/') + url.search);
}

/** A parsed robots.txt file. Parsing never throws: malformed lines are ignored. */
export class RobotsTxt {
  private readonly groups = new Map<string, Group>();
  private readonly matchCache = new Map<string, Group | null>();
  /** `Sitemap:` URLs in file order. */
  readonly sitemaps: readonly string[];

  private constructor(sitemaps: string[]) {
    this.sitemaps = sitemaps;
  }

  /** Parse robots.txt `content` (a string, or bytes decoded as UTF-8 with replacement). */
  static parse(content: string | Uint8Array): RobotsTxt {
    const text = typeof content === 'string' ? content : new globalThis.TextDecoder('utf-8').decode(content);
    const sitemaps: string[] = [];
    const robots = new RobotsTxt(sitemaps);
    let current: Group[] = [];
    let previousField: string | undefined;
    for (const raw of text.split(/\r\n|\r|\n/)) {
      const hash = raw.indexOf('#');
      const line = (hash >= 0 ? raw.slice(0, hash) : raw).trim();
      if (line === '') continue;
      let field: string;
      let value: string;
      const colon = line.indexOf(':');
      if (colon >= 0) {
        field = line.slice(0, colon);
        value = line.slice(colon + 1);
      } else {
        const lower = line.toLowerCase();
        const known = KNOWN_FIELDS.find((f) => lower.startsWith(`${f} `));
        if (known === undefined) continue;
        field = known;
        value = line.slice(known.length);
      }
      field = field.trim().toLowerCase();
      value = value.trim();
      if (value === '') {
        previousField = field;
        continue;
      }
      if (current.length === 0 && !USER_AGENT.has(field) && !SITEMAP.has(field)) continue;
      if (USER_AGENT.has(field)) {
        if (previousField !== undefined && !USER_AGENT.has(previousField)) current = [];
        const lowered = value.toLowerCase();
        const agent = lowered === '*' ? '*' : lowered.replaceAll('*', '');
        if (agent !== '') {
          let group = robots.groups.get(agent);
          if (group === undefined) {
            group = new Group(agent);
            robots.groups.set(agent, group);
          }
          if (!current.includes(group)) current.push(group);
        }
      } else if (ALLOW.has(field) || DISALLOW.has(field)) {
        const rule: RobotsRule = { allow: ALLOW.has(field), pattern: normalizeRobotsPath(value) };
        for (const group of current) group.rules.push(rule);
      } else if (SITEMAP.has(field)) {
        sitemaps.push(value);
      }
      previousField = field;
    }
    return robots;
  }

  /** Agent strings of all groups, in file order (lower-cased). */
  get agents(): string[] {
    return [...this.groups.keys()];
  }

  /** Rules of the group named `agent` (lower-cased lookup), or `undefined`. */
  rulesFor(agent: string): readonly RobotsRule[] | undefined {
    return this.groups.get(agent.toLowerCase())?.rules;
  }

  private groupFor(userAgent: string): Group | null {
    const cached = this.matchCache.get(userAgent);
    if (cached !== undefined) return cached;
    const name = userAgent.trim().toLowerCase();
    let best: Group | null = null;
    let bestScore = 0;
    for (const group of this.groups.values()) {
      const score = group.agent === '*' ? 1 : name.includes(group.agent) ? group.agent.length : 0;
      if (score > bestScore) {
        best = group;
        bestScore = score;
      }
    }
    this.matchCache.set(userAgent, best);
    return best;
  }

  /**
   * Decide whether `userAgent` may fetch `url` (an absolute URL or a path starting
   * with `/`). Throws `TypeError` only for an unparsable URL.
   */
  check(url: string, userAgent: string): RobotsDecision {
    const group = this.groupFor(userAgent);
    if (group === null) return { allowed: true };
    const path = pathOf(url);
    if (path === '/robots.txt') return { allowed: true, group: group.agent };
    let best: RobotsRule | undefined;
    for (const rule of group.rules) {
      if (!robotsPatternMatches(rule.pattern, path)) continue;
      if (
        best === undefined ||
        rule.pattern.length > best.pattern.length ||
        (rule.pattern.length === best.pattern.length && rule.allow && !best.allow)
      ) {
        best = rule;
      }
    }
    return { allowed: best === undefined || best.allow, group: group.agent, rule: best };
  }

  /** Shorthand for `check(url, userAgent).allowed` (protego's `can_fetch`). */
  isAllowed(url: string, userAgent: string): boolean {
    return this.check(url, userAgent).allowed;
  }
}

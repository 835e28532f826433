import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { EMAIL_REGEX, IBAN_REGEX, IPV4_REGEX, PiiFilter, replacePii } from './pii';

interface Vector {
  input: string;
  output: string;
  pii_count: number;
  counts: Record<string, number>;
}

// Generated once by test/pii_reference.py, which runs the spec's Python regexes and
// replacement loop (§7.2) on Python's own `re` engine: 15 hand-written cases plus
// 300 seeded fuzz strings over PII-shaped fragments.
const vectors = (
  JSON.parse(readFileSync(path.join(import.meta.dirname, '../../test/golden/pii-vectors.json'), 'utf8')) as {
    vectors: Vector[];
  }
).vectors;

const all = (re: RegExp, s: string): string[] => s.match(re) ?? [];

describe('PII patterns (training-recipe §7.2)', () => {
  it('e-mail: matches addresses and IP literals, not broken ones', () => {
    expect(all(EMAIL_REGEX, 'john.doe@example.com, jane@mail.example.org')).toEqual(['john.doe@example.com', 'jane@mail.example.org']);
    expect(all(EMAIL_REGEX, 'user@[192.168.0.1]')).toEqual(['user@[192.168.0.1]']);
    expect(all(EMAIL_REGEX, 'john@ @example.com john@-bad-.com')).toEqual([]);
    // Python's \b is Unicode-aware: no boundary between "é" and "a"
    expect(all(EMAIL_REGEX, 'éabc@example.com')).toEqual([]);
    expect(all(EMAIL_REGEX, 'x_abc@example.com')).toEqual(['x_abc@example.com']);
  });

  it('IPv4: no word boundaries, so version strings and the tail of 256.x hit too', () => {
    expect(all(IPV4_REGEX, '10.0.0.1 and 255.255.255.255')).toEqual(['10.0.0.1', '255.255.255.255']);
    expect(all(IPV4_REGEX, 'version 1.2.3.4.5')).toEqual(['1.2.3.4']);
    expect(all(IPV4_REGEX, '256.1.1.1')).toEqual(['56.1.1.1']);
    expect(all(IPV4_REGEX, '1.2.3 and 300.300.300.300')).toEqual([]);
  });

  it('IBAN: only the space-grouped 4×4 form with upper-case country code', () => {
    expect(all(IBAN_REGEX, 'CH93 0076 2011 6238 5295 7')).toEqual(['CH93 0076 2011 6238 5295 7']);
    expect(all(IBAN_REGEX, 'DE89 3704 0044 0532 0130 00')).toEqual(['DE89 3704 0044 0532 0130 00']);
    expect(all(IBAN_REGEX, 'DE89370400440532013000 GB82 WEST 1234 5698 7654 32 ch93 0076 2011 6238 5295 7')).toEqual([]);
  });

  it('replaces in the spec order with the spec tokens and counts distinct hits', () => {
    const r = replacePii('mail bob@example.com from 192.168.1.1 to CH93 0076 2011 6238 5295 7, again bob@example.com');
    expect(r.text).toBe('mail <email-pii> from <ip-pii> to <iban-pii>, again <email-pii>');
    expect(r.piiCount).toBe(3);
    expect(r.changes).toEqual([
      { kind: 'email', count: 1 },
      { kind: 'ipv4', count: 1 },
      { kind: 'iban', count: 1 },
    ]);
    // e-mail first: the IP inside the e-mail's domain is consumed by the e-mail
    expect(replacePii('root@10.0.0.1').text).toBe('<email-pii>');
    // phone numbers are not PII for Apertus
    expect(replacePii('+41 44 123 45 67').text).toBe('+41 44 123 45 67');
    expect(replacePii('bob@example.com 10.0.0.1', { email: false }).text).toBe('bob@example.com <ip-pii>');
  });

  it(`reproduces all ${vectors.length} vectors of the Python reference (text, pii_count, per-kind counts)`, () => {
    expect(vectors.length).toBeGreaterThan(300);
    for (const v of vectors) {
      const r = replacePii(v.input);
      expect(r.text, JSON.stringify(v.input)).toBe(v.output);
      expect(r.piiCount, JSON.stringify(v.input)).toBe(v.pii_count);
      expect(Object.fromEntries(r.changes.map((c) => [c.kind, c.count]))).toEqual(v.counts);
    }
  });

  it('PiiFilter keeps the document, rewrites text and sets metadata.pii_count', () => {
    const f = new PiiFilter();
    const r = f.apply({ id: 'd', text: 'ping 8.8.8.8', metadata: { source: 'x' } });
    expect(r.report).toEqual({ kept: true, changes: [{ kind: 'ipv4', count: 1 }] });
    expect(r.document).toEqual({ id: 'd', text: 'ping <ip-pii>', metadata: { source: 'x', pii_count: 1 } });
    const clean = f.apply({ id: 'e', text: 'nothing here' });
    expect(clean.report).toEqual({ kept: true });
    expect(clean.document.metadata).toEqual({ pii_count: 0 });
  });
});

import type { Document } from '../document';
import type { DocumentFilter, FilterChange, FilterResult } from './report';
import { KEPT } from './report';

/** The PII kinds Apertus replaces, in the order it replaces them (training-recipe §7.2). */
export type PiiKind = 'email' | 'ipv4' | 'iban';

/** One PII pattern: the regex (JS translation of the Python one) and its replacement token. */
export interface PiiPattern {
  /** Kind name used in reports. */
  readonly kind: PiiKind;
  /** Global, Unicode regex equivalent to the Python `re` pattern of the Apertus formatter. */
  readonly regex: RegExp;
  /** Replacement token (a single special token in the Apertus tokenizer: ids 37, 38, 36). */
  readonly token: string;
}

// Python `\b` on str patterns is Unicode-aware: a word character is any letter,
// digit or `_`. JS `\b` only knows ASCII, so the boundary is spelled out.
const W = '[\\p{L}\\p{N}_]';
const PY_WORD_BOUNDARY = `(?:(?<=${W})(?!${W})|(?<!${W})(?=${W}))`;
const OCTET = '(?:25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)';
const LOCAL_CHAR = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]";
const LABEL = '[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?';

/** E-mail pattern of the Apertus PII formatter. */
export const EMAIL_REGEX = new RegExp(
  `${PY_WORD_BOUNDARY}${LOCAL_CHAR}+(?:\\.${LOCAL_CHAR}+)*@` +
    `(?:(?:${LABEL}\\.)+${LABEL}|\\[(?:${OCTET}\\.){3}(?:${OCTET}|[A-Za-z0-9-]*[A-Za-z0-9]:)\\])`,
  'gu',
);

/** IPv4 pattern of the Apertus PII formatter (no word boundaries: also hits version strings). */
export const IPV4_REGEX = new RegExp(`(?:${OCTET}\\.){3}${OCTET}`, 'gu');

/** IBAN pattern of the Apertus PII formatter (only the space-grouped 4×4 form). */
export const IBAN_REGEX = /[A-Z]{2}[0-9]{2}(?: [0-9]{4}){4} [A-Z0-9]{1,2}/gu;

/** The three patterns in application order: e-mail, then IPv4, then IBAN. */
export const PII_PATTERNS: readonly PiiPattern[] = Object.freeze([
  { kind: 'email', regex: EMAIL_REGEX, token: '<email-pii>' },
  { kind: 'ipv4', regex: IPV4_REGEX, token: '<ip-pii>' },
  { kind: 'iban', regex: IBAN_REGEX, token: '<iban-pii>' },
] as const);

/** Which PII kinds to replace (all on by default, as `PIIFormatter()` in Apertus). */
export interface PiiOptions {
  /** Replace e-mail addresses (default true). */
  readonly email?: boolean;
  /** Replace IPv4 addresses (default true). */
  readonly ipv4?: boolean;
  /** Replace IBANs (default true). */
  readonly iban?: boolean;
}

/** Result of {@link replacePii}. */
export interface PiiResult {
  /** Text with PII replaced by tokens. */
  readonly text: string;
  /** Number of distinct PII strings found (Apertus `metadata["pii_count"]`). */
  readonly piiCount: number;
  /** Distinct hits per kind (kinds with zero hits omitted). */
  readonly changes: readonly FilterChange[];
}

/**
 * Replace e-mails, IPv4 addresses and IBANs exactly as the Apertus formatter:
 * for each pattern in order, find all matches in the current text, then for each
 * match not seen before (in this document, across kinds) replace every occurrence
 * of that string by the token.
 */
export function replacePii(text: string, options: PiiOptions = {}): PiiResult {
  const seen = new Set<string>();
  const changes: FilterChange[] = [];
  let out = text;
  for (const { kind, regex, token } of PII_PATTERNS) {
    if (options[kind] === false) continue;
    let count = 0;
    for (const match of out.match(regex) ?? []) {
      if (seen.has(match)) continue;
      seen.add(match);
      count++;
      out = out.split(match).join(token);
    }
    if (count > 0) changes.push({ kind, count });
  }
  return { text: out, piiCount: seen.size, changes };
}

/**
 * PII replacement as a pipeline step (the last step before writing in Apertus).
 * Never removes a document; sets `metadata.pii_count` and reports changes.
 */
export class PiiFilter implements DocumentFilter {
  /** Filter name in reports. */
  readonly name = 'pii';
  constructor(private readonly options: PiiOptions = {}) {}

  /** Replace PII in `document.text`. */
  apply(document: Document): FilterResult {
    const { text, piiCount, changes } = replacePii(document.text, this.options);
    const metadata = { ...document.metadata, pii_count: piiCount };
    if (changes.length === 0) return { document: { ...document, metadata }, report: KEPT };
    return { document: { ...document, text, metadata }, report: { kept: true, changes } };
  }
}

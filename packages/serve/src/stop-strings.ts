// Stop strings on a text stream. Text arrives in pieces; a piece may complete a stop string that
// began in an earlier piece. So the matcher holds back the longest tail of the text that is still
// a prefix of some stop string, and releases it once it can no longer start a match. Because
// held-back text is never released early, a match always starts inside the unreleased text, and
// the released text is exactly the full text cut before the first match.

/** Incremental stop-string matcher for one text channel. */
export class StopMatcher {
  private readonly stops: readonly string[];
  private held = '';
  /** The stop string that matched, once one has. */
  matched: string | null = null;

  /** `stops`: the strings that end generation (empty strings are ignored). */
  constructor(stops: readonly string[]) {
    this.stops = stops.filter((s) => s.length > 0);
  }

  /**
   * Add `text`; returns the text that is now safe to emit. After a match, `matched` is set, the
   * returned text ends right before the match, and later calls return ''.
   */
  push(text: string): string {
    if (this.matched !== null) return '';
    if (this.stops.length === 0) return text;
    const buf = this.held + text;
    // Earliest match (the cut position is what matters; ties keep the first listed string).
    let at = -1;
    for (const s of this.stops) {
      const i = buf.indexOf(s);
      if (i >= 0 && (at < 0 || i < at)) {
        at = i;
        this.matched = s;
      }
    }
    if (at >= 0) {
      this.held = '';
      return buf.slice(0, at);
    }
    const keep = this.heldTail(buf);
    this.held = buf.slice(buf.length - keep);
    return buf.slice(0, buf.length - keep);
  }

  /** End of the channel: release whatever is held back (no match can complete any more). */
  flush(): string {
    const out = this.matched === null ? this.held : '';
    this.held = '';
    return out;
  }

  /** Length of the longest suffix of `buf` that is a proper prefix of a stop string. */
  private heldTail(buf: string): number {
    let best = 0;
    for (const s of this.stops) {
      for (let k = Math.min(s.length - 1, buf.length); k > best; k--) {
        if (buf.endsWith(s.slice(0, k))) {
          best = k;
          break;
        }
      }
    }
    return best;
  }
}

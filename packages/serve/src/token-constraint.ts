// Constrained decoding over the tokenizer's vocabulary: which token ids may come next so that the
// output is `prefix tokens · JSON value of a schema · suffix tokens · stop`, and fits the tokens
// left. The vocabulary's byte strings sit in a trie; one depth-first walk per step runs the JSON
// automaton (json-grammar.ts) along it, so shared prefixes are checked once and dead branches are
// cut at their first bad byte. A token is allowed only if what remains after it still fits the
// budget (the automaton's exact completion cost, one byte per token at worst), so a sequence
// never ends cut off by max_tokens.

import { byteLevelToBytes, type Tokenizer } from '@apertus/tokenizer';
import { canEnd, cost, inPlainString, isPlainStringByte, startState, step, type JsonState, type SchemaNode } from './json-grammar';

interface TrieNode {
  next: Map<number, TrieNode>;
  /** Tokens whose bytes end here. */
  ids: number[];
  /** Every byte below this node (its own included) is a plain string byte: then `all` lists the subtree's ids. */
  plain: boolean;
  all: number[] | null;
}

const tries = new WeakMap<Tokenizer, { size: number; root: TrieNode }>();
const utf8 = new TextEncoder();

/** The bytes a token stands for (byte-level BPE tokens decoded; added tokens as their UTF-8 text). */
export function tokenBytes(tokenizer: Tokenizer, id: number): Uint8Array {
  const t = tokenizer.idToToken(id);
  if (t === undefined) return new Uint8Array(0);
  if (tokenizer.addedTokens.byContent.get(t) === id) return utf8.encode(t);
  return byteLevelToBytes(t) ?? utf8.encode(t);
}

/** Trie of the plain tokens (no added tokens) with ids below `size`. */
function vocabTrie(tokenizer: Tokenizer, size: number): TrieNode {
  const cached = tries.get(tokenizer);
  if (cached && cached.size === size) return cached.root;
  const root: TrieNode = { next: new Map(), ids: [], plain: false, all: null };
  const added = new Set(tokenizer.addedTokens.tokens.map((t) => t.id));
  for (let id = 0; id < Math.min(size, tokenizer.vocabSize); id++) {
    const t = tokenizer.idToToken(id);
    if (t === undefined || added.has(id)) continue;
    const bytes = byteLevelToBytes(t);
    if (!bytes || bytes.length === 0) continue;
    let node = root;
    for (const b of bytes) {
      let child = node.next.get(b);
      if (!child) node.next.set(b, (child = { next: new Map(), ids: [], plain: false, all: null }));
      node = child;
    }
    node.ids.push(id);
  }
  // Inside a string most of the vocabulary is plain text; whole plain subtrees are then allowed at once.
  const mark = (node: TrieNode, byte: number): number[] | null => {
    let all: number[] | null = isPlainStringByte(byte) ? [...node.ids] : null;
    for (const [b, child] of node.next) {
      const sub = mark(child, b);
      if (all && sub) for (const x of sub) all.push(x);
      else all = null;
    }
    node.plain = all !== null;
    node.all = all;
    return all;
  };
  for (const [b, child] of root.next) mark(child, b);
  tries.set(tokenizer, { size, root });
  return root;
}

/** What a constrained sequence writes: forced tokens, a JSON value of `schema`, forced tokens. */
export interface ConstraintSpec {
  /** Token ids written first (e.g. `<|tools_prefix|>`). */
  prefix: readonly number[];
  /** The JSON value's schema. */
  schema: SchemaNode;
  /** Token ids written after the value (e.g. `<|tools_suffix|>`). */
  suffix: readonly number[];
}

/** The constraint of one sequence: `allowed()` before each step, `accept()` after it. */
export class TokenConstraint {
  private phase: 'prefix' | 'json' | 'suffix' | 'done';
  private i = 0;
  private state: JsonState;
  private readonly trie: TrieNode;

  /** A constraint over the ids below `vocabSize`; `stopIds` end the sequence after the value. */
  constructor(private readonly tokenizer: Tokenizer, vocabSize: number, private readonly spec: ConstraintSpec, private readonly stopIds: readonly number[]) {
    this.trie = vocabTrie(tokenizer, vocabSize);
    this.state = startState(spec.schema);
    this.phase = spec.prefix.length > 0 ? 'prefix' : 'json';
  }

  /** Fewest tokens that finish the sequence, the stop token included. */
  needed(): number {
    const tail = this.spec.suffix.length + 1;
    switch (this.phase) {
      case 'prefix': return this.spec.prefix.length - this.i + cost(this.state) + tail;
      case 'json': return cost(this.state) + tail;
      case 'suffix': return this.spec.suffix.length - this.i + 1;
      case 'done': return 1;
    }
  }

  /** Ids that may come next when `left` tokens (this one included) remain; never empty while `needed() ≤ left`. */
  allowed(left: number): number[] {
    switch (this.phase) {
      case 'prefix': return [this.spec.prefix[this.i]!];
      case 'suffix': return [this.spec.suffix[this.i]!];
      case 'done': return [...this.stopIds];
      case 'json': {
        const out: number[] = [];
        const budget = left - 1 - (this.spec.suffix.length + 1);
        const walk = (node: TrieNode, s: JsonState) => {
          const plain = inPlainString(s) && cost(s) <= budget;
          for (const [b, child] of node.next) {
            if (plain && child.plain) {
              for (const id of child.all!) out.push(id);
              continue;
            }
            const s2 = step(s, b);
            if (s2 === null) continue;
            if (child.ids.length > 0 && cost(s2) <= budget) for (const id of child.ids) out.push(id);
            walk(child, s2);
          }
        };
        walk(this.trie, this.state);
        if (canEnd(this.state)) for (const id of this.spec.suffix.length > 0 ? [this.spec.suffix[0]!] : this.stopIds) out.push(id);
        return out;
      }
    }
  }

  /** Advance past token `id` (one of `allowed()`). */
  accept(id: number): void {
    switch (this.phase) {
      case 'prefix':
        if (++this.i === this.spec.prefix.length) {
          this.phase = 'json';
          this.i = 0;
        }
        return;
      case 'json': {
        const ends = this.spec.suffix.length > 0 ? id === this.spec.suffix[0] : this.stopIds.includes(id);
        if (canEnd(this.state) && ends) {
          this.phase = this.spec.suffix.length > 1 ? 'suffix' : 'done';
          this.i = 1;
          return;
        }
        let s: JsonState | null = this.state;
        for (const b of tokenBytes(this.tokenizer, id)) {
          s = step(s, b);
          if (s === null) throw new Error(`token ${id} does not continue the JSON value`);
        }
        this.state = s;
        return;
      }
      case 'suffix':
        if (++this.i === this.spec.suffix.length) this.phase = 'done';
        return;
      case 'done':
        return;
    }
  }
}

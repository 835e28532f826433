#!/usr/bin/env node
// Assemble BENCHMARKS.md at the repository root from tooling/bench/results/*.md (each written by
// its benchmark with --write). Sections keep their own command lines; headings move down a level.
//   node tooling/bench/src/collect.mjs
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../../..');
const results = path.join(here, '../results');
const ORDER = ['gemm', 'model', 'memory', 'pretrain', 'tokenizer', 'serve', 'gguf', 'gpujs', 'gpu', 'safetensors', 'ademamix', 'goldfish', 'data'];
const files = fs.readdirSync(results).filter((f) => f.endsWith('.md'))
  .sort((a, b) => (ORDER.indexOf(a.slice(0, -3)) + 1 || 99) - (ORDER.indexOf(b.slice(0, -3)) + 1 || 99));
const intro = fs.readFileSync(path.join(here, 'benchmarks-intro.md'), 'utf8').trim();
const body = files.map((f) => fs.readFileSync(path.join(results, f), 'utf8').trim().replace(/^(#+) /gm, '#$1 '));
fs.writeFileSync(path.join(root, 'BENCHMARKS.md'), [intro, ...body].join('\n\n') + '\n');
console.log(`BENCHMARKS.md: ${files.length} sections (${files.map((f) => f.slice(0, -3)).join(', ')})`);

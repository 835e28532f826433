#!/usr/bin/env node
// Make (or bring up to date) the venv of the Python peers from requirements.txt. The machines'
// pip has a local package index (`pip config list`); its index URLs are passed as --index-url so
// that pip never waits on an unreachable default index. A stamp file holds the requirements the
// venv was made from, so a second run with the same pins does nothing.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pinned, venvDir } from './index.mjs';

const stamp = path.join(venvDir, 'apertus-peers.txt');
const want = pinned().join('\n');
if (existsSync(stamp) && readFileSync(stamp, 'utf8') === want) process.exit(0);

/** The index URLs of the machine's pip configuration (global.index-url / extra-index-url), local ones first. */
function configuredIndexes() {
  let listing = '';
  try { listing = execFileSync('python3', ['-m', 'pip', 'config', 'list'], { encoding: 'utf8' }); } catch { return []; }
  const urls = [];
  for (const line of listing.split('\n')) {
    const m = /^[\w:.-]*(?:index-url|extra-index-url)='(.*)'$/.exec(line.trim());
    if (m) urls.push(...m[1].split(/\s+/).filter(Boolean));
  }
  return [...new Set(urls)].sort((a, b) => Number(b.startsWith('file:')) - Number(a.startsWith('file:')));
}

const indexes = configuredIndexes();
const indexArgs = indexes.length === 0 ? [] : ['--index-url', indexes[0], ...indexes.slice(1).flatMap((u) => ['--extra-index-url', u])];
console.error(`peers: installing ${pinned().join(' ')} into ${venvDir}${indexes.length ? ` from ${indexes.join(', ')}` : ''}`);
mkdirSync(path.dirname(venvDir), { recursive: true });
execFileSync('python3', ['-m', 'venv', venvDir], { stdio: 'inherit' });
const pip = path.join(venvDir, 'bin', 'pip');
execFileSync(pip, ['install', '--quiet', '--disable-pip-version-check', ...indexArgs, ...pinned()], { stdio: ['ignore', 'inherit', 'inherit'] });
writeFileSync(stamp, want);

// The checksum manifest of a checkpoint: `checksums.sha256` lists every other file of the
// directory with its SHA-256, in the format of `sha256sum` (so `sha256sum -c checksums.sha256`
// checks it too). It is written last; a resume verifies it before reading anything, so a
// truncated or bit-flipped file is a typed error naming the file, never a silent load.

import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { writeFileAtomic } from '@apertus/atomic-file';
import { CheckpointReadError } from './errors';

/** Name of the manifest inside a checkpoint directory. */
export const CHECKSUM_FILE = 'checksums.sha256';

function sha256File(file: string): string {
  return createHash('sha256').update(fs.readFileSync(file)).digest('hex');
}

/** Files below `dir` (relative, `/`-separated, sorted), the manifest excluded. */
function listFiles(dir: string, prefix = ''): string[] {
  const out: string[] = [];
  for (const e of fs.readdirSync(path.join(dir, prefix), { withFileTypes: true })) {
    const rel = prefix === '' ? e.name : `${prefix}/${e.name}`;
    if (e.isDirectory()) out.push(...listFiles(dir, rel));
    else if (rel !== CHECKSUM_FILE) out.push(rel);
  }
  return out.sort();
}

/** Write `dir/checksums.sha256` over every file in `dir`. */
export function writeChecksums(dir: string): void {
  writeFileAtomic(path.join(dir, CHECKSUM_FILE), listFiles(dir).map((f) => `${sha256File(path.join(dir, f))}  ${f}\n`).join(''));
}

/**
 * Check every file listed in `dir/checksums.sha256`.
 * @throws CheckpointReadError naming the manifest (missing or malformed) or the first file that
 *   is missing or whose contents differ (truncated, damaged)
 */
export function verifyChecksums(dir: string): void {
  const manifest = path.join(dir, CHECKSUM_FILE);
  let text: string;
  try {
    text = fs.readFileSync(manifest, 'utf8');
  } catch (cause) {
    throw new CheckpointReadError(manifest, 'missing: the checkpoint cannot be verified (incomplete, or written without checksums)', undefined, { cause });
  }
  const lines = text.split('\n').filter((l) => l !== '');
  if (lines.length === 0) throw new CheckpointReadError(manifest, 'empty manifest');
  for (const [i, line] of lines.entries()) {
    const m = /^([0-9a-f]{64}) {2}(.+)$/.exec(line);
    if (!m || m[2]!.split('/').includes('..')) throw new CheckpointReadError(manifest, `line ${i + 1} is not "<sha256>  <file>"`);
    const file = path.join(dir, m[2]!);
    if (!fs.statSync(file, { throwIfNoEntry: false })?.isFile()) throw new CheckpointReadError(file, 'listed in checksums.sha256 but missing');
    const actual = sha256File(file);
    if (actual !== m[1]) throw new CheckpointReadError(file, `checksum mismatch (sha256 ${actual}, expected ${m[1]}): the file is truncated or damaged`);
  }
}

// The figures of record: one JSON file per benchmark under results/ (`results/<name>.json`, an
// array of records), each record the newest figure of one target. A benchmark run with --write
// replaces its records by id; a figure measured by hand is entered with `npm run bench:record`.
// History lives in git, not in the files.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeFileAtomic } from '@apertus/atomic-file';
import { loadAverage, machineDescription } from './machine.mjs';

/** The repository root. */
export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
/** Where the records live. */
export const resultsDir = path.join(repoRoot, 'tooling/bench/results');

/** The fields of a record, in the order they are written. */
export const RECORD_FIELDS = ['id', 'target', 'status', 'figure', 'ratio', 'machine', 'load', 'command', 'date'];
/** The values `status` may take. */
export const STATUSES = ['met', 'partly met', 'not met', 'not run'];

/** A record or results file that breaks the schema; names the file, the record and the field. */
export class BenchRecordError extends Error {
  constructor(file, where, field, message) {
    super(`${file}${where ? ` ${where}` : ''}: ${field}: ${message}`);
    this.name = 'BenchRecordError';
    this.file = file;
    this.field = field;
  }
}

const nonEmpty = (v) => typeof v === 'string' && v.trim() !== '' && !/\n/.test(v);

/**
 * Check one record: `id` (lower-case, digits, `.` and `-`), `target`, `figure`, `machine`, `load`,
 * `command` non-empty one-line strings; `ratio` such a string or null; `status` one of
 * {@link STATUSES} or absent; `date` YYYY-MM-DD; no other field.
 * @throws BenchRecordError naming `file`, the record and the field
 */
export function validateRecord(r, file = 'record', index = 0) {
  const where = `record ${index}${r && typeof r.id === 'string' ? ` (${r.id})` : ''}`;
  const fail = (f, m) => {
    throw new BenchRecordError(file, where, f, m);
  };
  if (r === null || typeof r !== 'object' || Array.isArray(r)) fail('(record)', 'expected an object');
  for (const k of Object.keys(r)) if (!RECORD_FIELDS.includes(k)) fail(k, `unknown field (fields: ${RECORD_FIELDS.join(', ')})`);
  if (typeof r.id !== 'string' || !/^[a-z0-9][a-z0-9.-]*$/.test(r.id)) fail('id', `expected lower-case letters, digits, "." and "-", got ${JSON.stringify(r.id)}`);
  for (const f of ['target', 'figure', 'machine', 'load', 'command']) if (!nonEmpty(r[f])) fail(f, `expected a non-empty one-line string, got ${JSON.stringify(r[f])}`);
  if (r.ratio !== null && !nonEmpty(r.ratio)) fail('ratio', `expected a one-line string or null, got ${JSON.stringify(r.ratio)}`);
  if (r.status !== undefined && !STATUSES.includes(r.status)) fail('status', `expected one of ${STATUSES.join(', ')}, got ${JSON.stringify(r.status)}`);
  if (typeof r.date !== 'string' || !/^\d{4}-\d{2}-\d{2}$/.test(r.date) || Number.isNaN(Date.parse(r.date))) fail('date', `expected YYYY-MM-DD, got ${JSON.stringify(r.date)}`);
  return r;
}

/** The records of `results/<benchmark>.json`, validated (ids unique); `[]` when the file does not exist. */
export function readRecords(benchmark, dir = resultsDir) {
  const file = path.join(dir, `${benchmark}.json`);
  if (!fs.existsSync(file)) return [];
  const rel = path.relative(repoRoot, file);
  let json;
  try {
    json = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (e) {
    throw new BenchRecordError(rel, '', '(file)', `not JSON (${e.message})`);
  }
  if (!Array.isArray(json)) throw new BenchRecordError(rel, '', '(file)', 'expected an array of records');
  const seen = new Set();
  json.forEach((r, i) => {
    validateRecord(r, rel, i);
    if (seen.has(r.id)) throw new BenchRecordError(rel, `record ${i} (${r.id})`, 'id', 'appears twice');
    seen.add(r.id);
  });
  return json;
}

/** Every results file as `{ benchmark, records }`, in file-name order. */
export function readAllRecords(dir = resultsDir) {
  return fs.readdirSync(dir).filter((f) => f.endsWith('.json')).sort().map((f) => ({ benchmark: f.slice(0, -5), records: readRecords(f.slice(0, -5), dir) }));
}

/** Today in UTC, YYYY-MM-DD. */
export const today = () => new Date().toISOString().slice(0, 10);

/** The command line of this process from the repository root: `node [flags] <script> [args]`. */
export function commandLine() {
  const script = path.relative(repoRoot, path.resolve(process.argv[1]));
  return ['node', ...process.execArgv, script, ...process.argv.slice(2)].join(' ');
}

/**
 * Put `records` into `results/<benchmark>.json`: a record replaces the one with its id (in place),
 * a new id is appended, the others stay. Fields a benchmark leaves out are this run's: `machine`
 * (this machine), `load` (the 1-minute load average now), `command` (this process's command
 * line), `date` (today); `ratio` defaults to null. Returns the file.
 */
export function writeRecords(benchmark, records, dir = resultsDir) {
  const defaults = { ratio: null, machine: machineDescription(), load: loadAverage(), command: commandLine(), date: today() };
  const file = path.join(dir, `${benchmark}.json`);
  const all = readRecords(benchmark, dir);
  records.forEach((r, i) => {
    const full = Object.fromEntries(RECORD_FIELDS.map((k) => [k, r[k] ?? defaults[k]]).filter(([, v]) => v !== undefined));
    validateRecord(full, `${benchmark} (new)`, i);
    const at = all.findIndex((x) => x.id === full.id);
    if (at >= 0) all[at] = full;
    else all.push(full);
  });
  writeFileAtomic(file, `${JSON.stringify(all, null, 2)}\n`);
  return file;
}

// BENCHMARKS.md is the page the committed records give (so nobody edits it by hand and no record
// is left out), it stays under 200 lines, the records hold to their schema, results/ holds
// records only (no diaries), and a benchmark's --write replaces its records by id.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BenchRecordError, benchmarks, pageFile, readAllRecords, readRecords, renderPage, resultsDir, validateRecord, writeRecords } from './index.mjs';

const record = (over = {}) => ({ id: 'x', target: 't', figure: 'f', ratio: null, machine: 'm', load: '1.0', command: 'node x.mjs', date: '2026-12-01', ...over });

describe('BENCHMARKS.md', () => {
  it('is the page rendered from tooling/bench/results/*.json (run `npm run bench:page` after changing a record)', () => {
    expect(fs.readFileSync(pageFile, 'utf8')).toBe(renderPage(readAllRecords()));
  });

  it('is under 200 lines, one table row per record', () => {
    const page = fs.readFileSync(pageFile, 'utf8');
    expect(page.split('\n').length).toBeLessThan(200);
    const records = readAllRecords().flatMap((g) => g.records);
    expect(page.split('\n').filter((l) => /^\| (?!target \|)(?!---)/.test(l))).toHaveLength(records.length);
  });

  it('has records only in results/: one valid JSON file per registered benchmark, ids unique across the page', () => {
    const files = fs.readdirSync(resultsDir);
    expect(files.filter((f) => !f.endsWith('.json'))).toEqual([]);
    const names = benchmarks.map((b) => b.name);
    for (const f of files) expect(names).toContain(f.slice(0, -5));
    const ids = readAllRecords().flatMap((g) => g.records.map((r) => r.id));
    expect(new Set(ids).size).toBe(ids.length);
  });
});

describe('records', () => {
  let dir;
  afterEach(() => dir && fs.rmSync(dir, { recursive: true, force: true }));

  it('writeRecords replaces a record by id in place, appends a new one, keeps the rest, and fills this run\'s fields', () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'apertus-bench-'));
    writeRecords('gemm', [record({ id: 'a', figure: 'old' }), record({ id: 'b' })], dir);
    writeRecords('gemm', [{ id: 'a', target: 't', figure: 'new' }, { id: 'c', target: 't2', figure: 'f2', ratio: '1.5×' }], dir);
    const got = readRecords('gemm', dir);
    expect(got.map((r) => [r.id, r.figure])).toEqual([['a', 'new'], ['b', 'f'], ['c', 'f2']]);
    const filled = got[0];
    expect(filled.ratio).toBeNull();
    expect(filled.date).toBe(new Date().toISOString().slice(0, 10));
    expect(filled.load).toMatch(/^\d+\.\d$/);
    expect(filled.machine).not.toBe('');
    expect(filled.command).toMatch(/^node /);
    expect(Object.keys(got[2])).toEqual(['id', 'target', 'figure', 'ratio', 'machine', 'load', 'command', 'date']);
  });

  it('a bad record or file is refused naming the file, the record and the field', () => {
    expect(() => validateRecord(record({ date: '1 Dec' }), 'r.json', 3)).toThrow('r.json record 3 (x): date: expected YYYY-MM-DD, got "1 Dec"');
    expect(() => validateRecord(record({ figure: 'a\nb' }), 'r.json')).toThrow(/figure: expected a non-empty one-line string/);
    expect(() => validateRecord(record({ status: 'done' }), 'r.json')).toThrow(/status: expected one of met, partly met, not met, not run/);
    expect(() => validateRecord(record({ speed: 1 }), 'r.json')).toThrow(/speed: unknown field/);
    expect(() => validateRecord(record({ id: 'Gemm 1' }), 'r.json')).toThrow(BenchRecordError);
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'apertus-bench-'));
    fs.writeFileSync(path.join(dir, 'gemm.json'), JSON.stringify([record(), record()]));
    expect(() => readRecords('gemm', dir)).toThrow(/gemm\.json record 1 \(x\): id: appears twice/);
    fs.writeFileSync(path.join(dir, 'gemm.json'), '{');
    expect(() => readRecords('gemm', dir)).toThrow(/gemm\.json: \(file\): not JSON/);
  });

  it('renders a record as one row: target with its status, figure, ratio (– when none), machine, load, command, date', () => {
    const page = renderPage([{ benchmark: 'gemm', records: [record({ status: 'met' }), record({ id: 'y', ratio: '2.0×' })] }]);
    expect(page).toContain('| t — **met** | f | – | m | 1.0 | `node x.mjs` | 2026-12-01 |');
    expect(page).toContain('| t | f | 2.0× | m | 1.0 | `node x.mjs` | 2026-12-01 |');
    expect(renderPage([{ benchmark: 'gemm', records: [record({ command: "node x.mjs --only 'a|b'" })] }])).toContain("| `node x.mjs --only 'a\\|b'` |");
    expect(() => renderPage([{ benchmark: 'nope', records: [record()] }])).toThrow(/unregistered benchmarks: nope/);
  });
});

// @apertus/bench — the helpers the benchmark scripts import: the machine and load a figure was
// taken on, and the records they write with --write (results/<benchmark>.json), from which
// BENCHMARKS.md is rendered.
export { cpuDescription, machineDescription, loadAverage, loadRange } from './machine.mjs';
export { writeRecords, readRecords, readAllRecords, validateRecord, commandLine, today, BenchRecordError, RECORD_FIELDS, STATUSES, resultsDir, repoRoot } from './records.mjs';
export { renderPage, pageFile } from './page.mjs';
export { benchmarks } from './registry.mjs';

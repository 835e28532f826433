// The metrics log: one JSON object per line (`metrics.jsonl`), appended as training goes. On
// resume the file is rewritten from the records saved in the checkpoint, so lines logged by a
// killed run after its last checkpoint disappear and the log matches an uninterrupted run.

import fs from 'node:fs';
import path from 'node:path';
import { writeFileAtomic } from '@apertus/atomic-file';
import { OutputWriteError } from './errors';
import type { MetricRecord } from './trainer-state';

/** Appends {@link MetricRecord}s to a JSONL file and keeps them in memory. */
export class MetricsLogger {
  private readonly all: MetricRecord[];

  /**
   * Start the log at `file`, atomically replacing its contents with `initial` (the records of the
   * checkpoint being resumed; empty for a fresh run).
   */
  constructor(readonly file: string, initial: readonly MetricRecord[] = []) {
    this.all = [...initial];
    try {
      fs.mkdirSync(path.dirname(file), { recursive: true });
      writeFileAtomic(file, initial.map((r) => `${JSON.stringify(r)}\n`).join(''));
    } catch (e) {
      throw new OutputWriteError(file, e);
    }
  }

  /** Every record so far (resumed ones included), in order. */
  get records(): readonly MetricRecord[] {
    return this.all;
  }

  /**
   * Append one record (to memory and to the file).
   * @throws OutputWriteError when the file cannot be appended to (e.g. disk full)
   */
  log(record: MetricRecord): void {
    try {
      fs.appendFileSync(this.file, `${JSON.stringify(record)}\n`);
    } catch (e) {
      throw new OutputWriteError(this.file, e);
    }
    this.all.push(record);
  }
}

/** Parse a metrics JSONL file (for tools and tests); blank lines are skipped. */
export function readMetrics(file: string): MetricRecord[] {
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as MetricRecord);
}

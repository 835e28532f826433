// The loss-curve plot: a self-contained HTML page with inline SVG line charts (no script, no
// dependency) — training loss (raw and smoothed) with validation loss, and the learning rate.

import { writeFileAtomic } from '@apertus/atomic-file';
import { OutputWriteError } from './errors';
import { escapeXml, smooth, svgLineChart, type Series } from './chart';
import type { MetricRecord } from './trainer-state';

/** Options of {@link renderLossCurve}. */
export interface LossCurveOptions {
  /** Page and chart title. */
  readonly title?: string;
  /** Lines of text shown under the title (run summary). */
  readonly notes?: readonly string[];
}

/**
 * The loss-curve page for a metrics log: `train` records (`loss`, `lr`) and `eval` records
 * (`valLoss`) become a loss chart (train raw + smoothed, validation with markers) and a
 * learning-rate chart, in one self-contained HTML file.
 */
export function renderLossCurve(records: readonly MetricRecord[], options: LossCurveOptions = {}): string {
  const title = options.title ?? 'Training loss';
  const train = records.filter((r) => r.type === 'train' && typeof r.loss === 'number');
  const evals = records.filter((r) => r.type === 'eval' && typeof r.valLoss === 'number');
  const trainPts = train.map((r) => [r.step, r.loss as number] as const).filter(([, y]) => Number.isFinite(y));
  const smoothed = smooth(trainPts.map((p) => p[1]));
  const loss = svgLineChart(
    [
      { name: 'train loss', color: '#1f77b4', points: trainPts, opacity: 0.35 },
      { name: 'train loss (smoothed)', color: '#1f77b4', points: trainPts.map(([x], i) => [x, smoothed[i]!] as const) },
      { name: 'validation loss', color: '#ff7f0e', points: evals.map((r) => [r.step, r.valLoss as number] as const), markers: true },
    ],
    { title: 'Loss (nats per token)', xLabel: 'step', yLabel: 'loss' },
  );
  const lr = svgLineChart([{ name: 'learning rate', color: '#2ca02c', points: train.filter((r) => typeof r.lr === 'number').map((r) => [r.step, r.lr as number] as const) }], {
    title: 'Learning rate',
    xLabel: 'step',
    yLabel: 'lr',
    height: 220,
  });
  const notes = (options.notes ?? []).map((n) => `<p>${escapeXml(n)}</p>`).join('\n');
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>${escapeXml(title)}</title>
<style>body{font-family:system-ui,sans-serif;margin:24px;color:#222}p{margin:4px 0}svg{display:block;margin:16px 0}</style></head>
<body>
<h1>${escapeXml(title)}</h1>
${notes}
${loss}
${lr}
</body>
</html>
`;
}

/**
 * Write {@link renderLossCurve} to `file` atomically.
 * @throws OutputWriteError when the file cannot be written (the previous plot stays)
 */
export function writeLossCurve(file: string, records: readonly MetricRecord[], options: LossCurveOptions = {}): void {
  try {
    writeFileAtomic(file, renderLossCurve(records, options));
  } catch (e) {
    throw new OutputWriteError(file, e);
  }
}

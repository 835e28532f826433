// The loss-curve plot: a self-contained HTML page with inline SVG line charts (no script, no
// dependency) — training loss (raw and smoothed) with validation loss, and the learning rate.

import { writeFileAtomic } from '@apertus/model';
import { OutputWriteError } from './errors';
import type { MetricRecord } from './trainer-state';

/** One line of a chart. */
export interface Series {
  /** Legend label. */
  readonly name: string;
  /** CSS colour. */
  readonly color: string;
  /** (x, y) points in drawing order; non-finite points are skipped. */
  readonly points: readonly (readonly [number, number])[];
  /** Draw a dot on every point (for sparse series such as validation loss). */
  readonly markers?: boolean;
  /** Stroke opacity (default 1). */
  readonly opacity?: number;
}

/** Options of {@link svgLineChart}. */
export interface ChartOptions {
  /** Chart title. */
  readonly title: string;
  /** X axis label. */
  readonly xLabel: string;
  /** Y axis label. */
  readonly yLabel: string;
  /** Width in pixels (default 720). */
  readonly width?: number;
  /** Height in pixels (default 360). */
  readonly height?: number;
}

/** Plot margins in pixels: left, right, top, bottom. */
export const CHART_MARGIN = Object.freeze({ left: 64, right: 16, top: 48, bottom: 44 });

/** Escape text for HTML/SVG content and attribute values. */
export function escapeXml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/** Round "nice" tick values (1, 2, 5 × 10^k steps) covering [lo, hi]. */
export function niceTicks(lo: number, hi: number, target = 5): number[] {
  if (!(hi > lo)) return [lo];
  // The 1/2/5 step whose tick count is closest to `target`.
  const mag = 10 ** Math.floor(Math.log10((hi - lo) / target));
  const step = [1, 2, 5, 10].map((m) => m * mag).reduce((best, s) => (Math.abs((hi - lo) / s - target) < Math.abs((hi - lo) / best - target) ? s : best));
  const ticks: number[] = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) ticks.push(Number(v.toPrecision(12)));
  return ticks;
}

function fmt(v: number): string {
  if (v === 0) return '0';
  const a = Math.abs(v);
  return a >= 1e4 || a < 1e-2 ? v.toExponential(1) : String(Number(v.toPrecision(4)));
}

/**
 * An SVG line chart of `series`. The x range spans every finite point; the y range too, padded by
 * 5% on each side. A point (x, y) is drawn at
 * `left + (x − x0)/(x1 − x0)·plotWidth`, `top + (1 − (y − y0)/(y1 − y0))·plotHeight`.
 */
export function svgLineChart(series: readonly Series[], options: ChartOptions): string {
  const W = options.width ?? 720;
  const H = options.height ?? 360;
  const { left, right, top, bottom } = CHART_MARGIN;
  const pw = W - left - right;
  const ph = H - top - bottom;
  const finite = series.flatMap((s) => s.points.filter(([x, y]) => Number.isFinite(x) && Number.isFinite(y)));
  let [x0, x1] = finite.length ? [Math.min(...finite.map((p) => p[0])), Math.max(...finite.map((p) => p[0]))] : [0, 1];
  let [y0, y1] = finite.length ? [Math.min(...finite.map((p) => p[1])), Math.max(...finite.map((p) => p[1]))] : [0, 1];
  if (x1 === x0) [x0, x1] = [x0 - 1, x1 + 1];
  if (y1 === y0) [y0, y1] = [y0 - Math.max(1e-12, Math.abs(y0) * 0.1), y1 + Math.max(1e-12, Math.abs(y1) * 0.1)];
  const pad = (y1 - y0) * 0.05;
  y0 -= pad;
  y1 += pad;
  const X = (x: number) => left + ((x - x0) / (x1 - x0)) * pw;
  const Y = (y: number) => top + (1 - (y - y0) / (y1 - y0)) * ph;
  const r2 = (v: number) => (Math.round(v * 100) / 100).toString();
  const out: string[] = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="system-ui, sans-serif" font-size="12">`);
  out.push(`<text x="${W / 2}" y="18" text-anchor="middle" font-size="14" font-weight="600">${escapeXml(options.title)}</text>`);
  out.push(`<rect x="${left}" y="${top}" width="${pw}" height="${ph}" fill="none" stroke="#999"/>`);
  for (const t of niceTicks(x0, x1)) {
    out.push(`<line x1="${r2(X(t))}" y1="${top + ph}" x2="${r2(X(t))}" y2="${top + ph + 4}" stroke="#999"/>`);
    out.push(`<text x="${r2(X(t))}" y="${top + ph + 16}" text-anchor="middle">${fmt(t)}</text>`);
  }
  for (const t of niceTicks(y0, y1)) {
    out.push(`<line x1="${left}" y1="${r2(Y(t))}" x2="${left + pw}" y2="${r2(Y(t))}" stroke="#eee"/>`);
    out.push(`<text x="${left - 6}" y="${r2(Y(t) + 4)}" text-anchor="end">${fmt(t)}</text>`);
  }
  out.push(`<text x="${left + pw / 2}" y="${H - 8}" text-anchor="middle">${escapeXml(options.xLabel)}</text>`);
  out.push(`<text x="14" y="${top + ph / 2}" text-anchor="middle" transform="rotate(-90 14 ${top + ph / 2})">${escapeXml(options.yLabel)}</text>`);
  // Legend: one row between the title and the plot area.
  let lx = left;
  series.forEach((s) => {
    const pts = s.points.filter(([x, y]) => Number.isFinite(x) && Number.isFinite(y));
    const attr = `stroke="${escapeXml(s.color)}"${s.opacity !== undefined ? ` stroke-opacity="${s.opacity}"` : ''}`;
    out.push(`<polyline data-series="${escapeXml(s.name)}" fill="none" ${attr} stroke-width="1.5" points="${pts.map(([x, y]) => `${r2(X(x))},${r2(Y(y))}`).join(' ')}"/>`);
    if (s.markers) for (const [x, y] of pts) out.push(`<circle cx="${r2(X(x))}" cy="${r2(Y(y))}" r="3" fill="${escapeXml(s.color)}"/>`);
    const ly = top - 12;
    out.push(`<line x1="${lx}" y1="${ly - 4}" x2="${lx + 20}" y2="${ly - 4}" ${attr} stroke-width="2"/>`);
    out.push(`<text x="${lx + 26}" y="${ly}">${escapeXml(s.name)}</text>`);
    lx += 40 + 7 * s.name.length;
  });
  out.push('</svg>');
  return out.join('\n');
}

/** Exponential moving average with bias correction (TensorBoard-style smoothing). */
export function smooth(values: readonly number[], beta = 0.8): number[] {
  let m = 0;
  return values.map((v, i) => {
    m = beta * m + (1 - beta) * v;
    return m / (1 - beta ** (i + 1));
  });
}

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
